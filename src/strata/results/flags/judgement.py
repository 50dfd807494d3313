"""A suspicion with its evidence (`Judgement`): the type of the cache, above_raw, sync, spread, flush and
absorbed flags, each with its own evidence `E` and flag-specific top-level fields `X` (disks.py,
comparisons.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from strata.core.jsondoc import JsonObject, obj, text
from strata.results.flags.flag import Flag, split


class NoEvidence(TypedDict, total=False):
    """A suspicion without fields of its own."""


E = TypeVar("E", bound=Mapping[str, object])
X = TypeVar("X", bound=Mapping[str, object])


@dataclass
class Judgement(Generic[E, X]):
    """A suspicion with its evidence: cache, above_raw, sync, spread, flush, absorbed (each with its own `E`
    and `X`)."""

    flag: Flag
    suspect: bool
    reason: str = ""
    expected: bool = False  # the effect is part of what is measured (buffered I/O), not an error
    evidence: E = field(default_factory=dict)  # type: ignore[assignment]
    extra: X = field(default_factory=dict)  # type: ignore[assignment]  # flag-specific top-level fields

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "suspect": self.suspect,
            "reason": self.reason,
            "evidence": self.evidence,
            **self.extra,
        }
        if self.expected:
            doc["expected"] = True
        return doc

    @staticmethod
    def from_json(flag: Flag, doc: JsonObject) -> Judgement[Any, Any]:
        """A stored suspicion. Its evidence and extra fields are read as the JSON objects they are stored as; the
        flag's accessor (`Flags.cache`: a `Cache`) gives them its `E` and `X`, the one place the codec takes a
        stored flag's fields for its declared type (each is lenient: any key may be absent)."""
        core, extra = split(doc, ("suspect", "reason", "expected", "evidence"))
        evidence: JsonObject = obj(core, "evidence") if core.get("evidence") else {}
        reason = text(core, "reason") if core.get("reason") else ""
        return Judgement(flag, bool(core.get("suspect")), reason, bool(core.get("expected")), evidence, extra)

    @property
    def warns(self) -> bool:
        return self.suspect and not self.expected
