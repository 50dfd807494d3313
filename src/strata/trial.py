"""Run one trial on a provisioned stack and build its result (metrics + flags + evidence)."""

from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from strata.analysis import steady, validity
from strata.collectors.cgroup import CgroupCollector, final_counters
from strata.collectors.diskstats import DiskstatsCollector
from strata.collectors.host import HostCollector
from strata.collectors.sampler import Sampler
from strata.errors import StrataError, TrialFailure
from strata.proc import CommandError
from strata.stack.runtime import InstanceRequest, Unsupported, target_for
from strata.workloads import REGISTRY as WORKLOADS


@dataclass
class CollectContext:
    diskstats: list[str]
    cgroups: list[dict]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_result(trial, run_id: str, experiment: str, host: dict) -> dict:
    return {
        "trial_id": trial.id, "run_id": run_id, "experiment": experiment, "stack": trial.stack,
        "labels": {"device": trial.device.name, "filesystem": trial.filesystem.name, "runtime": trial.runtime.name,
                   "path": trial.path, "workload": trial.workload.name, "load": trial.load.name,
                   "repetition": trial.repetition},
        "trial": trial.resolved(), "host": host, "metrics": {}, "flags": {"failed": None}, "warnings": [],
        "stack_facts": {}, "collectors": {}, "artifacts": f"trials/{trial.id}",
    }


def failed_result(result: dict, category: str, message: str, stderr: str = "", status: str = "failed") -> dict:
    result.update(status=status)
    result["flags"]["failed"] = {"category": category, "message": message, "stderr": stderr[-8000:]}
    return result


def steady_flag(parsed) -> dict | None:
    """SNIA-style steady state of the workload's per-second IOPS (analysis/steady.py);
    with `until: steady`, also whether fio's own criterion was attained."""
    series = parsed.series.get("fio_iops")
    if not series:
        return None
    values = [v for _, v in series[:-1]] if len(series) > 2 else [v for _, v in series]  # last second is partial
    flag = steady.detect(values)
    fio_ss = parsed.metrics.get("steadystate")
    if fio_ss:
        flag["fio"] = fio_ss
    return flag


def drop_caches() -> None:
    """Start every trial with a cold page cache, as fio users do by hand."""
    if os.geteuid() == 0:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3")


def run_trial(trial, stacks, store, run_id: str, experiment: str, host: dict) -> dict:
    result = base_result(trial, run_id, experiment, host)
    result["started_at"] = now_iso()
    t0 = time.time()
    try:
        device, mounted, session = stacks.get(trial)
        result["stack_facts"] = {"device": device.facts, "filesystem": {"mount_options": mounted.mount_options,
                                                                        "mountpoint": str(mounted.mountpoint or "")},
                                 "runtime": session.facts}
        _measure(trial, device, session, store, result)
        result["status"] = "ok"
    except Unsupported as e:
        failed_result(result, "unsupported", str(e), status="unsupported")
    except TrialFailure as e:
        failed_result(result, e.category, str(e), e.stderr)
    except CommandError as e:
        failed_result(result, "command", str(e), e.stderr)
    except StrataError as e:
        failed_result(result, "provision", e.message())
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # a bug: keep its traceback in the result and go on with the run
        failed_result(result, "internal", f"{type(e).__name__}: {e}", traceback.format_exc())
    result["finished_at"] = now_iso()
    result["duration_s"] = time.time() - t0
    return result


def _measure(trial, device, session, store, result: dict) -> None:
    """Provision the path, run the instances under the collectors, parse, judge."""
    wl, spec, load = WORKLOADS[trial.workload.type], trial.workload, trial.load
    art = store.artifacts_dir(trial.id)
    drop_caches()
    with session.path(trial.path, art, load) as handle:
        requests = _requests(wl, spec, load, session, handle, art)
        outputs, sampler = _run_collected(wl, spec, load, session, handle, requests, device, art)
    (art / "series.json").write_text(json.dumps(sampler.series()))
    for o in outputs:
        (o.out_dir / "stderr.txt").write_text(o.stderr or "")
    parsed = wl.parse(spec, outputs)
    if parsed.series:
        (art / "workload-series.json").write_text(json.dumps(parsed.series))
    summary = sampler.summary()
    finals = {str(o.index): final_counters((o.out_dir / "cgroup-final.txt").read_text())
              for o in outputs if (o.out_dir / "cgroup-final.txt").exists()}
    if finals:
        summary["cgroups_final"] = finals
    result["metrics"], result["collectors"] = parsed.metrics, summary
    _judge(trial, wl, device, parsed, outputs, summary, result)


def _requests(wl, spec, load, session, handle, art) -> list[InstanceRequest]:
    """One instance per container, each with its own out dir (the workload's files staged in it)."""
    requests = []
    for i in range(load.containers):
        out = art / f"inst-{i}"
        out.mkdir(parents=True, exist_ok=True)
        wl.stage(spec, out)
        requests.append(InstanceRequest(i, wl.command(spec, load, target_for(session, handle, out), i), out))
    (art / "command.json").write_text(json.dumps([r.argv for r in requests], indent=1))
    return requests


def _run_collected(wl, spec, load, session, handle, requests, device, art):
    """Create the instances at the barrier, start the collectors, release them, wait."""
    sync_dir = art / "sync"
    sync_dir.mkdir(exist_ok=True)
    running = session.start(requests, handle, load, sync_dir)
    try:
        ctx = CollectContext(device.diskstats, running.cgroups)
        with Sampler([HostCollector(ctx), DiskstatsCollector(ctx), CgroupCollector(ctx)]) as sampler:
            running.go()
            outputs = running.wait(timeout_s=2 * wl.estimate_s(spec) + 120)
    finally:
        running.stop()
    return outputs, sampler


def _judge(trial, wl, device, parsed, outputs, summary: dict, result: dict) -> None:
    """The validity flags, each with its evidence; suspicions become warnings."""
    stats = summary.get("diskstats", {})
    disks = {name: stats[name] for name in device.diskstats if name in stats}
    flags = result["flags"]
    flags["cache"] = validity.cache_flag(parsed.moved_bytes, disks, wl.direct_io(trial.workload), trial.path)
    runtime_s = getattr(trial.workload, "runtime", 0) or 0
    flags["sync"] = validity.sync_flag([o.start_time_s for o in outputs], runtime_s)
    flags["steady"] = steady_flag(parsed)
    for flag in ("cache", "sync"):
        f = flags[flag]
        if f.get("suspect") and not f.get("expected"):
            result["warnings"].append(f"{flag}: {f['reason']}")
