"""Cells: the repetitions of one trial configuration, with their statistics.

A cell is everything in the resolved trial but the repetition number (the
trial id hashes the same thing plus the repetition, see experiment/expand.py).
Its throughput is the headline the workload named in `metrics.primary`
(`Result.headline`); its parameters and latencies are read as its workload
declares them (`Workload.metrics`, strata/core/metrics.py).

Trials a flag draws apart (its declaration's `apart`, strata/results/flags/declared.py:
a cache the bytes show, a result above the raw device) are kept apart in the cell,
in that flag's group: they are never part of the device numbers
(docs/architecture.md "Validity").
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strata.analysis.cells.load import read_bytes
from strata.analysis.decisions.answer import MARGIN, Design
from strata.analysis.decisions.groups import Runs
from strata.analysis.decisions.stats import Summary, summarize
from strata.core.jsondoc import JsonObject, JsonValue, ShapeError
from strata.core.metrics import MetricSchema
from strata.core.params import LoadCounts
from strata.results import flags, validity
from strata.results.flags import AboveRaw, Declared, Flag, Spread, Steady
from strata.results.result import Result, typed
from strata.results.stored import Layer, Placement, TrialDoc
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads.server import durability

if TYPE_CHECKING:
    from strata.experiment.model import DesignDoc

LABEL_KEYS = ("device", "filesystem", "runtime", "path", "workload", "load")

Frozen = tuple[tuple[str, str | int | float | None], ...]  # a JSON object as a hashable key (`freeze`)


def artifact(result: Result, name: str) -> JsonObject | None:
    """A JSON artifact of a stored trial (series.json, workload-series.json), or None (absent, unreadable,
    or not an object)."""
    if result.file is None:
        return None
    path = os.path.join(os.path.dirname(result.file), result.trial_id, name)
    try:
        doc: JsonValue = json.loads(read_bytes(path))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def series_of(v: JsonValue) -> list[list[float]] | None:
    """A stored per-second series ([[t, value], ...]: workload-series.json's), or None when absent;
    its numbers kept as stored (an int stays an int)."""
    if v is None:
        return None
    if not isinstance(v, list):
        raise ShapeError(f"a per-second series should be an array, not {type(v).__name__}")
    points: list[list[float]] = []
    for p in v:
        xs = p if isinstance(p, list) else [p]
        nums = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if len(nums) != len(xs):
            raise ShapeError(f"a per-second series should hold [t, value] pairs of numbers, not {p!r}")
        points.append(nums)
    return points


def freeze(d: JsonObject, drop: str = "name") -> Frozen:
    """A hashable copy of a flat-ish JSON object (sorted keys; nested values by repr, which is canonical
    for stored results: they are written with sorted keys)."""
    return tuple(
        sorted((k, v if v is None or isinstance(v, (str, int, float)) else repr(v)) for k, v in d.items() if k != drop)
    )


def schema_of(workload_type: str) -> MetricSchema:
    """The result fields the workload declares (none for a workload not registered)."""
    from strata.workloads import metrics_of

    return metrics_of(workload_type)


def throughput(result: Result) -> tuple[float | None, str]:
    """(value, unit) of a result's headline throughput."""
    return result.headline


def direction(result: Result) -> str:
    """The data direction whose latency represents the trial (read unless it writes more)."""
    return schema_of(result.workload_type).direction(result)


def design_of(result: Result) -> DesignDoc | None:
    """A stored result's `design` as the steady judgement reads it (results/validity/series.py: how many
    repetitions, and the margin), or None when it has none (fixed repetitions: results/schema.py)."""
    d = result.design
    if d is None:
        return None
    margin = d.get("margin")
    if d.get("repetitions") == "auto":
        return {"repetitions": "auto", "margin": MARGIN if margin is None else margin}
    n = d.get("repetitions")  # absent: read as one repetition, as the judgement did (not repeated)
    return {"repetitions": 1 if n is None else n, "margin": MARGIN if margin is None else margin}


def trial_steady(result: Result) -> Steady | None:
    """flags.steady when the runner stored it, otherwise judged from the headline's per-second series."""
    f = result.flags.steady
    if f is not None:
        return f
    name = result.primary.series
    series = (artifact(result, "workload-series.json") or {}).get(name) if name else None
    return validity.steady(series_of(series), design=design_of(result))


@dataclass
class Apart:
    """The repetitions of a cell that one flag draws apart from its device numbers, with their values."""

    results: list[Result] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


def _apart_groups() -> dict[Flag, Apart]:
    return {d.flag: Apart() for d in flags.apart()}


@dataclass
class Cell:
    key: str
    labels: dict[str, str]
    layers: TrialDoc  # the resolved trial, layer by layer
    experiment: str
    ok: list[Result] = field(default_factory=list)
    failed: list[Result] = field(default_factory=list)
    unit: str = ""
    values: list[float] = field(default_factory=list)
    # by flag, the results it draws apart (cache; above the raw device although the bytes say no cache)
    apart: dict[Flag, Apart] = field(default_factory=_apart_groups)
    steady: list[tuple[Result, Steady | None]] = field(default_factory=list)
    summary: Summary = field(default_factory=lambda: summarize([]))  # of its values: build_cells sets it
    above_raw: AboveRaw | None = None  # the cell above its raw device, judged across trials (across.py)
    spread: Spread | None = None  # its repetitions' spread, judged across trials (across.py)
    tag: str = ""

    def __post_init__(self) -> None:
        lab, t = self.labels, self.layers
        self.stack: str = f"{lab['device']}/{lab['filesystem']}/{lab['runtime']}/{lab['path']}"
        self.device: Layer = t.device
        self.fs_type = t.filesystem.type
        self.fs_name = t.filesystem.name
        self.mount_options = list(t.mount_options)
        self.runtime_type = t.runtime.type
        # what the runtime plugin says it is: the baseline (native), and what isolates an instance
        runtime = RUNTIMES.get(self.runtime_type)
        self.baseline = validity.is_baseline_runtime(self.runtime_type)
        self.isolation = runtime.isolation if runtime is not None else ""
        self.driver = t.storage_driver
        self.path = t.path
        self.workload = t.workload.params  # the workload plugin's own parameters
        self.load = t.load
        self.limits = t.limits
        self.placement: Placement = t.placement
        self.containers = t.containers
        # I/Os in flight the load asks for: jobs x iodepth x containers
        self.outstanding: int = LoadCounts.of(self.load).per_instance * self.containers
        self.is_raw = validity.is_raw_baseline(t.doc)
        self.kind = t.workload.type
        self.schema = schema_of(self.kind)

    @property
    def trial(self) -> JsonObject:
        """The resolved trial as stored (what its key and its raw baseline's are worked out from)."""
        return self.layers.doc

    @functools.cached_property
    def raw_key(self) -> tuple[object, ...]:
        """What a raw-device baseline shares with this cell (results/validity/raw.py), worked out once, when
        first asked (analysis/cells/baseline.py)."""
        return validity.raw_baseline_key(self.trial)

    @property
    def name(self) -> str:
        where = self.placement.name  # on the experiment's hosts (hosts/)
        return (
            f"{self.stack} {self.labels['workload']} {self.labels['load']}"
            + (f" @{where}" if where else "")
            + (f" [{self.tag}]" if self.tag else "")
        )

    @functools.cached_property
    def workload_key(self) -> Frozen:
        """The workload's parameters without its name, hashable."""
        return freeze(self.workload)

    @functools.cached_property
    def load_key(self) -> Frozen:
        return freeze(self.load)

    @functools.cached_property
    def design(self) -> Design:
        """How its repetitions were taken (the intervals of `repetitions: auto` are corrected for looking
        after every round: analysis/decisions/answer.py)."""
        return Design.of(self._design_doc)

    @functools.cached_property
    def margin(self) -> float:
        """The spec's margin of equivalence, as stored with its results."""
        margin = None if self._design_doc is None else self._design_doc.get("margin")
        return MARGIN if margin is None else float(margin)

    @functools.cached_property
    def _design_doc(self) -> DesignDoc | None:
        """The first `design` stored with its results (None: fixed repetitions)."""
        return next((r.design for r in self.ok + self.failed if r.design), None)

    @property
    def reps(self) -> int:
        return len(self.values)

    @property
    def runs(self) -> Runs:
        """Its values with the round (repetition) of each: what the group comparisons pair by round."""
        return Runs.of(self.values, [-1 if (n := r.layers.repetition) is None else n for r in self.ok])

    def groups(self) -> list[tuple[Declared, Apart]]:
        """Each flag's group of results drawn apart, in the flags' order (empty ones too)."""
        return [(flags.DECLARED[f], g) for f, g in self.apart.items()]

    @property
    def apart_values(self) -> list[float]:
        """Everything drawn apart from the device numbers, by every flag that draws results apart."""
        return [v for g in self.apart.values() for v in g.values]

    @property
    def measured(self) -> list[Result]:
        """Every result with a measurement: the device numbers', then those drawn apart."""
        return self.ok + [r for g in self.apart.values() for r in g.results]

    @property
    def durability(self) -> str:
        """Its database's durability settings in force, as `strata show` shows them ("": none stated)."""
        return next((s for r in self.measured if (s := durability.shown(r.metrics))), "")

    @property
    def cached(self) -> list[Result]:
        """The results a cache answered (the bytes show it)."""
        return self.apart[Flag.CACHE].results

    @property
    def cached_values(self) -> list[float]:
        return self.apart[Flag.CACHE].values

    @property
    def unconfirmed(self) -> list[Result]:
        """The results above the raw device although the device moved the bytes."""
        return self.apart[Flag.ABOVE_RAW].results

    @property
    def unconfirmed_values(self) -> list[float]:
        return self.apart[Flag.ABOVE_RAW].values

    @property
    def emulated(self) -> bool:
        """Measured under emulation (a VM under TCG): never storage performance to compare."""
        return any(r.flags.warns(Flag.EMULATED) for r in self.measured)

    def param(self, name: str) -> JsonValue:
        """A parameter of the workload (as resolved and stored), or None."""
        return self.workload.get(name)

    def latency(self, kind: str | None, stat: str) -> Summary:
        """Mean over repetitions of a latency statistic (ns) of the cell's direction: of the latency `kind`
        the workload declares, or None: of the whole of an operation's."""
        m = self.schema.field("latency", kind or self.schema.total_latency or "")
        vals = [] if m is None else [m.value(r, self.schema.direction(r), stat) for r in self.ok]
        return summarize([float(v) for v in vals if v is not None])

    def mean_over_operations(self) -> Summary:
        """Mean over repetitions of the mean latency (ns) over all of a trial's operations: where the workload
        declares a mix of operation types (`MetricSchema.mix`), each type's mean weighted by its count; else
        the whole latency's mean."""
        mix = self.schema.mix
        if mix is None:
            return self.latency(None, "mean")
        return summarize([v for v in (mix.mean_ns(r) for r in self.ok) if v is not None])


def fingerprint(trial: JsonObject) -> str:
    blob = json.dumps({k: v for k, v in trial.items() if k != "repetition"}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def config_key(trial: JsonObject) -> str:
    """A configuration: the resolved trial without its repetition (Trial.config says the same)."""
    return json.dumps({k: v for k, v in trial.items() if k != "repetition"}, sort_keys=True, default=str)


def cell_key(trial: JsonObject) -> str:
    """The key of the cell a resolved trial's results fall in (`Cell.key`): its configuration, hashed."""
    return hashlib.sha1(config_key(trial).encode()).hexdigest()[:12]


def build_cells(results: Iterable[Result | JsonObject], judge_steady: bool = True) -> list[Cell]:
    """Group results into cells, in a stable order (by stack, workload, load)."""
    cells: dict[str, Cell] = {}
    for r in typed(results):
        if r.status == "unsupported" or not r.trial:
            continue
        key = config_key(r.trial)
        c = cells.get(key)
        if c is None:
            labels = {k: str(r.labels.get(k, "")) for k in LABEL_KEYS}
            c = cells[key] = Cell(cell_key(r.trial), labels, r.layers, r.experiment)
        _add(c, r, judge_steady)
    for c in cells.values():
        c.summary = summarize(c.values, c.design.level(len(c.values), sides=2))
    _tag_duplicates(list(cells.values()))
    return sorted(cells.values(), key=lambda c: (c.stack, c.labels["workload"], c.outstanding, c.labels["load"], c.key))


def _add(c: Cell, r: Result, judge_steady: bool) -> None:
    if r.status != "ok":
        c.failed.append(r)
        return
    value, unit = throughput(r)
    if value is None:
        c.failed.append(r)
        return
    c.unit = unit
    for flag, group in c.apart.items():  # the first flag that draws it apart (a cache before above_raw)
        if r.flags.warns(flag):
            group.results.append(r)
            group.values.append(value)
            return
    add_ok(c, r, value, judge_steady)


def add_ok(c: Cell, r: Result, value: float, judge_steady: bool = True) -> None:
    c.ok.append(r)
    c.values.append(value)
    if judge_steady:
        c.steady.append((r, trial_steady(r)))


def _tag_duplicates(cells: list[Cell]) -> None:
    """Cells with the same labels but different parameters (two experiments) get a tag to tell them apart."""
    by_name: dict[str, list[Cell]] = {}
    for c in cells:
        by_name.setdefault(c.name, []).append(c)
    for same in by_name.values():
        if len(same) > 1:
            exps = {c.experiment for c in same}
            for c in same:
                c.tag = c.experiment if len(exps) == len(same) else f"{c.experiment} {c.key[:6]}"
