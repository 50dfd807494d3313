"""A suspicion with its evidence (`Judgement`): the type of the cache, above_raw, sync, spread, flush and
absorbed flags, each with its own evidence `E` and flag-specific top-level fields `X` (disks.py,
comparisons.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from strata.results.flags.flag import Flag, split


class NoEvidence(TypedDict, total=False):
    """A suspicion without fields of its own."""


E = TypeVar("E", bound=Mapping[str, Any])
X = TypeVar("X", bound=Mapping[str, Any])


@dataclass
class Judgement(Generic[E, X]):
    """A suspicion with its evidence: cache, above_raw, sync, spread (each with its own `E` and `X`)."""

    flag: Flag
    suspect: bool
    reason: str = ""
    expected: bool = False  # the effect is part of what is measured (buffered I/O), not an error
    evidence: E = field(default_factory=dict)  # type: ignore[assignment]
    extra: X = field(default_factory=dict)  # type: ignore[assignment]  # flag-specific top-level fields

    def to_json(self) -> dict[str, Any]:
        doc = {"suspect": self.suspect, "reason": self.reason, "evidence": self.evidence, **self.extra}
        if self.expected:
            doc["expected"] = True
        return doc

    @classmethod
    def from_json(cls, flag: Flag, doc: dict[str, Any]) -> Judgement[Any, Any]:
        core, extra = split(doc, ("suspect", "reason", "expected", "evidence"))
        evidence: Any = core.get("evidence") or {}  # as stored: the reader types it by the flag's E
        rest: Any = extra
        return cls(
            flag, bool(core.get("suspect")), core.get("reason") or "", bool(core.get("expected")), evidence, rest
        )

    @property
    def warns(self) -> bool:
        return self.suspect and not self.expected
