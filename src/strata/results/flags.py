"""A result's validity flags: each flag's declaration, its typed value, and the one codec to the stored JSON.

validity/ makes every judgement; this module says what each judgement is,
how it is stored and read back, and how strata shows it (`DECLARED`: the
export, `strata show`, the cells and the report's terminal table render every
flag from its declaration, none by its name). A `Result`'s `flags` are a
`Flags` (result.py: `.cache`, `.failed.category`, `.steady.judged`,
`.warns(Flag.SYNC)`; `set` and `update` judge them anew); `Flags.of(doc)` reads
those of a stored result's JSON, `Flags.write(doc)` and `record(doc, value)`
store them in one. Only the schema's migrations (schema.py, `Workload.upgrade`) touch the
stored dicts, to bring an older form up to the one read here.

Each type's `to_json` is the stored format, key for key. Reading is lenient,
as a report of old results must be: a key a result lacks takes its default,
and keys a type does not know are kept (`extra`) and written back.

A stored result has a key for every flag judged, and `null` for one judged
absent: `failed` of a trial that did not fail, `steady` of a trial without a
per-second series. `Flags` keeps that difference (`values` holds None).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any, ClassVar, Generic, TypedDict, TypeVar


class Flag(str, Enum):
    """The validity flags a result can carry (the keys of `flags` in a stored result)."""

    CACHE = "cache"
    ABOVE_RAW = "above_raw"
    SYNC = "sync"
    STEADY = "steady"
    SPREAD = "spread"
    EMULATED = "emulated"
    FLUSH = "flush"
    ABSORBED = "absorbed"
    FAILED = "failed"


# ---- what each suspicion rests on: its `evidence`, and its flag-specific top-level fields (`extra`) ----
# Typed for the reader (mypy checks every key read or written); stored as the plain JSON objects they are.
# Reading stays lenient: a key a stored result lacks is absent, one a type does not know is kept.


class CacheEvidence(TypedDict, total=False):
    """The bytes behind the cache flag (validity/disks.py), by direction; `per_disk` holds each layer's."""

    moved: dict[str, int]  # buffered I/O: the bytes the workload moved, not judged
    disks: list[str]  # the layers below the workload, the device under test first
    per_disk: dict[str, dict[str, Any]]  # {disk: {read_bytes, read_share, write_bytes, write_share}}
    read_workload_bytes: int
    read_disk_bytes: int  # of the device under test
    read_disk_share: float
    write_workload_bytes: int
    write_disk_bytes: int
    write_disk_share: float
    hosts: dict[str, dict[str, Any]]  # across hosts: each host's own cache flag
    basis: str  # what the workload's bytes are when not O_DIRECT I/O (a database's WAL), said in the reason
    # a database's data set beside the memory its servers can use: {data_set_bytes, memory_bytes, memory_of,
    # fits, fix} (a data set that fits is read from memory: validity/disks.py `memory_rule`)
    memory: dict[str, Any]
    disk: str  # schema 1: the one disk checked


class AboveRawEvidence(TypedDict, total=False):
    """The raw device's result the above_raw flag compares with (validity/raw.py)."""

    raw_value: float
    raw_trial: str | None
    ratio: float
    bytes_moved: bool | None  # the cache evidence says every layer moved the workload's bytes
    low: float  # with repetitions: the ratio's interval
    high: float


class SyncEvidence(TypedDict, total=False):
    """Each instance's measured I/O window (start, end) in seconds (validity/windows.py)."""

    windows: list[tuple[float, float]]  # stored as [[start, end], ...]


class SyncExtra(TypedDict, total=False):
    """The sync flag's top-level fields: the skews it was judged on, and across hosts each host's offset."""

    instances: int
    skew_s: float
    wrapper_skew_s: float
    overlap: float
    basis: str  # "workload" (the tools' own windows) or "wrapper" (the instances' start times)
    allowed_s: float
    hosts: dict[str, dict[str, Any]]  # across hosts: each host's clock offset and first I/O (hosts/merge.py)
    host_skew_s: float | None
    release_skew_s: float | None


class SpreadExtra(TypedDict, total=False):
    cv: float | None  # the coefficient of variation of the repetitions


class FlushEvidence(TypedDict, total=False):
    """The syncs the workload asked for against the flushes each layer below it saw (validity/flushes.py)."""

    syncs: int  # by the workload's own count
    streams: int  # at most this many waited at once
    what: str  # what they were ("fsync", "WAL syncs")
    owed: float  # the flushes a stack that keeps them issues at least: syncs / streams
    disks: list[str]  # the layers below the workload, the device under test first
    per_disk: dict[str, dict[str, Any]]  # {disk: {flush_ios, write_cache, fua}}
    window: str  # the layers' flushes counted over the workload's "measured" window, or the whole "trial"


class AbsorbedEvidence(TypedDict, total=False):
    """The O_DIRECT writes the workload issued against the writes the device under test took
    (validity/absorbed.py)."""

    writes: int  # by the workload's own count
    workload_bytes: int
    random: bool
    disk: str  # the device under test
    device_writes: float  # its write requests
    device_merges: float  # writes merged into another request before it
    device_bytes: float
    syncs: int  # the workload's syncs meanwhile: each commits a journal, whose writes merge
    window: str  # counted over the workload's "measured" window, or the whole "trial"


class NoEvidence(TypedDict, total=False):
    """A suspicion without fields of its own."""


E = TypeVar("E", bound=Mapping[str, Any])
X = TypeVar("X", bound=Mapping[str, Any])


def _split(doc: dict[str, Any], known: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the known keys of a stored flag, the rest)."""
    return {k: v for k, v in doc.items() if k in known}, {k: v for k, v in doc.items() if k not in known}


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
        core, extra = _split(doc, ("suspect", "reason", "expected", "evidence"))
        evidence: Any = core.get("evidence") or {}  # as stored: the reader types it by the flag's E
        rest: Any = extra
        return cls(
            flag, bool(core.get("suspect")), core.get("reason") or "", bool(core.get("expected")), evidence, rest
        )

    @property
    def warns(self) -> bool:
        return self.suspect and not self.expected


Cache = Judgement[CacheEvidence, NoEvidence]
Flush = Judgement[FlushEvidence, NoEvidence]
Absorbed = Judgement[AbsorbedEvidence, NoEvidence]
AboveRaw = Judgement[AboveRawEvidence, NoEvidence]
Sync = Judgement[SyncEvidence, SyncExtra]
Spread = Judgement[NoEvidence, SpreadExtra]


@dataclass
class Steady:
    """SNIA PTS steady state of the headline's per-second series (validity/snia.py), over its last window."""

    flag: ClassVar[Flag] = Flag.STEADY
    steady: bool = False
    judged: bool = True  # False: too few seconds to judge
    reason: str = ""
    window_s: int | None = None
    mean: float | None = None
    range_pct: float | None = None
    slope_pct: float | None = None
    series: dict[str, Any] | None = None  # the whole series' seconds, mean and sd (analysis/cells/variance.py)
    tool: dict[str, Any] | None = None  # the tool's own verdict (fio's --steadystate)
    # What the verdict rests on: "snia" (range and slope over the last window: a single trial must be steady
    # to stand for the storage) or "drift" (a repeated design, whose intervals carry the trial-to-trial and
    # per-second variation: only a trend beyond the noise biases a trial). Stored from 2026-11 on; before, snia.
    basis: str | None = None
    drift: bool | None = None  # a trend beyond the per-second noise over the whole window (validity.steady)
    drift_pct: float | None = None
    drift_t: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    KEYS: ClassVar = (
        "steady", "judged", "reason", "window_s", "mean", "range_pct", "slope_pct", "series", "tool",
        "basis", "drift", "drift_pct", "drift_t",
    )  # fmt: skip
    OPTIONAL: ClassVar = ("series", "tool", "basis", "drift", "drift_pct", "drift_t")  # absent from older results

    def to_json(self) -> dict[str, Any]:
        doc = {k: getattr(self, k) for k in self.KEYS if k not in self.OPTIONAL}
        for k in self.OPTIONAL:
            if getattr(self, k) is not None:
                doc[k] = getattr(self, k)
        return {**doc, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Steady:
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
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"suspect": self.suspect, "reason": self.reason, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Emulated:
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
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "message": self.message, "stderr": self.stderr, **self.extra}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Failure:
        core, extra = _split(doc, ("category", "message", "stderr"))
        return cls(core.get("category") or "", core.get("message") or "", core.get("stderr") or "", extra)

    @property
    def warns(self) -> bool:
        return True


Value = Judgement[Any, Any] | Steady | Emulated | Failure
PENDING = Failure("pending")  # a stored flag not decoded yet (Flags.get decodes it); never read as a value


# ---- each flag's declaration: how it is read back and how strata shows it ------------------------------


@dataclass(frozen=True)
class Column:
    """A flag's column in the export (results/export.py): its name, its Parquet type, and its cell from the
    flag's value (None: the result has no such flag, or it is stored as null)."""

    name: str
    type: str
    cell: Callable[[Value | None], object]


@dataclass(frozen=True)
class Declared:
    """A flag's definition: everything but its judgement (validity/). The export, `strata show`, the cells,
    the report's terminal table, bar figures and warnings render every flag from this, none by its name."""

    flag: Flag
    read: Callable[[dict[str, Any]], Value]  # its stored JSON to its typed value
    null: bool = False  # judged absent, it is stored as null (failed, steady); else left out
    word: str = ""  # its word in the tables (CACHE)
    meaning: str = ""  # what the word means, in the tables' legends
    mark: Callable[[Declared, Value], str | None] | None = None  # its mark in `strata show`'s flags column
    export: tuple[Column, ...] = ()
    # A result it warns of is drawn apart from the device numbers, in the cell's group of this name
    # (analysis/cells/cells.py): never device performance, never compared. The first such flag a result warns of
    # decides its group.
    apart: str = ""
    # What to do when it warns, said in the report's warnings (analysis/advice/hygiene.py); "" for a flag whose
    # warning there is worded with its evidence by a check of its own (cache, above_raw, steady, sync, failed).
    fix: str = ""
    key: str = field(init=False, repr=False)  # the flag's JSON key, read once per stored result

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.flag.value)


def warned(d: Declared, v: Value) -> str | None:
    """The mark of a flag that warns: its word."""
    return d.word if v.warns else None


def _cache_mark(d: Declared, v: Value) -> str | None:
    expected = isinstance(v, Judgement) and v.expected
    return d.word if v.warns else "cached(expected)" if expected else None


def _category(d: Declared, v: Value) -> str | None:
    return (v.category or None) if isinstance(v, Failure) else None


def suspected(v: Value | None) -> bool:
    """An export cell: the flag warns (False where the result lacks it)."""
    return v is not None and v.warns


def _failed_category(v: Value | None) -> str | None:
    return v.category if isinstance(v, Failure) else None


def _failed_message(v: Value | None) -> str | None:
    return v.message if isinstance(v, Failure) else None


def _judgement(flag: Flag) -> Callable[[dict[str, Any]], Value]:
    return partial(Judgement.from_json, flag)


# Every flag, in the order a result stores and strata shows them. A new flag is a member of `Flag`, its line
# here (its type too, if none above fits), its judgement in validity/, and its test (tests/unit/test_flags.py
# checks that every Flag is declared and round-trips).
DECLARED: dict[Flag, Declared] = {
    d.flag: d
    for d in (
        Declared(
            Flag.CACHE,
            _judgement(Flag.CACHE),
            word="CACHE",
            meaning="a cache answered",
            mark=_cache_mark,
            export=(Column("cache_suspect", "bool", suspected),),
            apart="cache",
        ),
        Declared(
            Flag.ABOVE_RAW,
            _judgement(Flag.ABOVE_RAW),
            word="UNCONFIRMED",
            meaning="above the raw device although the device moved the bytes",
            apart="unconfirmed",
        ),
        Declared(
            Flag.SYNC,
            _judgement(Flag.SYNC),
            word="SKEW",
            meaning="instances did not run together",
            mark=warned,
            export=(Column("sync_suspect", "bool", suspected),),
        ),
        Declared(Flag.STEADY, Steady.from_json, null=True),
        Declared(Flag.SPREAD, _judgement(Flag.SPREAD)),
        Declared(Flag.EMULATED, Emulated.from_json),
        Declared(
            Flag.FLUSH,
            _judgement(Flag.FLUSH),
            word="NOFLUSH",
            meaning="the syncs asked for did not reach the device",
            mark=warned,
            export=(Column("flush_suspect", "bool", suspected),),
            apart="no flush",
            fix="each trial's flags.flush says which layer saw too few flushes and why; a stack that acknowledges "
            "syncs without flushing (ext4 or xfs mounted with barrier=0 or nobarrier, a tmpfs path, a VM disk with "
            "cache=unsafe) loses committed data on a power failure: measure a stack that keeps its syncs",
        ),
        Declared(
            Flag.ABSORBED,
            _judgement(Flag.ABSORBED),
            word="ABSORBED",
            meaning="O_DIRECT writes did not reach the device as writes",
            mark=warned,
            export=(Column("absorbed_suspect", "bool", suspected),),
            apart="absorbed",
            fix="each trial's flags.absorbed gives the workload's writes and the device's; a page cache or a "
            "journal took the O_DIRECT writes (ext4 mounted with data=journal, fuse-overlayfs): measure a stack "
            "that honors O_DIRECT, or compare it as buffered I/O",
        ),
        Declared(
            Flag.FAILED,
            Failure.from_json,
            null=True,
            word="FAILED",
            mark=_category,
            export=(
                Column("failed_category", "str", _failed_category),
                Column("failed_message", "str", _failed_message),
            ),
        ),
    )
}


def apart() -> list[Declared]:
    """The flags that draw a result apart from the device numbers, in the order they are tried."""
    return [d for d in DECLARED.values() if d.apart]


@dataclass
class Flags:
    """The flags of one result, by flag; a flag stored as null is held as None. Read from a stored result,
    each flag is decoded when first asked for (a report asks tens of thousands of results for one flag):
    until then `values` holds it as PENDING and `stored` its JSON."""

    values: dict[Flag, Value | None] = field(default_factory=dict)
    stored: dict[Flag, dict[str, Any]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any] | None) -> Flags:
        values: dict[Flag, Value | None] = {}
        stored: dict[Flag, dict[str, Any]] = {}
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
    def of(cls, result: dict[str, Any]) -> Flags:
        """A stored result's flags."""
        return cls.from_json(result.get("flags"))

    def get(self, flag: Flag) -> Value | None:
        """The flag's value, or None: absent, or stored as null."""
        if flag in self.stored:
            self.values[flag] = DECLARED[flag].read(self.stored.pop(flag))
        return self.values.get(flag)

    def set(self, flag: Flag, value: Value | None) -> None:
        """Judge `flag` anew (None: stored as null), over what a stored result said of it."""
        self.stored.pop(flag, None)
        self.values[flag] = value

    def items(self) -> list[tuple[Flag, Value | None]]:
        """Every flag it holds (None: stored as null), decoded, in its order."""
        return [(f, self.get(f)) for f in list(self.values)]

    def to_json(self) -> dict[str, Any]:
        return {f.value: v.to_json() if (v := self.get(f)) is not None else None for f in list(self.values)}

    def write(self, result: dict[str, Any]) -> None:
        """Store these flags in a stored result's JSON, beside (or over) those it holds."""
        result.setdefault("flags", {}).update(self.to_json())

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


def warns(result: dict[str, Any], flag: Flag) -> bool:
    """Flags.of(result).warns(flag), decoding that flag only (the analysis asks it of every result)."""
    doc = (result.get("flags") or {}).get(flag.value)
    return doc is not None and DECLARED[flag].read(doc).warns


def record(result: dict[str, Any], value: Value) -> None:
    """Store one judged flag in a result (replacing what it held)."""
    Flags({value.flag: value}).write(result)
