"""strata studies [STUDY...]: the seed studies as strata reproduces them, with every finding judged on the
study's own published numbers. Reads nothing but the data strata ships: it runs on a fresh install, before
any result exists."""

from __future__ import annotations

import argparse

from strata.cli.jsonout import add_json_argument, emit

NAME = "studies"
HELP = (
    "the seed studies: their experiments, the example that reproduces each and how it differs, what is not "
    "reproduced and why, and every finding's verdict on the study's own numbers"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", nargs="*", help="only these studies (003, 002, 004, 001: docs/studies.md numbers them)")
    add_json_argument(p)


def main(args: argparse.Namespace) -> int:
    from strata.analysis.studies.overview import overview, overview_doc

    if args.json:
        emit(NAME, overview_doc(args.study or None))
    else:
        print(overview(args.study or None))
    return 0
