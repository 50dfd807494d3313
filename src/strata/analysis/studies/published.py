"""The studies' own published numbers as a result set, judged by the findings as a user's results are.

Each number of paper.yaml that a result holds (a throughput, a whole latency statistic, a part's share
of the latency, the servers' or a storage target's CPU), or a change of one relative to another
configuration (`versus`), becomes the stored results of its configuration: the trial strata would run
for it (the study's configuration as a spec, resolved by strata's own loader: studies.yaml `published`
says how the study's words read as spec entries, and which layers it takes where the study names none),
with the study's number as its measurement. A study publishes no spread, so its number is taken as
exact: each configuration is stored as two identical repetitions, whose interval is the number itself. A
number the study gives only as a strict bound ("less than 1%") is taken just inside it (`inside`), since
the study says it lies beyond, not at it; a criterion is as strict as its text ("< 1%": criterion.py).
`judged(finding)` then runs the finding's own check on them (the same code a user's trials go
through), on the results of the studies its source names.

The values are set in cases (a table or figure: paper.yaml `case`, else its `where`), each analysed on
its own, so that a change relative to another configuration sets both and no two statements meet by
chance. Within a case a change sets its configuration from its baseline (or the baseline from it); a
baseline the case gives no number for is set at an anchor (ANCHORS: a throughput of 1,000, a latency
of 100 us), which a finding comparing the two never sees. Where the study gives a configuration's
latency but not its throughput, the throughput of a load with a known number of I/Os in flight is
that number over the mean latency (Little's law: the workload's `in_flight`), and a database offered
a fixed rate (study 001 limits its load generator: `offered` of the rate `published.peak` stands for)
ran at that rate. What cannot become a result is left out with the reason (`left_out`): a count found
over a sweep (the peak, where a disk saturates), a configured limit, a projection, a part's latency in
absolute terms, a change whose baseline the study does not name, or a configuration with no
throughput (every stored result has one).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from strata.analysis.cells.cells import cell_key
from strata.analysis.findings.findings import Finding, view
from strata.analysis.findings.verdict import HELD, INCONCLUSIVE, NOT_HELD, NOT_MEASURED, Outcome
from strata.analysis.measured.measurements import Measurements
from strata.analysis.studies import quotes
from strata.analysis.studies.paper import SHARE, PaperValue, latency_metric, load
from strata.analysis.studies.paper_match import Facts
from strata.analysis.studies.side_by_side import paper_ratio
from strata.analysis.studies.stated import Stated, Statements, bound, marks
from strata.analysis.studies.studies import load as load_studies
from strata.core.jsondoc import JsonObject, JsonValue, as_obj, num, obj
from strata.core.params import LoadCounts
from strata.results.result import Result
from strata.results.schema import SCHEMA_VERSION
from strata.results.stored import TrialDoc
from strata.workloads.base import headline

REPETITIONS = 2  # identical: the interval of a published number is the number
ANCHORS = {"throughput": 1000.0, "lat": 100_000.0, "cpu_util": 50.0, "target_cpu": 1.0}  # ns for a latency
NS = {"ms": 1e6, "us": 1e3}
KB_PER_MB = 1000.0
DIGITS = 10  # significant digits a derived number keeps (0.88 stays 0.88, never 0.8799999999999999)
STRICT = {"less than": -1, "more than": 1}  # the side of a strict bound its number lies on
INSIDE = 1e-6  # how far inside a strict bound its number is taken, relatively: beyond DIGITS, within any print
# Quantities found over a sweep, or not measured: never a result of one configuration.
NOT_A_RESULT = {
    "peak": "the container count of the highest throughput, found over a sweep",
    "saturation": "the container count where a resource saturates, found over a sweep",
    "best_bs": "the block size of the best throughput, found over a sweep",
    "cliff_jobs": "the job count past which the throughput falls, found over a sweep",
    "disk_bw": "the peak of the device's bandwidth over a sweep",
    "limit": "a configured limit, not a measurement",
    "connections": "a projection, not a measurement",
}
WORDS = {
    "lat:mean": "its mean latency",
    "lat:p99": "its tail latency",
    "cpu_util": "its CPU",
    "target_cpu": "a target's CPU",
}


@dataclass(frozen=True)
class LeftOut:
    value: PaperValue
    why: str


@dataclass
class Config:
    """One configuration of a case: the study's facts and what the study's numbers set of it."""

    facts: Facts
    metrics: dict[str, float] = field(default_factory=dict)  # throughput, lat:<stat> (ns), share:<part>, ...
    values: list[PaperValue] = field(default_factory=list)
    unit: str = ""  # of the throughput, as the study gives it (or the workload's headline)


@dataclass(frozen=True)
class Case:
    study: str
    name: str
    results: tuple[Result, ...]
    values: tuple[PaperValue, ...]  # the published values its results hold
    stated: Stated = field(default_factory=dict)  # the pairs of its cells the study states (stated.py)


@dataclass(frozen=True)
class Relation:
    value: PaperValue
    config: str
    base: str
    metric: str
    scale: float | None  # config = base x scale
    offset: float | None  # config = base + offset


def _key(facts: Facts) -> str:
    return repr(sorted((k, repr(v)) for k, v in facts.items()))


def _round(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def _metric(v: PaperValue) -> str:
    """What the value sets of its configuration: throughput, lat:<stat>, share:<part>, cpu_util, target_cpu."""
    m = str(v.match.get("metric", "throughput"))
    if m in ("per_container", "max_throughput", "throughput"):
        return "throughput"
    lat = latency_metric(m)
    if lat is not None:
        return f"share:{lat.name}" if lat.stat == SHARE else f"lat:{lat.stat}" if lat.whole else f"part:{m}"
    return m


def _why_not(v: PaperValue, metric: str) -> str:
    """Why the value cannot be a result here, or "" when it can."""
    m = str(v.match.get("metric", "throughput"))
    if m in NOT_A_RESULT:
        return NOT_A_RESULT[m]
    if metric.startswith("part:"):
        return "a part of the latency in absolute terms: the findings read a part only as its share of the whole"
    if v.unit in ("percent", "ratio", "points") and not v.versus and not metric.startswith("share:"):
        if metric not in ("cpu_util", "target_cpu"):
            return "a change whose baseline configuration the study does not name"
    facts = {**v.match, **v.versus}
    if facts.get("hosts", 1) != 1 or facts.get("disks", 1) != 1:
        return "over two servers or two disks: a result of strata's is one configuration's, on one host and one device"
    return ""


def _absolute(v: PaperValue, metric: str) -> tuple[float, str]:
    """The value in the unit a result stores (ns for a latency, MB/s for KB/s), and the throughput's unit."""
    x = v.value
    if metric == "throughput":
        if v.match.get("metric") == "per_container":
            x *= int(v.match.get("containers", 1))
        if v.unit == "KB/s":
            return x / KB_PER_MB, "MB/s"
        return x, v.unit
    if metric.startswith("lat:"):
        return x * NS[v.unit], ""
    return x, ""


def inside(v: PaperValue) -> PaperValue:
    """The value as its configurations are set from it: a strict bound ("less than 1%") is a number just
    inside it, as the study says the number is below it, not at it, so that a criterion as strict as the
    study's ("< 1%") is held by it; an inclusive one ("up to") and any number are themselves."""
    said = bound(v)
    if said not in STRICT:
        return v
    return dataclasses.replace(v, value=v.value * (1 + STRICT[said] * INSIDE))


def _relation(v: PaperValue, metric: str, config: str, base: str) -> Relation:
    if v.unit == "points" or v.unit in NS:
        return Relation(v, config, base, metric, None, v.value * NS.get(v.unit, 1.0))
    scale = paper_ratio(v)
    if scale is None:
        raise ValueError(f"{v.source}, {v.what}: a change in {v.unit} the result set cannot read")
    return Relation(v, config, base, metric, scale, None)


@dataclass
class _Case:
    study: str
    name: str
    defaults: Facts
    configs: dict[str, Config] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    shares: list[tuple[str, str, float, PaperValue]] = field(default_factory=list)
    statements: Statements = field(default_factory=Statements)

    def config(self, facts: Mapping[str, JsonValue]) -> str:
        full: Facts = {**self.defaults, **{k: v for k, v in facts.items() if k != "metric"}}
        k = _key(full)
        self.configs.setdefault(k, Config(full))
        return k

    def add(self, v: PaperValue, metric: str) -> None:
        k = self.config(v.match)
        self.configs[k].values.append(v)
        n = inside(v)  # the number its configurations are set from
        if v.versus:
            base = self.config({**v.match, **v.versus})
            self.configs[base].values.append(v)
            self.relations.append(dataclasses.replace(_relation(n, metric, k, base), value=v))
            self.statements.relations.append((k, base, v))
        elif metric.startswith("share:"):
            self.shares.append((k, metric, n.value / 100.0, v))
            self.statements.own.setdefault(k, []).append(v)
        else:
            self.statements.absolute.setdefault(k, []).append(v)
            x, unit = _absolute(n, metric)
            self._set(k, metric, x, v)
            if unit:
                self.configs[k].unit = unit

    def _set(self, k: str, metric: str, x: float, v: PaperValue) -> bool:
        have = self.configs[k].metrics.get(metric)
        x = _round(x)
        if have is None:
            self.configs[k].metrics[metric] = x
            return True
        if not math.isclose(have, x, rel_tol=1e-6):
            raise ValueError(
                f"study {self.study}, case {self.name}: {v.what} gives {x:g} where the case already has {have:g} "
                f"({metric}): give one of them a case of its own (paper.yaml `case`)"
            )
        return False

    def solve(self) -> None:
        """Every relation's two sides, from whichever is known; an unknown pair's baseline at its anchor."""
        pending = list(self.relations)
        while pending:
            progress, left = False, []
            for r in pending:
                a, b = self.configs[r.config].metrics.get(r.metric), self.configs[r.base].metrics.get(r.metric)
                if b is not None:
                    self._set(r.config, r.metric, b * r.scale if r.scale is not None else b + (r.offset or 0), r.value)
                    progress = True
                elif a is not None:
                    self._set(r.base, r.metric, a / r.scale if r.scale is not None else a - (r.offset or 0), r.value)
                    progress = True
                else:
                    left.append(r)
            if not progress:  # neither side known: the first baseline at its anchor
                first = left[0]
                self._set(first.base, first.metric, ANCHORS[first.metric.split(":")[0]], first.value)
            pending = left
        for k, metric, share, v in self.shares:
            whole = self.configs[k].metrics.setdefault("lat:mean", ANCHORS["lat"])
            self._set(k, metric, share * whole, v)


@functools.cache
def _built() -> dict[str, tuple[tuple[Case, ...], tuple[LeftOut, ...]]]:
    out: dict[str, tuple[tuple[Case, ...], tuple[LeftOut, ...]]] = {}
    values = load()
    for s in load_studies():
        made, left = build(s.study, s.published, [v for v in values if v.study == s.study])
        out[s.study] = (tuple(made), tuple(left))
    return out


def build(study: str, published: JsonObject, values: list[PaperValue]) -> tuple[list[Case], list[LeftOut]]:
    """The study's cases (each with its stored results) and the values left out, with why."""
    cases: dict[str, _Case] = {}
    left: list[LeftOut] = []
    for v in values:
        metric = _metric(v)
        why = _why_not(v, metric)
        if why:
            left.append(LeftOut(v, why))
            continue
        name = v.case or v.where
        cases.setdefault(name, _Case(study, name, dict(obj(published, "defaults")))).add(v, metric)
    made = []
    for c in cases.values():
        c.solve()
        results: list[Result] = []
        why_not: dict[int, str] = {}  # a value whose configuration (or its baseline's) cannot be a result
        cells: dict[str, str] = {}  # configuration -> the key of its results' cell
        for k, cfg in c.configs.items():
            rs, why = _results(study, c.name, cfg, published)
            results += rs
            if rs:
                cells[k] = cell_key(rs[0].trial)
            for v in cfg.values if why else ():
                why_not.setdefault(id(v), why)
        ordered = list({id(v): v for cfg in c.configs.values() for v in cfg.values}.values())
        left += [LeftOut(v, why_not[id(v)]) for v in ordered if id(v) in why_not]
        held = tuple(v for v in ordered if id(v) not in why_not)
        if held:
            made.append(Case(study, c.name, tuple(results), held, c.statements.of_cells(cells)))
    return made, left


def spec_of(facts: Facts, published: JsonObject) -> JsonObject:
    """The one-trial experiment file of a configuration the study describes by its facts."""
    devices = obj(published, "devices")
    attached = facts.get("attached", "local")
    if not isinstance(attached, str) or attached not in devices:
        raise ValueError(f"studies.yaml published.devices has no {attached!r} device")
    fs = str(facts.get("filesystem", "xfs"))
    fs_type, _, option = fs.partition("-")
    said = str(facts.get("runtime", "native"))
    runtime = obj(published, "runtimes").get(said, said)
    if isinstance(runtime, dict):  # by the file system (study 004: the btrfs driver on btrfs, else overlay)
        runtime = runtime.get(fs_type, runtime["*"])
    limits = facts.get("limits")
    load: JsonObject = {k: facts[k] for k in LoadCounts.names() if k in facts}
    if limits not in (None, "none"):
        load["limits"] = {"preset": limits}
    return {
        "name": "published",
        "devices": [devices[attached]],
        "filesystems": [{"type": fs_type, "mount_options": [option]} if option else fs_type],
        "runtimes": [runtime],
        "paths": [facts.get("path", "bind")],
        "workloads": [_workload(facts, published)],
        "loads": [load],
    }


def _workload(facts: Facts, published: JsonObject) -> JsonValue:
    """The spec's workload entry: the study's label as a plugin's own one-word entry (a fio preset), else as
    studies.yaml maps it, with the database facts the label stands for (paper_match.facts_of reads them)."""
    from strata.workloads import REGISTRY
    from strata.workloads.base import Shorthand

    label = facts.get("workload")
    mapped = obj(published, "workloads").get(label) if isinstance(label, str) else None
    if mapped is None:
        if isinstance(label, str) and any(isinstance(w, Shorthand) and w.shorthand(label) for w in REGISTRY.values()):
            return label
        raise ValueError(f"studies.yaml published.workloads does not say what the study's {label!r} is")
    ((kind, said),) = as_obj(mapped, f"published.workloads.{label}").items()
    params = dict(as_obj(said, f"published.workloads.{label}.{kind}"))
    offered = REGISTRY[kind].metrics.offered
    if facts.get("profile") is not None:
        params["profile"] = facts["profile"]
    cluster = {k: facts[k] for k in ("nodes", "replication_factor") if facts.get(k) is not None}
    if cluster:
        params["cluster"] = {**obj(params, "cluster"), **cluster}
    if offered is not None and offered.databases and facts.get("clusters") is not None:
        params[offered.databases] = facts["clusters"]
    if offered is not None and facts.get("offered") is not None:
        params[offered.rate] = round((num(facts, "offered") or 0.0) * _peak(published))
    return {kind: params}


def _peak(published: JsonObject) -> float:
    """The study's peak rate, that an offered share is of (studies.yaml published.peak)."""
    peak = num(published, "peak")
    if peak is None:
        raise ValueError("studies.yaml published has no peak, that an offered share is of")
    return peak


def _trial(spec: JsonObject) -> tuple[JsonObject, dict[str, str]]:
    """The resolved trial of a one-trial spec (as the runner stores it) and its labels."""
    from strata.experiment.expand import Trial
    from strata.experiment.load import parse_spec

    exp, workloads = parse_spec(spec, Path("."), "studies.yaml published")
    dev, fs, rt, path, wl, ld = (
        exp.devices[0],
        exp.filesystems[0],
        exp.runtimes[0],
        exp.paths[0],
        workloads[0],
        exp.loads[0],
    )
    t = Trial(dev, fs, rt, path, wl, ld, 0)
    labels = {"device": dev.name, "filesystem": fs.name, "runtime": rt.name, "path": path, "workload": wl.name}
    return t.resolved(), {**labels, "load": ld.name}


def _results(study: str, case: str, cfg: Config, published: JsonObject) -> tuple[list[Result], str]:
    """The configuration's stored results (two identical repetitions), or why it cannot have any."""
    from strata.analysis.cells.cells import schema_of

    if cfg.facts.get("workload") is None:
        return [], "the study names no workload for it"
    trial, labels = _trial(spec_of(cfg.facts, published))
    layers = TrialDoc.of(trial)
    workload = layers.workload.params
    schema = schema_of(layers.workload.type)
    m = dict(cfg.metrics)
    unit = cfg.unit  # the study's unit of a throughput it gives; else the workload's headline's
    if "throughput" not in m:
        offered = schema.offered
        rate = offered.absolute(workload) if offered is not None else None
        if offered is not None and rate is not None:  # the load generator held the database to it (study 001)
            m["throughput"] = float(rate) * int(offered.databases_of(workload) or 1)
        elif schema.in_flight and "lat:mean" in m:  # Little's law: the I/Os in flight over the mean latency
            flight = LoadCounts.of(layers.load).in_flight
            m["throughput"] = _round(flight / (m["lat:mean"] / 1e9))
        else:
            said = ", ".join(WORDS.get(k, k) for k in sorted(m)) or "nothing"
            return [], f"the study gives no throughput of its configuration (every result has one), only {said}"
    heads = [f for f in schema.fields if f.headline]
    head = next((f for f in heads if f.unit == unit), heads[0] if heads else None)
    result: JsonObject = {
        "schema_version": SCHEMA_VERSION,
        "run_id": f"study {study}",
        "experiment": f"study {study} {case}",
        "status": "ok",
        "stack": f"{labels['device']}/{labels['filesystem']}/{labels['runtime']}/{labels['path']}",
        "metrics": {
            "kind": workload.get("type"),
            "primary": headline(m["throughput"], unit or (head.unit if head else ""), head.name if head else "value"),
        },
        "flags": {},
        "warnings": [],
        "host": {"hostname": f"study {study}", "cpus": 1},
        "collectors": {},
    }
    for key, x in m.items():  # where the workload declares each (core/metrics.py), read direction
        kind, _, name = key.partition(":")
        field_name = schema.total_latency if kind == "lat" else name if kind == "share" else None
        declared = schema.field("latency", field_name) if field_name else None
        if declared is not None:
            _put(result, declared.path("read") + (name if kind == "lat" else "mean",), x)
        if key == "lat:mean" and schema.mix is not None:  # a database's mean over its operations
            mix: JsonObject = {schema.mix.count: 1, schema.mix.mean: x / schema.mix.ns}
            _put(result, schema.mix.key + ("ALL",), mix)
    if "cpu_util" in m:  # the servers' CPU: sar on the servers, no load generator's share to take off
        _put(result, ("collectors", "host", "cpu_idle_percent"), 100.0 - m["cpu_util"])
    if "target_cpu" in m:  # of the host's one CPU (`cpus`)
        _put(result, ("collectors", "remote_procs", "target"), {"pid": 0, "cpu_percent": m["target_cpu"]})
    out = []
    for rep in range(REPETITIONS):
        r = copy.deepcopy(result)
        r["trial_id"] = hashlib.sha256(f"{study} {case} {_key(cfg.facts)} {rep}".encode()).hexdigest()[:16]
        lab: JsonObject = {**labels, "repetition": rep}
        r["labels"], r["trial"] = lab, {**trial, "repetition": rep}
        out.append(Result.from_stored(r))  # as the store would load it
    return out, ""


def _put(d: JsonObject, path: tuple[str, ...], x: JsonValue) -> None:
    for k in path[:-1]:
        d = as_obj(d.setdefault(k, {}), k)
    d[path[-1]] = x


def cases(study: str) -> tuple[Case, ...]:
    return _built().get(study, ((), ()))[0]


def left_out(study: str) -> tuple[LeftOut, ...]:
    return _built().get(study, ((), ()))[1]


def studies_of(f: Finding) -> list[str]:
    """The studies a finding's source names."""
    return list(dict.fromkeys(re.findall(r"study (\d{3})", f.source)))


@functools.cache
def measured(study: str, case: str) -> Measurements:
    c = next(x for x in cases(study) if x.name == case)
    return Measurements.of(list(c.results), judge_steady=False)


def judged(f: Finding, study: str | None = None) -> Outcome:
    """The finding's check on its studies' own numbers (or on `study`'s alone): held, not held,
    inconclusive, or not measured when they hold nothing it compares. Each case is judged apart; each
    number says which case it comes from, without the interval and significance of an exact number, and
    whether it is derived, not stated by the study, or rests on a bound it gives (stated.py `marks`)."""
    outcomes = []
    for st in [study] if study is not None else studies_of(f):
        for c in cases(st):
            o = f.check(view(measured(st, c.name)))
            if o.status != NOT_MEASURED:
                said = [marks(c.stated, of) for of in o.compared]
                outcomes.append((f"study {st} {c.name}", dataclasses.replace(o, numbers=_marked(o.numbers, said))))
    if not outcomes:
        return Outcome(NOT_MEASURED)
    statuses = {o.status for _, o in outcomes}
    status = NOT_HELD if NOT_HELD in statuses else INCONCLUSIVE if INCONCLUSIVE in statuses else HELD
    many = sum(len(o.numbers) for _, o in outcomes) > 1
    numbers = []
    for where, o in outcomes:
        for n in o.numbers:
            mark = " (against)" if many and o.status == NOT_HELD and len(o.numbers) == 1 else ""
            numbers.append(f"{where}: {EXACT.sub('', n)}{mark}")
    return Outcome(status, numbers, [n for _, o in outcomes for n in o.needs])


def said(f: Finding) -> str:
    """The study's words on a finding, for the report: the quotation and its section; for strata's own
    reading, that it is one, and its verdict on the study's own numbers with every counter-example they hold."""
    if f.quote is not None:
        q = quotes.by_id(f.quote)
        return f'"{q.quote}" (study {q.study}, section {q.section})'
    o = judged(f)
    against = [n.removesuffix(" (against)") for n in o.numbers if n.endswith(" (against)")]
    head = f"strata's own reading of {f.reading}: no sentence of the study says it"
    if not o.numbers:
        return f"{head}; the study's numbers hold nothing it compares"
    if not against:
        return f"{head}; on the study's own numbers: {o.status} ({len(o.numbers)} of {len(o.numbers)})"
    return f"{head}; on the study's own numbers: {o.status}, {len(against)} of {len(o.numbers)} against: " + "; ".join(
        against
    )


def _marked(numbers: list[str], said: list[str]) -> list[str]:
    """Each number with what it must say, before its verdict's mark (" (against)", " (undecided)")."""
    out = []
    for n, m in zip(numbers, said):
        head, verdict_mark = n, ""
        for end in (" (against)", " (undecided)"):
            if n.endswith(end):
                head, verdict_mark = n.removesuffix(end), end
        out.append(f"{EXACT.sub('', head)}{m}{verdict_mark}")
    return out


# the interval of an exact number is the number: "0.75x raw [0.75, 0.75]", "+25.0% [+25.0%, +25.0%] (significant)"
EXACT = re.compile(r" \[([^\[\],]+), \1\]( \((not )?significant\))?")
