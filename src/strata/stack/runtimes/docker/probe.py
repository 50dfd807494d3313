"""`strata doctor`'s probe of a storage driver: really start a daemon with it (the daemon has the last word)."""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Literal

from strata.core.errors import Unsupported
from strata.stack.devices.loop import LOOP, LoopParams
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems.base import FilesystemParams
from strata.stack.journal import Journal
from strata.stack.runtimes.docker.client import SYSTEM_SOCKET, answers
from strata.stack.runtimes.docker.daemon import available
from strata.stack.runtimes.docker.session import docker_session


def probe_driver(driver: str, workdir: Path) -> str | None:
    """Start a daemon with `driver` on a small loop file system: None if it works, else the daemon's own error."""
    reason = available(driver, {})
    if reason or driver == "system":
        return reason if reason or answers(SYSTEM_SOCKET) else f"no docker daemon answers at {SYSTEM_SOCKET}"
    tag = secrets.token_hex(3)
    journal = Journal(f"probe-{driver}-{tag}")
    fs_type: Literal["btrfs", "ext4"] = "btrfs" if driver == "btrfs" else "ext4"
    fs = FilesystemParams(type=fs_type)
    try:
        with (
            LOOP.provision(LoopParams(name=f"probe-{tag}", size=256 << 20), journal, workdir) as dev,
            FILESYSTEMS[fs_type].provision(fs, dev, journal, workdir) as mounted,
            docker_session(f"docker:{driver}", driver, mounted, journal, workdir, {}),
        ):
            return None
    except Unsupported as e:
        return str(e)
    finally:
        journal.close()
        with contextlib.suppress(OSError):  # the scratch folder, once empty (never a user's data)
            workdir.rmdir()
