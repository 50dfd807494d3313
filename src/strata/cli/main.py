"""`strata` entry point: dispatch to a subcommand, turn StrataError into exit 2."""

from __future__ import annotations

import argparse
import sys

from strata import __version__
from strata.cli import cleanup, compare, doctor, export, image, prepare, report, run, show, studies, testbed, validate
from strata.core.errors import StrataError

COMMANDS = (doctor, validate, prepare, run, show, export, cleanup, image, report, compare, studies, testbed)
SUBCOMMANDS = {m.NAME: m for m in COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="strata", description="Characterize container storage stacks on your own hardware."
    )
    p.add_argument("--version", action="version", version=f"strata {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in SUBCOMMANDS.items():
        mod.add_arguments(sub.add_parser(name, help=mod.HELP, description=mod.HELP))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return SUBCOMMANDS[args.command].main(args) or 0
    except StrataError as e:
        print(f"strata: error: {e.message()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `strata show | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
