"""The measurements of a result set: its cells, their raw baselines, sweeps and tables; all that the report's
figures draw and the findings' checks read, before anything is concluded (analyse.py `conclude`).

The findings read these alone, so that a check never depends on the analysis that runs it: the studies'
own numbers (studies/published.py) are measured here and judged by the same checks as a user's results.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Self

from strata.analysis.cells import baseline
from strata.analysis.cells.across import judged_cells
from strata.analysis.cells.cells import Cell
from strata.analysis.measured import grid, sweeps
from strata.core.jsondoc import JsonObject
from strata.results.result import Result, typed


@dataclass
class Measurements:
    results: list[Result]
    cells: list[Cell]
    raw: dict[tuple[object, ...], Cell]  # the raw-device cells, by baseline.baseline_key
    sweeps: list[sweeps.Sweep] = field(default_factory=list)
    grids: list[grid.Grid] = field(default_factory=list)

    @classmethod
    def of(cls, stored: Iterable[Result | JsonObject], judge_steady: bool = True) -> Self:
        """Cells, with results above the raw device moved apart as unconfirmed, the raw baselines, sweeps and
        tables."""
        results = typed(stored)
        cells = judged_cells(results, judge_steady)
        m = cls(results, cells, baseline.raw_index(cells))
        m.sweeps = sweeps.find(cells)
        m.grids = grid.grids(cells)
        return m

    def raw_of(self, c: Cell) -> Cell | None:
        return baseline.raw_of(c, self.raw)
