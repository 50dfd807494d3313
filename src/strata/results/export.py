"""Flat rows from stored results, and CSV / Parquet bytes from them (pure functions).

The columns every result has (its labels, load and flags) frame the registered workloads' fields, as
each declares them (`Workload.metrics`, strata/core/metrics.py): a new workload's fields become columns
without a change here, and so do a new flag's (`Declared.export`, strata/results/flags/declared.py). A value
is read from any result by where its field is stored, whatever the result's workload, so a result of a
workload no longer registered still fills the columns it shares.

`csv_bytes` is strata's one CSV writer: the report's tables (report/csv.py) format their cells
for reading, the export keeps every value as stored (full float precision).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from strata.core.metrics import Metric, export_columns
from strata.core.params import LoadCounts
from strata.results import writes
from strata.results.flags import DECLARED
from strata.results.result import Result

# Every result's columns, before and after the workloads' own (strata/core/metrics.py: `export_columns`)
# and the flags' (each flag's declaration, in their order), with their types; the order is the export's
# and stays as it is.
HEAD = (
    ("trial_id", "str"),
    ("experiment", "str"),
    ("status", "str"),
    ("stack", "str"),
    ("device", "str"),
    ("filesystem", "str"),
    ("runtime", "str"),
    ("path", "str"),
    ("workload", "str"),
    ("load", "str"),
    ("repetition", "int"),
    *((name, "int") for name in LoadCounts.names()),  # the load's counts: jobs, queue depth, instances
)
TAIL = (
    ("duration_s", "float"),
    ("started_at", "str"),
    ("kernel", "str"),
    ("hostname", "str"),
    ("write_amplification", "float"),  # the device under test's (results/writes.py)
)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # int, float, bool, str: the Parquet type
    metric: Metric | None = None  # a workload's field, read from any result by where it is stored
    direction: str | None = None
    stat: str | None = None


def columns() -> list[Column]:
    """Every column, the registered workloads' fields among them (each workload's declaration)."""
    from strata.workloads import declared

    workload = [Column(c, m.type, m, d, s) for c, m, d, s in export_columns(declared())]
    flags = [Column(c.name, c.type) for d in DECLARED.values() for c in d.export]
    return [Column(n, t) for n, t in HEAD] + workload + flags + [Column(n, t) for n, t in TAIL]


def flatten(r: Result, cols: list[Column] | None = None) -> dict[str, object]:
    """A stored result's row, column by column."""
    lab: Mapping[str, object] = r.labels
    f, load, host = r.flags, r.layers.load, r.host
    row = {
        "trial_id": r.trial_id,
        "experiment": r.experiment,
        "status": r.status,
        "stack": r.stack,
        **{k: lab.get(k) for k in ("device", "filesystem", "runtime", "path", "workload", "load", "repetition")},
        **{k: load.get(k) for k in LoadCounts.names()},
        **{c.name: c.cell(f.get(d.flag)) for d in DECLARED.values() for c in d.export},
        "duration_s": r.duration_s,
        "started_at": r.started_at,
        "kernel": host.get("kernel"),
        "hostname": host.get("hostname"),
        "write_amplification": writes.device(r.writes),
    }
    cols = columns() if cols is None else cols
    return {c.name: c.metric.value(r, c.direction or "read", c.stat) if c.metric else row.get(c.name) for c in cols}


def as_stored(v: object) -> str:
    """A value as stored: None empty, everything else as Python writes it (csv.DictWriter's rule)."""
    return "" if v is None else str(v)


def csv_bytes(
    columns: Sequence[str], rows: Iterable[Iterable[object]], text: Callable[[object], str] = as_stored
) -> bytes:
    """A header row, then each row's cells through `text`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([text(v) for v in r])
    return buf.getvalue().encode()


def to_csv(results: Sequence[Result]) -> bytes:
    cols = columns()
    return csv_bytes([c.name for c in cols], (list(flatten(r, cols).values()) for r in results))


def to_parquet(results: Sequence[Result]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = columns()
    types = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
    schema = pa.schema([pa.field(c.name, types[c.type]) for c in cols])
    table = pa.Table.from_pylist([flatten(r, cols) for r in results], schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data: bytes = sink.getvalue().to_pybytes()  # pyarrow has no type information
    return data
