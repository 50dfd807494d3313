"""The failed flag's value: no measurement, and why (validity/failure.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from strata.core.jsondoc import JsonObject, text
from strata.results.flags.flag import Flag, split


@dataclass
class Failure:
    """No measurement: the category (errors.FAILURE_CATEGORIES), what happened, the tail of stderr."""

    flag: ClassVar[Flag] = Flag.FAILED
    category: str = ""
    message: str = ""
    stderr: str = ""
    extra: JsonObject = field(default_factory=dict)  # stored keys this version does not know, kept

    def to_json(self) -> JsonObject:
        return {"category": self.category, "message": self.message, "stderr": self.stderr, **self.extra}

    @classmethod
    def from_json(cls, doc: JsonObject) -> Failure:
        core, extra = split(doc, ("category", "message", "stderr"))
        category, message, stderr = (text(core, k) if core.get(k) else "" for k in ("category", "message", "stderr"))
        return cls(category, message, stderr, extra)

    @property
    def warns(self) -> bool:
        return True
