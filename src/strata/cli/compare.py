"""strata compare A B [-o DIR]: two result sets matched configuration by configuration."""

from __future__ import annotations

from pathlib import Path

from strata.cli.report import load_results

NAME = "compare"
HELP = "compare two result sets (hosts, runs): change of B relative to A with its interval and significance"


def add_arguments(p):
    p.add_argument("a", help="results directory A (the reference)")
    p.add_argument("b", help="results directory B")
    p.add_argument(
        "-o",
        "--output",
        default="strata-compare",
        help="directory for compare.html/.csv/.svg/.png (default: ./strata-compare)",
    )


def main(args) -> int:
    from strata.analysis.compare import compare
    from strata.report import write
    from strata.report.compare import generate

    cmp = compare(load_results(args.a), load_results(args.b))
    files = generate(cmp, args.a, args.b)
    write(files, Path(args.output))
    print(files["compare.txt"].decode().rstrip())
    print(f"\ncompare: {Path(args.output) / 'compare.html'}")
    return 0
