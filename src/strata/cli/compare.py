"""strata compare A B [-o DIR [--png]] [--fail-on LEVEL] [--margin M] [--json]: two result sets matched
configuration by configuration.

The comparison is printed; files are written only when asked for, into the directory given (as hyperfine's
`--export-*`): a command run to read a change leaves nothing behind in the current directory. With
`--fail-on`, it is a gate for a pipeline: exit 1 when a match fails at that level (analysis/compare.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from strata.analysis.compare import FAIL_ON
from strata.cli.export import load_results_dir as load_results
from strata.cli.jsonout import add_json_argument, emit
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
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 1 when a configuration fails at this level: worse (B decided worse than A by more than the "
        "margin), regression (B decided worse at all), undecided (B not shown equivalent or better); 0 otherwise",
    )
    p.add_argument(
        "--margin",
        type=margin_arg,
        help="the margin of equivalence, e.g. 5%% or 0.05 (default: A's, from its spec; 5%% when it set none)",
    )
    add_json_argument(p)


def margin_arg(text: str) -> float:
    """A margin typed on the command line: 5% or 0.05, more than 0 and at most 100%."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a margin: write a percentage, e.g. 5% or 0.05")
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a margin: give one above 0% and at most 100%")
    return v


def main(args: argparse.Namespace) -> int:
    from strata.analysis.compare import compare
    from strata.report import compare as compare_report

    if args.png and not args.output:
        raise StrataError("--png writes compare.png into the -o directory, and none was given", "add -o DIR")
    if args.output and Path(args.output).exists() and not Path(args.output).is_dir():
        raise StrataError(f"-o {args.output} is a file, not a directory", "give -o a directory (made if missing)")
    cmp = compare(load_results(args.a), load_results(args.b), args.margin)
    if args.fail_on and not cmp.matches:
        raise StrataError(
            f"{args.a} and {args.b} have no configuration in common: the gate would pass on nothing",
            "compare result sets of the same spec (its labels: device, file system, runtime, path, workload, load)",
        )
    failing = [m for m in cmp.matches if m.fails(args.fail_on)] if args.fail_on else []
    if args.json:
        emit(NAME, compare_report.as_json(cmp, args.a, args.b, args.fail_on, failing))
    else:
        print(compare_report.text(cmp, args.a, args.b))
        if args.fail_on:
            print(compare_report.gate_text(failing, args.fail_on))
    if args.output:
        from strata.report import write

        out = Path(args.output)
        write(compare_report.generate(cmp, args.a, args.b, args.png), out)
        if not args.json:
            png = ", compare.png" if args.png else ""
            print(f"\ncompare: {out / 'compare.html'} (with compare.csv, compare.svg{png})")
    return 1 if failing else 0
