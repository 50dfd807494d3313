"""The report: figures, statistics, findings and advice from stored results.

Exporters are pure functions from a Report (built from stored results only,
never a live run) to bytes, one module per format (docs/style.md, item 9; hyperfine's
`src/export/`): html.py, figures.py (SVG, and PNG on request), csv.py, terminal.py.
`generate()` returns every output file as {relative path: bytes};
`report_files()` makes the report and its files from stored results, drawing
the figures while the analysis is concluded; `write()` puts them in a directory.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from strata.report import csv, figures, html, terminal

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

    from strata.core.jsondoc import JsonObject
    from strata.report.parts import Figure, Report
    from strata.results.result import Result

Rendered = tuple[bytes, bytes | None]  # a figure's SVG, and its PNG when asked for

PARALLEL_FROM = 6  # figures; below this a process pool costs more than it saves


def build_report(
    results: Iterable[Result | JsonObject], title: str = "strata report", series_ids: tuple[str, ...] = ()
) -> Report:
    from strata.analysis.analyse import analyse
    from strata.report.model import build

    return build(analyse(results), title, series_ids)


def render_figures(
    figs: list[Figure], jobs: int | None = None, png: bool = False
) -> dict[str, tuple[bytes, bytes | None]]:
    """{figure id: (svg, png or None)} of the figures drawn, in worker processes when there are enough."""
    with _frozen(), _Drawing(figs, jobs, png) as pending:
        return {fid: f.result() for fid, f in pending.items()}


def generate(report: Report, jobs: int | None = None, png: bool = False) -> dict[str, bytes]:
    """Every output file of a report: {relative path: bytes}. PNG copies of the figures only when `png`."""
    with _frozen(), _Drawing(report.figures, jobs, png) as pending:
        out = _texts(report)  # while the workers draw
        rendered = {fid: f.result() for fid, f in pending.items()}
    return out | _pages(report, rendered, png)


def report_files(
    results: Iterable[Result | JsonObject],
    title: str = "strata report",
    series_ids: tuple[str, ...] = (),
    jobs: int | None = None,
    png: bool = False,
    phases: dict[str, float] | None = None,
) -> tuple[Report, dict[str, bytes]]:
    """(Report, files) of stored results: build_report() then generate(), the same bytes, sooner. The figures
    draw only measurements, so the workers draw them while this process concludes the analysis (warnings,
    findings, advice) and writes the tables. `phases`, when given, receives each phase's seconds."""
    from strata.analysis.analyse import conclude, describe
    from strata.report.model import build

    clock = _Clock(phases)
    with _frozen():  # the results live as long as the report: the collector need not walk them
        report = build(describe(results), title, series_ids)
        clock("describe")
        with _Drawing(report.figures, jobs, png) as pending:
            conclude(report.analysis)
            clock("conclude")
            out = _texts(report)
            rendered = {fid: f.result() for fid, f in pending.items()}
            clock("figures")  # what is left of drawing them once the rest is done
    out |= _pages(report, rendered, png)
    clock("pages")
    return report, out


def _texts(report: Report) -> dict[str, bytes]:
    """The terminal summary and the CSV tables."""
    out = {"summary.txt": (terminal.render(report) + "\n").encode()}
    out.update({f"csv/{name}": data for name, data in csv.render(report).items()})
    return out


def _pages(report: Report, rendered: dict[str, Rendered], png: bool) -> dict[str, bytes]:
    """The HTML page and the figures' files."""
    out = {"report.html": html.render(report, {k: svg for k, (svg, _) in rendered.items()}, png)}
    for fid, (svg, raster) in rendered.items():
        out[f"figures/{fid}.svg"] = svg
        if raster is not None:
            out[f"figures/{fid}.png"] = raster
    return out


class _Clock:
    def __init__(self, phases: dict[str, float] | None) -> None:
        self.phases, self.t = phases, time.perf_counter()

    def __call__(self, phase: str) -> None:
        if self.phases is not None:
            now = time.perf_counter()
            self.phases[phase], self.t = now - self.t, now


@contextmanager
def _frozen() -> Iterator[None]:
    """What is alive now stays alive for the whole report: frozen, the cycle collector stops walking it (its
    passes over 10,000 results were a tenth of the analysis' time) and, in a forked worker, stops touching
    its pages (which would copy them into the worker). Unfrozen at the end: all goes back to the collector's
    oldest generation."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class _Drawing:
    """{figure id: Future of (svg, png)} for the figures drawn: a pool of `jobs` worker processes (default:
    one per CPU) from PARALLEL_FROM figures on, else drawn here, in order, on entry. Each figure is drawn on
    its own, so the bytes do not depend on the worker or the order: the output is the same for any `jobs`."""

    def __init__(self, figs: list[Figure], jobs: int | None, png: bool) -> None:
        self.drawn = [f for f in figs if f.drawn]
        self.jobs = jobs or min(len(self.drawn), os.cpu_count() or 1)
        self.png = png
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> dict[str, Future[Rendered]]:
        if self.jobs < 2 or len(self.drawn) < PARALLEL_FROM:
            return {f.id: _done(figures.render(f, self.png)) for f in self.drawn}
        gc.freeze()  # what the analysis made since _frozen() began, too (the caller's _frozen() unfreezes it)
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=_context())
        # the costliest first, so that no worker is left drawing a large figure alone at the end
        order = sorted(self.drawn, key=_cost, reverse=True)
        futures = {f.id: self.pool.submit(figures.render, f, self.png) for f in order}
        return {f.id: futures[f.id] for f in self.drawn}

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=exc[0] is not None)


def _done(value: Rendered) -> Future[Rendered]:
    f: Future[Rendered] = Future()
    f.set_result(value)
    return f


def _context() -> BaseContext:
    """fork where there is one: a worker then starts with matplotlib and strata already imported (a fresh
    interpreter pays about a second for them)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _cost(fig: Figure) -> int:
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
