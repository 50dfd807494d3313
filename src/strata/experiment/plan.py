"""Resolve: the only step that looks at the host (docs/architecture.md "Experiments").

The plan says what a run would do, without side effects: every stack to
build, every device it will write, every trial, each unsupported cell with
its reason, and the errors that stop the run before anything is built: a
device holding data, a file system that does not fit its device, data that
does not fit its file system, a workload file its own tool rejects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata.core.access import blocking
from strata.core.errors import SpecErrors, StrataError
from strata.core.jsondoc import JsonObject
from strata.core.params import Layer
from strata.experiment import presets, select
from strata.experiment.expand import Skipped, Trial, expand
from strata.experiment.model import Experiment
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.devices import guarded_name, precondition_of, served_by
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.precondition import discard_refusal, plan_text
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.stack.runtimes.base import SizedPaths
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads import plugin_of
from strata.workloads.base import Constrained, HostUser, span_of

# A plan larger than this, in trials or in estimated time, runs only when the user says so (--yes).
LARGE_TRIALS = 10_000
LARGE_S = 7 * 86400
STACK_OVERHEAD_S = 15  # building a stack: mkfs, a daemon, an image load


@dataclass
class Plan:
    trials: list[Trial]
    skipped: list[Skipped]
    unsupported: dict[str, str] = field(default_factory=dict)  # trial id -> reason
    writes: list[str] = field(default_factory=list)  # what gets written, in words
    part: tuple[str, int] | None = None  # `--only EXPR` and the whole plan's count of trials (Plan.only)
    # each device's `precondition:` and its parts' times, in words: once per device built, before its trials
    preconditions: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[Trial]:
        return [t for t in self.trials if t.id not in self.unsupported]

    def estimate_s(self) -> float:
        """Each trial's own estimate (its workload's), plus building each stack once."""
        stacks = {t.stack_key for t in self.runnable}
        return sum(t.workload_plugin.estimate_s(t.workload) for t in self.runnable) + STACK_OVERHEAD_S * len(stacks)

    def only(self, expr: str) -> Plan:
        """The plan of the trials whose labels match `--only EXPR` (experiment/select.py), or a StrataError
        that lists the labels there are when none does."""
        match = select.parse(expr)
        trials = [t for t in self.trials if match(t.names)]
        if not trials:
            raise StrataError(
                f"--only {expr!r} matches none of the plan's {len(self.trials)} trials",
                f"match the labels there are: {select.labels_text([t.names for t in self.trials])}",
            )
        ids = {t.id for t in trials}
        return Plan(
            trials,
            [s for s in self.skipped if match(s.names)],
            {k: v for k, v in self.unsupported.items() if k in ids},
            self.writes,
            (expr, len(self.trials)),
        )

    def too_large(self) -> str | None:
        """Why this plan needs the user's explicit go-ahead, or None."""
        n, est = len(self.runnable), self.estimate_s()
        if n > LARGE_TRIALS or est > LARGE_S:
            return f"the plan has {n:,} trials and would take about {est / 86400:.1f} days"
        return None


def resolve(exp: Experiment, workloads: list[Layer], host: JsonObject) -> Plan:
    trials, skipped = expand(exp, workloads)
    plan = Plan(trials, skipped)
    errors = (
        _device_errors(exp, plan)
        + _fit_errors(exp, trials)
        + _workload_errors(workloads)
        + _load_errors(exp, trials, host)
        + _reach_errors(exp, trials)
        + _compare_errors(exp, workloads)
    )
    if errors:
        raise SpecErrors(errors, "plan")
    cache: dict[tuple[int, str], str | None] = {}
    for t in trials:
        if t.placement is not None:
            continue  # on other machines: each host's agent asks its plugins (hosts/agent.py)
        reason = None
        layers: tuple[tuple[Mapping[str, Any], Layer], ...] = (
            (DEVICES, t.device),
            (FILESYSTEMS, t.filesystem),
            (RUNTIMES, t.runtime),
            (WORKLOADS, t.workload),
        )
        for registry, params in layers:
            key = (id(registry), params.model_dump_json())
            if key not in cache:
                cache[key] = registry[params.type].available(host, params)
            reason = reason or cache[key]
        if reason:
            plan.unsupported[t.id] = reason
    return plan


def _device_errors(exp: Experiment, plan: Plan) -> list[tuple[str, str, str]]:
    errors: list[tuple[str, str, str]] = []
    for i, dev in enumerate(exp.devices):
        plugin = DEVICES[dev.type]
        # on the experiment's hosts each agent checks its own device before writing it
        problems = [] if exp.hosts else plugin.problems(dev)
        if problems:
            errors.append(
                (
                    f"devices[{i}]",
                    "; ".join(problems),
                    f"set `destroy: true` on {guarded_name(dev)} if its data may be erased "
                    "(and unmount it), or use a loop device",
                )
            )
        if exp.hosts:  # each host that runs instances on this device writes under its own workdir
            used: set[str | None] = {
                h
                for t in plan.trials
                if t.device.name == dev.name and t.placement
                for h, n in t.placement.instances
                if n
            }
            used |= {served_by(dev)}  # a remote device's storage host
            for name, h in exp.hosts.items():
                if name in used:
                    plan.writes.append(f"host {name}: " + plugin.writes(dev, h.workdir_of(name, exp.workdir)))
        else:
            plan.writes.append(plugin.writes(dev, Path(exp.workdir)))
        pre = precondition_of(dev)
        if pre is not None:
            plan.preconditions.append(f"{dev.name}: {plan_text(pre, plugin.size_bytes(dev))}")
            kname = Path(os.path.realpath(guarded_name(dev))).name
            refused = discard_refusal(kname) if pre.purge and guarded_name(dev).startswith("/dev/") else None
            if refused:
                errors.append(
                    (f"devices[{i}].precondition.purge", refused, "remove `purge` (a `fill` still writes it all)")
                )
    return errors


def _fit_errors(exp: Experiment, trials: list[Trial]) -> list[tuple[str, str, str]]:
    """Each file system fits its device, and each trial's data fits its file system (with metadata)."""
    errors: list[tuple[str, str, str]] = []
    seen: set[tuple[str, ...]] = set()
    for t in trials:
        size = t.device_plugin.size_bytes(t.device)
        if not size:
            continue
        fs = FILESYSTEMS[t.filesystem.type]
        where = f"filesystems[{exp.filesystems.index(t.filesystem)}]"
        if size < fs.min_size_bytes and (where, t.device.name) not in seen:
            seen.add((where, t.device.name))
            errors.append(
                (
                    where,
                    f"{t.filesystem.type} needs a device of at least {fs.min_size_bytes >> 20} MiB; "
                    f"device {t.device.name} has {size >> 20} MiB",
                    f"make device {t.device.name} larger, or leave {t.filesystem.name} out for it (exclude:)",
                )
            )
            continue
        wl = t.workload_plugin
        need = wl.data_bytes(t.workload, t.load)
        sized = t.runtime_plugin if isinstance(t.runtime_plugin, SizedPaths) else None
        device = sized.path_bytes(t.runtime, t.path) if sized is not None else None
        if sized is not None and device is not None:  # a device of the runtime's (a claim's): the data goes there
            on = ("fit-device", t.runtime.name, t.workload.name, t.load.name, t.path)
            if need > device and on not in seen:
                seen.add(on)
                errors.append(
                    (
                        f"workloads ({t.workload.name})",
                        f"{need >> 20} MiB of data do not fit the {device >> 20} MiB device the {t.runtime.name} "
                        f"runtime gives each instance on {t.path}",
                        f"make the workload's `size` smaller, or the runtime's `{sized.sized_by}` larger",
                    )
                )
            continue
        room = size if t.path == "device" else fs.usable_bytes(size)
        spread = t.placement is not None and span_of(wl, t.workload, t.load) is None
        per_host = t.placement.max_instances if spread and t.placement else t.load.containers  # spanning: each host
        total = need if t.path == "device" else need * per_host
        key = ("fit", t.device.name, t.filesystem.name, t.workload.name, t.load.name, t.path)
        if total > room and key not in seen:
            seen.add(key)
            errors.append(
                (
                    f"workloads ({t.workload.name})",
                    f"{per_host} instance(s) x {need >> 20} MiB of data do not fit "
                    f"{t.stack} ({room >> 20} MiB usable of {size >> 20} MiB)",
                    f"make device {t.device.name} larger or the workload's `size` smaller",
                )
            )
    return errors


def _load_errors(exp: Experiment, trials: list[Trial], host: JsonObject) -> list[tuple[str, str, str]]:
    """Each workload's check of the loads it runs under (a memory limit below what a database node needs),
    with a limit preset's cores and memory as this host gives them (its bandwidth is measured later)."""
    errors: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for t in trials:
        load = presets.on_host(t.load, host)
        wl = t.workload_plugin
        for key, problem, fix in wl.problems(t.workload, load) if isinstance(wl, Constrained) else []:
            if load is not t.load and key.startswith("limits."):
                problem += f" (preset {t.load.limits.preset}: 1/{t.load.limits.share} of this host)"
                fix += f", or a smaller `share` than {t.load.limits.share}"

            where = f"loads[{exp.loads.index(t.load)}].{key}" if t.load in exp.loads else f"loads ({t.load.name}).{key}"
            if (where, problem) not in seen:
                seen.add((where, problem))
                errors.append((where, f"{problem} (workload {t.workload.name})", fix))
    return errors


def _reach_errors(exp: Experiment, trials: list[Trial]) -> list[tuple[str, str, str]]:
    """A workload whose host processes drop root for a user of their own (workloads/base.py HostUser: PostgreSQL)
    needs every directory down to its data to let that user through: refused here, with the reason, rather
    than failing every trial that runs it natively (the other hosts' agents check their own workdir)."""
    errors: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for t in trials:
        wl, runtime = t.workload_plugin, t.runtime_plugin
        if t.placement is not None or runtime.isolation != "process" or not isinstance(wl, HostUser):
            continue
        user = wl.host_user(t.workload)
        if user in seen:
            continue
        seen.add(user)
        blocked = blocking(Path(exp.workdir), user)
        if blocked is not None:
            errors.append(
                (
                    "workdir",
                    f"the {user} user, which the {t.workload.type} workload's servers run as on the "
                    f"{t.runtime.type} runtime, cannot enter {blocked.path} ({blocked.why}): its data below "
                    f"{exp.workdir} would be out of its reach",
                    "run strata with umask 022"
                    if blocked.umask
                    else f"choose a workdir every directory above which the {user} user may enter (e.g. "
                    "/var/tmp/strata), or run the servers in containers only; strata does not loosen your directories",
                )
            )
    return errors


def _compare_errors(exp: Experiment, workloads: list[Layer]) -> list[tuple[str, str, str]]:
    """`compare:` names a latency every workload of the experiment declares (core/metrics.py)."""
    if exp.compare == "headline":
        return []
    errors = []
    for w in dict.fromkeys(w.type for w in workloads):
        schema = WORKLOADS[w].metrics
        if schema.field("latency", exp.compare) is None:
            have = ", ".join(m.name for m in schema.of("latency")) or "none"
            errors.append(
                ("compare", f"{w} declares no latency {exp.compare!r} (its latencies: {have})",
                 "compare `headline`, or one of the latencies every workload of the experiment declares"),
            )  # fmt: skip
    return errors


def _workload_errors(workloads: list[Layer]) -> list[tuple[str, str, str]]:
    """Each workload's own deep check (fio's parser, the engine's check of a Filebench file)."""
    errors: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for w in workloads:
        key = w.model_dump_json()
        if key in seen:
            continue
        seen.add(key)
        for problem in plugin_of(w).validate(w):
            errors.append((f"workloads ({w.name})", problem, "fix the workload's parameters or file"))
    return errors
