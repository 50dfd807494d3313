"""The emulated flag's value: the runtime emulated the CPU (validity/emulation.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from strata.results.flags.flag import Flag, split


@dataclass
class Emulated:
    """The runtime emulated the CPU (a VM under TCG): the numbers are the emulation's, not the storage's."""

    flag: ClassVar[Flag] = Flag.EMULATED
    reason: str = ""
    suspect: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"suspect": self.suspect, "reason": self.reason, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Emulated:
        core, extra = split(doc, ("suspect", "reason"))
        return cls(core.get("reason") or "", bool(core.get("suspect")), extra)

    @property
    def warns(self) -> bool:
        return self.suspect
