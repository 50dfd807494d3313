"""What a study states of the cells a finding's number relates, when the finding runs on the study's own
numbers (published.py): a number of a pair the study states no relation for is derived, and says so.

A case of published.py sets several configurations from the study's numbers at once (study 003's Figure 4:
the low-load latency 54% higher over NVMe over Fabrics, 20x longer at high load direct-attached, less than 2%
more at high load over the fabric), so a finding comparing two of them may print a relation the study never
states (NVMf's high load against its low load: 20 x 1.02 / 1.54 = 13.2x, where the study says 12x). Each
decision names the pairs of cells its number relates (findings/verdict.py `Decision.of`); a pair is stated
when one of the study's relations is between those two configurations, when the study gives each of them a
number of its own (a throughput, a latency, a CPU share), or, for a cell with itself, when the study gives
that cell a number (a share of its latency). A number that rests on a bound the study gives instead of a
number ("less than 2%") says so too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from strata.analysis.findings.verdict import Compared
from strata.analysis.studies.paper import PaperValue

BOUND = re.compile(r"\((less than|more than|up to)\)")
DERIVED = "derived from the study's other numbers of this case, not stated by it"
UNITS = {"percent": "%", "ratio": "x", "points": " points"}

Stated = Mapping[frozenset[str], tuple[PaperValue, ...]]  # a pair of cell keys (one: a cell itself) -> by what


def bound(v: PaperValue) -> str:
    """The bound a value states instead of a number (paper.yaml: "(less than)", "(more than)", "(up to)" in its
    `what`), or ""."""
    m = BOUND.search(v.what)
    return m.group(1) if m else ""


@dataclass
class Statements:
    """A case's statements, by its configurations' keys (published.py `_Case`), until their cells are known."""

    relations: list[tuple[str, str, PaperValue]] = field(default_factory=list)  # config, base, the value
    absolute: dict[str, list[PaperValue]] = field(default_factory=dict)  # a number of the configuration's own
    own: dict[str, list[PaperValue]] = field(default_factory=dict)  # a figure of the configuration alone (a share)

    def of_cells(self, cells: Mapping[str, str]) -> Stated:
        """The pairs the study states, by cell key (`cells`: configuration key -> cell key)."""
        out: dict[frozenset[str], list[PaperValue]] = {}
        for k, vs in [*self.absolute.items(), *self.own.items()]:
            if k in cells:
                out.setdefault(frozenset({cells[k]}), []).extend(vs)
        given = [k for k in self.absolute if k in cells]
        for i, a in enumerate(given):
            for b in given[i + 1 :]:
                out.setdefault(frozenset({cells[a], cells[b]}), []).extend(self.absolute[a] + self.absolute[b])
        for a, b, v in self.relations:
            if a in cells and b in cells:
                out.setdefault(frozenset({cells[a], cells[b]}), []).append(v)
        return {k: tuple({id(v): v for v in vs}.values()) for k, vs in out.items()}  # a value's dicts: not hashable


def marks(stated: Stated, of: Compared) -> str:
    """What a number on the study's numbers must say beside it: derived (a pair it relates the study does not
    state), and the bounds it rests on."""
    pairs = [frozenset(p) for p in of]
    out = []
    if any(p not in stated for p in pairs):
        out.append(DERIVED)
    bounds = [
        f"{said} {v.value:g}{UNITS.get(v.unit, ' ' + v.unit)}"
        for p in pairs
        for v in stated.get(p, ())
        if (said := bound(v))
    ]
    if bounds:
        out.append(f"the study gives a bound, not a number: {', '.join(dict.fromkeys(bounds))}")
    return "".join(f" ({m})" for m in out)
