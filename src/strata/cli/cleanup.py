"""strata cleanup: undo whatever a killed run left (mounts, loop devices, daemons, containers)."""

from __future__ import annotations

from strata.stack import device, filesystem, runtime  # noqa: F401  (register their undo actions)
from strata.stack.journal import cleanup

NAME = "cleanup"
HELP = "undo what a killed run left behind, from the journal"


def add_arguments(p):
    p.add_argument("--force", action="store_true", help="also undo the resources of runs that still seem alive")


def main(args) -> int:
    try:
        from strata.stack import docker  # noqa: F401
    except ImportError:
        pass
    from strata.stack.vm import runtime as vm_runtime  # noqa: F401  (QEMU, virtiofsd, images, cgroups)
    n = cleanup(force=args.force)
    print(f"cleanup: {n} resource(s) undone" if n else "cleanup: nothing left behind")
    return 0
