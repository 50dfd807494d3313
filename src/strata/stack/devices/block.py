"""`block`: an existing device, written only if it is blank or the spec says `destroy: true`.

An already attached remote device (NVMe over Fabrics, iSCSI) is a `block` device
with a `remote:` label, so user hardware reports the same way as strata's own
remote device (stack/devices/remote.py).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Literal, Self

from pydantic import Field, model_validator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, whole
from strata.core.params import Strict, shorthand
from strata.stack.blockdev import DeviceHandle, block_facts, needs_root, write_problems
from strata.stack.devices.base import HostDevice
from strata.stack.journal import Journal
from strata.stack.precondition import Precondition, apply


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
    precondition: Precondition | None = Field(
        default=None, description="purge, fill, steady: done once to each device built, before its first trial"
    )
    LATER = frozenset({"precondition"})

    @model_validator(mode="after")
    def _default_name(self) -> Self:
        if not self.name:
            object.__setattr__(self, "name", self.path.rsplit("/", 1)[-1])
        return self


class Block(HostDevice[BlockParams]):
    name = "block"
    params = BlockParams

    def device_path(self, params: BlockParams) -> str:
        return params.path

    def shorthand(self, text: str) -> dict[str, str] | None:
        """`/dev/sdb` or `block:/dev/sdb`."""
        return {"type": "block", "path": text} if text.startswith("/dev/") else shorthand(self.name, text, "path")

    def available(self, host: JsonObject, params: BlockParams | None = None) -> str | None:
        return needs_root()

    def problems(self, params: BlockParams) -> list[str]:
        return write_problems(params.path, params.destroy)

    def writes(self, params: BlockParams, workdir: Path) -> str:
        return f"{params.path} (block device, ERASED)"

    def size_bytes(self, params: BlockParams) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            kname = Path(os.path.realpath(params.path)).name
            return int(Path(f"/sys/class/block/{kname}/size").read_text()) * 512
        return None

    @contextlib.contextmanager
    def provision(self, params: BlockParams, journal: Journal, workdir: Path) -> Iterator[DeviceHandle]:
        problems = write_problems(params.path, params.destroy)
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
        size = whole(facts, "size_bytes") or 0
        apply(params.precondition, params.path, size, facts)
        yield DeviceHandle(params.name, params.path, whole(facts, "size_bytes") or 0, [kname], facts)


BLOCK = Block()
