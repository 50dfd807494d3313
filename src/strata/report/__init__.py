"""The report: figures, statistics, findings and advice from stored results.

Exporters are pure functions from a Report (built from stored results only,
never a live run) to bytes, one module per format (docs/style.md, item 9; hyperfine's
`src/export/`): html.py, figures.py (SVG, and PNG on request), csv.py, terminal.py.
`generate()` returns every output file as {relative path: bytes};
`write()` puts them in a directory.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from strata.report import csv, figures, html, terminal

PARALLEL_FROM = 6  # figures; below this a process pool costs more than it saves


def build_report(results: list[dict], title: str = "strata report", series_ids: tuple = ()):
    from strata.analysis.analyse import analyse
    from strata.report.model import build

    return build(analyse(results), title, series_ids)


def render_figures(figs: list, jobs: int | None = None, png: bool = False) -> dict[str, tuple[bytes, bytes | None]]:
    """{figure id: (svg, png or None)} of the figures drawn, in worker processes when there are enough."""
    with _Drawing(figs, jobs, png) as pending:
        return {fid: f.result() for fid, f in pending.items()}


def generate(report, jobs: int | None = None, png: bool = False) -> dict[str, bytes]:
    """Every output file of a report: {relative path: bytes}. PNG copies of the figures only when `png`."""
    with _Drawing(report.figures, jobs, png) as pending:
        # the tables and the summary are written while the workers draw
        out = {"summary.txt": (terminal.render(report) + "\n").encode()}
        out.update({f"csv/{name}": data for name, data in csv.render(report).items()})
        rendered = {fid: f.result() for fid, f in pending.items()}
    out["report.html"] = html.render(report, {k: svg for k, (svg, _) in rendered.items()}, png)
    for fid, (svg, raster) in rendered.items():
        out[f"figures/{fid}.svg"] = svg
        if raster is not None:
            out[f"figures/{fid}.png"] = raster
    return out


class _Drawing:
    """{figure id: Future of (svg, png)} for the figures drawn: a pool of `jobs` worker processes (default:
    one per CPU) from PARALLEL_FROM figures on, else drawn here, in order, on entry. Each figure is drawn on
    its own, so the bytes do not depend on the worker or the order: the output is the same for any `jobs`."""

    def __init__(self, figs: list, jobs: int | None, png: bool):
        self.drawn = [f for f in figs if f.drawn]
        self.jobs = jobs or min(len(self.drawn), os.cpu_count() or 1)
        self.png = png
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> dict[str, Future]:
        if self.jobs < 2 or len(self.drawn) < PARALLEL_FROM:
            return {f.id: _done(figures.render(f, self.png)) for f in self.drawn}
        # The stored results stay alive in every forked worker: frozen, the collector neither walks them nor
        # touches their pages (which would copy them into each worker).
        gc.freeze()
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=_context())
        # the costliest first, so that no worker is left drawing a large figure alone at the end
        order = sorted(self.drawn, key=_cost, reverse=True)
        futures = {f.id: self.pool.submit(figures.render, f, self.png) for f in order}
        return {f.id: futures[f.id] for f in self.drawn}

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=exc[0] is not None)
            gc.unfreeze()


def _done(value) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


def _context():
    """fork where there is one: a worker then starts with matplotlib and strata already imported (a fresh
    interpreter pays about a second for them)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _cost(fig) -> int:
    """The figures of one labelled bar per configuration (runtimes, compare: 136 rows on 10,000 trials) take
    several times the others' drawing time; the others keep the report's order."""
    return len(fig.data.get("rows", ()))


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
