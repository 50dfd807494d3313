"""CSV of the table behind each figure, and of the findings, advice and warnings (pure: Report -> bytes)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from strata.results.export import csv_bytes

if TYPE_CHECKING:
    from strata.analysis.advice.advice import Best
    from strata.analysis.advice.placement import MeasuredPlacement
    from strata.report.parts import Report


def cell_text(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def table_csv(columns: Sequence[str], rows: Iterable[Iterable[object]]) -> bytes:
    return csv_bytes(columns, rows, cell_text)


def render(report: Report) -> dict[str, bytes]:
    """{file name: bytes} for every table of the report."""
    from strata.analysis.studies.published import said

    a = report.analysis
    out = {f"{f.id}.csv": table_csv(f.table.columns, f.table.rows) for f in report.figures}
    out.update({f"{t.id}.csv": table_csv(t.columns, t.rows) for t in report.tables})
    out["paper.csv"] = table_csv(
        [
            "study",
            "where",
            "subject",
            "configuration",
            "paper",
            "unit",
            "read",
            "baseline",
            "here",
            "unit here",
            "as run here",
            "note",
        ],
        [
            [
                b.study,
                b.where,
                b.subject,
                p.label,
                p.value.value,
                p.value.unit,
                p.value.read,
                p.value.baseline or "",
                p.yours,
                p.unit_here,
                p.here,
                p.value.note + (f"; not reproduced: {p.value.not_reproduced}" if p.value.not_reproduced else ""),
            ]
            for b in a.beside
            for p in b.pairs
        ],
    )
    out["findings.csv"] = table_csv(
        ["id", "status", "claim", "source", "criterion", "numbers", "the study says"],
        [[f.id, o.status, f.claim, f.source, f.criterion, o.detail, said(f)] for f, o in a.findings],
    )
    out["advice.csv"] = table_csv(
        [
            "workload",
            "load",
            "status",
            "best stack",
            "mean",
            "unit",
            "n",
            "next stack",
            "change",
            "ci_low",
            "ci_high",
            "margin",
            "equivalent with",
            "worse",
            "undecided against",
            "supported margin",
            "to decide",
        ],
        [_advice_row(b) for b in a.best],
    )
    out["containers.csv"] = table_csv(
        ["stack", "workload", "containers measured", "best containers", "aggregate", "unit", "falls after"],
        [
            [c.stack, c.workload, " ".join(map(str, c.counts)), c.best_x, c.aggregate, c.unit, c.falls_after]
            for c in a.containers
        ],
    )
    if a.placements:  # the same load measured on one host and across hosts (analysis/advice/placement.py)
        out["placements.csv"] = table_csv(PLACEMENT_COLUMNS, [row for m in a.placements for row in placement_rows(m)])
    out["warnings.csv"] = table_csv(
        ["kind", "message", "what to do", "items"], [[w.kind, w.message, w.fix, "; ".join(w.items)] for w in a.warnings]
    )
    return out


def _advice_row(b: Best) -> list[object]:
    m = b.lead
    return [
        b.workload,
        b.load,
        b.status,
        b.best.stack,
        b.value,
        b.unit,
        b.best.reps,
        b.runner_up.stack if b.runner_up else None,
        m.rel if m else None,
        m.rel_low if m else None,
        m.rel_high if m else None,
        b.margin,
        "; ".join(c.stack for c in b.equivalent),
        "; ".join(c.stack for c in b.worse),
        "; ".join(c.stack for c in b.undecided),
        b.supported,
        b.need,
    ]


PLACEMENT_COLUMNS = [
    "workload", "load", "stack", "instances", "placement", "hosts", "per host", "aggregate", "ci_low", "ci_high",
    "unit", "n", "p99_ms", "p99_ci_low_ms", "p99_ci_high_ms", "vs one host", "vs_ci_low", "vs_ci_high", "verdict",
    "source",
]  # fmt: skip


def placement_rows(m: MeasuredPlacement) -> list[list[object]]:
    """One row per placement of a measured placement advice (analysis/advice/placement.py)."""
    rows = []
    for p in m.placements:
        ch, agg, lat = p.vs_one_host, p.aggregate, p.p99_ns
        ms = [None if v is None or lat.n == 0 else v / 1e6 for v in (lat.mean, lat.ci_low, lat.ci_high)]
        vs = (
            [None, None, None]
            if ch is None
            else [1 + ch.rel, *(None if v is None else 1 + v for v in (ch.rel_low, ch.rel_high))]
        )
        per = " ".join(f"{h}={n}" for h, n in p.per_host.items())
        verdict = "" if p is m.one_host else m.verdict(p)
        rows.append([m.workload, m.load, m.stack, m.instances, p.name, p.hosts, per, agg.mean, agg.ci_low, agg.ci_high,
                     m.unit, agg.n, *ms, *vs, verdict, m.source])  # fmt: skip
    return rows
