"""Outcomes of the findings' checks: a claim is decided only by an interval that decides it.

A check compares a quantity with a criterion (a ratio to the raw device at least 0.90, a change within
5%, ...). Each configuration it looks at gives a `Decision`: held when the whole 95% interval of the
quantity satisfies the criterion, not held when the whole interval violates it, undecided otherwise,
with what would decide it (about how many repetitions at the observed spread). With one repetition
there is no interval, so nothing is held or not held. An Outcome is then:

- held: every configuration is held;
- not held: some configuration is decided against the claim;
- inconclusive: none is against it, but some cannot be decided;
- not measured: the results hold nothing the claim speaks about.

Evidence that is not statistical (the byte evidence of the cache check) decides on its own.
analysis/findings/findings.py holds the registry of claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strata.analysis.cells.baseline import ratio_to_raw
from strata.analysis.cells.query import summary_of
from strata.analysis.decisions.criterion import Bound, decides
from strata.analysis.decisions.stats import Change, Ratio, ratio

if TYPE_CHECKING:
    from strata.analysis.cells.cells import Cell
    from strata.analysis.measured.measurements import Measurements

Pairs = list[tuple["Cell", "Cell", Change]]  # matched (a, b, change of b relative to a): query.pairs
# The pairs of cells (Cell.key) a decision's number relates, a cell with itself for a figure of its own (a
# share of its latency, its CPU): what analysis/studies/published.py asks whether the study states.
Compared = tuple[tuple[str, str], ...]

HELD, NOT_HELD, INCONCLUSIVE, NOT_MEASURED = "held", "not held", "inconclusive", "not measured"
STATUSES = (HELD, NOT_HELD, INCONCLUSIVE, NOT_MEASURED)
# The studies, as docs/studies.md numbers them.
S003 = "study 003 (Xu et al. 2017)"
S004 = "study 004 (Ramadan)"
S002 = "study 002 (Xu et al., short version)"
S001 = "study 001 (Shirinbab et al.)"
SMALL_BS = 16 * 1024
RANDOM = ("randread", "randwrite")


@dataclass(frozen=True)
class Decision:
    held: bool | None  # None: the interval does not decide
    text: str  # the numbers behind it
    need: str = ""  # what would decide it, when undecided
    of: Compared = ()  # the cells its number relates


def between(*pairs: tuple[Cell, Cell]) -> Compared:
    """A decision's `of`: each pair (a, b) of cells its number relates."""
    return tuple((a.key, b.key) for a, b in pairs)


@dataclass
class Outcome:
    status: str
    numbers: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    compared: list[Compared] = field(default_factory=list)  # of each number, the cells it relates

    @property
    def detail(self) -> str:
        if not self.numbers:
            return "nothing in these results speaks to it"
        text = "; ".join(self.numbers)
        return text + (f". To decide: {'; '.join(dict.fromkeys(self.needs))}" if self.needs else "")


def verdict(decisions: list[Decision]) -> Outcome:
    if not decisions:
        return Outcome(NOT_MEASURED)
    against = [d for d in decisions if d.held is False]
    open_ = [d for d in decisions if d.held is None]
    status = NOT_HELD if against else HELD if not open_ else INCONCLUSIVE
    many = len(decisions) > 1
    marks = {True: "", False: " (against)", None: " (undecided)"}
    numbers = [d.text + (marks[d.held] if many else "") for d in decisions]
    needs = [d.need for d in open_ if d.need] if status == INCONCLUSIVE else []
    return Outcome(status, numbers, needs, [d.of for d in decisions])


def ratio_decision(
    r: Ratio,
    n: int,
    text: str,
    lo: Bound | None = None,
    hi: Bound | None = None,
    fmt: str = "{:.2f}",
    of: Compared = (),
) -> Decision:
    held, need = decides(r.value, r.low, r.high, n, lo, hi, log=True)
    ci = f" [{fmt.format(r.low)}, {fmt.format(r.high)}]" if r.low is not None else " (no interval)"
    return Decision(held, f"{text}{ci}", need, of)


def change_decision(
    ch: Change, text: str, lo: Bound | None = None, hi: Bound | None = None, of: Compared = ()
) -> Decision:
    held, need = decides(ch.rel, ch.rel_low, ch.rel_high, min(ch.base.n, ch.other.n), lo, hi)
    return Decision(held, text, need, of)


def ratios(ctx: Measurements, cells: list[Cell], lo: Bound | None = None, hi: Bound | None = None) -> Outcome:
    """Each cell's throughput relative to its raw device, against its bounds `lo` and `hi`."""
    out = []
    for c in cells:
        r, raw = ratio_to_raw(c, ctx.raw), ctx.raw_of(c)
        if r is not None and raw is not None:  # a ratio has its raw cell
            out.append(
                ratio_decision(r, min(c.reps, raw.reps), f"{c.name}: {r.value:.2f}x raw", lo, hi, of=between((raw, c)))
            )
    return verdict(out)


def changes(prs: Pairs, lo: Bound | None = None, hi: Bound | None = None, what: str = "") -> Outcome:
    """B relative to A for matched pairs, against the bounds `lo` and `hi` of the change (Welch's interval)."""
    return verdict(
        [
            change_decision(
                ch,
                f"{b.name} vs {a.labels['filesystem']}/{a.labels['runtime']}/{a.labels['path']}{what}: {ch.text()}",
                lo,
                hi,
                between((a, b)),
            )
            for a, b, ch in prs
        ]
    )


def factors(
    prs: Sequence[tuple[Cell, Cell, Change | None]],
    text: Callable[[Cell, Cell, Ratio], str],
    lo: Bound | None = None,
    hi: Bound | None = None,
) -> Outcome:
    """B / A for matched pairs with its interval, against the bounds `lo` and `hi`; `text(a, b, r)` names it."""
    out = []
    for a, b, _ in prs:
        r = ratio(summary_of(b), summary_of(a))
        if r.value == r.value:
            out.append(ratio_decision(r, min(a.reps, b.reps), text(a, b, r), lo, hi, of=between((a, b))))
    return verdict(out)


def evidence(items: list[tuple[bool, str]]) -> Outcome:
    """Decisions from evidence that needs no interval (bytes that moved or did not)."""
    return verdict([Decision(ok, text) for ok, text in items])
