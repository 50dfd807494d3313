"""Run one trial on a provisioned stack and build its result: metrics, evidence, flags.

The trial asks the plugins and knows none by name: the workload builds the
instances' commands and runs its measured phase (`Workload.measure`), the
runtime runs the instances, the device and the runtime are watched while
they run, the collectors sample around the measured window, and validity.py
judges the evidence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Protocol

from strata.collectors import REGISTRY as COLLECTORS
from strata.collectors.base import CollectContext, read_file
from strata.collectors.cgroup import final_counters
from strata.collectors.diskstats import within
from strata.collectors.sampler import Sampler
from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.instances import InstanceOutput, InstanceRequest, ReadsNode, Rendezvous, Running, Watch
from strata.core.jsondoc import JsonObject, JsonValue, arr, as_obj, obj, text, whole
from strata.core.proc import CommandError
from strata.experiment import presets
from strata.results import validity, writes
from strata.results.flags import Flag, Flags
from strata.results.result import Labels, Result
from strata.stack.blockdev import allocation, loop_backing
from strata.stack.runtimes.base import LogSession, SetsUp
from strata.workloads.base import LogOnPath, MeasureContext, Parsed, Workload, network_of

if TYPE_CHECKING:
    from strata.core.params import Layer, Load
    from strata.experiment.expand import Trial
    from strata.results.store import ResultStore
    from strata.stack.blockdev import DeviceHandle
    from strata.stack.filesystems.base import Mounted
    from strata.stack.nostack import NoDevice, NoMount
    from strata.stack.paths import PathHandle
    from strata.stack.runtimes.base import RuntimeSession

# Beyond its own estimate, how long a trial's instances may run before they count as hung.
TIMEOUT_SLACK_S = 120
# After an instance failed, how long the layers' watches get to report a death that caused it.
WATCH_GRACE_S = 2.0


class Stacks(Protocol):
    """Where a trial's stack comes from: the run's StackCache (stack/provision.py), or on an agent the
    part's wrapper of it (hosts/part.py), whose host may run no instance and so build nothing."""

    def get(self, trial: Trial) -> tuple[DeviceHandle | NoDevice, Mounted | NoMount, RuntimeSession]: ...
    def died(self, trial: Trial, layer: str) -> None: ...


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_result(trial: Trial, run_id: str, experiment: str, host: JsonObject) -> Result:
    labels: Labels = {
        "device": trial.device.name,
        "filesystem": trial.filesystem.name,
        "runtime": trial.runtime.name,
        "path": trial.path,
        "workload": trial.workload.name,
        "load": trial.load.name,
        "repetition": trial.repetition,
    }
    return Result(
        trial_id=trial.id,
        run_id=run_id,
        experiment=experiment,
        stack=trial.stack,
        labels=labels,
        trial=trial.resolved(),
        host=host,
        flags=Flags({Flag.FAILED: None}),  # null: not failed (yet)
        artifacts=f"trials/{trial.id}",
    )


def failed_result(result: Result, category: str, message: str, stderr: str = "", status: str = "failed") -> Result:
    result.status = status
    result.flags.set(Flag.FAILED, validity.failed(category, message, stderr))
    return result


def drop_caches() -> None:
    """Start every trial with a cold page cache, as fio users do by hand."""
    if os.geteuid() == 0:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3")


def run_trial(
    trial: Trial, stacks: Stacks, store: ResultStore, run_id: str, experiment: str, host: JsonObject
) -> Result:
    result = base_result(trial, run_id, experiment, host)
    result.started_at = now_iso()
    t0 = time.time()
    try:
        device, mounted, session = stacks.get(trial)
        setup_s = result.setup_s = round(time.time() - t0, 3)  # building the stack (or none: it stood)
        fs_facts: JsonObject = {"mount_options": mounted.mount_options, "mountpoint": str(mounted.mountpoint or "")}
        result.stack_facts = {
            "device": device.facts,
            "filesystem": fs_facts,
            "runtime": session.facts,
        }
        _measure(trial, device, session, store, result)
        result.setup_s = round(setup_s + _take_setup_s(session), 3)
        result.status = "ok"
    except Unsupported as e:
        failed_result(result, "unsupported", str(e), status="unsupported")
    except TrialFailure as e:
        failed_result(result, e.category, str(e), e.stderr)
        if e.layer:
            stacks.died(trial, e.layer)
    except CommandError as e:
        failed_result(result, "provision", f"`{e.argv[0]}` failed while building the stack: {e}", e.stderr)
    except StrataError as e:
        failed_result(result, "provision", e.message())
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # a bug: keep its traceback in the result and go on with the run
        failed_result(result, "internal", f"{type(e).__name__}: {e}", traceback.format_exc())
    result.finished_at = now_iso()
    result.duration_s = time.time() - t0
    return result


def _take_setup_s(session: object) -> float:
    """Set-up a runtime session did during the trial (a container engine loading an image on first use), reset."""
    return session.take_setup_s() if isinstance(session, SetsUp) else 0.0


def _watch(device: DeviceHandle | NoDevice, session: RuntimeSession) -> Watch:
    """Poll the layers the instances depend on: the first failure they report, or None."""
    checks = [w for w in (device.watch, session.watch) if w is not None]
    return lambda: next((f for f in (c() for c in checks) if f), None)


def _measure(
    trial: Trial, device: DeviceHandle | NoDevice, session: RuntimeSession, store: ResultStore, result: Result
) -> None:
    """Provision the path, run the workload's measured phase under the collectors, parse, judge."""
    wl, params = trial.workload_plugin, trial.workload
    load = _resolved_load(trial.load, device, result)
    art = store.artifacts_dir(trial.id)
    drop_caches()
    samplers: list[Sampler] = []
    n = wl.instances(params, load)  # a path per instance (a cluster's nodes may outnumber the containers)
    path_load = load if n == load.containers else load.model_copy(update={"containers": n})
    with session.path(trial.path, art, path_load) as handle, _log_path(wl, params, session, art, path_load) as log:
        if handle is not None:
            handle.log = log
        requests = _requests(wl, params, load, session, handle, art)
        sync_dir = art / "sync"
        sync_dir.mkdir(exist_ok=True)
        running = session.start(requests, handle, load, sync_dir)
        watch = _watch(device, session)
        try:
            collect = _collector(device, running, samplers, handle)
            ctx = MeasureContext(running, collect, 2 * wl.estimate_s(params) + TIMEOUT_SLACK_S, watch, art)
            outputs = wl.measure(params, load, ctx)
            if isinstance(running, Rendezvous):  # across hosts: the part's outputs (hosts/part.py)
                running.report(outputs)
            written = _written(device, handle)  # before the path goes: its files, or the device's backing file
        finally:
            running.stop()
        _layers_alive(watch, outputs)
        if handle is not None and handle.facts:
            result.stack_facts["path"] = handle.facts
        if log is not None:  # a server's log on a path of its own: which, and where each instance saw it
            where = {"path": log.name, "in_instance": log.target_path, "on_host": log.host_path}
            result.stack_facts["log_path"] = where | ({"facts": log.facts} if log.facts else {})
        disks = _disks(device, handle)
    sampler = samplers[-1] if samplers else None
    series = sampler.series() if sampler else {}
    (art / "series.json").write_text(json.dumps(series))
    for o in outputs:
        (o.out_dir / "stderr.txt").write_text(o.stderr or "")
    parsed = wl.parse(params, outputs)
    if parsed.series:
        (art / "workload-series.json").write_text(json.dumps(parsed.series))
    summary = sampler.summary() if sampler else {}
    finals: JsonObject = {
        str(o.index): dict[str, JsonValue](final_counters((o.out_dir / "cgroup-final.txt").read_text()))
        for o in outputs
        if (o.out_dir / "cgroup-final.txt").exists()
    }
    if finals:
        summary["cgroups_final"] = finals
    result.metrics, result.collectors = parsed.metrics, summary
    _judge(trial, wl, disks, session, parsed, outputs, summary, result, _measured(series, parsed, disks), written)


def _resolved_load(load: Load, device: DeviceHandle | NoDevice, result: Result) -> Load:
    """A limits preset (presets.py) as numbers for this host and device, recorded with the result."""
    if not load.limits.preset or device.path is None:  # no device: a part without instances (stack/nostack.py)
        return load
    from strata.core.host import host_facts

    facts = result.host
    cores = whole(facts, "cpus") or os.cpu_count() or 1
    memory = whole(facts, "memory_bytes") or whole(host_facts(), "memory_bytes") or 0
    bps = presets.device_read_bps(device.path) if presets.needs_bandwidth(load.limits) else None
    load, record = presets.resolve(load, cores, memory, bps)
    if record:
        obj(record, "basis")["measured_by"] = presets.measured_by(device.path)
        result.stack_facts["limits"] = record
    return load


def _layers_alive(watch: Watch, outputs: list[InstanceOutput]) -> None:
    """A layer that died while the instances ran is the trial's cause, even when the instances ended
    first (fio sees the I/O errors of a lost remote device at once, before the next poll)."""
    failure = watch()
    deadline = time.monotonic() + WATCH_GRACE_S
    while failure is None and any(o.returncode for o in outputs) and time.monotonic() < deadline:
        time.sleep(0.1)  # an instance failed: give the layers' watchers a poll to say why
        failure = watch()
    if failure:
        seen = "\n".join(f"instance {o.index} exited {o.returncode}: {(o.stderr or '')[-500:]}" for o in outputs)
        raise TrialFailure(*failure, stderr=seen)


def _written(device: DeviceHandle | NoDevice, handle: PathHandle | None) -> JsonObject | None:
    """How much of what the instances read was ever written (the cache check tells holes from a cache): their
    files on this host, or on a device (the raw device, a claim's block device) a loop device's backing file;
    None where neither is known here."""
    if handle is not None and handle.target_kind == "dir":
        dirs = [Path(d) for i in handle.per_instance if (d := i.get("dir"))] or (
            [Path(handle.host_path)] if handle.host_path else []
        )
        dirs = [d for d in dirs if d.is_dir()]
        if not dirs:
            return None
        size, allocated = allocation(dirs)
        return {"size_bytes": size, "allocated_bytes": allocated, "of": "the files under the path"} if size else None
    if handle is not None and handle.disks_on is not None:  # another machine's disks: not this /sys's
        return None
    disks = _disks(device, handle)
    under_test = disks[0] if disks else None
    backing = loop_backing(under_test) if under_test else None
    if backing is None or not backing.is_file():
        return None
    size, allocated = allocation([backing])
    return {"size_bytes": size, "allocated_bytes": allocated, "of": f"the backing file {backing} of {under_test}"}


def _disks(device: DeviceHandle | NoDevice, handle: PathHandle | None) -> list[str]:
    """The disks of the path's own storage when it is not the device's (a Kubernetes claim), else the
    device's; a part without instances (stack/nostack.py) has no path."""
    return device.diskstats if handle is None or handle.disks is None else handle.disks


def _collector(
    device: DeviceHandle | NoDevice, running: Running, samplers: list[Sampler], handle: PathHandle | None
) -> Callable[[], ContextManager[Sampler]]:
    """The measured window as a context manager: every collector sampled once a second inside it
    (the disks of the path's own storage when it is not the device's: read when the window opens)."""

    @contextlib.contextmanager
    def collect() -> Iterator[Sampler]:
        read = running.read if isinstance(running, ReadsNode) else read_file  # the node's files, where they run
        ctx = CollectContext(_disks(device, handle), running.cgroups, read)
        with Sampler([cls(ctx) for cls in COLLECTORS.values()] + list(device.collectors)) as sampler:
            samplers.append(sampler)
            yield sampler

    return collect


@contextlib.contextmanager
def _log_path(
    wl: Workload[Any], params: Layer, session: RuntimeSession, art: Path, load: Load
) -> Iterator[PathHandle | None]:
    """A server's log on a path of its own, when the workload asks for one (workloads/base.py LogOnPath): the
    runtime prepares it beside the data's path (stack/runtimes/base.py LogSession)."""
    name = wl.log_path(params) if isinstance(wl, LogOnPath) else None
    if name is None:
        yield None
    elif isinstance(session, LogSession):
        with session.log_path(name, art, load) as handle:
            yield handle
    else:
        raise Unsupported(f"the {session.name} runtime gives no path of its own to a server's log ({name})")


def _requests(
    wl: Workload[Any], params: Layer, load: Load, session: RuntimeSession, handle: PathHandle, art: Path
) -> list[InstanceRequest]:
    """One instance per container (or as many as the workload runs), each with its own out dir (the
    workload's files staged in it)."""
    requests = []
    image = wl.image(params)
    for i in range(wl.instances(params, load)):
        out = art / f"inst-{i}"
        out.mkdir(parents=True, exist_ok=True)
        wl.stage(params, out)
        target = session.target(handle, out)
        if handle.log is not None:  # a server's log on a path of its own, where the instance sees it
            target = dataclasses.replace(target, log_path=handle.log.target_path)
        requests.append(
            InstanceRequest(
                i,
                wl.command(params, load, target, i),
                out,
                prepare=wl.prepare(params, load, target, i),
                barrier=wl.barrier(params),
                network=network_of(wl, params),
                image=image,
            )
        )
    (art / "command.json").write_text(json.dumps([r.argv for r in requests], indent=1))
    return requests


def _measured(series: JsonObject, parsed: Parsed, disks: list[str]) -> dict[str, dict[str, float]] | None:
    """Each disk's counters over the instances' measured I/O (their windows' span, from the tools' own
    output), or None where the tools do not say or the samples do not cover it."""
    known = [w for w in parsed.windows if w is not None]
    if not known or len(known) < len(parsed.windows):
        return None
    counted = within(series, min(s for s, _ in known), max(e for _, e in known))
    return {n: counted[n] for n in disks if n in counted} if counted else None


def _judge(
    trial: Trial,
    wl: Workload[Any],
    disk_names: list[str],
    session: RuntimeSession,
    parsed: Parsed,
    outputs: list[InstanceOutput],
    summary: JsonObject,
    result: Result,
    measured: dict[str, dict[str, float]] | None = None,
    written: JsonObject | None = None,
) -> None:
    """The validity flags, each with its evidence (validity/); suspicions become warnings; and what the
    workload wrote and synced beside what each layer wrote (`writes`)."""
    stats = obj(summary, "diskstats")  # the diskstats collector's totals, per disk
    fs = obj(result.trial, "filesystem")
    mounted = str(obj(result.stack_facts, "filesystem").get("mount_options") or "").split(",")
    evidence = validity.TrialEvidence.of(
        parsed,
        wl.runtime_s(trial.workload),
        [o.start_time_s for o in outputs],
        summary,
        moved=validity.MovedBytes(
            parsed.moved_bytes,
            {name: as_obj(stats[name], name) for name in disk_names if name in stats},
            wl.direct_io(trial.workload),
            trial.path,
            parsed.moved_basis,
            parsed.memory,
            written,
        ),
        runtime_facts=session.facts,
        measured=measured,
        stack={
            "path": trial.path,
            "filesystem": text(fs, "type") or None,
            "mount_options": [o for o in dict.fromkeys([*map(str, arr(fs, "mount_options")), *mounted]) if o],
            "runtime": obj(result.trial, "runtime"),
        },
    )
    layers, window = evidence.layers()
    result.writes = writes.record(parsed, layers, window)
    flags, warnings = validity.judge_trial(evidence)
    result.flags.update(flags)
    result.warnings += [w.to_json() for w in warnings]
