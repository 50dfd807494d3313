"""What every bench across test hosts shares: the test bed with its state and cleanup, and `strata run`.

`bench_bed(root, hosts, name)` makes test hosts (strata.hosts.testbed: network namespaces on a bridge,
a dockerd each, one Swarm) under `root`, with strata's state beside it, and yields the bed and a
results folder; on the way out everything is torn down, `root` removed (never across a mount point),
and the state folder too once its journal is empty. `fresh(given, prefix)` is a bench's own folder: the
one the user gave, or a new one under /var/tmp, so that what a killed run left never fails the next.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from strata.hosts.testbed import Bed, swarm_bed  # noqa: E402
from strata.stack.journal import Journal  # noqa: E402
from strata.stack.procfs import remove_tree  # noqa: E402


def fresh(given: str | None, prefix: str) -> Path:
    """The folder the user gave, else a new name under /var/tmp (not created)."""
    return Path(given) if given else Path(f"/var/tmp/{prefix}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def workdir(given: str | None, prefix: str) -> Iterator[Path]:
    """A spec's workdir for one bench run; removed afterwards (never across a mount point)."""
    path = fresh(given, prefix)
    try:
        yield path
    finally:
        remove_tree(path)


@contextlib.contextmanager
def bench_bed(root: Path, hosts: list[str], name: str) -> Iterator[tuple[Bed, Path]]:
    if root.exists():
        raise SystemExit(f"{root} exists: remove it or give another --root")
    state = root.with_name(root.name + "-state")
    os.environ["STRATA_STATE_DIR"] = str(state)
    results = root / "results"
    results.mkdir(parents=True)
    journal = Journal(name, state)
    try:
        with swarm_bed(journal, hosts, root / "bed") as bed:
            yield bed, results
    finally:
        journal.close()
        remove_tree(root)  # never across a mount point (strata removed its own)
        if not any((state / "journal").glob("*.jsonl")):
            shutil.rmtree(state, ignore_errors=True)


def strata_run(doc: dict[str, Any], out: Path) -> float:
    """`strata run` of the spec `doc` into `out`; its wall time (a run whose trials failed counts)."""
    path = out.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(doc))
    t0 = time.monotonic()
    cp = subprocess.run(
        [sys.executable, "-m", "strata.cli.main", "run", str(path), "-o", str(out)], capture_output=True, text=True
    )
    if cp.returncode not in (0, 1):
        raise SystemExit(f"strata run failed ({cp.returncode}):\n{cp.stdout[-3000:]}\n{cp.stderr[-3000:]}")
    return time.monotonic() - t0
