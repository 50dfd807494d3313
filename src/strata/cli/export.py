"""strata export RESULTS --csv F / --parquet F / --ndjson F"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from strata.analysis.cells.across import judge_results
from strata.cli.jsonout import finite
from strata.core.errors import StrataError
from strata.results.export import to_csv, to_parquet
from strata.results.result import Result
from strata.results.store import load_results, stored_doc

NAME = "export"
HELP = "write stored results as CSV, Parquet (one row per trial) or newline-delimited JSON (one trial per line)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="a results directory")
    p.add_argument(
        "--csv",
        metavar="FILE",
        help="one row per trial, its labels, status, headline metrics, validity flags and host facts as columns",
    )
    p.add_argument("--parquet", metavar="FILE", help="the same rows and columns as --csv, typed, as Apache Parquet")
    p.add_argument(
        "--ndjson",
        metavar="FILE",
        help="each stored trial whole, as strata stored it (schema_version in each), one JSON object per line; "
        "- for stdout",
    )


def main(args: argparse.Namespace) -> int:
    if not (args.csv or args.parquet or args.ndjson):
        raise StrataError("nothing to export", "add --csv FILE, --parquet FILE and/or --ndjson FILE")
    results = load_results_dir(args.results)
    say = sys.stderr if args.ndjson == "-" else sys.stdout  # stdout holds the trials then
    if args.ndjson:
        lines = b"".join(to_ndjson(r) for r in results)
        if args.ndjson == "-":
            sys.stdout.buffer.write(lines)
            sys.stdout.flush()
        else:
            Path(args.ndjson).write_bytes(lines)
            print(f"{args.ndjson}: {len(results)} lines", file=say)
    # the tables carry the flags judged across the stored trials (above the raw device); the trials above are
    # written whole, as stored
    judge_results(results)
    if args.csv:
        Path(args.csv).write_bytes(to_csv(results))
        print(f"{args.csv}: {len(results)} rows", file=say)
    if args.parquet:
        Path(args.parquet).write_bytes(to_parquet(results))
        print(f"{args.parquet}: {len(results)} rows", file=say)
    return 0


def load_results_dir(path: str) -> list[Result]:
    """The results under `path`, or a StrataError that says what to give instead."""
    if not Path(path).is_dir():
        raise StrataError(f"no results directory at {path}", "give the directory passed to `strata run -o`")
    try:
        return load_results(path)
    except ValueError as e:
        raise StrataError(str(e), "remove or repair that file")


def to_ndjson(result: Result) -> bytes:
    """One stored trial as one line of JSON (a NaN or infinity, which JSON has no word for, as null)."""
    doc = finite(stored_doc(result))
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False).encode() + b"\n"
