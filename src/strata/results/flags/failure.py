"""The failed flag's value: no measurement, and why (validity/failure.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from strata.results.flags.flag import Flag, split


@dataclass
class Failure:
    """No measurement: the category (errors.FAILURE_CATEGORIES), what happened, the tail of stderr."""

    flag: ClassVar[Flag] = Flag.FAILED
    category: str = ""
    message: str = ""
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "message": self.message, "stderr": self.stderr, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Failure:
        core, extra = split(doc, ("category", "message", "stderr"))
        return cls(core.get("category") or "", core.get("message") or "", core.get("stderr") or "", extra)

    @property
    def warns(self) -> bool:
        return True
