"""The report: figures, statistics, findings and advice from stored results.

Exporters are pure functions from a Report (built from stored results only,
never a live run) to bytes, one module per format (docs/style.md, item 9; hyperfine's
`src/export/`): html.py, figures.py (SVG and PNG), csv.py, terminal.py.
`generate()` returns every output file as {relative path: bytes};
`write()` puts them in a directory.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from strata.report import csv, figures, html, terminal

PARALLEL_FROM = 6  # figures; below this a process pool costs more than it saves


def build_report(results: list[dict], title: str = "strata report", series_ids: tuple = ()):
    from strata.analysis.analyse import analyse
    from strata.report.model import build

    return build(analyse(results), title, series_ids)


def render_figures(figs: list, jobs: int | None = None) -> dict[str, tuple[bytes, bytes]]:
    drawn = [f for f in figs if f.drawn]
    jobs = jobs or min(len(drawn), os.cpu_count() or 1)
    if jobs > 1 and len(drawn) >= PARALLEL_FROM:
        with ProcessPoolExecutor(jobs) as pool:
            return dict(zip([f.id for f in drawn], pool.map(figures.render, drawn)))
    return {f.id: figures.render(f) for f in drawn}


def generate(report, jobs: int | None = None) -> dict[str, bytes]:
    """Every output file of a report: {relative path: bytes}."""
    rendered = render_figures(report.figures, jobs)
    out = {
        "report.html": html.render(report, {k: svg for k, (svg, _) in rendered.items()}),
        "summary.txt": (terminal.render(report) + "\n").encode(),
    }
    for fid, (svg, png) in rendered.items():
        out[f"figures/{fid}.svg"] = svg
        out[f"figures/{fid}.png"] = png
    out.update({f"csv/{name}": data for name, data in csv.render(report).items()})
    return out


def write(files: dict[str, bytes], out_dir: Path) -> list[Path]:
    """Write the files; figures/ and csv/ of an earlier report in out_dir are replaced, not mixed."""
    import shutil

    for sub in {rel.split("/")[0] for rel in files if "/" in rel}:
        shutil.rmtree(Path(out_dir) / sub, ignore_errors=True)
    paths = []
    for rel, data in sorted(files.items()):
        p = Path(out_dir) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        paths.append(p)
    return paths
