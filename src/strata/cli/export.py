"""strata export RESULTS --csv F / --parquet F"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strata.core.errors import StrataError
from strata.results.export import to_csv, to_parquet
from strata.results.store import load_results

NAME = "export"
HELP = "write stored results as CSV or Parquet (one row per trial)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="a results directory")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--parquet", metavar="FILE")


def main(args: argparse.Namespace) -> int:
    if not (args.csv or args.parquet):
        raise StrataError("nothing to export", "add --csv FILE and/or --parquet FILE")
    results = load_results_dir(args.results)
    if args.csv:
        Path(args.csv).write_bytes(to_csv(results))
        print(f"{args.csv}: {len(results)} rows")
    if args.parquet:
        Path(args.parquet).write_bytes(to_parquet(results))
        print(f"{args.parquet}: {len(results)} rows")
    return 0


def load_results_dir(path: str) -> list[dict[str, Any]]:
    """The results under `path`, or a StrataError that says what to give instead."""
    if not Path(path).is_dir():
        raise StrataError(f"no results directory at {path}", "give the directory passed to `strata run -o`")
    try:
        return load_results(path)
    except ValueError as e:
        raise StrataError(str(e), "remove or repair that file")
