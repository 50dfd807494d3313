"""The numbers the seed studies publish, as data (paper.yaml beside this module).

One PaperValue per number a study's text or tables give that a user could set beside a result of
their own: the per-container MB/s of study 004's Tables 2 to 5, study 001's Table 2, and the
ratios, percentages, container counts and latencies the text of studies 002 and 003 states. Each
says where it is printed, what it measures, in what unit, relative to what, and which of strata's
configurations measure the same quantity (`match`, by what the study means: paper_match.py), the
configuration a change is relative to (`versus`), and, where no shipped example produces the
configuration, why (`not_reproduced`). A metric that names a latency names one the workloads declare
(`latency_metric`), so the studies' words for their tools' latencies stay in paper.yaml. paper.yaml's
header says what each field and match key means and what was left out; docs/studies.md numbers the
studies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from strata.core.params import DEPTH, JOBS
from strata.workloads import declared

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a report reads this file every time

PATH = Path(__file__).with_name("paper.yaml")

STUDIES = ("001", "002", "003", "004")
READS = ("table", "text", "figure")
UNITS = (
    "MB/s",
    "KB/s",
    "IOPS",
    "ops/s",
    "ms",
    "us",
    "ratio",
    "percent",
    "containers",
    "count",
    "KiB",
    "jobs",
    "cores",
    "GB",
    "points",
)
MATCH_KEYS = (
    "workload",
    "filesystem",
    "runtime",
    "path",
    "containers",
    JOBS,
    DEPTH,
    "limits",
    "attached",
    "profile",
    "replication_factor",
    "nodes",
    "clusters",
    "offered",
    "hosts",
    "disks",
    "metric",
)
INT_KEYS = ("containers", JOBS, DEPTH, "replication_factor", "nodes", "clusters", "hosts", "disks")
# The metrics that are not a latency; a latency's are `latency_metric`'s, from the workloads' declarations.
METRICS = (
    "throughput",
    "per_container",
    "max_throughput",
    "cpu_util",
    "target_cpu",
    "disk_bw",
    "peak",
    "saturation",
    "best_bs",
    "cliff_jobs",
    "limit",
    "connections",
)
SHARE = "share"
FIELDS = (
    "study",
    "where",
    "what",
    "read",
    "unit",
    "value",
    "baseline",
    "versus",
    "match",
    "note",
    "not_reproduced",
    "case",
)
REQUIRED = ("study", "where", "what", "read", "unit", "value")


@dataclass(frozen=True)
class PaperValue:
    study: str
    where: str
    what: str
    read: str
    unit: str
    value: float
    baseline: str | None = None
    match: dict[str, str | int | float] = field(default_factory=dict)
    note: str = ""
    versus: dict[str, str | int | float] = field(default_factory=dict)  # the baseline configuration
    not_reproduced: str = ""  # why no shipped example produces the configuration
    case: str = ""  # the values judged together as the study's results (published.py): its `where` unless set

    @property
    def key(self) -> tuple[str, str, str]:
        """What names the value: no two entries share it."""
        return (self.study, self.where, self.what)

    @property
    def source(self) -> str:
        return f"study {self.study}, {self.where}"


@dataclass(frozen=True)
class LatencyMetric:
    """A metric that names a latency a workload declares (its `MetricSchema`): `<latency>_<stat>`, a
    statistic the latency declares (ns), or `<part>_share`, a part's mean as a share of the whole's mean."""

    name: str
    stat: str  # a statistic of the latency, or SHARE
    whole: bool  # the latency is a workload's whole (the last of its breakdown), not a part of one
    label: str  # the latency in words ("completion")

    @property
    def subject(self) -> str:
        """What it measures, in words ("mean latency", "completion latency")."""
        if self.stat == SHARE:
            return f"{self.name}'s share of the latency"
        if self.whole:
            return f"{self.stat} latency"
        return f"{self.label} latency" if self.stat == "mean" else f"{self.stat} {self.label} latency"


def latency_metric(metric: str) -> LatencyMetric | None:
    """The latency `metric` names, by the registered workloads' declarations, or None: not a latency's."""
    schemas = declared()
    wholes = {s.total_latency for s in schemas}
    for schema in schemas:
        for f in schema.of("latency"):
            stat = metric.removeprefix(f"{f.name}_")
            whole = f.name in wholes
            if stat != metric and (stat in f.stats or (stat == SHARE and not whole)):
                return LatencyMetric(f.name, stat, whole, f.label or f.name)
    return None


def load(path: Path = PATH) -> list[PaperValue]:
    """Every value of paper.yaml, checked; ValueError naming the first bad entry."""
    raw = yaml.load(path.read_text(), Loader=SAFE_LOADER)
    if not isinstance(raw, list):
        raise ValueError(f"{path.name}: expected a list of entries, got {type(raw).__name__}")
    out: list[PaperValue] = []
    seen: dict[tuple[str, str, str], int] = {}
    for i, entry in enumerate(raw):
        v = parse(entry, i)
        if v.key in seen:
            raise ValueError(f"{_name(entry, i)}: the same study, where and what as entry {seen[v.key]}")
        seen[v.key] = i
        out.append(v)
    return out


def parse(entry: object, i: int = 0) -> PaperValue:
    """One entry as a PaperValue, or ValueError naming it (its index, study, where and what)."""
    name = _name(entry, i)
    if not isinstance(entry, dict):
        raise ValueError(f"{name}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise ValueError(f"{name}: unknown field(s) {', '.join(unknown)}")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise ValueError(f"{name}: missing {', '.join(missing)}")
    if entry["study"] not in STUDIES:
        raise ValueError(f"{name}: study {entry['study']!r} is not one of {', '.join(STUDIES)}")
    for k in ("where", "what"):
        if not isinstance(entry[k], str) or not entry[k].strip():
            raise ValueError(f"{name}: `{k}` must be a non-empty string")
    if entry["read"] not in READS:
        raise ValueError(f"{name}: read {entry['read']!r} is not one of {', '.join(READS)}")
    if entry["unit"] not in UNITS:
        raise ValueError(f"{name}: unit {entry['unit']!r} is not one of {', '.join(UNITS)}")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: value {value!r} is not a finite number")
    baseline = entry.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
        raise ValueError(f"{name}: baseline must be a non-empty string or null")
    if entry["unit"] in ("ratio", "points") and baseline is None:
        said = "a ratio" if entry["unit"] == "ratio" else "a change in percentage points"
        raise ValueError(f"{name}: {said} needs a baseline")
    for k in ("note", "not_reproduced", "case"):
        if not isinstance(entry.get(k) or "", str):
            raise ValueError(f"{name}: {k} must be a string")
    versus = _match(entry.get("versus"), name, "versus")
    if "metric" in versus:
        raise ValueError(f"{name}: versus names the baseline configuration; the metric is the value's own")
    if versus and baseline is None:
        raise ValueError(f"{name}: versus needs a baseline (what the value is relative to, in words)")
    return PaperValue(
        study=entry["study"],
        where=entry["where"],
        what=entry["what"],
        read=entry["read"],
        unit=entry["unit"],
        value=float(value),
        baseline=baseline,
        match=_match(entry.get("match"), name),
        note=entry.get("note") or "",
        versus=versus,
        not_reproduced=entry.get("not_reproduced") or "",
        case=entry.get("case") or "",
    )


def _match(match: object, name: str, what: str = "match") -> dict[str, str | int | float]:
    if match is None:
        return {}
    if not isinstance(match, dict):
        raise ValueError(f"{name}: {what} must be a mapping")
    for k, v in match.items():
        if k not in MATCH_KEYS:
            raise ValueError(f"{name}: {what} key {k!r} is not one of {', '.join(MATCH_KEYS)}")
        if k == "offered":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"{name}: {what} offered is a share of the peak above 0 and at most 1, got {v!r}")
        elif k in INT_KEYS:
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{name}: {what} {k} must be an integer, got {v!r}")
        elif isinstance(v, bool) or not isinstance(v, (str, int)) or v == "":
            raise ValueError(f"{name}: {what} {k} must be a non-empty string or an integer, got {v!r}")
    metric = match.get("metric")
    if metric is not None and metric not in METRICS and latency_metric(str(metric)) is None:
        raise ValueError(
            f"{name}: metric {metric!r} is not one of {', '.join(METRICS)}, nor a latency a workload declares "
            f"(<latency>_<statistic>, <part>_{SHARE})"
        )
    return dict(match)


def _name(entry: object, i: int) -> str:
    """How an error names an entry: its index, and its study, where and what when it has them."""
    if isinstance(entry, dict):
        said = ", ".join(str(entry[k]) for k in ("study", "where", "what") if entry.get(k) not in (None, ""))
        if said:
            return f"paper.yaml entry {i} ({said})"
    return f"paper.yaml entry {i}"
