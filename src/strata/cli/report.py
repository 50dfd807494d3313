"""strata report RESULTS [-o DIR] [--png]: HTML, SVG figures (PNG on request), CSV tables and a terminal summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from strata.cli.export import load_results_dir as load_results
from strata.cli.jsonout import add_json_argument, emit
from strata.core.errors import StrataError

NAME = "report"
HELP = "write the report of stored results: HTML (self-contained), SVG figures, CSV, terminal summary"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="?", help="a results directory (or a folder of them)")
    p.add_argument("-o", "--output", help="report directory (default: RESULTS/report)")
    p.add_argument("--title", default="", help="title of the HTML report (default: the experiment names)")
    p.add_argument(
        "--series",
        action="append",
        default=[],
        metavar="TRIAL_ID",
        help="also draw the time series of this trial (repeatable)",
    )
    p.add_argument(
        "--png",
        action="store_true",
        help="also write every figure as PNG (for slides; the figures then take about three times as long)",
    )
    p.add_argument("--jobs", type=int, default=None, help="processes drawing figures (default: CPUs)")
    p.add_argument(
        "--list-findings",
        action="store_true",
        help="list the seed studies' claims that the report checks (id, claim, source, criterion)",
    )
    add_json_argument(p, "print the summary as one JSON document instead of the text (the files are written as ever)")


def list_findings() -> str:
    from strata.analysis.findings.findings import FINDINGS
    from strata.analysis.studies.published import said

    return "\n".join(
        f"{f.id}\n  claim: {f.claim}\n  source: {f.source}"
        + (f"\n  the study: {said(f)}" if said(f) else "")
        + f"\n  held when: {f.criterion}"
        for f in FINDINGS
    )


def main(args: argparse.Namespace) -> int:
    from strata.report import report_files, write

    if args.list_findings:
        print(list_findings())
        return 0
    if not args.results:
        raise StrataError("no results directory given", "strata report RESULTS (the directory of `strata run -o`)")
    results = load_results(args.results)
    title = args.title or "strata report: " + ", ".join(sorted({r.experiment for r in results}))
    rep, files = report_files(results, title, tuple(args.series), args.jobs, args.png)
    out = Path(args.output or Path(args.results) / "report")
    write(files, out)
    if args.json:
        from strata.report.terminal import analysis_json

        emit(NAME, {"results": args.results, "report": str(out / "report.html"), **analysis_json(rep.analysis)})
        return 0
    print(files["summary.txt"].decode().rstrip())
    n_fig = sum(1 for k in files if k.endswith(".svg"))
    print(
        f"\nreport: {out / 'report.html'} ({n_fig} figures as SVG{' and PNG' if args.png else ''} in "
        f"{out / 'figures'}, "
        f"tables in {out / 'csv'})"
    )
    return 0
