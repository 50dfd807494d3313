"""Expand an Experiment into Trials with stable hashed ids, and skip the impossible.

The trial id hashes the resolved trial (every layer's options, the workload,
the load and the repetition number), so a rerun of the same spec finds its
finished trials (resume) and results of many hosts merge by copying folders.
Trials are ordered in rounds, one repetition of every configuration each
(repetitions interleaved, never back to back). Within a round the order is
random (`round_order`): the stacks (device, file system, runtime) in a random
order, each stack's trials together (a stack is built once per round, as
before: building one is what costs, a dockerd and its image load) and in a
random order among themselves, drawn from the experiment's seed, the device and
the round, so that no stack always runs first or last, and position in the round
(a warm or a busy machine, what ran before) is not confounded with the stack
(the rounds are the blocks of a randomized complete block design:
analysis/decisions/groups.py). The raw-device baselines of a device run first in its
first round (the run-time check of a result above the raw device needs them)
and take a random place after that. With `repetitions: auto` they run in the
first BASELINE_ROUNDS rounds only: they are no candidate, and two trials give
their ratios and flags an interval.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strata.core.jsondoc import JsonObject
from strata.core.params import DEVICE_PATHS, Layer, Load, path_kind, path_word
from strata.experiment.hosts import Placed, Placement, place, place_span
from strata.experiment.model import Experiment
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.devices import Device
from strata.stack.filesystems import FilesystemParams
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.stack.runtimes import Runtime
from strata.stack.runtimes.base import RefusesLimits
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads import Workload, plugin_of
from strata.workloads.base import Constrained, span_of


@dataclass(frozen=True)
class Trial:
    device: Layer
    filesystem: FilesystemParams
    runtime: Layer
    path: str
    workload: Layer
    load: Load
    repetition: int
    placement: Placed | None = None  # on the experiment's hosts (hosts/); None: on this host

    def resolved(self) -> JsonObject:
        doc: JsonObject = {
            "device": self.device.model_dump(),
            "filesystem": self.filesystem.model_dump(),
            "runtime": self.runtime.model_dump(),
            "path": self.path,
            "workload": self.workload.model_dump(),
            "load": load_dump(self.load),
            "repetition": self.repetition,
        }
        if self.placement is not None:  # absent otherwise: the ids of trials run here never change
            doc["placement"] = self.placement.resolved()
        return doc

    @property
    def workload_plugin(self) -> Workload[Any]:
        """The plugin of the trial's workload (the registry's entry of its params' `type`)."""
        return plugin_of(self.workload)

    @property
    def runtime_plugin(self) -> Runtime[Any]:
        """The plugin of the trial's runtime."""
        return RUNTIMES[self.runtime.type]

    @property
    def device_plugin(self) -> Device[Any]:
        """The plugin of the trial's device."""
        return DEVICES[self.device.type]

    @property
    def id(self) -> str:
        blob = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def raw_baseline(self) -> bool:
        """The raw device under the baseline runtime (results/validity: `is_raw_baseline`)."""
        runtime = RUNTIMES.get(self.runtime.type)
        return self.filesystem.type == "raw" and runtime is not None and runtime.baseline and self.path == "device"

    @property
    def stack_key(self) -> tuple[str, str, str]:
        return (self.device.name, self.filesystem.name, self.runtime.name)

    @property
    def stack(self) -> str:
        return f"{self.device.name}/{self.filesystem.name}/{self.runtime.name}/{self.path}"

    @property
    def config(self) -> str:
        """The configuration: everything but the repetition (the cells of the analysis group by it)."""
        return json.dumps({k: v for k, v in self.resolved().items() if k != "repetition"}, sort_keys=True)

    def again(self, repetition: int) -> Trial:
        return dataclasses.replace(self, repetition=repetition)

    @property
    def names(self) -> dict[str, str]:
        """The trial's labels, by layer (what `exclude:` and `--only` match: experiment/select.py)."""
        return {
            "device": self.device.name,
            "filesystem": self.filesystem.name,
            "runtime": self.runtime.name,
            "path": self.path,
            "workload": self.workload.name,
            "load": self.load.name,
            "placement": self.placement.name if self.placement else "",
        }

    @property
    def label(self) -> str:
        where = f" @{self.placement.name}" if self.placement else ""
        return f"{self.stack} {self.workload.name} {self.load.name}{where} #{self.repetition}"


def load_dump(load: Load) -> JsonObject:
    """The load as stored and hashed; a fixed count leaves out the keys of `containers: auto`, and limits
    without a preset the preset's keys, so the ids (and stored results) of every load without them stay
    what they were before they existed."""
    d = load.model_dump()
    if load.limits.preset is None:
        d["limits"].pop("preset", None)
        d["limits"].pop("share", None)
    if load.scale == "fixed":
        d.pop("scale", None)
        d.pop("max_containers", None)
    return d


@dataclass(frozen=True)
class Skipped:
    label: str
    reason: str
    names: dict[str, str] = field(default_factory=dict, compare=False, hash=False)  # its labels, by layer


def impossible(fs: FilesystemParams, rt: Layer, path: str, load: Load, workload: Layer | None) -> str | None:
    """Why this combination cannot exist (not: why this host cannot build it); the runtime
    says which paths it provides and whether it runs several instances or applies limits."""
    if path == "device" and fs.type != "raw":
        return "the device path writes the block device itself: it needs filesystem raw"
    if fs.type == "raw" and path_kind(path) not in DEVICE_PATHS:  # a claim's device: the runtime says
        return f"filesystem raw has no directory for the {path} path: use path device"
    plugin = RUNTIMES[rt.type]
    if path_kind(path) not in plugin.paths:
        return f"the {rt.name} runtime has no {path} path (it provides: {', '.join(plugin.paths)})"
    if (load.containers > 1 or load.scale == "auto") and not plugin.concurrent:
        return f"concurrent instances need a runtime that runs several (the {rt.name} runtime runs one)"
    if not load.limits.is_empty() and not plugin.limits:
        return f"limits need a runtime that applies them (the {rt.name} runtime does not)"
    refused = plugin.refused_limits(load.limits) if isinstance(plugin, RefusesLimits) else None
    if refused is not None:  # a runtime that applies some limits, not all
        return refused
    kind = plugin.target_kind(rt, path)
    wl = WORKLOADS.get(workload.type) if workload is not None else None
    if wl is not None and kind not in wl.targets:
        dirs = [path_word(p) for p in plugin.paths if plugin.target_kind(rt, p) == "dir"]
        vm = "; a VM's disk with guest_filesystem" if plugin.isolation == "vm" else ""
        return (
            f"the {wl.name} workload needs a directory, and the {path} path of {rt.name} gives a block device: "
            f"use a path on a file system ({', '.join(dirs) or 'none on ' + rt.name}{vm})"
        )
    reason = plugin.impossible(rt, fs)
    if reason is None and isinstance(wl, Constrained):
        reason = wl.impossible(workload, plugin)
    return reason


def expand(exp: Experiment, workloads: list[Layer]) -> tuple[list[Trial], list[Skipped]]:
    trials: list[Trial] = []
    skipped: list[Skipped] = []
    wheres: list[Placement | None] = [*exp.placement] or [None]
    for dev, fs, rt, path, wl, load, where in itertools.product(
        exp.devices, exp.filesystems, exp.runtimes, exp.paths, workloads, exp.loads, wheres
    ):
        plugin = WORKLOADS.get(wl.type)
        spans = span_of(plugin, wl, load) if plugin is not None and exp.hosts else None
        placed: Placed | str | None
        if spans is not None:  # the workload places its instances itself: one trial, whatever `placement` says
            if where is not exp.placement[0]:
                continue
            placed = place_span(spans, exp.hosts)
        else:
            placed = place(where, load.containers, exp.hosts) if where else None
        names = {
            "device": dev.name,
            "filesystem": fs.name,
            "runtime": rt.name,
            "path": path,
            "workload": wl.name,
            "load": load.name,
            "placement": placed.name if isinstance(placed, Placed) else where.name if where else "",
        }
        excluded = [i for i, x in enumerate(exp.exclude) if x.matches(names)]
        # what one host runs decides what is impossible: 4 + 4 instances natively on two hosts is not
        # (a workload that places itself runs the load's containers on each host: a node of each database)
        on_each_host = placed.max_instances if isinstance(placed, Placed) and spans is None else None
        per_host = load.model_copy(update={"containers": on_each_host}) if on_each_host is not None else load
        reason = (
            f"excluded by the spec (exclude[{excluded[0]}])"
            if excluded
            else placed
            if isinstance(placed, str)
            else impossible(fs, rt, path, per_host, wl)
        )
        where_name = names["placement"]
        label = f"{dev.name}/{fs.name}/{rt.name}/{path} {wl.name} {load.name}" + (
            f" @{where_name}" if where_name else ""
        )
        if reason or isinstance(placed, str):
            skipped.append(Skipped(label, reason or str(placed), names))
            continue
        for rep in range(exp.first_repetitions):
            t = Trial(dev, fs, rt, path, wl, load, rep, placed)
            if not (exp.auto and t.raw_baseline and rep >= BASELINE_ROUNDS):
                trials.append(t)
    return in_rounds(exp, trials), _dedupe(skipped)


BASELINE_ROUNDS = 2  # `repetitions: auto`: the raw baselines' rounds (two trials give their ratios an interval)


def in_rounds(exp: Experiment, trials: list[Trial]) -> list[Trial]:
    """The trials in the order they run: by device (the spec's order), then round, then the round's random
    order (`round_order`)."""
    devices = {d.name: i for i, d in enumerate(exp.devices)}
    by: dict[tuple[int, int], list[Trial]] = {}
    for t in trials:
        by.setdefault((devices.get(t.device.name, 0), t.repetition), []).append(t)
    return [t for key in sorted(by) for t in round_order(exp, by[key], key[1])]


def round_order(exp: Experiment, trials: list[Trial], repetition: int) -> list[Trial]:
    """One round's trials (of one device) in their random order: the stacks shuffled, each stack's trials
    together and shuffled, from a generator seeded by the experiment's seed, the device and the round (so a
    run's order is the same on resume and in `strata validate`). The raw baselines first in round 0."""
    if not trials:
        return []
    base = _order(exp)
    if exp.order == "spec":
        return sorted(trials, key=lambda t: (base(t), t.label))
    rng = random.Random(f"{exp.order_seed}:{trials[0].device.name}:{repetition}")
    stacks: dict[tuple[str, str, str], list[Trial]] = {}
    for t in sorted(trials, key=lambda t: (base(t), t.label)):  # a stable start, whatever order they came in
        stacks.setdefault(t.stack_key, []).append(t)
    keys = list(stacks)
    rng.shuffle(keys)
    if repetition == 0:
        keys.sort(key=lambda k: not any(t.raw_baseline for t in stacks[k]))  # stable: the rest keep their order
    out: list[Trial] = []
    for k in keys:
        group = stacks[k]
        rng.shuffle(group)
        out += group
    return out


def _order(exp: Experiment) -> Callable[[Trial], tuple[int, int, bool, int, int, int, int]]:
    """The spec's order: device, the repetition, raw first, then the spec's order of file systems, runtimes,
    paths (the start `round_order` shuffles from)."""
    idx = {
        "dev": {d.name: i for i, d in enumerate(exp.devices)},
        "fs": {f.name: i for i, f in enumerate(exp.filesystems)},
        "rt": {r.name: i for i, r in enumerate(exp.runtimes)},
        "path": {p: i for i, p in enumerate(exp.paths)},
    }
    return lambda t: (
        idx["dev"][t.device.name],
        t.repetition,
        t.filesystem.type != "raw",
        idx["fs"][t.filesystem.name],
        idx["rt"][t.runtime.name],
        idx["path"][t.path],
        _placement_index(exp, t),
    )


def _placement_index(exp: Experiment, t: Trial) -> int:
    names = [p.name for p in exp.placement]
    return names.index(t.placement.name) if t.placement and t.placement.name in names else 0


def _dedupe(skipped: list[Skipped]) -> list[Skipped]:
    seen: set[str] = set()
    out: list[Skipped] = []
    for s in skipped:
        if s.label not in seen:
            seen.add(s.label)
            out.append(s)
    return out
