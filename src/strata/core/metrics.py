"""What a workload's results hold, declared by the workload itself (docs/architecture.md "Workload").

Each workload lists its result fields in a `MetricSchema`: the parameters worth a column or a sweep
axis, the totals of a trial (the headline's candidates), the rates and latencies per data direction,
each with its unit and which way is better. The export's columns, the sweeps, `strata show`'s table
and the latency figures are made from these declarations, so none of them names a workload or its
keys: a new workload declares its fields and appears in all of them.

Where a field is stored follows from its kind (`Metric.path`):

    parameter      trial.workload.<name>
    total          metrics.primary.<name>
    per_direction  metrics.read.<name>, metrics.write.<name>
    latency        metrics.read.<name>_ns.<stat>, metrics.write.<name>_ns.<stat> (a summary in ns:
                   n, mean, min, max, p50, p90, p95, p99, p99_9: workloads/latency.py's percentiles);
                   one stored apart from the directions names its place (`key`: fio's syncs, metrics.sync.lat_ns)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Protocol, TypeAlias, Union

from strata.core import jsondoc
from strata.core.jsondoc import JsonObject


class Stored(Protocol):
    """A stored result as the read side holds it (results/result.py Result): the members a field's path starts
    at (`trial`, `metrics`; the module docstring)."""

    @property
    def trial(self) -> JsonObject: ...

    @property
    def metrics(self) -> JsonObject: ...


# What a field is read from: a stored result, typed, or its JSON (a result being parsed, a test's document).
Doc: TypeAlias = Union[Stored, JsonObject]

Kind = Literal["parameter", "total", "per_direction", "latency"]
KINDS: tuple[Kind, ...] = ("parameter", "total", "per_direction", "latency")
DIRECTIONS = ("read", "write")


@dataclass(frozen=True)
class Axis:
    """A parameter whose cells form a sweep when they differ only in it (analysis/measured/sweeps.py)."""

    label: str  # the axis in titles and table headings: "block size (KiB)"
    min_points: int = 2  # distinct values a line needs to be drawn
    scale: float = 1  # drawn as value / scale (bytes as KiB)
    detail: bool = False  # a load level: latency, CPU and disk are drawn against it too (report/detail.py)


@dataclass(frozen=True)
class Show:
    """How `strata show` prints a field: under `heading` ("{stat}" filled for a latency), value / scale."""

    heading: str
    scale: float = 1
    digits: int = 1
    stats: tuple[str, ...] = ()  # a latency's statistics shown, when not all of those it declares


@dataclass(frozen=True)
class Operations:
    """A workload's per-operation results (Filebench's flowops): a list of entries stored at `key`, each
    named by its `name`, with the columns the report's operations table shows: (heading, path in an entry)."""

    key: tuple[str, ...]
    word: str  # what one is called in a table's heading ("flowop")
    columns: tuple[tuple[str, tuple[str, ...]], ...]

    def of(self, result: Doc) -> list[JsonObject]:
        v = dig(result, self.key)
        return [e for e in v if isinstance(e, dict)] if isinstance(v, list) else []

    @staticmethod
    def value(entry: JsonObject, path: tuple[str, ...]) -> Any:
        return dig(entry, path)


def dig(result: Doc, path: tuple[str, ...]) -> Any:
    """The value at `path` in a stored result, or None where a key is missing (Any: the callers, in analysis
    and report, read numbers and strings of stored results through it)."""
    v: object = result if isinstance(result, dict) else {"trial": result.trial, "metrics": result.metrics}
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return v


@dataclass(frozen=True)
class OfferedRate:
    """A workload whose clients offer a rate to databases rather than run flat out (YCSB's `target`, pgbench's
    `rate`): the parameters of the rate offered to each database, absolute (`rate`, ops/s) or as a share of
    the peak its clients reached flat out just before (`share`; None: it has none), neither when it runs flat
    out; the parameter of the databases each instance runs (`databases`: clusters; None: one); and where a
    trial stores the peak it measured and the rate it then offered (`peak`, `offered`, in ops/s; `peak` ()
    when it measures none). The studies' claims on databases select by it (analysis/findings/checks_cpu.py,
    analysis/studies/paper_match.py: an offered rate compares as a share of the peak), and under an absolute rate the
    advice compares latency, not the throughput the rate sets (analysis/advice/compared.py)."""

    rate: str
    share: str | None = None
    databases: str | None = None
    peak: tuple[str, ...] = ()
    offered: tuple[str, ...] = ()

    def relative(self, workload: JsonObject) -> Any:
        """The share of the peak a relative target offers (`target: 40%`), or None."""
        return workload.get(self.share) if self.share else None

    def absolute(self, workload: JsonObject) -> Any:
        """The absolute rate offered to each database, or None."""
        return workload.get(self.rate)

    def flat_out(self, workload: JsonObject) -> bool:
        return self.absolute(workload) is None and self.relative(workload) is None

    def peak_measured(self, workload: JsonObject) -> bool:
        """Whether a trial measured the peak: flat out, or a relative target's run just before."""
        return self.relative(workload) is not None or self.absolute(workload) is None

    def share_of_peak(self, workload: JsonObject) -> float | None:
        """The share of the peak offered: a relative target's, 1.0 flat out, None for an absolute rate
        (the analysis derives that from the flat-out run of the same configuration when there is one)."""
        if self.relative(workload) is not None:
            return float(self.relative(workload))
        return 1.0 if self.absolute(workload) is None else None

    def databases_of(self, workload: JsonObject) -> Any:
        return workload.get(self.databases) if self.databases else None


@dataclass(frozen=True)
class Events:
    """A count of events inside a trial's measured run that weigh on its numbers and that every trial a comparison
    compares must hold as many of (PostgreSQL's checkpoints; a Cassandra's flushes): where a trial stores the count
    (`key`), what one is called (`word`), and what makes the counts equal (`fix`). The report warns when the
    trials of an advice group hold different counts (analysis/advice/compared.py)."""

    key: tuple[str, ...]
    word: str
    fix: str

    def count(self, result: Doc) -> int | None:
        v = dig(result, self.key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class Caution:
    """A shape of a workload's own parameters that makes its numbers measure something other than storage, which
    the report warns of (analysis/advice/hygiene.py) with the fix: `check` reads a trial's resolved workload
    (`trial.workload`) and says what is wrong in words, or None; `kind` names the warning."""

    kind: str
    check: Callable[[JsonObject], str | None]
    fix: str


@dataclass(frozen=True)
class BlockIo:
    """A block I/O workload's parameters that the studies name in their own words: the access pattern
    (`pattern`: read, write, randread, randwrite, ...: random and sequential I/O) and the size of one I/O in
    bytes (`size`: the block size). The analysis reads them here (analysis/cells/query.py), never by name."""

    pattern: str
    size: str


@dataclass(frozen=True)
class OperationMix:
    """A workload whose operations of several types are each summarized apart (YCSB's READ, UPDATE, ...):
    where the summaries are stored (a mapping from the type to its summary), each summary's count and mean
    keys, and the mean's unit in ns. The mean latency over all operations is their count-weighted mean
    (study 001's cassandra-stress reports one mean for a mixed load)."""

    key: tuple[str, ...]
    count: str = "n"
    mean: str = "mean"
    ns: float = 1.0  # ns per unit of `mean`

    def mean_ns(self, result: Doc) -> float | None:
        """The mean latency (ns) over every operation of one stored result, or None when it holds none."""
        by_type = dig(result, self.key)
        summaries = by_type.values() if isinstance(by_type, dict) else []
        ops = [v for v in summaries if isinstance(v, dict) and v.get(self.count) and v.get(self.mean)]
        n = sum(v[self.count] for v in ops)
        return sum(v[self.count] * v[self.mean] for v in ops) / n * self.ns if n else None


@dataclass(frozen=True)
class Metric:
    """One result field of a workload."""

    name: str
    kind: Kind
    unit: str = ""  # "" for a parameter without one (an access pattern)
    better: Literal["higher", "lower"] | None = None  # None for a parameter
    headline: bool = False  # may be the headline (`metrics.primary.metric`), the number the report compares
    label: str = ""  # in words, for captions: a latency's part of an I/O ("submission")
    type: Literal["int", "float", "str"] = "float"  # the export's column type
    export: bool = True  # a column of `strata export`
    axis: Axis | None = None  # a sweep axis (parameters only)
    context: bool = False  # says what ran, in a sweep's title ("randread 4 KiB")
    text: Callable[[Any], str] = str  # a value in such a title
    stats: tuple[str, ...] = ()  # a latency's statistics that are export columns
    show: Show | None = None
    key: tuple[str, ...] = ()  # where it is stored, when not where its kind keeps it (the module docstring)

    def path(self, direction: str = "read") -> tuple[str, ...]:
        """The keys from a stored result down to the value (to the latency summary for a latency)."""
        if self.key:
            return self.key
        return {
            "parameter": ("trial", "workload", self.name),
            "total": ("metrics", "primary", self.name),
            "per_direction": ("metrics", direction, self.name),
            "latency": ("metrics", direction, f"{self.name}_ns"),
        }[self.kind]

    def value(self, result: Doc, direction: str = "read", stat: str | None = None) -> Any:
        """The stored value, or None where the result has none."""
        return dig(result, self.path(direction) + ((stat,) if stat else ()))

    def shown(self) -> list[tuple[str, str | None]]:
        """(heading, statistic) of each column `strata show` prints this field in."""
        if self.show is None:
            return []
        stats = self.show.stats or self.stats
        return [(self.show.heading.format(stat=s), s) for s in stats] or [(self.show.heading, None)]

    def columns(self) -> list[tuple[str, str | None, str | None]]:
        """(column name, direction, statistic) of each export column of this field."""
        if self.kind == "per_direction":
            return [(f"{d}_{self.name}", d, None) for d in DIRECTIONS]
        if self.kind == "latency" and self.key:  # stored apart from the directions (fio's syncs): no direction
            return [(f"{self.name}_{s}_ns", None, s) for s in self.stats]
        if self.kind == "latency":
            return [(f"{d}_{self.name}_{s}_ns", d, s) for d in DIRECTIONS for s in self.stats]
        return [(self.name, None, None)]


@dataclass(frozen=True)
class MetricSchema:
    """A workload's result fields. `breakdown`: its latencies drawn side by side, the parts of an I/O's
    latency first and the whole last (the latency every analysis of "the latency" reads). `in_flight`:
    the load's numjobs x iodepth x containers are the I/Os it keeps in flight (a figure says so; a
    workload with its own threads, as YCSB, does not). `device_latency`: the part of the breakdown the
    device answers in (fio's completion latency), what a remote device's fabric adds to; None: the whole.
    `submission_latency`: the part spent before the I/O is issued (fio's submission latency: the
    application's overhead, as study 003 reads it); None: not measured apart. `offered`: its clients offer
    a rate (OfferedRate); `mix`: how the mean over all its operation types is computed (OperationMix);
    `io`: its parameters the studies name (BlockIo: the access pattern, the block size);
    `events`: counts that compared trials must share (Events: PostgreSQL's checkpoints); `client_cpu`: where a
    trial stores the share of the host's CPUs its own clients took in the measured run (a server workload's
    clients run on the host beside the servers: analysis/cells/usage.py takes it from the host's busy share); ():
    it runs no clients of its own; `cautions`: shapes of its parameters the report warns of (Caution: pgbench's
    scale below its clients)."""

    fields: tuple[Metric, ...] = ()
    breakdown: tuple[str, ...] = ()
    in_flight: bool = False
    device_latency: str | None = None
    operations: Operations | None = None
    submission_latency: str | None = None
    offered: OfferedRate | None = None
    mix: OperationMix | None = None
    events: tuple[Events, ...] = ()
    cautions: tuple[Caution, ...] = ()
    client_cpu: tuple[str, ...] = ()
    io: BlockIo | None = None

    def clients_cpu_share(self, result: Doc) -> float | None:
        """The share (0 to 1) of the host's CPUs the workload's own clients took in the measured run, or None."""
        v = dig(result, self.client_cpu) if self.client_cpu else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def of(self, kind: Kind) -> list[Metric]:
        return [f for f in self.fields if f.kind == kind]

    def field(self, kind: Kind, name: str) -> Metric | None:
        return next((f for f in self.fields if f.kind == kind and f.name == name), None)

    @property
    def total_latency(self) -> str | None:
        return self.breakdown[-1] if self.breakdown else None

    @property
    def below_latency(self) -> str | None:
        """The latency a layer below the workload adds to: the device's part, else the whole."""
        return self.device_latency or self.total_latency

    def breakdown_words(self) -> str:
        """The breakdown in words, for captions: "Submission (slat), completion (clat) and total (lat)"."""
        words = [f"{(m.label if (m := self.field('latency', k)) else '') or k} ({k})" for k in self.breakdown]
        text = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)
        return text[:1].upper() + text[1:]

    def direction(self, result: Doc) -> str:
        """The data direction whose latency represents a trial: read, unless the first per-direction rate
        (operations per second) is higher for writes."""
        rates = self.of("per_direction")
        if not rates:
            return "read"
        read, write = (rates[0].value(result, d) or 0 for d in DIRECTIONS)
        return "write" if write > read else "read"

    def context(self, workload: JsonObject, without: str = "") -> str:
        """What ran, in words ("randread 4 KiB"): the context parameters but `without`, or the name."""
        words = [
            f.text(workload[f.name])
            for f in self.of("parameter")
            if f.context and f.name != without and workload.get(f.name)
        ]
        return " ".join(words) or jsondoc.text(workload, "name")


EMPTY = MetricSchema()


def merged(schemas: Iterable[MetricSchema], kind: Kind) -> list[Metric]:
    """The fields of a kind over several workloads, each name once (the first declaration), in order."""
    out: dict[str, Metric] = {}
    for s in schemas:
        for f in s.of(kind):
            out.setdefault(f.name, f)
    return list(out.values())


def export_columns(schemas: Iterable[MetricSchema]) -> list[tuple[str, Metric, str | None, str | None]]:
    """(column, field, direction, statistic) of every exported field of `schemas`: parameters, totals,
    rates by field then direction, latencies by direction then field (the order exports always had)."""
    schemas = list(schemas)
    out = []
    for kind in ("parameter", "total", "per_direction"):
        out += [(c, f, d, s) for f in merged(schemas, kind) if f.export for c, d, s in f.columns()]
    lats = [f for f in merged(schemas, "latency") if f.export]
    out += [(c, f, d, s) for d in DIRECTIONS for f in lats for c, fd, s in f.columns() if fd == d]
    out += [(c, f, None, s) for f in lats for c, fd, s in f.columns() if fd is None]
    return out
