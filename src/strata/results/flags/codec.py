"""The one codec of a result's flags: `Flags` holds them by flag, decodes each stored one when first asked for
(through its declaration), and writes them back; `warns` decodes one flag of a stored result, `record` stores
one judged flag in it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strata.core.jsondoc import JsonObject, JsonValue, as_obj
from strata.results.flags.comparisons import AboveRaw, Spread, Sync
from strata.results.flags.declared import DECLARED, Value
from strata.results.flags.disks import Absorbed, Cache, Flush
from strata.results.flags.emulated import Emulated
from strata.results.flags.failure import Failure
from strata.results.flags.flag import Flag
from strata.results.flags.judgement import Judgement, NoEvidence
from strata.results.flags.steady import Steady

# the saturated flag's value: the host's CPU shares as its evidence (validity/saturation.py)
Saturated = Judgement[JsonObject, NoEvidence]

PENDING = Failure("pending")  # a stored flag not decoded yet (Flags.get decodes it); never read as a value


@dataclass
class Flags:
    """The flags of one result, by flag; a flag stored as null is held as None. Read from a stored result,
    each flag is decoded when first asked for (a report asks tens of thousands of results for one flag):
    until then `values` holds it as PENDING and `stored` its JSON."""

    values: dict[Flag, Value | None] = field(default_factory=dict)
    stored: dict[Flag, JsonValue] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: JsonObject | None) -> Flags:
        values: dict[Flag, Value | None] = {}
        stored: dict[Flag, JsonValue] = {}
        if doc:
            for flag, d in DECLARED.items():  # in their order, without an Enum attribute lookup per flag and result
                key = d.key
                if key in doc:
                    v = doc[key]
                    values[flag] = None if v is None else PENDING
                    if v is not None:
                        stored[flag] = v
        return cls(values, stored)

    @classmethod
    def of(cls, result: JsonObject) -> Flags:
        """A stored result's flags."""
        doc = result.get("flags")
        return cls.from_json(doc if isinstance(doc, dict) else None)

    def get(self, flag: Flag) -> Value | None:
        """The flag's value, or None: absent, or stored as null."""
        if flag in self.stored:
            self.values[flag] = DECLARED[flag].read(as_obj(self.stored.pop(flag), flag.value))
        return self.values.get(flag)

    def set(self, flag: Flag, value: Value | None) -> None:
        """Judge `flag` anew (None: stored as null), over what a stored result said of it."""
        self.stored.pop(flag, None)
        self.values[flag] = value

    def items(self) -> list[tuple[Flag, Value | None]]:
        """Every flag it holds (None: stored as null), decoded, in its order."""
        return [(f, self.get(f)) for f in list(self.values)]

    def to_json(self) -> dict[str, object]:
        return {f.value: v.to_json() if (v := self.get(f)) is not None else None for f in list(self.values)}

    def write(self, result: dict[str, object]) -> None:
        """Store these flags in a stored result's JSON, beside (or over) those it holds."""
        held = result.get("flags")
        result["flags"] = {**(held if isinstance(held, dict) else {}), **self.to_json()}

    def update(self, other: Flags) -> None:
        """`other`'s flags judged anew over these (a trial's result takes what its judges said)."""
        for flag in other.values:
            self.set(flag, other.get(flag))

    def warns(self, flag: Flag) -> bool:
        """The flag says the number is not the storage's: a suspicion not expected, a failure, no steady state."""
        v = self.get(flag)
        return v is not None and v.warns

    def _judgement(self, flag: Flag) -> Judgement[Any, Any] | None:
        v = self.get(flag)
        return v if isinstance(v, Judgement) else None

    @property
    def cache(self) -> Cache | None:
        return self._judgement(Flag.CACHE)

    @property
    def above_raw(self) -> AboveRaw | None:
        return self._judgement(Flag.ABOVE_RAW)

    @property
    def sync(self) -> Sync | None:
        return self._judgement(Flag.SYNC)

    @property
    def spread(self) -> Spread | None:
        return self._judgement(Flag.SPREAD)

    @property
    def flush(self) -> Flush | None:
        return self._judgement(Flag.FLUSH)

    @property
    def absorbed(self) -> Absorbed | None:
        return self._judgement(Flag.ABSORBED)

    @property
    def saturated(self) -> Saturated | None:
        return self._judgement(Flag.SATURATED)

    @property
    def steady(self) -> Steady | None:
        v = self.get(Flag.STEADY)
        return v if isinstance(v, Steady) else None

    @property
    def emulated(self) -> Emulated | None:
        v = self.get(Flag.EMULATED)
        return v if isinstance(v, Emulated) else None

    @property
    def failed(self) -> Failure | None:
        v = self.get(Flag.FAILED)
        return v if isinstance(v, Failure) else None


def warns(result: JsonObject, flag: Flag) -> bool:
    """Flags.of(result).warns(flag), decoding that flag only (the analysis asks it of every result)."""
    flags = result.get("flags")
    doc = flags.get(flag.value) if isinstance(flags, dict) else None
    return doc is not None and DECLARED[flag].read(as_obj(doc, flag.value)).warns


def record(result: dict[str, object], value: Value) -> None:
    """Store one judged flag in a result (replacing what it held)."""
    Flags({value.flag: value}).write(result)
