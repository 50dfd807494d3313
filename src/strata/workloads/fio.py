"""fio: parameters or an unmodified .fio job file (seed study 003's workload).

Defaults follow the study: random 4 KiB, sequential 128 KiB, libaio, O_DIRECT,
one shared file per trial (the study's 5 GB file, smaller by default here).
Output is json+ so latency histograms of N instances can be merged exactly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.errors import StrataError
from strata.core.instances import ImageSpec, InstanceOutput, Target
from strata.core.jsondoc import JsonObject, as_obj, num
from strata.core.metrics import Axis, BlockIo, Metric, MetricSchema, Show
from strata.core.params import Load, Strict, size_at_most, size_field, sweep_ends
from strata.core.units import parse_duration
from strata.workloads import live
from strata.workloads.base import (
    UNREADABLE,
    DeviceProbe,
    HostTools,
    LiveRate,
    Parsed,
    Shorthand,
    Smoke,
    ToolWorkload,
    Upgrading,
    Workload,
    headline,
    resolve_file,
    unfinite_headline,
)
from strata.workloads.fio_hold import BARRIER_SCRIPT, HOLD, READY_JOBS, held
from strata.workloads.fio_output import (
    SEQUENTIAL,
    SERIES,
    aggregate,
    as_part,
    iops_series,
    load_fio_json,
    unreadable,
)

PRESETS = {
    "rr": {"rw": "randread", "bs": 4096},
    "rw": {"rw": "randwrite", "bs": 4096},
    "sr": {"rw": "read", "bs": 128 * 1024},
    "sw": {"rw": "write", "bs": 128 * 1024},
}
DATA_FILE = "strata-fio.dat"
# fio itself: in an instance's image, on a host whose agent runs it natively or probes a device with it
IMAGE = ImageSpec("fio", packages=("fio",))
BW_PROBE_S = 5  # the limit presets' bandwidth probe (read_bps)
# `until: steady`: fio's own steady-state detection (fio(1) "steadystate"): stop once
# the IOPS slope over a 10 s window stays within 2% of the mean; `runtime` is the maximum.
# The criterion follows SNIA's PTS (slope and range over a rolling window).
STEADY_OPTIONS = ["--steadystate=iops_slope:2%", "--ss_dur=10", "--ss_ramp=5"]


def _seconds(v: object) -> int | None:
    if v is None:
        return None
    if not isinstance(v, (int, float, str)):
        raise ValueError(f"a duration is a number of seconds or a string like 2m, not {type(v).__name__}")
    return int(parse_duration(v))


def block_size_text(bs: int) -> str:
    return f"{bs // 1024} KiB" if bs % 1024 == 0 else f"{bs} B"


LATENCY_STATS = ("mean", "p99")
# What a fio result holds (strata/core/metrics.py), in the order of the export's columns. The headline is IOPS
# for random I/O and bandwidth for sequential I/O (fio_headline); the latencies are merged histograms.
METRICS = MetricSchema(
    fields=(
        Metric("rw", "parameter", type="str", context=True),
        Metric(
            "bs",
            "parameter",
            "B",
            type="int",
            context=True,
            text=block_size_text,
            axis=Axis("block size (KiB)", 3, 1024),
        ),
        Metric("direct", "parameter", type="int"),
        Metric("iops", "total", "IOPS", "higher", headline=True, show=Show("IOPS", digits=0)),
        Metric("bw_bytes", "total", "B/s", "higher", headline=True, show=Show("MiB/s", 2**20)),
        Metric("iops", "per_direction", "IOPS", "higher"),
        Metric("bw_bytes", "per_direction", "B/s", "higher"),
        Metric("clat", "latency", "ns", "lower", label="completion", stats=LATENCY_STATS),
        Metric("lat", "latency", "ns", "lower", label="total", stats=LATENCY_STATS, show=Show("lat {stat} us", 1000)),
        Metric("slat", "latency", "ns", "lower", label="submission", stats=("mean",)),
        # the syncs a job asked for (fsync=, fdatasync=): their own latency, merged like the others (etcd's disk check)
        Metric(
            "sync_lat",
            "latency",
            "ns",
            "lower",
            label="sync (fsync, fdatasync)",
            stats=LATENCY_STATS,
            show=Show("sync {stat} us", 1000, stats=("p99",)),
            key=("metrics", "sync", "lat_ns"),
        ),
    ),
    breakdown=("slat", "clat", "lat"),
    in_flight=True,
    device_latency="clat",
    submission_latency="slat",
    io=BlockIo("rw", "bs"),
)


class FioParams(Strict):
    """fio with parameters (a preset, or rw and bs), or an unmodified .fio job file."""

    type: Literal["fio"] = "fio"
    name: str = ""
    preset: Literal["rr", "rw", "sr", "sw"] | None = None
    rw: Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim"] | None = None
    rwmixread: int | None = Field(default=None, ge=0, le=100)
    bs: int | None = Field(default=None, ge=512, le=1 << 30, description="block size in bytes (4k, 128k)")
    ioengine: Literal["libaio", "io_uring", "psync", "sync", "pvsync2", "posixaio"] = "libaio"
    direct: Literal[0, 1] = 1
    size: int = Field(
        default=1 << 30, ge=1 << 20, le=1 << 50, description="bytes of the one shared data file (or device region)"
    )
    runtime: int = Field(default=30, ge=1, le=7 * 86400, description="seconds, time based")
    ramp_time: int = Field(default=5, ge=0, le=86400, description="seconds not counted")
    until: Literal["time", "steady"] = Field(
        default="time", description="steady: stop once steady, runtime is the maximum"
    )
    file: str | None = Field(default=None, description="an unmodified .fio job file; strata only sets the target")
    options: dict[str, str | int | float] = Field(
        default_factory=dict, max_length=256, description="extra fio options, name: value"
    )

    _sizes = field_validator("bs", "size", mode="before")(size_field)
    _secs = field_validator("runtime", "ramp_time", mode="before")(_seconds)

    @model_validator(mode="after")
    def _resolve(self) -> Self:
        if self.file:
            if self.preset or self.rw or self.bs:
                raise ValueError("a job file brings its own rw/bs: drop preset, rw and bs, or drop file")
        else:
            if self.preset:
                if self.rw:
                    raise ValueError(f"preset {self.preset} already sets rw; drop one of them")
                p = PRESETS[self.preset]
                object.__setattr__(self, "rw", p["rw"])
                if self.bs is None:
                    object.__setattr__(self, "bs", p["bs"])
            if not self.rw:
                raise ValueError("say what to run: preset (rr, rw, sr, sw), rw, or file")
            if self.bs is None:
                object.__setattr__(self, "bs", 4096 if self.rw.startswith("rand") else 128 * 1024)
        if not self.name:
            if self.file:
                name = Path(self.file).stem
            elif self.preset and self.bs == PRESETS[self.preset]["bs"]:
                name = self.preset
            else:
                bs = self.bs or 0  # set above: a spec without a job file always has a block size here
                name = f"{self.rw}-{bs // 1024}k" if bs % 1024 == 0 else f"{self.rw}-{bs}"
            object.__setattr__(self, "name", name)
        return self

    @property
    def job_text(self) -> str | None:
        return Path(self.file).read_text() if self.file else None


class Fio(ToolWorkload[FioParams], Shorthand, Smoke, Upgrading, DeviceProbe, HostTools, LiveRate):
    name = "fio"
    params = FioParams
    metrics = METRICS

    def parse_params(self, raw: JsonObject, base_dir: Path) -> FioParams:
        return FioParams.model_validate(resolve_file(raw, base_dir, "fio job file"))

    def smoke(self, raw: JsonObject) -> JsonObject:
        """experiment/scale.py: 1 s, no ramp, at most 32 MiB, a block size sweep cut to its ends."""
        out: JsonObject = {
            **raw,
            "runtime": 1,
            "ramp_time": 0,
            "size": size_at_most(raw.get("size", 1 << 30), 32 << 20),
        }
        if "bs" in raw:
            out["bs"] = sweep_ends(raw["bs"])
        return out

    def shorthand(self, text: str) -> JsonObject | None:
        return {"preset": text} if text in PRESETS else None

    def upgrade(self, result: JsonObject, version: int) -> None:
        """v1 -> v2: the headline as the v1 report computed it (MB/s for sequential I/O, else IOPS),
        and fio's steady-state verdict under the name every tool's has."""
        if version != 1:
            return
        p = as_part(result, "metrics").get("primary")
        rw = as_part(as_part(result, "trial"), "workload").get("rw")
        if isinstance(p, dict) and "value" not in p:
            bw, iops = num(p, "bw_bytes"), num(p, "iops")
            if rw in SEQUENTIAL and bw is not None:
                p.update(headline(bw / 1e6, "MB/s", "bw_bytes", SERIES, series_unit="IOPS"))
            elif iops is not None:
                p.update(headline(iops, "IOPS", "iops", SERIES, series_unit="IOPS"))
        steady = as_part(result, "flags").get("steady")
        if isinstance(steady, dict) and "fio" in steady:
            steady["tool"] = steady.pop("fio")
        host = as_part(result, "host")
        if "fio_version" in host:
            as_obj(host.setdefault("tools", {}), "tools")["fio"] = host.pop("fio_version")

    def available(self, host: Mapping[str, object], params: FioParams | None = None) -> str | None:
        return None if shutil.which("fio") else "fio is not installed (apt-get install fio)"

    def barrier(self, params: FioParams) -> str:
        """fio holds itself (BARRIER_SCRIPT) after its own start-up, which on a loaded host spreads the
        instances' first I/O by seconds when run after the barrier: 32 containers on 2 cores, 1.2 s. A job
        file of the user's may set its own `exec_prerun`, and its jobs cannot be counted: the wrapper holds it."""
        return "wrapper" if params.file else "tool"

    def versions(self) -> dict[str, str | None]:
        return {"fio": fio_version()}

    def validate(self, params: FioParams) -> list[str]:
        """fio's own parser on the job (`--parse-only`), so a bad option fails before anything is built."""
        if not shutil.which("fio"):
            return []
        # a directory of its own: fio opens its --output file even to parse (it left /tmp/fio.json behind)
        with tempfile.TemporaryDirectory(prefix="strata-fio-check-") as d:
            argv = self.command(params, Load(), Target("dir", d, d), 0)
            if params.file:
                argv[-1] = params.file
            cp = subprocess.run([*argv, "--parse-only"], capture_output=True, text=True, timeout=30, cwd=d)
        if cp.returncode < 0:  # killed: fio said nothing of the job (bench/chaos.py kills it)
            return [f"fio's check of the job was killed by signal {-cp.returncode}: run the command again"]
        if cp.returncode != 0:
            return [f"fio rejects the job: {(cp.stderr or cp.stdout).strip()[-500:]}"]
        return []

    def direct_io(self, params: FioParams) -> bool:
        if params.file:
            return "direct=1" in (params.job_text or "").replace(" ", "")
        return params.direct == 1

    probe_words = "fio: sequential 1 MiB O_DIRECT reads of {path}, read-only"

    def read_bps(self, device_path: str) -> int:
        """Sequential read bandwidth of a device (O_DIRECT, 1 MiB, QD16, read-only, BW_PROBE_S seconds)."""
        if not shutil.which("fio"):
            raise StrataError("the BW and ALL limit presets measure the device with fio", "apt-get install fio")
        argv = [
            "fio", "--name=strata-bw", f"--filename={device_path}", "--readonly", "--rw=read", "--bs=1M",
            "--direct=1", "--ioengine=libaio", "--iodepth=16", "--time_based", f"--runtime={BW_PROBE_S}",
            "--output-format=json",
        ]  # fmt: skip
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=BW_PROBE_S + 120)
        try:
            return int(json.loads(cp.stdout[cp.stdout.find("{") :])["jobs"][0]["read"]["bw_bytes"])
        except (ValueError, KeyError, IndexError):
            raise StrataError(
                f"fio could not measure {device_path}: {(cp.stderr or cp.stdout)[-500:]}", "run fio by hand"
            )

    def runtime_s(self, params: FioParams) -> float:
        return float(params.runtime or 0)

    def estimate_s(self, params: FioParams) -> float:
        return params.runtime + params.ramp_time + 3 + params.size / (400 << 20)

    def data_bytes(self, params: FioParams, load: Load) -> int:
        return 0 if params.file else params.size

    def image(self, params: FioParams) -> ImageSpec:
        return IMAGE

    def agent_image(self) -> ImageSpec:
        return IMAGE  # the native runtime runs fio on the host, and so does the bandwidth probe

    def _output_options(self, out: str) -> list[str]:
        return [
            f"--output={out}/fio.json",
            "--output-format=json+",
            "--lat_percentiles=1",
            "--slat_percentiles=1",
            "--clat_percentiles=1",
            "--percentile_list=50:90:99:99.9",
            f"--write_iops_log={out}/fio",
            f"--write_bw_log={out}/fio",
            "--log_avg_msec=1000",
            "--per_job_logs=0",
            # its status line a second on stdout (the instance's `stdout` file), beside the JSON in fio.json:
            # the rate the progress line shows while the trial runs (live_rate)
            "--eta=always",
            "--eta-interval=1",
        ]

    def live_rate(self, trial_dir: Path) -> str | None:
        return live.fio_rate(trial_dir.glob("inst-*/stdout"))

    def _job(self, params: FioParams, load: Load, target: Target) -> list[str]:
        """The job without its output options: the same for the layout step and the run."""
        where = f"--filename={target.path}" if target.kind == "device" else f"--directory={target.path}"
        if params.file:
            return [where, f"{target.out_dir}/job.fio"]
        argv = [
            "--name=strata",
            f"--rw={params.rw}",
            f"--bs={params.bs}",
            f"--ioengine={params.ioengine}",
            f"--iodepth={load.iodepth}",
            f"--numjobs={load.numjobs}",
            f"--direct={params.direct}",
            f"--size={params.size}",
            f"--runtime={params.runtime}",
            "--time_based",
            f"--ramp_time={params.ramp_time}",
            "--group_reporting",
            "--randrepeat=0",
            where if target.kind == "device" else f"--filename={target.path}/{DATA_FILE}",
        ]
        if params.rwmixread is not None:
            argv.append(f"--rwmixread={params.rwmixread}")
        if params.until == "steady":
            argv += STEADY_OPTIONS
        return argv + [f"--{k}={v}" for k, v in params.options.items()]

    def prepare(self, params: FioParams, load: Load, target: Target, instance: int) -> list[str] | None:
        """Lay the data file out before the barrier: fio's layout would otherwise run inside the
        measured window and spread the instances' start by seconds."""
        if target.kind == "device":
            return None
        return ["fio", "--create_only=1", "--output-format=terse", *self._job(params, load, target)]

    def command(self, params: FioParams, load: Load, target: Target, instance: int) -> list[str]:
        job = self._job(params, load, target)
        if params.file:
            return ["fio", *self._output_options(target.out_dir), *job]
        return ["fio", job[0], *self._output_options(target.out_dir), *job[1:], *held(load, target)]

    def stage(self, params: FioParams, out_dir: Path) -> None:
        """Files an instance needs in its out dir before it starts: the job file, or the barrier's script
        (and no count of ready jobs left by an earlier attempt)."""
        if params.file:
            (out_dir / "job.fio").write_text(params.job_text or "")
            return
        (out_dir / BARRIER_SCRIPT).write_text(HOLD)
        (out_dir / READY_JOBS).unlink(missing_ok=True)

    def parse(self, params: FioParams, outputs: list[InstanceOutput]) -> Parsed:
        docs = [load_fio_json(o) for o in outputs]
        try:
            parsed = aggregate(docs, [iops_series(o.out_dir) for o in outputs])
        except UNREADABLE as e:
            # JSON read whole but not in fio's shape (a member missing or of another type, no job, a number beyond
            # a float): output strata cannot read, a failed trial like bad JSON, not strata's traceback
            raise unreadable(outputs, f"{type(e).__name__}: {e}") from None
        wrong = unfinite_headline(parsed)
        if wrong:
            raise unreadable(outputs, f"its {wrong}")
        return parsed


def fio_version() -> str | None:
    try:
        return subprocess.run(["fio", "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


FIO = Fio()
PLUGIN: Workload[FioParams] = FIO  # the registry's entry (workloads/__init__.py), checked against the core
