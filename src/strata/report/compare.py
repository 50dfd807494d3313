"""`strata compare A B` as a table, a figure, CSV, HTML and text (pure: Comparison -> bytes).

One row per configuration measured in both sets, B relative to A with the
interval and decision of analysis/decisions/answer.py (analysis/compare.py), like
pyperf's `compare_to` table.
"""

from __future__ import annotations

from html import escape

from strata.analysis.cells.query import fmt, summary_of
from strata.analysis.compare import Comparison, Match
from strata.report import figures
from strata.report.csv import table_csv
from strata.report.html import STYLE, inline_svg, table_html
from strata.report.parts import ChangeRow, Figure, Table

COLUMNS = [
    "configuration",
    "unit",
    "A mean",
    "A n",
    "B mean",
    "B n",
    "change",
    "ci_low",
    "ci_high",
    "status",
    "parameters that differ",
]


def rows(cmp: Comparison) -> list[list[object]]:
    return [
        [
            m.name,
            m.unit,
            summary_of(m.a).mean,
            m.a.reps,
            summary_of(m.b).mean,
            m.b.reps,
            m.change.rel,
            m.change.rel_low,
            m.change.rel_high,
            m.status,
            "; ".join(m.differs),
        ]
        for m in cmp.matches
    ]


def figure(cmp: Comparison, name_a: str, name_b: str) -> Figure:
    title = f"B ({name_b}) relative to A ({name_a})"
    data: list[ChangeRow] = [
        {
            "label": m.name,
            "rel": m.change.rel,
            "low": m.change.rel_low,
            "high": m.change.rel_high,
            "status": m.status,
        }
        for m in cmp.matches
    ]
    return Figure(
        "compare",
        "compare",
        title,
        "Change of the mean throughput of B relative to A, with the 95% interval of the ratio of means (log scale, "
        "Welch's degrees of freedom): higher or lower when the interval excludes zero, the same when it lies within "
        "the margin (+-5% unless the spec says otherwise), grey when the interval decides neither.",
        Table("compare", title, COLUMNS, rows(cmp)),
        {"rows": data},
    )


def text(cmp: Comparison, name_a: str, name_b: str) -> str:
    out = [f"A = {name_a}, B = {name_b}: {len(cmp.matches)} configuration(s) in both"]
    table = [["configuration", "A", "B", "change [95% CI]", "B is"]]
    for m in cmp.matches:
        table.append(
            [
                m.name,
                f"{fmt(summary_of(m.a).mean, m.unit)} (n={m.a.reps})",
                f"{fmt(summary_of(m.b).mean, m.unit)} (n={m.b.reps})",
                m.change.interval_text(),
                m.status,
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    out += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in table]
    differ = [m for m in cmp.matches if m.differs]
    if differ:
        out.append(
            f"{len(differ)} match(es) ran different parameters under the same labels (see the CSV), e.g. "
            f"{differ[0].name}: {'; '.join(differ[0].differs[:3])}"
        )
    if cmp.only_a or cmp.only_b:
        out.append(f"only in A: {len(cmp.only_a)}, only in B: {len(cmp.only_b)} (not compared)")
    if cmp.unit_mismatch:
        out.append(f"different units, not compared: {', '.join(cmp.unit_mismatch)}")
    if any(not m.change.known for m in cmp.matches):
        out.append("some changes have no interval: run 3 or more repetitions on both sides to tell significance")
    return "\n".join(out)


def gate_text(failing: list[Match], level: str) -> str:
    """What `--fail-on LEVEL` decided: each failing configuration with its interval, or that none failed."""
    if not failing:
        return f"gate --fail-on {level}: passed (no configuration fails at this level)"
    lines = [f"gate --fail-on {level}: FAILED, {len(failing)} configuration(s):"]
    lines += [f"  {m.name}: {m.better}, {m.change.interval_text()} at +-{m.change.margin:.0%}" for m in failing]
    return "\n".join(lines)


def as_json(cmp: Comparison, name_a: str, name_b: str, fail_on: str | None, failing: list[Match]) -> dict[str, object]:
    """`strata compare --json` (its schema: strata/cli/schemas.py)."""
    return {
        "a": name_a,
        "b": name_b,
        "matches": [
            {
                "configuration": m.name,
                "labels": m.labels,
                "unit": m.unit,
                "a": {"mean": summary_of(m.a).mean, "n": m.a.reps},
                "b": {"mean": summary_of(m.b).mean, "n": m.b.reps},
                "change": m.change.rel,
                "ci_low": m.change.rel_low,
                "ci_high": m.change.rel_high,
                "margin": m.change.margin,
                "higher_is_better": m.change.higher_is_better,
                "status": m.status,
                "b_is": m.better,
                "differs": m.differs,
            }
            for m in cmp.matches
        ],
        "only_a": cmp.only_a,
        "only_b": cmp.only_b,
        "unit_mismatch": cmp.unit_mismatch,
        "gate": None if fail_on is None else {"fail_on": fail_on, "failing": [m.name for m in failing]},
    }


def generate(cmp: Comparison, name_a: str, name_b: str, png: bool = False) -> dict[str, bytes]:
    """The files of `strata compare -o DIR`: HTML, CSV, text, the figure as SVG, and as PNG when `png`."""
    out = {"compare.txt": (text(cmp, name_a, name_b) + "\n").encode(), "compare.csv": table_csv(COLUMNS, rows(cmp))}
    svg = None
    if cmp.matches:
        svg, raster = figures.render(figure(cmp, name_a, name_b), png)
        out["compare.svg"] = svg
        if raster is not None:
            out["compare.png"] = raster
    body = inline_svg(svg, "c") if svg else "<p>No configuration was measured in both sets.</p>"
    page = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>strata compare</title>"
        f"<style>{STYLE}</style></head><body><h1>strata compare</h1><p class=meta>A = {escape(name_a)}<br>"
        f"B = {escape(name_b)}</p><figure>{body}</figure>{table_html(COLUMNS, rows(cmp))}"
        f"<pre>{escape(text(cmp, name_a, name_b))}</pre></body></html>\n"
    )
    out["compare.html"] = page.encode()
    return out
