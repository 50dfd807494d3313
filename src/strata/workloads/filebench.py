"""filebench: unmodified Filebench `.f` workloads, run by our engine `strata-wml`.

Seed study 004 (Docker storage with Filebench's web, mail, file server and random
file access personalities) is the reason: Filebench itself needs ASLR off and a
177 MB shm file and hangs in containers (docs/filebench-language.md, "Known bugs").
The engine speaks the JSON Lines protocol of engine/README.md; strata sets `$dir`
to the path under test and passes the spec's `set` overrides. Filebench I/O is
buffered by default, so the page cache is part of what is measured: the cache
flag records that as expected, not as an error.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from strata.core.errors import TrialFailure
from strata.core.instances import ImageSpec, InstanceOutput, Target
from strata.core.jsondoc import JsonArray, JsonObject, JsonValue, ShapeError, arr, as_obj, obj, text
from strata.core.metrics import Metric, MetricSchema, Operations, Show
from strata.core.params import Load, Strict
from strata.workloads.base import (
    UNREADABLE,
    Parsed,
    Smoke,
    Syncs,
    ToolWorkload,
    Upgrading,
    Workload,
    headline,
    resolve_file,
    unfinite_headline,
)
from strata.workloads.engine import engine_binary
from strata.workloads.latency import PERCENTILES, figure, percentile

PERSONALITIES_DIR = Path(__file__).parent / "personalities"
SMOKE_NFILES = 1000  # files per fileset at smoke scale
# The study's four, then the single-file alternates (personalities/README.md).
PERSONALITY_FILES = {
    "webserver": "webserver.f",
    "varmail": "varmail.f",
    "fileserver": "fileserver.f",
    "randomfileaccess": "randomfileaccess.f",
    "randomread": "alternates/randomread.f",
    "randomrw": "alternates/randomrw.f",
    "randomwrite": "alternates/randomwrite.f",
}
PERSONALITIES = tuple(PERSONALITY_FILES)
PROTOCOL = 1
OUTPUT = "engine.jsonl"
# The engine's error kinds (engine/src/error.rs) as failure categories.
ENGINE_ERRORS = {"syntax": "bad_input", "semantic": "bad_input", "io": "tool_error", "runtime": "tool_error"}
SYNC_FLOWOPS = ("fsync", "fsyncset")  # the flowops that ask for syncs (fsyncset: one op, each file of a set)
# What a Filebench result holds (strata/core/metrics.py): the engine's totals; its MB is 2^20 bytes, as
# Filebench's (engine/src/report.rs). Each flowop's rate and latency are in `metrics.flowops`.
METRICS = MetricSchema(
    fields=(
        Metric("ops_per_s", "total", "ops/s", "higher", show=Show("IOPS", digits=0)),
        Metric("mb_per_s", "total", "MB/s", "higher", headline=True, show=Show("MiB/s")),
    ),
    operations=Operations(
        ("metrics", "flowops"),
        "flowop",
        (
            ("ops/s", ("ops_per_s",)),
            ("MB/s", ("mb_per_s",)),
            ("latency mean us", ("latency_us", "mean")),
            ("latency p99 us", ("latency_us", "p99")),
        ),
    ),
)


class FilebenchParams(Strict):
    """A Filebench personality shipped with strata, or your own .f file."""

    type: Literal["filebench"] = "filebench"
    name: str = Field(default="", description="default: the personality or the file's stem")
    personality: Literal[PERSONALITIES] | None = Field(  # type: ignore[valid-type]  # the shipped files
        default=None, description="one of the shipped personalities"
    )
    file: str | None = Field(default=None, description="an unmodified Filebench .f file")
    set: dict[str, str | int | float | bool] = Field(
        default_factory=dict, max_length=256, description="variable overrides, e.g. {nthreads: 4}"
    )
    runtime: int = Field(default=60, ge=1, le=7 * 86400, description="seconds (overrides the file's `run N`)")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if bool(self.personality) == bool(self.file):
            raise ValueError("give exactly one of personality (" + ", ".join(PERSONALITIES) + ") or file")
        if "dir" in {k.lstrip("$") for k in self.set}:
            raise ValueError("$dir is set by strata to the path under test; remove it from `set`")
        if not self.name:
            object.__setattr__(self, "name", self.personality or Path(self.file or "").stem)
        return self

    @property
    def source(self) -> Path:
        return PERSONALITIES_DIR / PERSONALITY_FILES[self.personality] if self.personality else Path(self.file or "")


class Filebench(ToolWorkload[FilebenchParams], Smoke, Upgrading):
    name = "filebench"
    params = FilebenchParams
    metrics = METRICS
    targets = ("dir",)  # filesets are directory trees

    def smoke(self, raw: JsonObject) -> JsonObject:
        """experiment/scale.py: 1 s runs, and the shipped personalities' filesets at most SMOKE_NFILES files
        (fileserver and randomfileaccess make 10,000 before their first second: fileserver's about 1.2 GiB
        per instance). A file of the user's keeps its filesets: strata cannot know that it has an $nfiles."""
        out: JsonObject = {**raw, "runtime": 1}
        sets = raw.get("set")
        if raw.get("file") is None and (sets is None or isinstance(sets, dict)):
            sets = dict(sets or {})
            key = next((k for k in sets if isinstance(k, str) and k.lstrip("$") == "nfiles"), "nfiles")
            given = sets.get(key)
            if isinstance(given, str) and given.isdigit():
                given = int(given)
            if given is None or (isinstance(given, int) and not isinstance(given, bool)):
                sets[key] = min(given if given is not None else SMOKE_NFILES, SMOKE_NFILES)
                out["set"] = sets
        return out

    def parse_params(self, raw: JsonObject, base_dir: Path) -> FilebenchParams:
        return FilebenchParams.model_validate(resolve_file(raw, base_dir, "Filebench file"))

    def barrier(self, params: FilebenchParams) -> str:
        return "tool"  # the engine makes its filesets, says it is ready and waits for the start itself

    def upgrade(self, result: JsonObject, version: int) -> None:
        """v1 -> v2: the headline is MB/s (study 004's unit), as the v1 report showed it."""
        p = as_obj(result.get("metrics") or {}, "metrics").get("primary")
        if version == 1 and isinstance(p, dict) and "value" not in p:
            if p.get("mb_per_s") is not None:
                p.update(headline(figure(p, "mb_per_s"), "MB/s", "mb_per_s"))
            else:
                ops = figure(p, "ops_per_s") if p.get("ops_per_s") is not None else None
                p.update(headline(ops, "ops/s", "ops_per_s"))

    def available(self, host: Mapping[str, object], params: FilebenchParams | None = None) -> str | None:
        return (
            None
            if engine_binary()
            else "the engine strata-wml is not built (run scripts/install, or cargo build --release in engine/)"
        )

    def versions(self) -> dict[str, str | None]:
        binary = engine_binary()
        return {"strata-wml": engine_version(binary) if binary else None}

    def validate(self, params: FilebenchParams) -> list[str]:
        """The engine's own check of the file, reported against the user's path and line."""
        binary = engine_binary()
        if binary is None:
            return []
        argv = [str(binary), "check", str(params.source), "--set", "$dir=/tmp"]
        for k, v in params.set.items():
            argv += ["--set", f"${k.lstrip('$')}={_value(v)}"]
        try:
            cp = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            return [f"the engine's check of {params.source} did not answer within 30 s"]
        if cp.returncode != 0:
            return [(cp.stderr or cp.stdout).strip()[-1500:] or f"the engine rejects {params.source}"]
        return []

    def runtime_s(self, params: FilebenchParams) -> float:
        return float(params.runtime or 0)

    def estimate_s(self, params: FilebenchParams) -> float:
        return params.runtime + 10

    def image(self, params: FilebenchParams) -> ImageSpec:
        binary = engine_binary()
        return ImageSpec("wml", files=(("strata-wml", str(binary)),) if binary else ())

    def stage(self, params: FilebenchParams, out_dir: Path) -> None:
        (out_dir / "workload.f").write_text(params.source.read_text())

    def command(self, params: FilebenchParams, load: Load, target: Target, instance: int) -> list[str]:
        # On the host the engine is where strata finds it; in a container or VM it is in the image.
        binary = str(engine_binary() or "strata-wml") if target.host_tools else "strata-wml"
        sets = [f"$dir={target.path}"] + [f"${k.lstrip('$')}={_value(v)}" for k, v in params.set.items()]
        engine = [binary, "run", f"{target.out_dir}/workload.f", "--json", "--runtime", str(params.runtime)]
        if target.sync_dir:  # filesets made before the barrier, outside the measured window
            engine += ["--ready-file", f"{target.out_dir}/ready", "--go-file", f"{target.sync_dir}/go"]
        for s in sets:
            engine += ["--set", s]
        # stdout (JSON Lines) to a file in the out dir; stderr stays with the runtime
        return ["sh", "-c", f"exec {shlex.join(engine)} > {shlex.quote(target.out_dir)}/{OUTPUT}"]

    def parse(self, params: FilebenchParams, outputs: list[InstanceOutput]) -> Parsed:
        ends = [read_end(o) for o in outputs]
        try:
            parsed = aggregate(ends)
            parsed.windows = [_window(e) for e in ends]
        except UNREADABLE as e:  # records of the protocol's form whose members are not the engine's
            said = f"the engine's end records are not what it writes: {_said(e)}"
            raise TrialFailure("parse", said, _tails(outputs)) from None
        wrong = unfinite_headline(parsed)
        if wrong:
            raise TrialFailure("parse", f"the engine's {wrong}", _tails(outputs))
        return parsed


def engine_version(binary: Path) -> str | None:
    try:
        cp = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
        return cp.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _window(end: JsonObject) -> tuple[float, float] | None:
    """The engine's measured run on the wall clock: it starts after the filesets and the barrier."""
    if not end.get("started_unix_s"):
        return None
    start = figure(end, "started_unix_s")
    return (start, start + float(figure(end, "runtime_s")))


def _value(v: object) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _record(line: str, o: InstanceOutput) -> JsonObject:
    """One line of the engine's output: a JSON object, else a failed trial naming the line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        raise TrialFailure("parse", f"engine instance {o.index} wrote a line that is not JSON: {line[:200]}", o.stderr)
    if not isinstance(record, dict):
        raise TrialFailure(
            "parse", f"engine instance {o.index} wrote a line that is not a record: {line[:200]}", o.stderr
        )
    return record


def _int(v: JsonValue, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError(f"{what} should be an integer, not {type(v).__name__}")
    return v


def _said(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"[:300]


def _tails(outputs: list[InstanceOutput]) -> str:
    """The end of each instance's output, for a parse failure."""
    paths = [o.out_dir / OUTPUT for o in outputs]
    return "\n".join(f"{p}: ...{p.read_text(errors='replace')[-1000:]}" for p in paths if p.exists())[-4000:]


def read_end(o: InstanceOutput) -> JsonObject:
    """The `end` record of one instance; an `error` record or a missing end is a failed trial, and so is a record
    whose members are not the protocol's (a parse failure, never a KeyError)."""
    path = o.out_dir / OUTPUT
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    records = [_record(line, o) for line in lines]
    try:
        return _end(o, records)
    except UNREADABLE as e:
        tail = (o.stderr + "\n" + "\n".join(lines))[-4000:]
        raise TrialFailure(
            "parse", f"engine instance {o.index} wrote records that are not the protocol's: {_said(e)}", tail
        ) from None


def _end(o: InstanceOutput, records: list[JsonObject]) -> JsonObject:
    begin = next((obj(r, "data") for r in records if r["type"] == "begin"), None)
    if begin and begin.get("protocol") != PROTOCOL:
        raise TrialFailure(
            "bad_input", f"engine protocol {begin.get('protocol')}, strata reads {PROTOCOL}: rebuild the engine"
        )
    err = next((obj(r, "data") for r in records if r["type"] == "error"), None)
    end = next((obj(r, "data") for r in records if r["type"] == "end"), None)
    if err and not end:
        category = ENGINE_ERRORS.get(text(err, "kind"), "tool_error")
        raise TrialFailure(category, f"engine ({err.get('kind')} error): {err['message']}", o.stderr)
    if end is None:
        raise TrialFailure("tool_error", f"engine instance {o.index} exited {o.returncode} without results", o.stderr)
    if end["stopped_early"] and o.returncode != 0:
        reason = str(end.get("reason"))
        if "No space left" in reason:
            raise TrialFailure(
                "disk_full",
                f"engine instance {o.index}: the file system under test filled up ({reason}); "
                "appended files grow for the whole run (webserver's log gains about 5% of the bytes "
                "read): use a larger device, a shorter runtime or a smaller $meanappendsize",
                o.stderr + "\n" + json.dumps(end["summary"]),
            )
        raise TrialFailure(
            "stopped_early",
            f"engine instance {o.index} stopped early: {reason}",
            o.stderr + "\n" + json.dumps(end["summary"]),
        )
    end["_intervals"] = [r["data"] for r in records if r["type"] == "interval"]
    return end


def _flowops(end: JsonObject) -> list[JsonObject]:
    return [as_obj(f, "a flowop") for f in arr(end, "flowops")]


def aggregate(ends: list[JsonObject]) -> Parsed:
    """Sum rates over instances; per-flowop latency from merged histograms."""
    summary_keys = ("ops", "ops_per_s", "reads_per_s", "writes_per_s", "mb_per_s", "read_bytes", "write_bytes")
    summaries = [obj(e, "summary") for e in ends]
    total = {k: sum(figure(s, k) for s in summaries) for k in summary_keys}
    flowops: JsonArray = []
    for i, f0 in enumerate(_flowops(ends[0])):
        parts = [_flowops(e)[i] for e in ends]
        bins: Counter[int] = Counter()
        for p in parts:
            h = obj(p, "histogram")
            for upper, count in zip(arr(h, "bucket_ns_upper"), arr(h, "counts")):
                bins[_int(upper, "a bucket")] += _int(count, "a count")
        ops = sum(figure(p, "ops") for p in parts)
        lat: JsonObject = {
            "mean": (sum(figure(obj(p, "latency_us"), "mean") * figure(p, "ops") for p in parts) / ops)
            if ops
            else None,
            "max": max(figure(obj(p, "latency_us"), "max") for p in parts),
        }
        for key, pct in PERCENTILES.items():
            v = percentile(bins, pct)
            lat[key] = v / 1000.0 if v is not None else None
        flowops.append(
            {
                "name": f0["name"],
                "type": f0["type"],
                "ops": ops,
                "ops_per_s": sum(figure(p, "ops_per_s") for p in parts),
                "mb_per_s": sum(figure(p, "mb_per_s") for p in parts),
                "latency_us": lat,
            }
        )
    metrics: JsonObject = {
        "kind": "filebench",
        "summary": dict(total),
        "ms_per_op": (sum(figure(s, "ms_per_op") * figure(s, "ops") for s in summaries) / total["ops"])
        if total["ops"]
        else None,
        "flowops": flowops,
        "instances": [
            {"ops_per_s": s["ops_per_s"], "mb_per_s": s["mb_per_s"], "runtime_s": e["runtime_s"]}
            for e, s in zip(ends, summaries)
        ],
        "primary": headline(
            total["mb_per_s"],
            "MB/s",
            "mb_per_s",
            None,
            ops_per_s=total["ops_per_s"],
            mb_per_s=total["mb_per_s"],
            mb_per_s_per_instance=total["mb_per_s"] / len(ends),
        ),
        "page_cache": "buffered I/O: the page cache is part of what is measured",
    }
    return Parsed(
        metrics=metrics,
        moved_bytes={"read": int(total["read_bytes"]), "write": int(total["write_bytes"])},
        syncs=syncs(ends),
    )


def syncs(ends: list[JsonObject]) -> Syncs:
    """The fsync flowops of every instance: their operations, and the threads that run them (the engine's
    `threads`; an output older than it does not say, and then as many streams as syncs: only a device that
    saw no flush at all is flagged)."""
    ops = [f for e in ends for f in _flowops(e) if f["type"] in SYNC_FLOWOPS and f["ops"]]
    count = sum(_int(f["ops"], "ops") for f in ops)
    known = all(f.get("threads") for f in ops)
    streams = sum(_int(f["threads"], "threads") for f in ops) if known else count
    return Syncs(count, streams, " and ".join(dict.fromkeys(text(f, "type") for f in ops)) or "fsync")


FILEBENCH = Filebench()
PLUGIN: Workload[FilebenchParams] = FILEBENCH  # the registry's entry (workloads/__init__.py), checked against the core
