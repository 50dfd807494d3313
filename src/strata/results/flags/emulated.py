"""The emulated flag's value: the runtime emulated the CPU (validity/emulation.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from strata.core.jsondoc import JsonObject, text
from strata.results.flags.flag import Flag, split


@dataclass
class Emulated:
    """The runtime emulated the CPU (a VM under TCG): the numbers are the emulation's, not the storage's."""

    flag: ClassVar[Flag] = Flag.EMULATED
    reason: str = ""
    suspect: bool = True
    extra: JsonObject = field(default_factory=dict)  # stored keys this version does not know, kept

    def to_json(self) -> JsonObject:
        return {"suspect": self.suspect, "reason": self.reason, **self.extra}

    @classmethod
    def from_json(cls, doc: JsonObject) -> Emulated:
        core, extra = split(doc, ("suspect", "reason"))
        return cls(text(core, "reason") if core.get("reason") else "", bool(core.get("suspect")), extra)

    @property
    def warns(self) -> bool:
        return self.suspect
