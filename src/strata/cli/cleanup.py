"""strata cleanup: undo whatever a killed run left (mounts, loop devices, daemons, containers)."""

from __future__ import annotations

from strata.stack import provision  # noqa: F401  (imports every layer's plugins: their undo actions register)
from strata.stack.runtimes.docker import image  # noqa: F401
from strata.stack.journal import cleanup

NAME = "cleanup"
HELP = "undo what a killed run left behind, from the journal"


def add_arguments(p):
    p.add_argument("--force", action="store_true", help="also undo the resources of runs that still seem alive")


def main(args) -> int:
    n = cleanup(force=args.force)
    print(f"cleanup: {n} resource(s) undone" if n else "cleanup: nothing left behind")
    return 0
