"""A result's validity flags: each flag's declaration, its typed value, and the one codec to the stored JSON.

validity/ makes every judgement; this package says what each judgement is,
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

Its modules, one job each (this one only gathers their public names, so that
`from strata.results.flags import X` and `flags.X` read them):

    flag.py         the flags' names (`Flag`) and the lenient split of a stored flag
    judgement.py    a suspicion with its evidence (`Judgement`), the type of six flags
    disks.py        cache, flush, absorbed: the evidence of the layers below the workload
    comparisons.py  above_raw, sync, spread: the evidence of a comparison
    steady.py, emulated.py, failure.py   the three flags with a type of their own
    declared.py     each flag's declaration (`DECLARED`): how it is read back and shown
    codec.py        `Flags`, the one codec; `warns` and `record` on a stored result
"""

from strata.results.flags.codec import PENDING, Flags, record, warns
from strata.results.flags.comparisons import (
    AboveRaw,
    AboveRawEvidence,
    Spread,
    SpreadExtra,
    Sync,
    SyncEvidence,
    SyncExtra,
)
from strata.results.flags.declared import DECLARED, Column, Declared, Value, apart, suspected, warned
from strata.results.flags.disks import (
    Absorbed,
    AbsorbedEvidence,
    Cache,
    CacheEvidence,
    DiskFlushes,
    Flush,
    FlushEvidence,
)
from strata.results.flags.emulated import Emulated
from strata.results.flags.failure import Failure
from strata.results.flags.flag import Flag, number
from strata.results.flags.judgement import Judgement, NoEvidence
from strata.results.flags.steady import SeriesStats, Steady

__all__ = [
    "DECLARED",
    "PENDING",
    "AboveRaw",
    "AboveRawEvidence",
    "Absorbed",
    "AbsorbedEvidence",
    "Cache",
    "CacheEvidence",
    "Column",
    "Declared",
    "DiskFlushes",
    "Emulated",
    "Failure",
    "Flag",
    "Flags",
    "Flush",
    "FlushEvidence",
    "Judgement",
    "NoEvidence",
    "SeriesStats",
    "Spread",
    "SpreadExtra",
    "Steady",
    "Sync",
    "SyncEvidence",
    "SyncExtra",
    "Value",
    "apart",
    "number",
    "record",
    "suspected",
    "warned",
    "warns",
]
