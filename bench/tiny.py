"""The benches' tiny mode: `--tiny` (or STRATA_BENCH_TINY=1) makes a bench run in seconds instead of
minutes (one round, short trials, small sizes), so that the test suite (tests/integration/test_benches.py)
sees an import, an API change or a renamed field break a bench, not a figure months later. A tiny run
only shows that the bench runs to its printed result: its figures mean nothing, and it says so."""

from __future__ import annotations

import argparse
import os

HELP = "seconds instead of minutes, one round: checks that the bench runs to its result (figures mean nothing)"


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true", help=HELP)


def apply(args: argparse.Namespace, **values: object) -> bool:
    """In tiny mode, set each of `values` on `args` and say so; True if tiny."""
    tiny = bool(getattr(args, "tiny", False)) or os.environ.get("STRATA_BENCH_TINY") == "1"
    if tiny:
        args.tiny = True
        for k, v in values.items():
            setattr(args, k, v)
        print(f"tiny mode ({', '.join(f'{k}={v}' for k, v in values.items())}): the figures below mean nothing")
    return tiny
