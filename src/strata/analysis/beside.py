"""The paper beside the user: each study's published numbers (paper.yaml) next to the same quantity here.

Absolute numbers of an NVMe SSD and of a loop file do not compare, so each side is read against its own
baseline: a table's values (study 004's MB/s per container, study 001's latencies) relative to that
table's best configuration on each side, and a stated ratio or percentage to the raw device against the
user's own ratio to their raw device. What is compared is the *shape*: which configuration is best and
worst in the paper and here, and how far their orders agree (Spearman's rank correlation over the
configurations both have). A paper's number is never drawn as if it were measured here: it is shown in a
column of its own, named with its study, table and hardware.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from strata.analysis.baseline import ratio_to_raw, raw_index
from strata.analysis.cells import Cell
from strata.analysis.paper import PaperValue, load

# Units that measure throughput (higher is better) and time (lower is better); the rest are not compared.
THROUGHPUT_UNITS = ("MB/s", "KB/s", "IOPS", "ops/s")
TIME_UNITS = ("ms", "us")
DOWN = re.compile(r"\b(below|lower|less|worse|slower|drops?|degrad\w*|loses?)\b")


@dataclass
class Pair:
    value: PaperValue
    cells: list[Cell]
    yours: float | None  # the same quantity here (in the paper's unit kind), or None: not measured here

    @property
    def label(self) -> str:
        m = self.value.match
        parts = [
            str(m[k]) for k in ("filesystem", "path", "runtime", "load", "limits") if k in m and "*" not in str(m[k])
        ]
        if "containers" in m:
            parts.append(f"{m['containers']} container{'s' if m['containers'] != 1 else ''}")
        return " ".join(parts) or self.value.what


@dataclass
class Beside:
    study: str
    where: str
    subject: str  # the workload (or the statement) the group is about
    unit: str
    pairs: list[Pair] = field(default_factory=list)
    kind: str = "table"  # table: values read against each side's best; stated: a ratio to a baseline

    @property
    def measured(self) -> list[Pair]:
        return [p for p in self.pairs if p.yours is not None]

    def relative(self, pair: Pair, yours: bool) -> float | None:
        """A value against its side's best of the group (1.0 = the best)."""
        vals = [(p.yours if yours else p.value.value) for p in self.measured]
        v = pair.yours if yours else pair.value.value
        if v is None or not vals:
            return None
        if self.unit in TIME_UNITS:
            return min(vals) / v if v else None
        return v / max(vals) if max(vals) else None

    @property
    def rank_agreement(self) -> float | None:
        """Spearman's rho between the paper's and this host's order of the configurations both have."""
        m = self.measured
        if len(m) < 3:
            return None
        a, b = _ranks([p.value.value for p in m]), _ranks([p.yours for p in m])
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
        if len(m) < 2:
            return f"{head}: {len(m)} of its {len(self.pairs)} configurations measured here: nothing to compare"
        better = max if self.unit not in TIME_UNITS else min
        pb, yb = better(m, key=lambda p: p.value.value), better(m, key=lambda p: p.yours)
        worse = min if better is max else max
        pw, yw = worse(m, key=lambda p: p.value.value), worse(m, key=lambda p: p.yours)
        best = (
            f"{pb.label} best in the paper and here" if pb is yb else f"best: {pb.label} in the paper, {yb.label} here"
        )
        if pw is yw:
            worst = f"{pw.label} worst in both"
        else:
            rank = sorted(m, key=lambda p: p.yours, reverse=better is max).index(pw) + 1
            worst = f"worst: {pw.label} in the paper ({_ordinal(rank)} of {len(m)} here), {yw.label} here"
        rho = self.rank_agreement
        agree = f"; order agreement (Spearman) {rho:+.2f} over {len(m)} configurations" if rho is not None else ""
        return f"{head}: {best}; {worst}{agree}"


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
    if v.unit == "percent":
        return 1 - v.value / 100 if DOWN.search(v.what.lower()) else 1 + v.value / 100
    return None


def _stated(p: Pair) -> str:
    r = paper_ratio(p.value)
    return f"{p.label}: {r:.2f}x {p.value.baseline} in the paper, {p.yours:.2f}x here"


def _facts(c: Cell) -> dict:
    """What a study's value may name of a configuration (paper.yaml's `match` keys)."""
    lab = c.labels
    return {
        "workload": lab.get("workload"),
        "filesystem": lab.get("filesystem"),
        "runtime": lab.get("runtime"),
        "path": c.path,
        "containers": c.containers,
        "load": lab.get("load"),
        "limits": (c.load.get("limits") or {}).get("preset"),
        "attached": "remote" if c.trial.get("device", {}).get("type") == "remote" else "local",
    }


def _matches(have: dict, match: dict) -> bool:
    for k, want in match.items():
        if k == "metric":
            continue
        v = have.get(k)
        if isinstance(want, int) and not isinstance(want, bool):
            if v != want:
                return False
        elif v is None or not fnmatchcase(str(v), str(want)):
            return False
    return True


class _Facts:
    """Every cell's facts, indexed by each exact fact, so that a value's exact keys (a workload, a file
    system) pick its candidates before the patterns are tried: a report of 10,000 trials has thousands of
    cells and the studies a hundred values."""

    def __init__(self, facts: list[dict]):
        self.facts = facts
        self.index: dict[str, dict[str, set[int]]] = {}
        for i, have in enumerate(facts):
            for k, v in have.items():
                self.index.setdefault(k, {}).setdefault(str(v), set()).add(i)

    def matching(self, match: dict) -> list[int]:
        """The indexes of the cells `match` names, in the cells' order (_matches decides; the index narrows)."""
        candidates: set[int] | None = None
        for k, want in match.items():
            if k == "metric" or k not in self.index or (isinstance(want, str) and any(ch in want for ch in "*?[")):
                continue
            found = self.index[k].get(str(want), set())
            candidates = found if candidates is None else candidates & found
        pool = range(len(self.facts)) if candidates is None else sorted(candidates)
        return [i for i in pool if _matches(self.facts[i], match)]


def _yours(v: PaperValue, cells: list[Cell], raws: dict) -> float | None:
    """The user's number for the same quantity, as the paper's unit kind, from the matched cells."""
    ok = [c for c in cells if c.values]
    if not ok:
        return None
    metric = v.match.get("metric", "throughput")
    if v.baseline and "raw" in v.baseline.lower() and v.unit in ("percent", "ratio") and metric == "throughput":
        ratios = [r.value for r in (ratio_to_raw(c, raws) for c in ok) if r is not None and r.value]
        return sum(ratios) / len(ratios) if ratios else None
    if v.baseline is not None:
        return None  # a change against another configuration: the findings judge those
    if metric == "per_container" and v.unit in THROUGHPUT_UNITS:
        return sum(c.summary.mean / c.containers for c in ok) / len(ok)
    if metric == "throughput" and v.unit in THROUGHPUT_UNITS:
        return sum(c.summary.mean for c in ok) / len(ok)
    if metric == "lat_mean" and v.unit in TIME_UNITS:
        lat = [c.latency("lat", "mean") for c in ok]
        vals = [s.mean for s in lat if s.n]
        return sum(vals) / len(vals) if vals else None
    return None


def beside(cells: list[Cell], values: list[PaperValue] | None = None) -> list[Beside]:
    """The groups of the studies' values that this result set measures at least once."""
    values = load() if values is None else values
    raws = raw_index(cells)
    facts = _Facts([_facts(c) for c in cells])
    groups: dict[tuple, Beside] = {}
    for v in values:
        stated = v.baseline is not None
        if not stated and v.unit not in THROUGHPUT_UNITS + TIME_UNITS:
            continue
        subject = str(v.match.get("workload", "")) if not stated else v.what
        key = (v.study, v.where, subject if stated else (subject, v.unit, v.match.get("metric")))
        g = groups.setdefault(key, Beside(v.study, v.where, subject, v.unit, kind="stated" if stated else "table"))
        matched = [cells[i] for i in facts.matching(v.match)]
        g.pairs.append(Pair(v, matched, _yours(v, matched, raws)))
    return [g for g in groups.values() if g.measured]
