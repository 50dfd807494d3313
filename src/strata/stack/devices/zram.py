"""`zram`: a compressed RAM block device. RAM speed: a ceiling, not a disk; the cache check
cannot judge it (there is no layer below to compare with), and results say so."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Literal

from pydantic import Field, field_validator

from strata.core.jsondoc import JsonObject, whole
from strata.core.params import Strict, shorthand, size_field
from strata.core.proc import sh
from strata.stack.blockdev import DeviceHandle, block_facts, needs_root
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.precondition import Precondition, apply

CONTROL = Path("/sys/class/zram-control")


class ZramParams(Strict):
    """A compressed RAM block device (RAM speed: a ceiling, not a disk)."""

    type: Literal["zram"] = "zram"
    name: str = "zram"
    size: int = Field(default=2 * 2**30, ge=16 << 20, le=1 << 44, description="bytes")
    _v = field_validator("size", mode="before")(size_field)
    precondition: Precondition | None = Field(
        default=None, description="purge, fill, steady: done once to each device built, before its first trial"
    )
    LATER = frozenset({"precondition"})


def _undo_zram(data: JsonObject) -> None:
    num = whole(data, "num")
    if num is None or not Path(f"/sys/block/zram{num}").exists():
        return
    Path(f"/sys/block/zram{num}/reset").write_text("1")
    (CONTROL / "hot_remove").write_text(str(num))


class Zram(Undoing):
    name = "zram"
    params = ZramParams
    undo: Undos = {"zram": _undo_zram}

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def available(self, host: JsonObject, params: ZramParams | None = None) -> str | None:
        if needs_root():
            return needs_root()
        if not CONTROL.exists():
            r = sh(["modprobe", "zram", "num_devices=0"], check=False)
            if r.returncode != 0:
                return f"no zram module: {r.stderr.strip()}"
        return None

    def problems(self, params: ZramParams) -> list[str]:
        return []

    def writes(self, params: ZramParams, workdir: Path) -> str:
        return f"a new zram device of {params.size >> 20} MiB"

    def size_bytes(self, params: ZramParams) -> int:
        return params.size

    @contextlib.contextmanager
    def provision(self, params: ZramParams, journal: Journal, workdir: Path) -> Iterator[DeviceHandle]:
        if not CONTROL.exists():
            sh(["modprobe", "zram", "num_devices=0"], check=False)
        seq = journal.intent("zram")
        num = None
        try:
            num = int((CONTROL / "hot_add").read_text().strip())
            journal.update(seq, num=num)
            Path(f"/sys/block/zram{num}/disksize").write_text(str(params.size))
            facts = {**block_facts(f"zram{num}"), "type": "zram"}
            apply(params.precondition, f"/dev/zram{num}", params.size, facts)
            yield DeviceHandle(params.name, f"/dev/zram{num}", params.size, [f"zram{num}"], facts)
        finally:
            _undo_zram({"num": num})
            journal.release(seq)


ZRAM = Zram()
