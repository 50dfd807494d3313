"""The test bed as a background service (`strata testbed kubernetes up|down|status`): a holder process that
owns a bed and its journal, and the file that says which bed runs here."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Callable

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, as_obj, num
from strata.stack.journal import Journal, cleanup
from strata.stack.procfs import is_running

from . import nodes as nodes_mod
from .bed import JOURNAL_PREFIX, UNDO, beds_dir, kubernetes_bed

__all__ = ["beds_dir", "current", "current_file", "hold", "undo_orphans"]


def current_file() -> Path:
    return beds_dir() / "current.json"


def current() -> JsonObject | None:
    """The running bed's facts (holder pid, kubeconfig, addresses), or None when none runs."""
    try:
        facts = as_obj(json.loads(current_file().read_text()), str(current_file()))
        holder = int(num(facts, "holder") or 0)
    except (OSError, ValueError):
        return None
    return facts if holder and is_running(holder) else None


class Stop(Exception):
    pass


def hold(
    log: Callable[[str], None] = print,
    nodes: int = 0,
    disk_bytes: int = nodes_mod.DISK_BYTES,
    registries: dict[str, str] | None = None,
    registry: bool = False,
    buffered: tuple[int, ...] = (),
) -> None:
    """Bring a bed up (`nodes`, `disk_bytes`, `registries`, `registry`, `buffered`: kubernetes_bed's) and keep it until
    SIGTERM/SIGINT (or one of its processes dies), then undo it all. The journal is this process's: `strata
    cleanup` leaves the bed alone while it lives, undoes it after."""
    if current():
        raise StrataError("a Kubernetes test bed already runs here", "strata testbed kubernetes down")
    n = undo_orphans(log=log)  # a bed whose holder was killed still runs: it goes first
    if n:
        log(f"undid {n} resource(s) of a test bed whose holder was killed")

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        raise Stop()

    signal.signal(signal.SIGTERM, stop)
    journal = Journal(f"{JOURNAL_PREFIX}{os.getpid()}")
    try:
        with kubernetes_bed(
            journal,
            log=log,
            nodes=nodes,
            disk_bytes=disk_bytes,
            registries=registries,
            registry=registry,
            buffered=buffered,
        ) as bed:
            facts = {**bed.facts(), "holder": os.getpid(), "state": "ready"}
            current_file().write_text(json.dumps(facts, indent=1))
            log(f"ready; kubeconfig {bed.kubeconfig}")
            while not bed.dead():
                time.sleep(1)
            log(f"stopping: {', '.join(bed.dead())} exited (see {bed.plan.path('logs')})")
    except (Stop, KeyboardInterrupt):
        log("stopping")
    finally:
        current_file().unlink(missing_ok=True)
        journal.close()


def undo_orphans(log: Callable[[str], None] = print) -> int:
    """Undo the beds whose holder died (kill -9) from their journals; returns the resources undone."""
    return cleanup(log=log, pattern=f"{JOURNAL_PREFIX}*.jsonl", undo=UNDO)
