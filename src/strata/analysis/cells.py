"""Cells: the repetitions of one trial configuration, with their statistics.

A cell is everything in the resolved trial but the repetition number (the
trial id hashes the same thing plus the repetition, see spec/expand.py). Its
throughput is the headline number the seed studies report: IOPS for random
fio workloads, bandwidth for sequential ones (study 003, section 5: "We report
the IOPS for random workloads and bandwidth for sequential I/O operations"),
MB/s for Filebench workloads (study 004, Tables 2 to 5).

Trials whose cache flag is suspect (and not expected) are kept apart in the
cell: they are never part of the device numbers (DESIGN.md "What makes a
number trustworthy").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from strata.analysis import steady as steady_mod
from strata.analysis.stats import Summary, summarize

LABEL_KEYS = ("device", "filesystem", "runtime", "path", "workload", "load")
LAT_KINDS = ("slat", "clat", "lat")
RANDOM_RW = ("randread", "randwrite", "randrw", "randtrim")


def artifact(result: dict, name: str):
    """A JSON artifact of a stored trial (series.json, workload-series.json), or None."""
    if "_path" not in result:
        return None
    path = Path(result["_path"]).parent / result["trial_id"] / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def is_cache_suspect(result: dict) -> bool:
    c = (result.get("flags") or {}).get("cache") or {}
    return bool(c.get("suspect")) and not c.get("expected")


def throughput(result: dict) -> tuple[float | None, str]:
    """(value, unit) of a result's headline throughput."""
    m = result.get("metrics") or {}
    p = m.get("primary") or {}
    if m.get("kind") == "filebench":
        return (p.get("mb_per_s"), "MB/s") if p.get("mb_per_s") is not None else (p.get("ops_per_s"), "ops/s")
    rw = ((result.get("trial") or {}).get("workload") or {}).get("rw")
    if rw and rw not in RANDOM_RW and p.get("bw_bytes") is not None:
        return p["bw_bytes"] / 1e6, "MB/s"
    if p.get("iops") is not None:
        return float(p["iops"]), "IOPS"
    return None, ""


def direction(result: dict) -> str:
    """The data direction whose latency represents the trial (read unless it only writes)."""
    m = result.get("metrics") or {}
    r, w = (m.get("read") or {}).get("iops") or 0, (m.get("write") or {}).get("iops") or 0
    return "write" if w > r else "read"


def trial_steady(result: dict, window: int = 5) -> dict | None:
    """flags.steady when the runner stored it, otherwise judged from fio's per-second IOPS."""
    f = (result.get("flags") or {}).get("steady")
    if isinstance(f, dict) and "steady" in f:
        return f
    series = artifact(result, "workload-series.json") or {}
    iops = series.get("fio_iops")
    if not iops:
        return None
    return steady_mod.detect([v for _, v in iops], window)


@dataclass
class Cell:
    key: str
    labels: dict
    trial: dict
    experiment: str
    ok: list = field(default_factory=list)
    cached: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    unit: str = ""
    values: list = field(default_factory=list)
    cached_values: list = field(default_factory=list)
    steady: list = field(default_factory=list)
    summary: Summary | None = None
    above_raw: dict | None = None
    tag: str = ""

    @property
    def stack(self) -> str:
        lab = self.labels
        return f"{lab['device']}/{lab['filesystem']}/{lab['runtime']}/{lab['path']}"

    @property
    def name(self) -> str:
        return f"{self.stack} {self.labels['workload']} {self.labels['load']}" + (f" [{self.tag}]" if self.tag else "")

    @property
    def fs_type(self) -> str:
        return self.trial["filesystem"]["type"]

    @property
    def mount_options(self) -> list:
        return list(self.trial["filesystem"].get("mount_options") or [])

    @property
    def runtime_type(self) -> str:
        return self.trial["runtime"]["type"]

    @property
    def driver(self) -> str | None:
        return self.trial["runtime"].get("storage_driver")

    @property
    def path(self) -> str:
        return self.trial["path"]

    @property
    def workload(self) -> dict:
        return self.trial["workload"]

    @property
    def load(self) -> dict:
        return self.trial["load"]

    @property
    def outstanding(self) -> int:
        """I/Os in flight the load asks for: jobs x iodepth x containers."""
        ld = self.load
        return ld.get("numjobs", 1) * ld.get("iodepth", 1) * ld.get("containers", 1)

    @property
    def containers(self) -> int:
        return self.load.get("containers", 1)

    @property
    def is_raw(self) -> bool:
        return self.fs_type == "raw" and self.runtime_type == "native" and self.path == "device"

    @property
    def kind(self) -> str:
        return self.workload.get("type", "fio")

    @property
    def rw(self) -> str | None:
        return self.workload.get("rw")

    @property
    def reps(self) -> int:
        return len(self.values)

    def latency(self, kind: str, stat: str) -> Summary:
        """Mean over repetitions of a latency statistic (ns) of the cell's direction."""
        vals = []
        for r in self.ok:
            d = (r.get("metrics") or {}).get(direction(r)) or {}
            v = (d.get(f"{kind}_ns") or {}).get(stat)
            if v is not None:
                vals.append(float(v))
        return summarize(vals)


def fingerprint(trial: dict) -> str:
    blob = json.dumps({k: v for k, v in trial.items() if k != "repetition"}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def build_cells(results: list[dict], judge_steady: bool = True) -> list[Cell]:
    """Group results into cells, in a stable order (by stack, workload, load)."""
    cells: dict[str, Cell] = {}
    for r in results:
        if r.get("status") == "unsupported" or "trial" not in r:
            continue
        key = fingerprint(r["trial"])
        c = cells.get(key)
        if c is None:
            labels = {k: str((r.get("labels") or {}).get(k, "")) for k in LABEL_KEYS}
            c = cells[key] = Cell(key, labels, r["trial"], r.get("experiment", ""))
        _add(c, r, judge_steady)
    for c in cells.values():
        c.summary = summarize(c.values)
    _tag_duplicates(list(cells.values()))
    return sorted(cells.values(), key=lambda c: (c.stack, c.labels["workload"], c.outstanding, c.labels["load"], c.key))


def _add(c: Cell, r: dict, judge_steady: bool) -> None:
    if r.get("status") != "ok":
        c.failed.append(r)
        return
    value, unit = throughput(r)
    if value is None:
        c.failed.append(r)
        return
    c.unit = unit
    if is_cache_suspect(r):
        c.cached.append(r)
        c.cached_values.append(value)
        return
    c.ok.append(r)
    c.values.append(value)
    if judge_steady:
        c.steady.append((r, trial_steady(r)))


def _tag_duplicates(cells: list[Cell]) -> None:
    """Cells with the same labels but different parameters (two experiments) get a tag to tell them apart."""
    by_name: dict[str, list[Cell]] = {}
    for c in cells:
        by_name.setdefault(c.name, []).append(c)
    for same in by_name.values():
        if len(same) > 1:
            exps = {c.experiment for c in same}
            for c in same:
                c.tag = c.experiment if len(exps) == len(same) else f"{c.experiment} {c.key[:6]}"
