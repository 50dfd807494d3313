"""Write amplification of the cells: each layer's over a cell's repetitions, and the advice line when the
stacks compared differ in it by more than their noise.

A trial's write amplification per layer (the bytes a layer wrote per byte the workload wrote) is
stored with it (results/writes.py). Over a cell's repetitions each layer's is summarized with its 95%
interval; every measured repetition counts, those drawn apart too: what a stack wrote does not
depend on whether its throughput is the device's. Two stacks differ when the intervals of the most
and the least amplifying do not overlap and the one wrote at least MIN_RATIO times the other's.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.analysis.cells.cells import Cell
from strata.analysis.decisions.stats import Summary, summarize
from strata.results import writes

# Below this ratio of the most to the least amplifying stack, the advice says nothing: a few percent
# of write amplification (a journal's commits) changes no choice of stack.
MIN_RATIO = 1.10


@dataclass(frozen=True)
class Layer:
    """One layer's write amplification over a cell's repetitions: `position` 0 is the device under test."""

    position: int
    name: str
    summary: Summary


def of_cell(c: Cell) -> list[Layer]:
    """Each layer's write amplification over the cell's measured repetitions (none: not given)."""
    per: dict[int, list[float]] = {}
    names: dict[int, str] = {}
    for r in c.measured:
        for i, (name, v) in enumerate((writes.amplification_of(r.writes) or {}).items()):
            per.setdefault(i, []).append(float(v))
            names.setdefault(i, name)
    return [Layer(i, names[i], summarize(per[i])) for i in sorted(per)]


def device(c: Cell) -> Summary | None:
    """The device under test's write amplification over the cell's repetitions, or None."""
    layers = of_cell(c)
    return layers[0].summary if layers else None


def advice(cells: list[Cell]) -> str:
    """The line an advice group gets when its stacks differ in write amplification beyond their noise
    ("loop/btrfs/native/bind wrote 2.10x the workload's bytes, loop/xfs/native/bind 1.00x"), else ""."""
    measured = [(c, s) for c in cells if (s := device(c)) is not None and s.n]
    if len(measured) < 2:
        return ""
    ranked = sorted(measured, key=lambda cs: -cs[1].mean)
    (top, hi), (_, lo) = ranked[0], ranked[-1]
    if hi.ci_low is None or lo.ci_high is None or hi.ci_low <= lo.ci_high or hi.mean < MIN_RATIO * lo.mean:
        return ""
    first = f"{top.stack} wrote {hi.mean:.2f}x the workload's bytes"
    rest = ", ".join(f"{c.stack} {s.mean:.2f}x" for c, s in ranked[1:])
    where = f"{top.labels['workload']} at load {top.labels['load']} on {top.labels['device']}"
    return f"{where}: the device under test wrote more for some stacks, beyond their noise: {first}, {rest}"
