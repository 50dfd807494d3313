"""The workload plugin interface (STYLE.md items 2 and 3).

A workload builds the command each instance runs and parses what the
instances wrote. It never starts processes itself: the runtime does, so the
same workload runs natively or in N containers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel


@dataclass(frozen=True)
class Target:
    """Where the workload does its I/O, as seen by the instance."""
    kind: str          # "dir" or "device"
    path: str          # directory or block device path inside the instance
    out_dir: str       # where the instance writes its output files


@dataclass
class InstanceOutput:
    """What one instance left behind (files under `out_dir` on the host)."""
    index: int
    out_dir: Path
    returncode: int
    stderr: str
    start_time_s: float | None = None   # wall clock when the tool was exec'd
    end_time_s: float | None = None


@dataclass
class Parsed:
    metrics: dict[str, Any]
    moved_bytes: dict[str, int]          # {"read": n, "write": n}: bytes the workload says it moved
    series: dict[str, list] = field(default_factory=dict)  # per-second, from the tool's own logs


class Workload(Protocol):
    name: str  # registry key = spec `type` = JSON `workload.type`

    def parse_spec(self, raw: dict, base_dir: Path) -> BaseModel: ...
    def available(self, host: dict) -> str | None: ...
    def direct_io(self, spec: BaseModel) -> bool: ...
    def estimate_s(self, spec: BaseModel) -> float: ...
    def command(self, spec: BaseModel, load: BaseModel, target: Target, instance: int) -> list[str]: ...
    def parse(self, spec: BaseModel, outputs: list[InstanceOutput]) -> Parsed: ...


def resolve_file(raw: dict, base_dir: Path, what: str) -> dict:
    """A spec's `file:` relative to the spec's folder, checked to exist."""
    raw = dict(raw)
    if raw.get("file"):
        p = Path(raw["file"])
        p = p if p.is_absolute() else base_dir / p
        if not p.is_file():
            raise ValueError(f"no {what} at {p}")
        raw["file"] = str(p.resolve())
    return raw
