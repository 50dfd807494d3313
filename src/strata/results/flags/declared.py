"""Each flag's declaration (`DECLARED`): how it is read back, and how strata shows it. The export, `strata
show`, the cells and the report's terminal table, bar figures and warnings render every flag from this, none
by its name. A new flag is a member of `Flag`, its line here (its type too, if none fits), its judgement in
validity/, and its test (tests/unit/test_flags.py checks that every Flag is declared and round-trips)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from strata.core.jsondoc import JsonObject
from strata.results.flags.emulated import Emulated
from strata.results.flags.failure import Failure
from strata.results.flags.flag import Flag
from strata.results.flags.judgement import Judgement
from strata.results.flags.steady import Steady

# What to do when the host's CPU was saturated (validity/saturation.py judges it; its words live here, with
# every flag's fix, so that flags/ imports nothing of validity/).
SATURATED_FIX = (
    "fewer clients, instances or jobs, nothing else running beside strata, or more cores; the trial's "
    "flags.saturated gives the host's CPU shares"
)

# A flag's typed value. A stored suspicion's evidence is typed by its flag's accessor (judgement.py).
Value = Judgement[Any, Any] | Steady | Emulated | Failure


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
    read: Callable[[JsonObject], Value]  # its stored JSON to its typed value
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


def _judgement(flag: Flag) -> Callable[[JsonObject], Value]:
    return partial(Judgement.from_json, flag)


# Every flag, in the order a result stores and strata shows them.
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
            Flag.SATURATED,
            _judgement(Flag.SATURATED),
            word="CPU",
            meaning="the host's CPU was saturated",
            mark=warned,
            export=(Column("saturated_suspect", "bool", suspected),),
            fix=SATURATED_FIX,
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
