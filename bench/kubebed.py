"""What the Kubernetes benches share (kubernetes_agent.py, kubernetes_placement.py): strata's CLI that must
succeed, and a test bed of two nodes with its registry, brought up for the bench and down after it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator


def strata_cli(*args: str, env: dict[str, str], timeout: float = 3600) -> str:
    """`strata ARGS`; its output, or exit with what it said."""
    cp = subprocess.run([sys.executable, "-m", "strata.cli.main", *args], capture_output=True, text=True,
                        env={**os.environ, **env}, timeout=timeout)  # fmt: skip
    if cp.returncode != 0:
        raise SystemExit(f"strata {' '.join(args)} exited {cp.returncode}:\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}")
    return cp.stdout


@contextlib.contextmanager
def bed(state: Path, disk_size: str = "2GiB") -> Iterator[dict[str, Any]]:
    """`strata testbed kubernetes up --nodes 2 --registry` under `state`; its status document."""
    env = {"STRATA_STATE_DIR": str(state)}
    strata_cli("testbed", "kubernetes", "up", "--nodes", "2", "--registry", "--disk-size", disk_size, env=env)
    try:
        yield json.loads(strata_cli("testbed", "kubernetes", "status", env=env))
    finally:
        strata_cli("testbed", "kubernetes", "down", env=env, timeout=600)
