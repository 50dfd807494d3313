"""Store trials this host cannot build as `unsupported` results, with the reason."""

from __future__ import annotations

from pathlib import Path

from strata.core.jsondoc import JsonObject
from strata.experiment.plan import Plan
from strata.results.store import ResultStore
from strata.run.trial import base_result, failed_result, now_iso


def record_unsupported(out: Path, plan: Plan, run_id: str, experiment: str, host: JsonObject) -> int:
    store = ResultStore(out)
    n = 0
    for t in plan.trials:
        reason = plan.unsupported.get(t.id)
        if reason and store.status(t.id) != "unsupported":
            if store.status(t.id) == "ok":
                continue
            r = failed_result(base_result(t, run_id, experiment, host), "unsupported", reason, status="unsupported")
            r.started_at = r.finished_at = now_iso()
            r.duration_s = 0.0
            store.write(r)
            n += 1
    return n
