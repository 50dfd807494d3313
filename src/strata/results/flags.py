"""A result's validity flags as typed values, and the one codec between them and the stored JSON.

validity.py makes every judgement; this module says what each judgement is
and how it is stored and read back. `Flags.of(result)` reads a stored
result's flags (`.cache`, `.failed.category`, `.steady.judged`,
`.warns(Flag.SYNC)`); `Flags.write(result)` and `record(result, value)`
store them. Only the schema's migrations (schema.py, `Workload.upgrade`) touch the
stored dicts, to bring an older form up to the one read here.

Each type's `to_json` is the stored format, key for key. Reading is lenient,
as a report of old results must be: a key a result lacks takes its default,
and keys a type does not know are kept (`extra`) and written back.

A stored result has a key for every flag judged, and `null` for one judged
absent: `failed` of a trial that did not fail, `steady` of a trial without a
per-second series. `Flags` keeps that difference (`values` holds None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import ClassVar


class Flag(str, Enum):
    """The validity flags a result can carry (the keys of `flags` in a stored result)."""

    CACHE = "cache"
    ABOVE_RAW = "above_raw"
    SYNC = "sync"
    STEADY = "steady"
    SPREAD = "spread"
    EMULATED = "emulated"
    FAILED = "failed"


def _split(doc: dict, known: tuple[str, ...]) -> tuple[dict, dict]:
    """(the known keys of a stored flag, the rest)."""
    return {k: v for k, v in doc.items() if k in known}, {k: v for k, v in doc.items() if k not in known}


@dataclass
class Judgement:
    """A suspicion with its evidence: cache, above_raw, sync, spread."""

    flag: Flag
    suspect: bool
    reason: str = ""
    expected: bool = False  # the effect is part of what is measured (buffered I/O), not an error
    evidence: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # flag-specific top-level fields (skew_s, basis, ...)

    def to_json(self) -> dict:
        doc = {"suspect": self.suspect, "reason": self.reason, "evidence": self.evidence, **self.extra}
        if self.expected:
            doc["expected"] = True
        return doc

    @classmethod
    def from_json(cls, flag: Flag, doc: dict) -> Judgement:
        core, extra = _split(doc, ("suspect", "reason", "expected", "evidence"))
        return cls(
            flag,
            bool(core.get("suspect")),
            core.get("reason") or "",
            bool(core.get("expected")),
            core.get("evidence") or {},
            extra,
        )

    @property
    def warns(self) -> bool:
        return self.suspect and not self.expected


@dataclass
class Steady:
    """SNIA PTS steady state of the headline's per-second series (steady.py), over its last window."""

    flag: ClassVar[Flag] = Flag.STEADY
    steady: bool = False
    judged: bool = True  # False: too few seconds to judge
    reason: str = ""
    window_s: int | None = None
    mean: float | None = None
    range_pct: float | None = None
    slope_pct: float | None = None
    series: dict | None = None  # the whole series' seconds, mean and sd (analysis/variance.py)
    tool: dict | None = None  # the tool's own verdict (fio's --steadystate)
    # What the verdict rests on: "snia" (range and slope over the last window: a single trial must be steady
    # to stand for the storage) or "drift" (a repeated design, whose intervals carry the trial-to-trial and
    # per-second variation: only a trend beyond the noise biases a trial). Stored from 2026-11 on; before, snia.
    basis: str | None = None
    drift: bool | None = None  # a trend beyond the per-second noise over the whole window (validity.steady)
    drift_pct: float | None = None
    drift_t: float | None = None
    extra: dict = field(default_factory=dict)

    KEYS: ClassVar = (
        "steady", "judged", "reason", "window_s", "mean", "range_pct", "slope_pct", "series", "tool",
        "basis", "drift", "drift_pct", "drift_t",
    )  # fmt: skip
    OPTIONAL: ClassVar = ("series", "tool", "basis", "drift", "drift_pct", "drift_t")  # absent from older results

    def to_json(self) -> dict:
        doc = {k: getattr(self, k) for k in self.KEYS if k not in self.OPTIONAL}
        for k in self.OPTIONAL:
            if getattr(self, k) is not None:
                doc[k] = getattr(self, k)
        return {**doc, **self.extra}

    @classmethod
    def from_json(cls, doc: dict) -> Steady:
        core, extra = _split(doc, cls.KEYS)
        return cls(**core, extra=extra)

    @property
    def warns(self) -> bool:
        if self.basis == "drift":
            return self.judged and bool(self.drift)
        return self.judged and not self.steady


@dataclass
class Emulated:
    """The runtime emulated the CPU (a VM under TCG): the numbers are the emulation's, not the storage's."""

    flag: ClassVar[Flag] = Flag.EMULATED
    reason: str = ""
    suspect: bool = True
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"suspect": self.suspect, "reason": self.reason, **self.extra}

    @classmethod
    def from_json(cls, doc: dict) -> Emulated:
        core, extra = _split(doc, ("suspect", "reason"))
        return cls(core.get("reason") or "", bool(core.get("suspect")), extra)

    @property
    def warns(self) -> bool:
        return self.suspect


@dataclass
class Failure:
    """No measurement: the category (errors.FAILURE_CATEGORIES), what happened, the tail of stderr."""

    flag: ClassVar[Flag] = Flag.FAILED
    category: str = ""
    message: str = ""
    stderr: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"category": self.category, "message": self.message, "stderr": self.stderr, **self.extra}

    @classmethod
    def from_json(cls, doc: dict) -> Failure:
        core, extra = _split(doc, ("category", "message", "stderr"))
        return cls(core.get("category") or "", core.get("message") or "", core.get("stderr") or "", extra)

    @property
    def warns(self) -> bool:
        return True


Value = Judgement | Steady | Emulated | Failure
_KEYS = tuple((f.value, f) for f in Flag)
PENDING = Failure("pending")  # a stored flag not decoded yet (Flags.get decodes it); never read as a value

# How each flag is read back: a new Flag needs its line here (tests/unit/test_flags.py checks every one has).
READERS: dict[Flag, Callable[[dict], Value]] = {
    **{f: partial(Judgement.from_json, f) for f in (Flag.CACHE, Flag.ABOVE_RAW, Flag.SYNC, Flag.SPREAD)},
    Flag.STEADY: Steady.from_json,
    Flag.EMULATED: Emulated.from_json,
    Flag.FAILED: Failure.from_json,
}


@dataclass
class Flags:
    """The flags of one result, by flag; a flag stored as null is held as None. Read from a stored result,
    each flag is decoded when first asked for (a report asks tens of thousands of results for one flag):
    until then `values` holds it as PENDING and `stored` its JSON."""

    values: dict[Flag, Value | None] = field(default_factory=dict)
    stored: dict[Flag, dict] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: dict | None) -> Flags:
        values: dict[Flag, Value | None] = {}
        stored: dict[Flag, dict] = {}
        if doc:
            for key, flag in _KEYS:  # in Flag's order, without an Enum attribute lookup per flag and result
                if key in doc:
                    v = doc[key]
                    values[flag] = None if v is None else PENDING
                    if v is not None:
                        stored[flag] = v
        return cls(values, stored)

    @classmethod
    def of(cls, result: dict) -> Flags:
        """A stored result's flags."""
        return cls.from_json(result.get("flags"))

    def get(self, flag: Flag) -> Value | None:
        """The flag's value, or None: absent, or stored as null."""
        if flag in self.stored:
            self.values[flag] = READERS[flag](self.stored.pop(flag))
        return self.values.get(flag)

    def set(self, flag: Flag, value: Value | None) -> None:
        """Judge `flag` anew (None: stored as null), over what a stored result said of it."""
        self.stored.pop(flag, None)
        self.values[flag] = value

    def to_json(self) -> dict:
        return {f.value: v.to_json() if (v := self.get(f)) is not None else None for f in list(self.values)}

    def write(self, result: dict) -> None:
        """Store these flags in a result, beside (or over) those it holds."""
        result.setdefault("flags", {}).update(self.to_json())

    def warns(self, flag: Flag) -> bool:
        """The flag says the number is not the storage's: a suspicion not expected, a failure, no steady state."""
        v = self.get(flag)
        return v is not None and v.warns

    def _judgement(self, flag: Flag) -> Judgement | None:
        v = self.get(flag)
        return v if isinstance(v, Judgement) else None

    @property
    def cache(self) -> Judgement | None:
        return self._judgement(Flag.CACHE)

    @property
    def above_raw(self) -> Judgement | None:
        return self._judgement(Flag.ABOVE_RAW)

    @property
    def sync(self) -> Judgement | None:
        return self._judgement(Flag.SYNC)

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


def warns(result: dict, flag: Flag) -> bool:
    """Flags.of(result).warns(flag), decoding that flag only (the analysis asks it of every result)."""
    doc = (result.get("flags") or {}).get(flag.value)
    return doc is not None and READERS[flag](doc).warns


def record(result: dict, value: Value) -> None:
    """Store one judged flag in a result (replacing what it held)."""
    Flags({value.flag: value}).write(result)
