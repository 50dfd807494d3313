"""`loop`: a loop device over a file that strata fills, with direct I/O by default.

For the cache check a loop device names its backing disk: the device where
bytes must move if no page cache answered (a buffered loop device may be
answered by the host's page cache; a direct-I/O one reads through).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Literal

from pydantic import Field, field_validator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject
from strata.core.params import Strict, shorthand, size_field
from strata.core.proc import sh
from strata.stack import blockdev
from strata.stack.blockdev import DeviceHandle, block_facts, disk_of, fill_file, needs_root
from strata.stack.journal import Journal, Undoing, Undos, need
from strata.stack.precondition import Precondition, apply

MAX_SIZE_BYTES = 1 << 50  # 1 PiB: a bound on what a typo can ask for


class LoopParams(Strict):
    """A loop device over a file that strata fills (a sparse file answers reads from holes: `sparse: true`
    leaves it so, as a thin volume never written is)."""

    type: Literal["loop"] = "loop"
    name: str = Field(default="loop", description="the name used in results and stack labels")
    size: int = Field(default=4 * 2**30, description="bytes; accepts 4GiB, 512M")
    direct_io: bool = Field(default=True, description="losetup --direct-io=on; false makes a buffered loop device")
    backing_file: str | None = Field(default=None, description="default: WORKDIR/<name>.img")
    sparse: bool = Field(
        default=False,
        description="leave the image unwritten, as a thin volume is (its reads are of holes until written)",
    )
    precondition: Precondition | None = Field(
        default=None, description="purge, fill, steady: done once to each device built, before its first trial"
    )
    LATER = frozenset({"sparse", "precondition"})
    _v = field_validator("size", mode="before")(size_field)

    @field_validator("size")
    @classmethod
    def _whole_mib(cls, v: int) -> int:
        if v < 64 << 20 or v % (1 << 20) or v > MAX_SIZE_BYTES:
            raise ValueError("a loop device size is a whole number of MiB, from 64MiB to 1PiB")
        return v


def _undo_loop(data: JsonObject) -> None:
    out = sh(["losetup", "-j", need(data, "backing_file")], check=False).stdout
    for line in out.splitlines():
        sh(["losetup", "-d", line.split(":", 1)[0]], check=False)


def image_path(params: LoopParams, workdir: Path) -> Path:
    return Path(params.backing_file or workdir / f"{params.name}.img")


@contextlib.contextmanager
def attach(backing: Path, direct_io: bool, journal: Journal) -> Iterator[str]:
    """A loop device over an existing file, detached on the way out; yields /dev/loopN."""
    seq = journal.intent("loop", backing_file=str(backing))
    try:
        dev = sh(
            ["losetup", "--find", "--show", f"--direct-io={'on' if direct_io else 'off'}", str(backing)]
        ).stdout.strip()
        journal.update(seq, device=dev)
        yield dev
    finally:
        _undo_loop({"backing_file": str(backing)})
        journal.release(seq)


class Loop(Undoing):
    name = "loop"
    params = LoopParams
    undo: Undos = {"loop": _undo_loop, **blockdev.UNDO}  # the device, and its backing file

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def available(self, host: JsonObject, params: LoopParams | None = None) -> str | None:
        if not Path("/dev/loop-control").exists():
            return "no /dev/loop-control (loop module not loaded: modprobe loop)"
        return needs_root()

    def problems(self, params: LoopParams) -> list[str]:
        return []

    def writes(self, params: LoopParams, workdir: Path) -> str:
        image = "sparse loop image" if params.sparse else "loop image"
        return f"{image_path(params, workdir)} ({params.size >> 20} MiB {image}, created and removed)"

    def size_bytes(self, params: LoopParams) -> int:
        return params.size

    @contextlib.contextmanager
    def provision(self, params: LoopParams, journal: Journal, workdir: Path) -> Iterator[DeviceHandle]:
        backing = image_path(params, workdir)
        if backing.exists():
            raise StrataError(
                f"loop image {backing} already exists", "remove it, or run `strata cleanup` if a killed run left it"
            )
        backing.parent.mkdir(parents=True, exist_ok=True)
        fseq = journal.intent("file", path=str(backing))
        try:
            if params.sparse:
                with backing.open("wb") as f:
                    f.truncate(params.size)
            else:
                fill_file(backing, params.size)
            with attach(backing, params.direct_io, journal) as dev:
                handle = self._handle(params, dev, backing, workdir)
                apply(params.precondition, dev, params.size, handle.facts)
                yield handle
        finally:
            backing.unlink(missing_ok=True)
            journal.release(fseq)

    def _handle(self, params: LoopParams, dev: str, backing: Path, workdir: Path) -> DeviceHandle:
        kname = Path(dev).name
        dio = Path(f"/sys/block/{kname}/loop/dio").read_text().strip() == "1"
        if params.direct_io and not dio:
            raise StrataError(
                f"{dev} did not accept --direct-io=on",
                f"put the loop image on a file system that supports O_DIRECT (workdir {workdir})",
            )
        backing_disk = disk_of(str(backing))
        facts = {
            **block_facts(kname),
            "type": "loop",
            "backing_file": str(backing),
            "direct_io": dio,
            "sparse": params.sparse,
            "backing_disk": backing_disk,
            "backing_disk_facts": block_facts(backing_disk) if backing_disk else {},
        }
        return DeviceHandle(params.name, dev, params.size, [kname] + ([backing_disk] if backing_disk else []), facts)


LOOP = Loop()
