"""strata compare A B [-o DIR [--png]]: two result sets matched configuration by configuration.

The comparison is printed; files are written only when asked for, into the directory given (as hyperfine's
`--export-*`): a command run to read a change leaves nothing behind in the current directory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from strata.cli.export import load_results_dir as load_results
from strata.core.errors import StrataError

NAME = "compare"
HELP = "compare two result sets (hosts, runs): change of B relative to A with its interval and significance"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", help="results directory A (the reference)")
    p.add_argument("b", help="results directory B")
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="also write compare.html, .csv, .svg and .txt into DIR (default: print only, write nothing)",
    )
    p.add_argument("--png", action="store_true", help="with -o: also write the figure as compare.png")


def main(args: argparse.Namespace) -> int:
    from strata.analysis.compare import compare
    from strata.report import compare as compare_report

    if args.png and not args.output:
        raise StrataError("--png writes compare.png into the -o directory, and none was given", "add -o DIR")
    if args.output and Path(args.output).exists() and not Path(args.output).is_dir():
        raise StrataError(f"-o {args.output} is a file, not a directory", "give -o a directory (made if missing)")
    cmp = compare(load_results(args.a), load_results(args.b))
    print(compare_report.text(cmp, args.a, args.b))
    if not args.output:
        return 0
    from strata.report import write

    out = Path(args.output)
    write(compare_report.generate(cmp, args.a, args.b, args.png), out)
    print(f"\ncompare: {out / 'compare.html'} (with compare.csv, compare.svg{', compare.png' if args.png else ''})")
    return 0
