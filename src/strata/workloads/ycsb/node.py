"""Cassandra nodes started by hand as JVMs on the host, each journaled before it starts (for the tools
that drive a node outside a trial: benches, integration tests; a trial's nodes are instances its
runtime runs, script.py).

A node's log goes to a file outside the stack under test (`log_path`). A node in a container,
driven through a bare Docker daemon, is the benches' (bench/cassandra_container.py): the workload
names no runtime.

Journal kinds: `cassandra-jvm` (a native JVM, found again by its command line, which names
its unique conf dir) and `ycsb-dir` (a directory strata made for a node: conf, data).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from strata.core.jsondoc import JsonObject, ShapeError
from strata.stack.journal import Journal, Undos
from strata.stack.procfs import cmdline, is_running, remove_tree, signal_and_wait
from strata.workloads.ycsb import cassandra
from strata.workloads.ycsb.cassandra import NodeConfig

STOP_TIMEOUT_S = 30


@dataclass
class Node:
    cfg: NodeConfig  # as the node sees its paths
    log_path: Path  # on the host
    pid: int | None = None
    started_at: float = field(default_factory=time.monotonic)  # when it was launched

    def read_log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.pid is not None and is_running(self.pid)

    def wait_ready(self, timeout_s: float = cassandra.START_TIMEOUT_S) -> float:
        """Seconds from launch to ready (the timeout counts from this call)."""
        cassandra.wait_ready(
            self.cfg.address,
            self.read_log,
            self.alive,
            timeout_s=timeout_s,
            what=f"Cassandra node {self.cfg.index} of {self.cfg.cluster_name}",
        )
        return time.monotonic() - self.started_at

    def kill(self) -> None:
        """SIGKILL, as a crash would (tests of failure handling)."""
        if self.pid:
            signal_and_wait([self.pid], signal.SIGKILL, 10)


def stage(cfg: NodeConfig, conf_dir: Path) -> None:
    """Write the node's cassandra.yaml and logback.xml into `conf_dir` (on the host)."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    for name, text in cassandra.node_files(cfg).items():
        (conf_dir / name).write_text(text)


@contextlib.contextmanager
def node_dir(journal: Journal, path: Path) -> Iterator[Path]:
    """A directory of a node (data, conf), journaled, removed on the way out."""
    seq = journal.intent("ycsb-dir", path=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        yield path
    finally:
        _undo_dir({"path": str(path)})
        journal.release(seq)


def _entry(data: JsonObject, key: str) -> str:
    """A journal entry's member its action needs (missing: a KeyError, as before; another type: a ShapeError)."""
    v = data[key]
    if not isinstance(v, str):
        raise ShapeError(f"the journal entry's {key!r} should be a string, not {type(v).__name__}")
    return v


def _undo_dir(data: JsonObject) -> None:
    remove_tree(Path(_entry(data, "path")))


# ---- the JVM ---------------------------------------------------------------------


def _marker(conf_dir: str) -> str:
    return f"-Dcassandra.config=file://{conf_dir}/cassandra.yaml"


@contextlib.contextmanager
def native_node(
    cfg: NodeConfig, jar_names: list[str], journal: Journal, log_path: Path, java: str = "java"
) -> Iterator[Node]:
    """Start a node as a JVM on the host (cfg paths are host paths, the data dir already made,
    e.g. by node_dir); stop it on the way out."""
    stage(cfg, Path(cfg.conf_dir))
    argv = cassandra.node_argv(cfg, jar_names, java)
    seq = journal.intent("cassandra-jvm", marker=_marker(cfg.conf_dir))
    proc = None
    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cfg.data_dir,
                start_new_session=True,
            )
        journal.update(seq, pid=proc.pid)
        yield Node(cfg, log_path, pid=proc.pid)
    finally:
        _undo_jvm({"marker": _marker(cfg.conf_dir), "pid": proc.pid if proc else None})
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        journal.release(seq)


def _undo_jvm(data: JsonObject) -> None:
    """Stop our JVM: SIGTERM (Cassandra's shutdown hook), then SIGKILL. Found by its command
    line (main class and our conf dir), never by name, so a reused pid is left alone."""
    pids = [pid for pid in _pids_with(_entry(data, "marker")) if cassandra.DAEMON_CLASS in cmdline(pid)]
    left = signal_and_wait(pids, signal.SIGTERM, STOP_TIMEOUT_S)
    signal_and_wait(left, signal.SIGKILL, 10)


def _pids_with(marker: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid() and marker in cmdline(int(p.name)):
            found.append(int(p.name))
    return found


def wait_all_ready(nodes: list[Node], timeout_s: float = cassandra.START_TIMEOUT_S) -> list[float]:
    """Seconds to ready of each node, checked in order (they were started in order)."""
    t0 = time.monotonic()
    return [n.wait_ready(max(1.0, timeout_s - (time.monotonic() - t0))) for n in nodes]


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "ycsb-dir": _undo_dir,
    "cassandra-jvm": _undo_jvm,
}
