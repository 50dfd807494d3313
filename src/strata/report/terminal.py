"""The report's terminal summary (pure: Report -> text), printed at the end of `strata run`.

Like hyperfine's and pyperf's console output: the numbers first, each with its
interval, then the warnings that say what to do, then advice and findings.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from strata.analysis.cells.baseline import ratio_to_raw
from strata.analysis.cells.query import fmt
from strata.report.parts import SMOKE_BANNER
from strata.results.flags import DECLARED, Flag, apart

if TYPE_CHECKING:
    from strata.analysis.analyse import Analysis
    from strata.report.parts import Report

MAX_ROWS = 30
MAX_GRIDS = 4
MAX_GRID_COLUMNS = 8
STATUS_MARK = {"held": "+", "not held": "x", "inconclusive": "?", "not measured": "."}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _cells(a: Analysis) -> list[str]:
    durable = any(c.durability for c in a.cells)  # a column only where a database said its settings
    rows = [
        ["stack", "workload", "load", "mean", "95% CI", "n", "x raw", "flags", *(["durability"] if durable else [])]
    ]
    for c in a.cells[:MAX_ROWS]:
        s = c.summary if c.values else None
        ci = f"+-{fmt(s.half_width)}" if s is not None and s.half_width is not None else "-"
        r = ratio_to_raw(c, a.raw)
        flags = [f"{d.word} x{len(g.values)}" for d, g in c.groups() if g.values]
        if c.failed:
            flags.append(f"{DECLARED[Flag.FAILED].word} x{len(c.failed)}")
        rows.append(
            [
                c.stack + (f" [{c.tag}]" if c.tag else ""),
                c.labels["workload"],
                c.labels["load"],
                fmt(s.mean, c.unit) if s is not None else "-",
                ci,
                str(c.reps),
                f"{r.value:.2f}" if r else "-",
                " ".join(flags),
                *([c.durability or "-"] if durable else []),
            ]
        )
    out = _table(rows)
    if len(a.cells) > MAX_ROWS:
        out.append(f"  ... {len(a.cells) - MAX_ROWS} more configurations: see the HTML report or its CSV files")
    return out


def render(report: Report) -> str:
    return analysis_text(report.analysis)


def analysis_text(a: Analysis) -> str:
    n = a.counts
    lines = [f"!! {SMOKE_BANNER.format(n=a.smoke)}", ""] if a.smoke else []
    lines += [
        f"strata report: {len(a.results)} trial(s): {n.get('ok', 0)} ok, {n.get('failed', 0)} failed, "
        f"{n.get('unsupported', 0)} unsupported; {len(a.cells)} configuration(s) on {len(a.hosts)} host(s)"
    ]
    if not a.cells:
        return "\n".join(lines) + "\nno measurements to report"
    lines += ["", f"throughput (mean over repetitions{_apart_legend()}):"]
    lines += _cells(a)
    if a.warnings:
        lines += ["", f"warnings ({len(a.warnings)}):"]
        lines += [f"  {'-' if w.note else '!'} {w.text()}" for w in a.warnings]
    if a.best or a.containers or a.placement_advice:
        lines += ["", "advice:"]
        lines += [f"  - {t}" for b in a.best[:MAX_ROWS] for t in b.lines()]
        lines += [f"  - {c.text()}" for c in a.containers[:MAX_ROWS]]
        lines += [f"  - {m.text()}" for m in a.placement_advice[:MAX_ROWS]]
        more = sum(max(0, len(x) - MAX_ROWS) for x in (a.best, a.containers, a.placement_advice))
        if more:
            lines.append(f"  ... {more} more: see the HTML report or csv/advice.csv, csv/containers.csv")
    for g in a.grids[:MAX_GRIDS]:
        lines += ["", g.title + ":"]
        if len(g.columns) > MAX_GRID_COLUMNS:
            lines.append(f"  {len(g.columns)} columns: too wide for a terminal, see the HTML report or its CSV")
            continue
        lines += _table(
            [["containers"] + g.column_labels]
            + [
                [str(n)] + [fmt(g.values[(n, col)][0]) if (n, col) in g.values else "-" for col in g.columns]
                for n in g.rows
            ]
        )
    if len(a.grids) > MAX_GRIDS:
        lines.append(f"  ... {len(a.grids) - MAX_GRIDS} more tables in the HTML report")
    counts = {s: sum(1 for _, o in a.findings if o.status == s) for s in STATUS_MARK}
    lines += ["", "findings of the seed studies: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    for f, o in a.findings:
        if o.status != "not measured":
            lines.append(f"  {STATUS_MARK[o.status]} {o.status:<12} {f.id}: {_clip(o.detail, 150)}")
    if a.beside:
        lines += ["", "the studies beside these results (each side against its own best or baseline):"]
        for b in a.beside[:MAX_ROWS]:  # whole: the order agreement comes last in the sentence
            lines += textwrap.wrap(b.shape(), 110, initial_indent="  = ", subsequent_indent="    ")
        if len(a.beside) > MAX_ROWS:
            lines.append(f"  ... {len(a.beside) - MAX_ROWS} more in the HTML report and csv/paper.csv")
    return "\n".join(lines)


def analysis_json(a: Analysis) -> dict[str, object]:
    """The summary as `strata report --json` prints it (schema: strata/cli/schemas.py): every configuration, not
    only the first MAX_ROWS, with its mean, interval and flags; the warnings, advice and findings as sentences."""
    n = a.counts
    cells = []
    for c in a.cells:
        s = c.summary if c.values else None
        r = ratio_to_raw(c, a.raw)
        flags = {d.word: len(g.values) for d, g in c.groups() if g.values}
        if c.failed:
            flags[DECLARED[Flag.FAILED].word] = len(c.failed)
        cells.append(
            {
                "stack": c.stack,
                "tag": c.tag or None,
                "labels": dict(c.labels),
                "unit": c.unit,
                "mean": s.mean if s is not None else None,
                "half_width": s.half_width if s is not None else None,
                "n": c.reps,
                "x_raw": r.value if r else None,
                "flags": flags,
                "durability": c.durability or None,
            }
        )
    return {
        "smoke": a.smoke,
        "trials": {"total": len(a.results), **{k: n.get(k, 0) for k in ("ok", "failed", "unsupported")}},
        "hosts": len(a.hosts),
        "configurations": cells,
        "warnings": [{"kind": w.kind, "text": w.text(), "note": w.note, "items": w.items} for w in a.warnings],
        "advice": [t for b in a.best for t in b.lines()]
        + [c.text() for c in a.containers]
        + [m.text() for m in a.placement_advice],
        "findings": [{"id": f.id, "status": o.status, "detail": o.detail} for f, o in a.findings],
        "beside": [b.shape() for b in a.beside],
    }


def _apart_legend() -> str:
    """What each group a flag draws apart means (the flags' declarations): none is device performance."""
    groups = apart()
    if not groups:
        return ""
    none = {1: "it is not", 2: "neither is"}.get(len(groups), "none is")
    return "; " + ", ".join(f"{d.word} = {d.meaning}" for d in groups) + f"; {none} device performance"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def summary_text(results_dir: str | os.PathLike[str]) -> str:
    """The terminal summary of the stored results in `results_dir` (called at the end of `strata run`).

    The run's trials are stored before this runs: a failure here must not turn a good run into a failed
    one, so it is reported in the text (with the command that shows its traceback) instead of raised."""
    from strata.analysis.analyse import analyse
    from strata.analysis.cells.load import load

    try:
        text = analysis_text(analyse(load(Path(results_dir))))
    except Exception as e:  # noqa: BLE001  (see the docstring)
        return (
            f"report summary failed ({type(e).__name__}: {e}); the results are stored: "
            f"`strata report {results_dir}` shows the traceback (please report it as a bug)"
        )
    return text + f"\nfull report: strata report {results_dir}"
