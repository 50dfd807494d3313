"""strata cleanup: undo whatever a killed run left (mounts, loop devices, daemons, containers)."""

from __future__ import annotations

import argparse

from strata.hosts import deploy, kubenodes, testbed
from strata.run.undo import undo_actions
from strata.stack.journal import UndoFn, cleanup, live_runs

NAME = "cleanup"
HELP = "undo what a killed run left behind, from the journal"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="also undo the resources of runs that still seem alive")
    p.add_argument("--hosts", metavar="SPEC", help="also clean every agent's journal on this experiment's hosts")


def undo() -> dict[str, UndoFn]:
    """What this command undoes: the plugins' declared undo actions, and the Swarm machinery's (the manager's
    services, the test hosts)."""
    return undo_actions(deploy.UNDO, testbed.UNDO, kubenodes.UNDO)


def main(args: argparse.Namespace) -> int:
    live = [] if args.force else live_runs()
    n = cleanup(force=args.force, undo=undo())
    if live:
        print(
            f"cleanup: {n} resource(s) undone; {len(live)} live run(s) left alone "
            f"({', '.join(f'pid {pid}' for _, pid in live)})"
        )
    else:
        print(f"cleanup: {n} resource(s) undone" if n else "cleanup: nothing left behind")
    if args.hosts:
        from strata.experiment.load import load_spec
        from strata.hosts.fleet import cleanup as hosts_cleanup

        return 1 if hosts_cleanup(load_spec(args.hosts)[0]) else 0
    return 0
