"""The paper beside the user: each study's published numbers (paper.yaml) next to the same quantity here.

Absolute numbers of an NVMe SSD and of a loop file do not compare, so each side is read against its own
baseline: a table's values (study 004's MB/s per container, study 001's CPU and latencies) relative to
that table's best configuration on each side, and a stated ratio or percentage (to the raw device, to
another file system, to no limit, ...) against the same ratio here, between the configurations the value
names (`versus`). What is compared is the *shape*: which configuration is best and worst in the paper and
here, and how far their orders agree (Spearman's rank correlation over the configurations both have). A
paper's number is never drawn as if it were measured here: it is shown in a column of its own, named
with its study, table and hardware, each side in its own unit.

Which configurations a value speaks of is paper_match.py's: by what the study means (a load by its jobs
and depth, an offered rate by its share of the cluster's peak), the same for results and for plans.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from strata.analysis.cells import usage
from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import summary_of
from strata.analysis.studies.paper import SHARE, PaperValue, latency_metric, load
from strata.analysis.studies.paper_match import (
    SWEPT,
    Facts,
    as_number,
    baseline_facts,
    facts_of,
    is_baseline,
    matches,
    sweep_points,
)
from strata.core.jsondoc import JsonValue
from strata.core.metrics import dig
from strata.core.params import DEPTH, JOBS
from strata.results.result import Result

# Units that measure throughput (higher is better) and time (lower is better).
THROUGHPUT_UNITS = ("MB/s", "KB/s", "IOPS", "ops/s")
TIME_UNITS = ("ms", "us")
NS_PER = {"ms": 1e6, "us": 1e3}
LOWER_BETTER = ("cpu_util", "target_cpu")  # and every latency (paper.latency_metric)
# What a group of values measures, in words, when it is not the workload's throughput (a latency: its own).
SUBJECTS = {
    "per_container": "per container",
    "max_throughput": "maximum throughput",
    "cpu_util": "CPU utilization",
    "target_cpu": "the storage target's CPU",
    "disk_bw": "disk bandwidth",
    "peak": "containers at the peak",
}
DOWN = ("below", "lower", "less", "worse", "slower", "drop", "drops", "degrade", "lose", "loses")


@dataclass
class Pair:
    value: PaperValue
    cells: list[Cell]
    yours: float | None  # the same quantity here (a ratio for a stated value), or None: not measured here
    unit_here: str = ""  # the unit of `yours`: each side is shown in its own
    here: str = ""  # how it ran here, when the paper's configuration is a share (the rate offered)

    @property
    def label(self) -> str:
        return " ".join(_parts(self.value.match)) or self.value.what

    @property
    def measured_here(self) -> float:
        """`yours` of a pair measured here (Beside.measured holds only those)."""
        if self.yours is None:
            raise ValueError(f"{self.label} is not measured here")
        return self.yours


def _parts(m: Mapping[str, JsonValue]) -> list[str]:
    """The configuration a value names, in words, from its match keys."""
    out = [str(m[k]) for k in ("filesystem", "path") if k in m and "*" not in str(m[k])]
    if "runtime" in m:
        out.append(str(m["runtime"]).split(":")[0] if "*" in str(m["runtime"]) else str(m["runtime"]))
    if "attached" in m:
        out.append("direct-attached" if m["attached"] == "local" else str(m["attached"]))
    if JOBS in m or DEPTH in m:
        jobs = m.get(JOBS, "*")
        out.append(f"{jobs} job{'' if jobs == 1 else 's'} x QD{m.get(DEPTH, '*')}")
    if "limits" in m:
        out.append(str(m["limits"]))
    if "profile" in m:
        out.append(str(m["profile"]))
    if "offered" in m:
        out.append(f"at {as_number(m['offered']):.0%} of the peak")
    if "replication_factor" in m:
        out.append(f"RF {m['replication_factor']}")
    if "containers" in m:
        out.append(f"{m['containers']} container{'s' if m['containers'] != 1 else ''}")
    return out


@dataclass
class Beside:
    study: str
    where: str
    subject: str  # the workload (or the statement) the group is about
    unit: str
    pairs: list[Pair] = field(default_factory=list)
    kind: str = "table"  # table: values read against each side's best; stated: a ratio to a baseline
    metric: str = "throughput"

    @property
    def measured(self) -> list[Pair]:
        return [p for p in self.pairs if p.yours is not None]

    @property
    def lower_better(self) -> bool:
        return self.unit in TIME_UNITS or self.metric in LOWER_BETTER or latency_metric(self.metric) is not None

    def label(self, pair: Pair) -> str:
        """What tells the pair apart within its group (the words every pair shares left out)."""
        parts = [_parts(p.value.match) for p in self.pairs]
        common = set.intersection(*(set(x) for x in parts)) if len(parts) > 1 else set()
        own = [w for w in _parts(pair.value.match) if w not in common]
        return " ".join(own) or pair.label

    def relative(self, pair: Pair, yours: bool) -> float | None:
        """A value against its side's best of the group (1.0 = the best)."""
        vals = [(p.measured_here if yours else p.value.value) for p in self.measured]
        v = pair.yours if yours else pair.value.value
        if v is None or not vals:
            return None
        if self.lower_better:
            return min(vals) / v if v else None
        return v / max(vals) if max(vals) else None

    @property
    def rank_agreement(self) -> float | None:
        """Spearman's rho between the paper's and this host's order of the configurations both have."""
        m = self.measured
        if len(m) < 3:
            return None
        a, b = _ranks([p.value.value for p in m]), _ranks([p.measured_here for p in m])
        n = len(m)
        d2 = sum((x - y) ** 2 for x, y in zip(a, b))
        return 1 - 6 * d2 / (n * (n * n - 1))

    def shape(self) -> str:
        """One sentence: where the shape agrees and where it does not."""
        head = f"study {self.study} {self.where} ({self.subject})"
        m = self.measured
        if self.kind == "stated":
            said = "; ".join(_stated(p) for p in m)
            return f"{head}: {said}" if m else f"{head}: not measured here"
        if len(m) == 1:
            p, rest = m[0], len(self.pairs) - 1
            also = f" ({rest} other configuration{'s' if rest > 1 else ''} of it not measured here)" if rest else ""
            return f"{head}: {p.label}: {_num(p.value.value)} {_unit(p.value.unit)} in the paper, {_here(p)} here{also}"
        better = min if self.lower_better else max
        pb, yb = better(m, key=lambda p: p.value.value), better(m, key=lambda p: p.measured_here)
        worse = max if better is min else min
        pw, yw = worse(m, key=lambda p: p.value.value), worse(m, key=lambda p: p.measured_here)
        lab = self.label
        best = f"{lab(pb)} best in the paper and here" if pb is yb else f"best: {lab(pb)} in the paper, {lab(yb)} here"
        if pw is yw:
            worst = f"{lab(pw)} worst in both"
        else:
            rank = sorted(m, key=lambda p: p.measured_here, reverse=better is max).index(pw) + 1
            worst = f"worst: {lab(pw)} in the paper ({_ordinal(rank)} of {len(m)} here), {lab(yw)} here"
        rho = self.rank_agreement
        agree = f"; order agreement (Spearman) {rho:+.2f} over {len(m)} configurations" if rho is not None else ""
        return f"{head}: {best}; {worst}{agree}"


def _unit(unit: str) -> str:
    return "%" if unit == "percent" else unit


def _num(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:g}" if v == round(v, 2) else f"{v:.3g}"


def _here(p: Pair) -> str:
    return f"{_num(p.yours)} {p.unit_here}" if p.yours is not None else "not measured"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def paper_ratio(v: PaperValue) -> float | None:
    """A stated ratio or percentage as a ratio to its baseline (25% below -> 0.75)."""
    if v.unit == "ratio":
        return v.value
    if v.unit == "percent":  # the direction is in the words, a bound's "(less than)" aside
        words = set(re.findall(r"[a-z]+", re.sub(r"\([^)]*\)", " ", v.what.lower())))
        return 1 - v.value / 100 if words & set(DOWN) else 1 + v.value / 100
    return None


def _stated(p: Pair) -> str:
    if p.value.unit == "points":  # a difference of two percentages, on each side
        return f"{p.label}: {p.value.value:+g} points over {p.value.baseline} in the paper, {p.yours:+.1f} here"
    r = paper_ratio(p.value)
    said = f"{r:.2f}x {p.value.baseline}" if r is not None else f"{_num(p.value.value)} {_unit(p.value.unit)}"
    return f"{p.label}: {said} in the paper, {p.yours:.2f}x here"


class _Facts:
    """Every cell's facts (paper_match.facts_of), indexed by each fact, so that a value's exact keys (a
    workload, a file system) pick its candidates before the patterns are tried: a report of 10,000 trials
    has thousands of cells and the studies a hundred and more values."""

    def __init__(self, cells: list[Cell]):
        self.cells = cells
        self.facts = [facts_of(c.labels, c.layers) for c in cells]
        self.here: dict[int, str] = {}
        _derive_offered(self)
        self.index: dict[str, dict[str, set[int]]] = {}
        for i, have in enumerate(self.facts):
            for k, v in have.items():
                self.index.setdefault(k, {}).setdefault(str(v), set()).add(i)

    def _pool(self, wanted: Mapping[str, JsonValue], exact_only: bool) -> list[int]:
        candidates: set[int] | None = None
        for k, want in wanted.items():
            if k in ("metric", "offered") or k not in self.index:
                continue
            if isinstance(want, str) and any(ch in want for ch in "*?["):
                continue
            if not exact_only and want is None:
                continue
            found = self.index[k].get(str(want), set())
            candidates = found if candidates is None else candidates & found
        return list(range(len(self.facts))) if candidates is None else sorted(candidates)

    def matching(self, match: Mapping[str, JsonValue]) -> list[int]:
        """The cells `match` names, in the cells' order (paper_match.matches decides; the index narrows)."""
        return [i for i in self._pool(match, False) if matches(self.facts[i], match)]

    def baseline(self, i: int, versus: Mapping[str, JsonValue]) -> Cell | None:
        """The cell of the configuration cell i is relative to (`versus` in place of its own facts)."""
        wanted = baseline_facts(self.facts[i], versus)
        found = [j for j in self._pool(wanted, True) if j != i and is_baseline(self.facts[j], wanted)]
        found = [j for j in found if self.cells[j].values]
        return self.cells[found[0]] if found else None


def _derive_offered(f: _Facts) -> None:
    """An absolute offered rate as its share of the flat-out run of the same configuration, and how each
    database's rate ran here (a relative target's from its own peak)."""
    flat: dict[str, Cell] = {}
    for c, have in zip(f.cells, f.facts):
        if have.get("offered") == 1.0 and c.values:
            flat[_without_rate(have)] = c
    for i, (c, have) in enumerate(zip(f.cells, f.facts)):
        wl, offered = c.workload, c.schema.offered
        if offered is None or not c.values:
            continue
        dbs = c.containers * int(offered.databases_of(wl) or 1)
        if offered.relative(wl) is not None:
            peak = usage.of_cell(c.ok, _at(offered.peak))
            rate = usage.of_cell(c.ok, _at(offered.offered))
            if peak.n and rate.n:
                f.here[i] = _offered_text(rate.mean, offered.relative(wl), peak.mean, "measured just before")
        elif offered.absolute(wl) is not None:
            base = flat.get(_without_rate(have))
            if base is not None and summary_of(base).mean:
                share = offered.absolute(wl) / (summary_of(base).mean / dbs)
                have["offered"] = share
                f.here[i] = _offered_text(offered.absolute(wl), share, summary_of(base).mean, "of the flat-out run")


def _at(path: tuple[str, ...]) -> Callable[[Result], float | None]:
    """The value a stored result holds at `path` (where a workload's declaration says it keeps it)."""
    return lambda r: dig(r, path)


def _without_rate(have: Facts) -> str:
    return repr(
        sorted((k, repr(v)) for k, v in have.items() if k not in ("offered", "peak_measured", "workload", "load"))
    )


def _offered_text(rate: float, share: float, peak: float, how: str) -> str:
    return f"{rate:,.0f} ops/s offered to each database: {share:.0%} of the {peak:,.0f} ops/s peak {how}"


def _figure(c: Cell, metric: str, unit: str) -> tuple[float | None, str]:
    """The cell's figure for `metric`, in the paper's unit where the kinds agree, and that unit."""
    if metric == "per_container":
        return summary_of(c).mean / c.containers, c.unit
    offered = c.schema.offered
    if metric == "max_throughput":
        if offered is not None and offered.relative(c.workload) is not None:
            peaks = usage.of_cell(c.ok, _at(offered.peak))
            return (peaks.mean if peaks.n else None), "ops/s"
        return summary_of(c).mean, c.unit
    lat = latency_metric(metric)
    if lat is not None and lat.stat != SHARE:
        return _latency(c, lat.name, lat.stat, unit)
    if lat is not None:  # a part's share of the whole latency
        part, total = c.latency(lat.name, "mean"), c.latency(None, "mean")
        return (100 * part.mean / total.mean if part.n and total.n and total.mean else None), "%"
    per_trial = {
        "cpu_util": usage.server_cpu_percent,
        "target_cpu": usage.target_cpu_percent,
        "disk_bw": usage.disk_mb_s,
    }
    if metric in per_trial:
        s = usage.of_cell(c.ok, per_trial[metric])
        return (s.mean if s.n else None), ("MB/s" if metric == "disk_bw" else "%")
    if metric == "throughput":
        return summary_of(c).mean, c.unit
    return None, ""


def _latency(c: Cell, name: str, stat: str, unit: str) -> tuple[float | None, str]:
    """A latency statistic of the cell, in the paper's time unit where it has one, else in ns. A mean of
    the whole over a mix of operation types is over all of them (`MetricSchema.mix`: a database's)."""
    whole_mean = name == c.schema.total_latency and stat == "mean"
    s = c.mean_over_operations() if whole_mean else c.latency(name, stat)
    if not s.n:
        return None, ""
    return (s.mean / NS_PER[unit], unit) if unit in NS_PER else (s.mean, "ns")


def _peak_containers(cells: list[Cell]) -> float | None:
    """The container count of the highest aggregate throughput, over a sweep of otherwise equal cells."""
    facts = [facts_of(c.labels, c.layers) for c in cells]
    if sweep_points(facts, "containers") < 2:
        return None
    return float(max(cells, key=lambda c: summary_of(c).mean).containers)


def _yours(v: PaperValue, f: _Facts, idx: list[int]) -> tuple[float | None, str]:
    """The user's figure for the value's quantity over the matched cells, and its unit."""
    ok = [i for i in idx if f.cells[i].values]
    if not ok:
        return None, ""
    metric = str(v.match.get("metric", "throughput"))
    if metric == "max_throughput":  # a maximum is measured flat out, or by a relative target's peak
        ok = [i for i in ok if f.facts[i].get("peak_measured")]
    if v.versus:
        ratios = []
        for i in ok:
            base = f.baseline(i, v.versus)
            if base is None:
                continue
            a, _ = _figure(f.cells[i], metric, "")
            b, _ = _figure(base, metric, "")
            if a is not None and b is not None and v.unit == "points":  # percentage points: the difference
                ratios.append(a - b)
            elif a is not None and b:
                ratios.append(a / b)
        unit = "points" if v.unit == "points" else "x"
        return (sum(ratios) / len(ratios), unit) if ratios else (None, "")
    if metric in SWEPT:
        return (_peak_containers([f.cells[i] for i in ok]), "containers") if metric == "peak" else (None, "")
    figures = [_figure(f.cells[i], metric, v.unit) for i in ok]
    vals = [x for x, _ in figures if x is not None]
    if not vals:
        return None, ""
    unit = next(u for x, u in figures if x is not None)
    return (max(vals) if metric == "disk_bw" else sum(vals) / len(vals)), unit


def beside(cells: list[Cell], values: list[PaperValue] | None = None) -> list[Beside]:
    """The groups of the studies' values that this result set measures at least once."""
    values = load() if values is None else values
    f = _Facts(cells)
    groups: dict[tuple[object, ...], Beside] = {}
    for v in values:
        stated = bool(v.versus)
        metric = str(v.match.get("metric", "throughput"))
        workload = str(v.match.get("workload", ""))
        lat = latency_metric(metric)
        said = lat.subject if lat is not None else SUBJECTS.get(metric, "")
        if "*" in workload or not workload:
            subject = said or workload
        else:
            subject = workload if metric in ("throughput", "per_container") else f"{workload}, {said}"
        subject = v.what if stated else subject
        key = (v.study, v.where, subject if stated else (subject, v.unit, metric))
        g = groups.setdefault(
            key, Beside(v.study, v.where, subject, v.unit, kind="stated" if stated else "table", metric=metric)
        )
        idx = f.matching(v.match)
        yours, unit = _yours(v, f, idx)
        if yours is not None and not math.isfinite(yours):
            yours = None
        here = "; ".join(dict.fromkeys(f.here[i] for i in idx if i in f.here))
        g.pairs.append(Pair(v, [cells[i] for i in idx], yours, unit, here))
    return [g for g in groups.values() if g.measured]
