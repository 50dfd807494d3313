"""Execute the trials of an experiment: provision, collect, run, store (docs/architecture.md "Flow").

Every finished trial is stored before the next starts; Ctrl-C and SIGTERM tear
the stacks down and keep what is stored; `--resume` skips stored trials.
"""

from __future__ import annotations

import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject
from strata.results import validity
from strata.results.result import Result
from strata.results.store import ResultStore, load_results
from strata.run.progress import Progress
from strata.run.repeat import Repetitions
from strata.run.trial import now_iso, run_trial
from strata.stack.journal import Journal
from strata.stack.provision import Registries, StackCache
from strata.workloads import plugin_of
from strata.workloads.base import LiveRate

if TYPE_CHECKING:
    from types import FrameType

    from strata.core.params import Layer
    from strata.experiment.expand import Skipped, Trial
    from strata.experiment.model import Experiment


@dataclass
class RunSummary:
    run_id: str
    ok: int = 0
    failed: int = 0
    unsupported: int = 0
    skipped_stored: int = 0
    interrupted: bool = False
    results: list[Result] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.failed else 0


class _Terminate(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: tear down, keep what is stored."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminate()


class Trials(Protocol):
    """Where a run's trials run (LocalTrials, hosts.executor.HostTrials)."""

    @property
    def facts(self) -> JsonObject: ...  # stored in the run's record

    def run(self, trial: Trial, store: ResultStore, run_id: str, experiment: str, host: JsonObject) -> Result: ...

    def close(self) -> None: ...


class LocalTrials:
    """Where trials run by default: on this host, on stacks built here and shared by consecutive trials.

    The runner's one hook for running trials elsewhere: an object with `run(trial, store, run_id,
    experiment, host) -> result`, `close()` and `facts` (stored in the run's record), such as
    hosts.executor.HostTrials, which runs each trial's parts on the experiment's hosts."""

    facts: JsonObject = {}

    def __init__(self, stacks: StackCache):
        self.stacks = stacks

    def run(self, trial: Trial, store: ResultStore, run_id: str, experiment: str, host: JsonObject) -> Result:
        return run_trial(trial, self.stacks, store, run_id, experiment, host)

    def close(self) -> None:
        self.stacks.close()


def run_experiment(
    exp: Experiment,
    workloads: list[Layer],
    trials: list[Trial],
    skipped: list[Skipped],
    out: Path,
    resume: bool = False,
    registries: Registries | None = None,
    host: JsonObject | None = None,
    progress: Progress | None = None,
    executor: Trials | None = None,
    invocation: JsonObject | None = None,
) -> RunSummary:
    host = host if host is not None else run_host_facts(workloads)
    store = ResultStore(out)
    if store.count() and not resume:
        raise StrataError(
            f"{out} already holds {store.count()} stored trial(s)",
            f"continue it with `strata run SPEC --resume -o {out}`, or choose another directory with -o",
        )
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    summary = RunSummary(run_id)
    stored = load_results(out) if resume else []
    reps = Repetitions(exp, trials, stored, run_id)
    done_ids = {r.trial_id for r in stored if r.status in ("ok", "unsupported")}
    run_doc = {
        "run_id": run_id,
        "experiment": exp.name,
        "spec": exp.model_dump(),  # with the command line's overrides applied
        # the command line's `--set` overrides and `--only` part (cli/run.py), when run from it
        **({"invocation": invocation} if invocation else {}),
        "workloads": [w.model_dump() for w in workloads],
        "host": host,
        "started_at": now_iso(),
        "skipped": [{"label": s.label, "reason": s.reason} for s in skipped],
        "trials": len(trials),
        **({"hosts": executor.facts} if executor is not None and executor.facts else {}),
        # the random order within each round (experiment/expand.py round_order): its seed, and the order run
        "order": {"seed": exp.order_seed, "rounds": []},
        **({"looks": list(reps.looks)} if reps.looks else {}),
    }
    order: dict[int, list[str]] = {}
    store.write_run(run_id, run_doc)
    journal = Journal(run_id)
    trials_on: Trials = executor or LocalTrials(StackCache(journal, Path(exp.workdir), host, registries))
    todo = [t for t in trials if t.id not in done_ids]
    progress = progress or Progress(len(todo), [t.workload_plugin.estimate_s(t.workload) for t in todo])
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        for round_ in reps.rounds():
            for t in round_:
                if t.id in done_ids:
                    summary.skipped_stored += 1
                    continue
                if t not in todo:  # a round `auto` added
                    progress.add(t.workload_plugin.estimate_s(t.workload))
                progress.start(t.label, _live(t, store))
                order.setdefault(t.repetition, []).append(t.label)
                result = trials_on.run(t, store, run_id, exp.name, host)
                result.design = reps.design_doc(t.workload.name)
                validity.judge_design(result.flags, result.design)
                store.write(result)
                reps.record(result)
                summary.results.append(result)
                setattr(summary, str(result.status), getattr(summary, str(result.status)) + 1)  # store.write checked it
                progress.done(result)
    except KeyboardInterrupt:
        summary.interrupted = True
        progress.note("interrupted: tearing down; finished trials are stored (continue with --resume)")
    finally:
        signal.signal(signal.SIGTERM, old)
        try:
            trials_on.close()
        finally:
            journal.close()
            run_doc.update(
                finished_at=now_iso(),
                interrupted=summary.interrupted,
                ok=summary.ok,
                failed=summary.failed,
                unsupported=summary.unsupported,
                resumed_from_stored=summary.skipped_stored,
                repetitions=reps.report(),
                setup_s=round(reps.setup_s, 1),
            )
            run_doc["order"] = {"seed": exp.order_seed, "rounds": [order[r] for r in sorted(order)]}
            if reps.scaling:
                run_doc["scaling"] = reps.scaling_report()
            run_doc["variance"] = _variance(out)
            store.write_run(run_id, run_doc)
            progress.finish()
    return summary


def _live(trial: Trial, store: ResultStore) -> Callable[[], str | None] | None:
    """What the progress line calls for the trial's current rate: its workload's own (LiveRate), read from
    the trial's artifacts directory while it runs here; None for a workload that says none."""
    plugin = trial.workload_plugin
    if not isinstance(plugin, LiveRate):
        return None
    trial_dir = store.trials / trial.id
    return lambda: plugin.live_rate(trial_dir)


def _variance(out: Path) -> JsonObject:
    """Where the noise lives, per configuration: within a trial and between trials (analysis/cells/variance.py),
    from the per-second series stored with the trials."""
    from strata.analysis.cells.across import judged_cells
    from strata.analysis.cells.variance import of_cells

    try:
        return {name: c.to_json() for name, c in of_cells(judged_cells(load_results(out), judge_steady=False)).items()}
    except (OSError, ValueError) as e:  # never lose the run document over a statistic
        return {"error": str(e)}


def run_host_facts(workloads: list[Layer]) -> JsonObject:
    """The host's facts, with the versions of the tools of the workloads this run uses."""
    from strata.core.host import host_facts

    tools: JsonObject = {}
    for w in workloads:
        tools.update(plugin_of(w).versions())
    return {**host_facts(), "tools": tools}
