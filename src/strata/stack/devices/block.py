"""`block`: an existing device, written only if it is blank or the spec says `destroy: true`.

An already attached remote device (NVMe over Fabrics, iSCSI) is a `block` device
with a `remote:` label, so user hardware reports the same way as strata's own
remote device (stack/devices/remote.py).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from strata.errors import StrataError
from strata.params import Strict
from strata.proc import sh
from strata.stack.devices.base import DeviceHandle
from strata.stack.devices.common import block_facts, needs_root


class BlockParams(Strict):
    """An existing device. Written only if it is blank or `destroy: true` names it."""

    type: Literal["block"] = "block"
    name: str = Field(default="", description="default: the device's kernel name")
    path: str = Field(description="e.g. /dev/nvme0n1")
    destroy: bool = Field(default=False, description="allow strata to erase this exact device")
    remote: str | None = Field(
        default=None,
        description="a remote device you attached (e.g. nvme-tcp, iscsi): "
        "reported as remote storage, compared with local devices",
    )

    @model_validator(mode="after")
    def _default_name(self):
        if not self.name:
            object.__setattr__(self, "name", self.path.rsplit("/", 1)[-1])
        return self


def mounts_of(path: str) -> list[str]:
    """Mount points of the device or any of its partitions."""
    real = os.path.realpath(path)
    names = {path, real}
    names.update(
        f"/dev/{p.strip('└─├ ')}" for p in sh(["lsblk", "-n", "-l", "-o", "NAME", real], check=False).stdout.split()[1:]
    )
    return [
        f[1]
        for f in (line.split(" ") for line in Path("/proc/mounts").read_text().splitlines() if line)
        if f[0] in names or os.path.realpath(f[0]) in names
    ]


def block_problems(params: BlockParams) -> list[str]:
    """Why strata must not write this device (empty: safe). Used by validate, before any I/O."""
    p = params.path
    try:
        if not stat.S_ISBLK(os.stat(p).st_mode):
            return [f"{p} is not a block device"]
    except OSError as e:
        return [f"{p}: {e.strerror}"]
    problems = []
    mounted = mounts_of(p)
    if mounted:
        problems.append(
            f"{p} is mounted at {', '.join(mounted)}: unmount it first (umount {mounted[0]}); "
            "strata never writes a mounted device, whatever `destroy` says"
        )
    if not params.destroy:
        sig = sh(["wipefs", "-n", p], check=False).stdout.strip()
        parts = sh(["lsblk", "-n", "-o", "NAME", p], check=False).stdout.strip().splitlines()[1:]
        if sig or parts:
            what = (sig.splitlines()[-1] if sig else "") + (
                f" partitions: {', '.join(x.strip('└─├ ') for x in parts)}" if parts else ""
            )
            problems.append(
                f"{p} holds data ({what.strip()}); strata will not erase it without `destroy: true` for this device"
            )
    return problems


class Block:
    name = "block"
    params = BlockParams

    def available(self, host: dict, params: BlockParams | None = None) -> str | None:
        return needs_root()

    def problems(self, params: BlockParams) -> list[str]:
        return block_problems(params)

    def writes(self, params: BlockParams, workdir: Path) -> str:
        return f"{params.path} (block device, ERASED)"

    def size_bytes(self, params: BlockParams) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            kname = Path(os.path.realpath(params.path)).name
            return int(Path(f"/sys/class/block/{kname}/size").read_text()) * 512
        return None

    @contextlib.contextmanager
    def provision(self, params: BlockParams, journal, workdir: Path):
        problems = block_problems(params)
        if problems:
            raise StrataError(
                "; ".join(problems),
                f"set `destroy: true` on the device {params.path} in the spec "
                "if its data may be erased (and unmount it)",
            )
        kname = Path(os.path.realpath(params.path)).name
        facts = {**block_facts(kname), "type": "block"}
        if params.remote:
            facts["remote"] = params.remote
        yield DeviceHandle(params.name, params.path, facts.get("size_bytes", 0), [kname], facts)


BLOCK = Block()
