"""fio's output read: an instance's JSON (a bad one a failed trial with the tool's words), the instances' jobs
summed and their latency histograms merged (`aggregate`), the headline, the measured window, the IOPS log."""

from __future__ import annotations

import json
from pathlib import Path

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput
from strata.core.jsondoc import JsonArray, JsonObject, as_obj, num, obj, text, whole
from strata.workloads.base import Parsed, headline
from strata.workloads.fio_writes import direct_writes, jobs, jobs_of, syncs
from strata.workloads.latency import figure, summarize

LAT_KEYS = ("slat_ns", "clat_ns", "lat_ns")
SERIES = "fio_iops"  # the per-second series of the headline, from fio's own IOPS log
SEQUENTIAL = ("read", "write", "rw", "readwrite")


def as_part(doc: JsonObject, key: str) -> JsonObject:
    """A stored result's member as an object, an empty or missing one as {} (what v1 results may lack)."""
    return as_obj(doc.get(key) or {}, key)


def load_fio_json(o: InstanceOutput) -> JsonObject:
    """The JSON of one instance; a missing or bad one is a failed trial with the tool's words."""
    path = o.out_dir / "fio.json"
    text = path.read_text(errors="replace") if path.exists() else ""
    start = text.find("{")
    if o.returncode != 0 or start < 0:
        raise TrialFailure(
            _category(o.stderr + text), f"fio instance {o.index} exited {o.returncode}", (o.stderr or text)[-4000:]
        )
    try:
        return as_obj(json.loads(text[start:]), "fio's JSON")
    except (json.JSONDecodeError, ValueError) as e:
        raise TrialFailure("parse", f"fio instance {o.index} wrote unreadable JSON: {e}", text[-4000:])


def unreadable(outputs: list[InstanceOutput], what: str) -> TrialFailure:
    """A parse failure for JSON that loads but that strata cannot read as fio's, with each instance's JSON's tail."""
    tails = []
    for o in outputs:
        path = o.out_dir / "fio.json"
        tails.append(f"{path}: ...{path.read_text(errors='replace')[-1000:]}" if path.exists() else f"{path}: none")
    return TrialFailure("parse", f"fio's JSON is not what fio writes: {what[:300]}", "\n".join(tails)[-4000:])


def _category(text: str) -> str:
    t = text.lower()
    if "no space left" in t or "enospc" in t:
        return "disk_full"
    if "cannot allocate memory" in t or "out of memory" in t:
        return "oom"
    if "invalid" in t or "bad option" in t or "unknown option" in t:
        return "bad_input"
    return "tool_error"


def aggregate(docs: list[JsonObject], series: list[dict[int, float]] | None = None) -> Parsed:
    """Sum throughput over jobs and instances; merge latency histograms."""
    metrics: JsonObject = {"kind": "fio", "instances": []}  # the stored key order
    moved: dict[str, int] = {}
    totals: dict[str, float] = {}  # iops and bw_bytes of both directions, for the headline
    for ddir in ("read", "write"):
        parts = [obj(j, ddir) for d in docs for j in _jobs(d)]
        agg: JsonObject = {k: sum(figure(p, k) for p in parts) for k in ("iops", "bw_bytes", "io_bytes", "total_ios")}
        for key in LAT_KEYS:
            agg[key] = summarize([p.get(key) for p in parts])
        metrics[ddir] = agg
        moved[ddir] = int(sum(figure(p, "io_bytes") for p in parts))
        for k in ("iops", "bw_bytes"):
            totals[k] = totals.get(k, 0) + sum(figure(p, k) for p in parts)
    synced = [obj(obj(j, "sync"), "lat_ns") for d in docs for j in _jobs(d)]
    if any(whole(s, "N") for s in synced):  # the syncs' latency, when a job asked for any
        metrics["sync"] = {"total_ios": sum(whole(s, "N") or 0 for s in synced), "lat_ns": summarize(list(synced))}
    instances: JsonArray = []
    runtimes: list[int] = []
    for d in docs:
        inst: JsonObject = {
            ddir: {k: sum(figure(obj(j, ddir), k) for j in _jobs(d)) for k in ("iops", "bw_bytes", "io_bytes")}
            for ddir in ("read", "write")
        }
        runtimes.append(job_runtime_ms(d))
        inst["job_runtime_ms"] = runtimes[-1]
        inst["end_ms"] = d.get("timestamp_ms")
        instances.append(inst)
    metrics["instances"] = instances
    metrics["fio_version"] = docs[0].get("fio version") if docs else None
    ss = [obj(j, "steadystate") for d in docs for j in _jobs(d) if "steadystate" in j]
    tool_steady: JsonObject | None = None
    if ss:
        tool_steady = {
            "criterion": ss[0]["ss"],
            "attained": all(bool(s["attained"]) for s in ss),
            "runtime_ms": max(runtimes),
        }
        metrics["steadystate"] = tool_steady  # stored with the metrics, as before
    metrics["primary"] = fio_headline(totals["iops"], totals["bw_bytes"], docs)
    merged = _sum_series(series or [])
    return Parsed(
        metrics=metrics,
        moved_bytes=moved,
        series={SERIES: merged} if merged else {},
        windows=[io_window(d) for d in docs],
        syncs=syncs(docs),
        direct_writes=direct_writes(docs),
        tool_steady=tool_steady,
    )


def _jobs(doc: JsonObject) -> list[JsonObject]:
    """An instance's job entries (fio always writes `jobs`: a document without is unreadable, as before)."""
    if "jobs" not in doc:
        raise ValueError("fio's JSON has no jobs")
    return jobs(doc)


def fio_headline(iops: float, bw: float, docs: list[JsonObject]) -> JsonObject:
    """IOPS for random I/O, MB/s for sequential I/O (`iops`, `bw`: both directions'), as study 003 reports them
    (section 5)."""
    sequential = bool(docs) and all(text(obj(_jobs(d)[0], "job options"), "rw") in SEQUENTIAL for d in docs)
    if sequential:
        return headline(bw / 1e6, "MB/s", "bw_bytes", SERIES, series_unit="IOPS", iops=iops, bw_bytes=bw)
    return headline(float(iops), "IOPS", "iops", SERIES, series_unit="IOPS", iops=iops, bw_bytes=bw)


def job_runtime_ms(doc: JsonObject) -> int:
    """The longest measured runtime of an instance's jobs. Under group_reporting fio sums `job_runtime`
    over the jobs an entry stands for (32 jobs of 6 s: 192,106 ms), so each entry's is divided by its jobs,
    and it is never longer than the job existed (`elapsed`, whole seconds, its ramp included)."""
    out = 0
    for j in jobs(doc):
        ms = int(num(j, "job_runtime", 0) or 0) // jobs_of(doc, j)
        out = max(out, min(ms, int(figure(j, "elapsed")) * 1000) if j.get("elapsed") else ms)
    return out


def io_window(doc: JsonObject) -> tuple[float, float] | None:
    """(start, end) wall clock of an instance's measured I/O: fio 3.33's JSON has no start time,
    so it is the end (`timestamp_ms`, written when the jobs finish) minus the longest job's runtime."""
    end_ms = num(doc, "timestamp_ms")
    runtime_ms = job_runtime_ms(doc)
    if not end_ms or not runtime_ms:
        return None
    return ((end_ms - runtime_ms) / 1000.0, end_ms / 1000.0)


def iops_series(out_dir: Path) -> dict[int, float]:
    """Per-second IOPS from fio's averaged log (`time_ms, value, ddir, ...`)."""
    per_s: dict[int, float] = {}
    path = out_dir / "fio_iops.log"
    if not path.exists():
        return per_s
    for line in path.read_text().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit():
            # entries of several jobs land near each second (999 ms, 1001 ms): round, not floor
            sec = round(int(fields[0]) / 1000)
            per_s[sec] = per_s.get(sec, 0.0) + float(fields[1])
    return per_s


def _sum_series(series: list[dict[int, float]]) -> list[list[float]]:
    total: dict[int, float] = {}
    for s in series:
        for k, v in s.items():
            total[k] = total.get(k, 0.0) + v
    return [[k, total[k]] for k in sorted(total)]
