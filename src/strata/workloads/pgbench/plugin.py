"""The `pgbench` workload plugin: PostgreSQL 15 servers as the instances, pgbench on the host.

A workload on the server template (workloads/server/): each instance is one PostgreSQL server, run
by the runtime under test like any instance (natively with its data directory on the mount point;
in a container or a pod with it on the layer, a volume, a bind mount or the pod's volume;
`--network host`), so limits, presets, collectors, journal and cleanup are the runtime's. The
template starts the servers and waits until each answers; this module supplies the rest:

- its start command (postgres.py: initdb on the path under test, then the server);
- its ready probe (the server's log says it accepts connections, and its port does);
- its clients: `pgbench -i -s SCALE` per server with the spec's init options (the load, then a
  CHECKPOINT so that the data set is on the device before any measurement, and a second that starts the
  timed checkpoints' clock as the warm-up starts), the warm-up, and the measured run, one pgbench per
  server with `--progress 1 --log` (and `--sampling-rate` when `log_sampling` logs a share of the
  transactions: sampling.py, its rate chosen after the warm-up); pgbench's VACUUM before the first of them
  unless `vacuum: false`;
- its counters around the measured run (the WAL, the blocks, the checkpoints and the buffers they and the
  backends wrote: pg_stat_wal, pg_stat_database, pg_stat_bgwriter), and what the started server says of
  itself (its version, the settings in force);
- the template's settings map (checked against `postgres --describe-config`), its WAL on a path of its own
  (`wal_path`), its `postgres` user (the plan checks that it reaches the workdir natively), and its
  servers' own error lines (initdb's, the log's FATAL or PANIC) in a failure;
- its parser (parse.py, metrics.py) and its metric declaration (`METRICS`).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from strata.core.errors import TrialFailure
from strata.core.instances import ImageSpec, Target
from strata.core.metrics import Axis, Caution, Events, Metric, MetricSchema, OfferedRate, Show
from strata.core.params import Load, sweep_ends
from strata.workloads import live
from strata.workloads.base import LiveRate, MeasureContext, Parsed, Smoke, Workload, spec_file
from strata.workloads.pgbench import metrics, postgres, sampling
from strata.workloads.pgbench.params import PgbenchParams, entries, scale_below_clients
from strata.workloads.pgbench.parse import failure, parse_progress, parse_summary
from strata.workloads.server import fields, lifecycle, options, records, transactions
from strata.workloads.server.clients import Client
from strata.workloads.server.script import sync_of
from strata.workloads.server.template import MemoryFloor, ServerTemplate

MiB = 1 << 20
ROWS_BYTES_PER_SCALE = 16 * MiB  # 100,000 accounts and their index, measured: 15.6 MiB a unit
SERVER_OVERHEAD_BYTES = 64 * MiB  # the catalog initdb writes, its first WAL segments
MIN_MEMORY_OVER_BUFFERS = 64 * MiB  # a server under a memory limit needs its shared buffers and this

# PostgreSQL's lines that say what failed: a log line's level, initdb's and pgbench's own `error:`.
ERROR_LINE = re.compile(r"\b(FATAL|PANIC|ERROR):|^\S+: error: |Permission denied|No space left")

# What a pgbench result holds (strata/core/metrics.py; metrics.py of this package writes it).
METRICS = MetricSchema(
    fields=(
        Metric("clients", "parameter", type="int", axis=Axis("clients", 2, detail=True)),
        Metric("threads", "parameter", type="int", export=False, key=("metrics", "pgbench", "threads")),  # -j as run
        Metric("scale", "parameter", type="int", context=True, text=lambda v: f"scale {v}"),
        transactions.SCRIPT,
        transactions.RATE,
        transactions.TPS,
        transactions.TPS_BY_DIRECTION,
        # the report's latency table shows each; strata show's columns, as fio's and ycsb's
        transactions.latency(
            ("mean", "p50", "p95", "p99", "p99_9"), Show("lat {stat} us", 1000, stats=("mean", "p99"))
        ),
    ),
    breakdown=("lat",),
    client_cpu=records.CLIENT_CPU,
    # its clients offer each server a rate (`rate`, tx/s), stored with the trial as it offered it
    offered=OfferedRate("rate", offered=("metrics", "offered", "rate_tx_s")),
    # the checkpoints inside the measured run: compared trials must hold as many (analysis/advice/compared.py)
    events=(
        Events(
            ("metrics", "checkpoints", "count"),
            "checkpoint",
            "give every trial the same checkpoints: a runtime that is a multiple of checkpoint_timeout, a warm-up "
            "of half of it (the defaults: 60 s, 15 s, 30 s), and a max_wal_size above the WAL of one "
            "checkpoint_timeout (metrics.checkpoints.requested counts those it forced)",
        ),
    ),
    # tpcb-like's every transaction updates one of `scale` branch rows: more clients than rows wait on row locks
    cautions=(
        Caution(
            "scale",
            scale_below_clients,
            "set scale to at least the number of clients (pgbench's docs: -c values in excess of -s leave "
            "transactions blocked waiting for other transactions), or run fewer clients",
        ),
    ),
)


# pgbench's options strata sets itself (`options` refuses them), each with the key that sets it
_RUN = "strata times the run itself: `runtime` and `warmup`"
_LOG = "strata logs every transaction it samples: `log_sampling`"
_INIT = (
    "the load's own keys set it (`init_steps`, `fillfactor`, `foreign_keys`, `partitions`, ...); options go to the run"
)
MANAGED_OPTIONS = {
    "client": "`clients`",
    "jobs": "`threads`",
    "time": _RUN,
    "transactions": _RUN,
    "progress": "strata reads its per-second lines (--progress 1)",
    "rate": "`rate`",
    "latency-limit": "`latency_limit`",
    "max-tries": "`max_tries`",
    "protocol": "`protocol`",
    "builtin": "`script`",
    "file": "`script: file:PATH`",
    "select-only": "`script: select-only`",
    "skip-some-updates": "`script: simple-update`",
    "scale": "`scale`",
    "no-vacuum": "`vacuum`",
    "vacuum-all": "`vacuum`",
    "log": _LOG,
    "log-prefix": _LOG,
    "sampling-rate": _LOG,
    "aggregate-interval": _LOG,
    "host": "strata connects each client to its own server",
    "port": "strata connects each client to its own server",
    "username": "strata connects each client to its own server",
    "initialize": _INIT,
    "init-steps": _INIT,
    "fillfactor": _INIT,
    "foreign-keys": _INIT,
    "partitions": _INIT,
    "partition-method": _INIT,
    "unlogged-tables": _INIT,
    "tablespace": _INIT,
    "index-tablespace": _INIT,
    "quiet": _INIT,
    "help": "strata runs the benchmark",
    "version": "strata runs the benchmark",
    "show-script": "strata runs the benchmark",
}


class Pgbench(ServerTemplate[PgbenchParams], Smoke, LiveRate):
    name = "pgbench"
    params = PgbenchParams
    metrics = METRICS
    server = postgres.SERVER

    def validate(self, params: PgbenchParams) -> list[str]:
        """The settings map (the template's), and the client's own options against `pgbench --help`."""
        known = options.read_help((f"{postgres.PG_BIN}/pgbench", "--help"), "`pgbench --help`")
        return super().validate(params) + options.problems(params.options, known, MANAGED_OPTIONS, "pgbench")

    def smoke(self, raw: dict[str, Any]) -> dict[str, Any]:
        """experiment/scale.py: scale 1, 5 s runs without warm-up; the sweeps of clients, threads and
        rates cut to their ends."""
        out = {**raw, "scale": 1, "runtime": 5, "warmup": 0}
        for key in ("clients", "threads", "rate"):
            if key in raw:
                out[key] = sweep_ends(raw[key])
        return out

    def parse_params(self, raw: dict[str, Any], base_dir: Path) -> PgbenchParams:
        raw = dict(raw)
        script = raw.get("script")
        if isinstance(script, str) and "file:" in script:
            said = f"script: {script}"
            files = [
                spec_file(what[len("file:") :], base_dir, "pgbench script", fields.MAX_SCRIPT_BYTES, said)
                for what, _ in entries(script)
                if what.startswith("file:")
            ]
            raw["files"], raw["file"] = files, files[0]
        return PgbenchParams.model_validate(raw)

    def not_installed(self) -> str | None:
        for tool in ("postgres", "initdb", "pgbench", "psql"):
            if not Path(postgres.PG_BIN, tool).is_file():
                return (
                    f"PostgreSQL 15 is not installed (apt-get install {' '.join(postgres.PACKAGES)}): {tool} is missing"
                )
        return None

    def versions(self) -> dict[str, str | None]:
        return {"postgresql": postgres.version()}

    def memory_floor(self, params: PgbenchParams) -> MemoryFloor:
        return MemoryFloor(params.shared_buffers + MIN_MEMORY_OVER_BUFFERS, "shared_buffers", params.shared_buffers)

    def direct_io(self, params: PgbenchParams) -> bool:
        """The cache rule applies: the workload states the bytes that must reach the device (metrics.py)."""
        return True

    def estimate_s(self, params: PgbenchParams) -> float:
        return 15 + params.scale * 0.5 + params.warmup + params.runtime + 10

    def data_bytes(self, params: PgbenchParams, load: Load) -> int:
        """One server: its tables, the WAL it may keep between checkpoints (max_wal_size), the catalog."""
        return params.scale * ROWS_BYTES_PER_SCALE + params.max_wal_size + SERVER_OVERHEAD_BYTES

    def image(self, params: PgbenchParams) -> ImageSpec:
        return postgres.image_spec()

    def command(self, params: PgbenchParams, load: Load, target: Target, instance: int) -> list[str]:
        data = f"{target.path}/pg-{instance}"
        wal = f"{target.log_path}/pg-{instance}" if target.log_path else ""
        script = postgres.server_script_of(params, data, target.out_dir, sync_of(target), instance, wal)
        return ["sh", "-c", script, "strata-pg"]

    # ---- what PostgreSQL brings to the template ---------------------------------------------

    def error_line(self, text: str) -> str | None:
        return lifecycle.last_error(text, ERROR_LINE)

    def server_facts(self, params: PgbenchParams, load: Load, ctx: MeasureContext) -> dict[str, Any]:
        """Server 0's version, block size and settings in force; every server's version and WAL directory (as
        the server saw it: its data directory's pg_wal, or the WAL's own path)."""
        servers = range(self.instances(params, load))
        every = [postgres.facts(k) for k in servers]
        first = dict(every[0]) if every else {}
        first["versions"] = [f.get("version") for f in every]
        first["wal_dirs"] = [_read(ctx.art / f"inst-{k}" / "wal-dir.txt") for k in servers]
        return first

    # ---- the server template's hooks -------------------------------------------------------

    def ready(self, params: PgbenchParams, load: Load, ctx: MeasureContext, instance: int) -> bool:
        return postgres.answers(lifecycle.server_log(ctx, instance, self.server.log_name), instance)

    def load_timeout_s(self, params: PgbenchParams) -> float:
        return 600 + params.scale * 3.0

    def live_rate(self, trial_dir: Path) -> str | None:
        return live.pgbench_rate(trial_dir)  # its clients' per-second lines

    def clients(self, phase: str, params: PgbenchParams, load: Load, out: Path, record: dict[str, Any]) -> list[Client]:
        servers = range(self.instances(params, load))
        rate = 1.0
        if phase == "run":  # without a warm-up, `auto` chooses here (after_phase chose after one)
            offered = params.rate * len(servers) if params.rate else None
            rate = record.setdefault("log", sampling.choose(params.log_sampling, None, offered))["sampling_rate"]
        return [Client(self._argv(phase, params, k, rate), out / f"server-{k}") for k in servers]

    def _argv(self, phase: str, params: PgbenchParams, instance: int, sampling_rate: float = 1.0) -> list[str]:
        base = [f"{postgres.PG_BIN}/pgbench", *postgres.connection(instance)]
        if phase == "load":
            return [*base, *init_options(params), postgres.DATABASE]
        first = phase == ("warmup" if params.warmup else "run")  # the first transactions after the load
        argv = [*base] + ([] if first and params.vacuum else ["-n"])  # pgbench's VACUUM, once, before the first
        argv += ["-c", str(params.clients), "-j", str(params.effective_threads), "-M", params.protocol]
        for flag, what, weight in params.runs():
            argv += [flag, what + (f"@{weight}" if weight is not None else "")]
        if any(flag == "-f" for flag, _, _ in params.runs()):
            argv += ["-s", str(params.scale)]
        if params.rate is not None:
            argv += ["--rate", str(params.rate)]
        if params.latency_limit is not None:
            argv += ["--latency-limit", f"{params.latency_limit:g}"]
        if params.max_tries > 1:
            argv += ["--max-tries", str(params.max_tries)]
        argv += params.options  # the spec's own, checked against pgbench --help (validate)
        if phase == "warmup":  # its progress lines: the throughput `log_sampling: auto` reads
            return [*argv, "-T", str(params.warmup), "--progress", "1", postgres.DATABASE]
        argv += ["-T", str(params.runtime), "--progress", "1", "--log", "--log-prefix", "tx"]
        if sampling_rate < 1.0:
            argv += ["--sampling-rate", sampling.word(sampling_rate)]
        return [*argv, postgres.DATABASE]

    def after_phase(
        self, phase: str, params: PgbenchParams, load: Load, ctx: MeasureContext, record: dict[str, Any]
    ) -> None:
        """After the load, every server writes its data set to the device (CHECKPOINT), outside the run; a second
        CHECKPOINT, which finds nothing to write, starts the clock of the timed checkpoints as the warm-up starts,
        so that they fall at the same seconds of every trial's run (the first `checkpoint_timeout` after it).
        After the warm-up, the rate of the measured run's log (sampling.py) from the warm-up's throughput."""
        if phase == "warmup":
            dirs = [ctx.art / c for c in record["phases"]["warmup"]["clients"]]
            progress = [[p.tps for p in parse_progress(_read(d / "stderr.txt") or "")] for d in dirs]
            summaries = [parse_summary(_read(d / "stdout.txt") or "").tps for d in dirs]
            offered = params.rate * len(dirs) if params.rate else None
            tps = sampling.warmup_tps(progress, summaries)
            record["log"] = sampling.choose(params.log_sampling, tps, offered)
        if phase != "load":
            return
        for k in range(self.instances(params, load)):
            for _ in range(2):
                said = postgres.checkpoint(k)
                if said is not None:
                    raise self.fail_after(ctx, f"the CHECKPOINT after the load failed on server {k}: {said}", said)
        record["checkpoint_clock_s"] = round(time.time(), 3)

    def counters(self, instance: int) -> dict[str, Any]:
        return postgres.counters(instance)

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        return failure(phase, returncode, stderr)

    def parse_trial(self, params: PgbenchParams, arts: list[Path]) -> Parsed:
        return metrics.parse_trial(params, arts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def init_options(params: PgbenchParams) -> list[str]:
    """pgbench -i with the spec's init options."""
    argv = ["-i", "-q", "-s", str(params.scale)]
    if params.init_steps:
        argv += ["-I", params.init_steps]
    if params.foreign_keys:
        argv += ["--foreign-keys"]
    if params.fillfactor != 100:
        argv += ["-F", str(params.fillfactor)]
    if params.partitions:
        argv += ["--partitions", str(params.partitions), "--partition-method", params.partition_method]
    if params.unlogged_tables:
        argv += ["--unlogged-tables"]
    return argv


PGBENCH = Pgbench()
PLUGIN: Workload[PgbenchParams] = PGBENCH  # the registry's entry (workloads/__init__.py), checked against the core
