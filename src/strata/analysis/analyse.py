"""From stored results to everything the report shows (docs/architecture.md "Flow of one experiment").

`analyse(results)` measures (measured/measurements.py: groups trials into cells, moves results above the
raw device apart as unconfirmed, finds sweeps and scaling and 004-style tables), then concludes: hygiene
warnings (advice/hygiene.py), the seed studies' claims (findings/findings.py), advice (advice/advice.py)
and the studies' numbers beside these (studies/side_by_side.py). It reads stored results only, never a
live run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from strata.analysis.advice import advice, hygiene, placement
from strata.analysis.cells.cells import Cell
from strata.analysis.findings import findings
from strata.analysis.findings.verdict import Outcome
from strata.analysis.measured.measurements import Measurements
from strata.analysis.studies import side_by_side
from strata.core.jsondoc import JsonObject
from strata.results.result import Result
from strata.results.stored import HostFacts


@dataclass
class Analysis(Measurements):
    """The measurements (measured/measurements.py) and what is concluded of them."""

    warnings: list[hygiene.HygieneWarning] = field(default_factory=list)
    findings: list[tuple[findings.Finding, Outcome]] = field(default_factory=list)
    best: list[advice.Best] = field(default_factory=list)
    containers: list[advice.ContainersAdvice] = field(default_factory=list)
    placements: list[placement.MeasuredPlacement] = field(default_factory=list)  # one host against several
    beside: list[side_by_side.Beside] = field(default_factory=list)  # the studies' published numbers beside these

    @property
    def placement_advice(self) -> list[placement.MeasuredPlacement]:
        """The measured placements no containers advice already tells."""
        told = {id(c.measured) for c in self.containers if c.measured is not None}
        return [m for m in self.placements if id(m) not in told]

    @property
    def smoke(self) -> int:
        """How many results were taken at the smoke scale (experiment/scale.py): none is a measurement."""
        return sum(1 for r in self.results if r.scale == "smoke")

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.status or "?" for r in self.results)

    @property
    def hosts(self) -> list[HostFacts]:
        """The facts of each host the results ran on (core/host.py), by host name."""
        seen: dict[str, HostFacts] = {}
        for r in self.results:
            seen.setdefault(r.host_facts.hostname, r.host_facts)
        return [seen[k] for k in sorted(seen)]

    @property
    def experiments(self) -> list[str]:
        return sorted({r.experiment for r in self.results})

    def workloads(self) -> list[str]:
        return sorted({c.labels["workload"] for c in self.cells})

    def cells_of(self, workload: str) -> list[Cell]:
        return [c for c in self.cells if c.labels["workload"] == workload]


def analyse(results: Iterable[Result | JsonObject], judge_steady: bool = True) -> Analysis:
    return conclude(describe(results, judge_steady))


def describe(results: Iterable[Result | JsonObject], judge_steady: bool = True) -> Analysis:
    """The measurements: cells, the raw baselines, sweeps and tables; all that the report's figures draw, so
    that they can be drawn while conclude() runs."""
    return Analysis.of(results, judge_steady)


def conclude(a: Analysis) -> Analysis:
    """What is said about the measurements: warnings, the studies' findings, advice, the studies beside."""
    a.warnings = hygiene.check(a.cells, a.results)
    a.findings = findings.evaluate(a)
    a.best = advice.best_stacks(a.cells)
    a.placements = placement.measured(a.cells)
    a.containers = advice.containers(a.sweeps, a.placements)
    a.beside = side_by_side.beside(a.cells)
    return a
