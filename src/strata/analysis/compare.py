"""Compare two result sets trial by trial (`strata compare A B`).

Results of two hosts (or two runs) are matched on what was measured, the
labels device/filesystem/runtime/path/workload/load, never on trial ids,
which differ between hosts whose specs differ in any detail. Each match gives
B relative to A, decided as analysis/decisions/answer.py decides every comparison:
higher, lower, the same within +-margin (A's `margin`, 5% by default), or
undecided, on the log-scale 95% interval of the ratio of means (as pyperf's
`compare_to` tells a change from noise). "Worse" follows the direction the workload
declares for its headline (lower IOPS, or higher latency where that is the headline).

As a gate (`strata compare A B --fail-on LEVEL`), a match fails at one of three levels,
each holding the one before: `worse`, B decided worse than A by more than the margin (the
whole interval beyond it); `regression`, B decided worse at all (the interval excludes no
change, and does not lie within the margin); `undecided`, B not shown to be equivalent or
better (also every match without an interval).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from strata.analysis.advice.compared import higher_is_better
from strata.analysis.cells.across import judged_cells
from strata.analysis.cells.cells import LABEL_KEYS, Cell
from strata.analysis.cells.query import summary_of
from strata.analysis.decisions.answer import BETTER, EQUIVALENT, UNDECIDED, WORSE, Answer, answer
from strata.core.jsondoc import JsonObject
from strata.results.result import Result

STATUS = {BETTER: "higher", WORSE: "lower", EQUIVALENT: "same"}
FAIL_ON = ("worse", "regression", "undecided")  # the gate's levels, each holding the one before


def status(a: Answer) -> str:
    """higher / lower: beyond the interval; same: the interval lies within +-margin; undecided otherwise."""
    return STATUS.get(a.outcome, "undecided")


@dataclass
class Match:
    labels: dict[str, str]  # the cell's (cells.LABEL_KEYS)
    unit: str
    a: Cell
    b: Cell
    change: Answer
    differs: list[str]

    @property
    def status(self) -> str:
        """higher, lower, same or undecided: B's mean against A's (the direction is in `better`)."""
        a = self.change
        if a.outcome == EQUIVALENT or a.outcome == UNDECIDED:
            return status(a)
        return "higher" if (a.outcome == BETTER) == a.higher_is_better else "lower"

    @property
    def better(self) -> str:
        """better, worse, same or undecided: B against A in the workload's own direction."""
        return {BETTER: "better", WORSE: "worse", EQUIVALENT: "same"}.get(self.change.outcome, "undecided")

    def fails(self, level: str) -> bool:
        """Whether this match fails the gate at `level` (FAIL_ON; the module's docstring)."""
        o = self.change.outcome
        if level == "worse":
            return o == WORSE and self.change.beyond_margin
        if level == "regression":
            return o == WORSE
        return o in (WORSE, UNDECIDED)

    @property
    def name(self) -> str:
        lab = self.labels
        return f"{lab['device']}/{lab['filesystem']}/{lab['runtime']}/{lab['path']} {lab['workload']} {lab['load']}"


@dataclass
class Comparison:
    matches: list[Match]
    only_a: list[str]
    only_b: list[str]
    unit_mismatch: list[str]


def _index(cells: list[Cell]) -> dict[tuple[str, ...], Cell]:
    out: dict[tuple[str, ...], Cell] = {}
    for c in cells:
        if c.values:
            out.setdefault(tuple(c.labels[k] for k in LABEL_KEYS), c)
    return out


def _differs(a: Cell, b: Cell) -> list[str]:
    """Parameters that differ under the same labels (a 1 GiB file on one host, 4 GiB on the other)."""
    out = []
    for section in ("device", "filesystem", "runtime", "workload", "load"):
        x, y = a.layers.section(section), b.layers.section(section)
        out += [
            f"{section}.{k}: {x.get(k)} vs {y.get(k)}"
            for k in sorted(set(x) | set(y))
            if k != "name" and x.get(k) != y.get(k)
        ]
    return out


def compare(
    results_a: Iterable[Result | JsonObject], results_b: Iterable[Result | JsonObject], margin: float | None = None
) -> Comparison:
    """B against A, configuration by configuration, at `margin` (default: A's, from its spec)."""
    ca, cb = judged_cells(results_a, judge_steady=False), judged_cells(results_b, judge_steady=False)
    ia, ib = _index(ca), _index(cb)
    matches, mismatch = [], []
    for key in sorted(set(ia) & set(ib)):
        a, b = ia[key], ib[key]
        if a.unit != b.unit:
            mismatch.append(a.name)
            continue
        ans = answer(summary_of(a), summary_of(b), a.margin if margin is None else margin, higher_is_better(a))
        matches.append(Match(dict(zip(LABEL_KEYS, key)), a.unit, a, b, ans, _differs(a, b)))
    only_a = [ia[k].name for k in sorted(set(ia) - set(ib))]
    only_b = [ib[k].name for k in sorted(set(ib) - set(ia))]
    return Comparison(matches, only_a, only_b, mismatch)
