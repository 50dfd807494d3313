"""The `sysbench` workload plugin: MariaDB 10.11 servers as the instances, sysbench 1.0.20 on the host.

A workload on the server template (workloads/server/): each instance is one MariaDB server, run by the
runtime under test like any instance (natively with its data directory on the mount point; in a container
or a pod with it on the layer, a volume, a bind mount or the pod's volume; `--network host`), so limits,
presets, collectors, journal and cleanup are the runtime's. The template starts the servers and waits until
each answers; this module supplies the rest:

- its start command (mariadb.py: mariadb-install-db on the path under test, then mariadbd);
- its ready probe (the server's log says it is ready for connections, and its port answers);
- its clients: `sysbench SCRIPT prepare` per server (the load; then every dirty page is written to the data
  files, and the server's version and settings in force are read), an optional warm-up, and the measured
  run, one sysbench per server with `--report-interval 1 --histogram on`;
- its counters around the measured run (InnoDB's reads, redo log and writes, and the data set's size);
- its parser (parse.py, metrics.py) and its metric declaration (`METRICS`).

Each client's whole output is in its `stderr.txt` (`exec sysbench ... >&2`): sysbench writes everything, its
`FATAL:` lines too, on stdout, and the template reads a failed client's words from its stderr.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from strata.core.errors import TrialFailure
from strata.core.instances import ImageSpec, Target
from strata.core.jsondoc import JsonObject
from strata.core.metrics import Axis, Metric, MetricSchema, OfferedRate, Show
from strata.core.params import Load, sweep_ends
from strata.workloads import live
from strata.workloads.base import LiveRate, MeasureContext, Parsed, Smoke, Workload
from strata.workloads.server import fields, lifecycle, options, records, transactions
from strata.workloads.server.clients import Client
from strata.workloads.server.script import sync_of
from strata.workloads.server.template import MemoryFloor, ServerTemplate
from strata.workloads.sysbench import mariadb, metrics
from strata.workloads.sysbench import parse as sp
from strata.workloads.sysbench.params import SysbenchParams

MiB = 1 << 20
ROW_BYTES = 240  # a row of oltp_common's tables with its index, measured: 242 bytes at 4 x 100,000 rows
SERVER_OVERHEAD_BYTES = 256 * MiB  # the system tables, ibdata1, ibtmp1, the undo logs
MIN_MEMORY_OVER_BUFFER_POOL = 128 * MiB  # a server under a memory limit needs its buffer pool and this
FLUSH_TIMEOUT_S = 600
# sysbench with its stdout on its stderr (the shell execs it: the template's kill, CPU time and exit code are its)
CLIENT_SHELL = 'exec sysbench "$@" >&2'

# What a sysbench result holds (strata/core/metrics.py; metrics.py of this package writes it).
METRICS = MetricSchema(
    fields=(
        Metric("clients", "parameter", type="int", axis=Axis("clients", 2)),
        Metric("tables", "parameter", type="int", context=True, text=lambda v: f"{v} tables"),
        Metric("table_size", "parameter", type="int", context=True, text=lambda v: f"{v} rows"),
        transactions.SCRIPT,
        transactions.RATE,
        transactions.TPS,
        Metric("qps", "total", "queries/s", "higher"),
        transactions.TPS_BY_DIRECTION,
        transactions.latency(("mean", "p99"), Show("lat {stat} us", 1000)),
    ),
    breakdown=("lat",),
    client_cpu=records.CLIENT_CPU,
    # its clients offer each server a rate (`rate`, tx/s): then the advice compares latency, not the rate
    offered=OfferedRate("rate", offered=("metrics", "offered", "rate_tx_s")),
)


# sysbench's options strata sets itself (`options` refuses them), each with the key that sets it
_RUN = "strata times the run itself: `runtime` and `warmup`"
_TO = "strata connects each client to its own server"
_RAND = "`rand_type` and its parameters"
MANAGED_OPTIONS = {
    "threads": "`clients`",
    "num-threads": "`clients`",
    "time": _RUN,
    "max-time": _RUN,
    "events": _RUN,
    "max-requests": _RUN,
    "rate": "`rate`",
    "tx-rate": "`rate`",
    "report-interval": "strata reads its per-second lines (--report-interval=1)",
    "histogram": "strata merges its latency histograms (--histogram=on)",
    "tables": "`tables`",
    "table_size": "`table_size`",
    "table-size": "`table_size`",
    "rand-type": _RAND,
    "rand-spec-pct": _RAND,
    "rand-spec-res": _RAND,
    "rand-pareto-h": _RAND,
    "db-driver": _TO,
    "mysql-host": _TO,
    "mysql-port": _TO,
    "mysql-socket": _TO,
    "mysql-user": _TO,
    "mysql-password": _TO,
    "mysql-db": _TO,
    "config-file": "every option is in the spec",
    "help": "strata runs the benchmark",
    "version": "strata runs the benchmark",
}


class Sysbench(ServerTemplate[SysbenchParams], Smoke, LiveRate):
    name = "sysbench"
    params = SysbenchParams
    metrics = METRICS
    server = mariadb.SERVER

    def validate(self, params: SysbenchParams) -> list[str]:
        """The settings map (the template's), and the client's own options against sysbench's --help and its
        script's own (`sysbench SCRIPT help`)."""
        script = params.builtin or params.file or ""
        known = options.union(
            "`sysbench --help` and `sysbench SCRIPT help`",
            options.read_help(("sysbench", "--help"), "`sysbench --help`"),
            *([options.read_help(("sysbench", script, "help"), f"`sysbench {script} help`")] if script else []),
        )
        return super().validate(params) + options.problems(params.options, known, MANAGED_OPTIONS, "sysbench")

    def smoke(self, raw: JsonObject) -> JsonObject:
        """experiment/scale.py: 1,000 rows in each of 2 tables, 5 s runs without warm-up; the sweeps of clients
        and rates cut to their ends."""
        out: JsonObject = {**raw, "tables": 2, "table_size": 1000, "runtime": 5, "warmup": 0}
        for key in ("clients", "rate"):
            if key in raw:
                out[key] = sweep_ends(raw[key])
        return out

    def parse_params(self, raw: JsonObject, base_dir: Path) -> SysbenchParams:
        return SysbenchParams.model_validate(
            fields.resolve_script(raw, base_dir, "script", "Lua script", fields.MAX_SCRIPT_BYTES)
        )

    def not_installed(self) -> str | None:
        for tool in (mariadb.MARIADBD, mariadb.INSTALL_DB, mariadb.CLIENT):
            if not Path(tool).is_file():
                return (
                    f"MariaDB is not installed (apt-get install {' '.join(mariadb.HOST_PACKAGES)}): {tool} is missing"
                )
        if not shutil.which("sysbench"):
            return "sysbench is not installed (apt-get install sysbench)"
        return None

    def versions(self) -> dict[str, str | None]:
        return {"mariadb": mariadb.version(), "sysbench": _sysbench_version()}

    def memory_floor(self, params: SysbenchParams) -> MemoryFloor:
        need = params.innodb_buffer_pool_size + MIN_MEMORY_OVER_BUFFER_POOL
        return MemoryFloor(need, "innodb_buffer_pool_size", params.innodb_buffer_pool_size)

    def direct_io(self, params: SysbenchParams) -> bool:
        """The cache rule applies: the workload states the bytes that must reach the device (metrics.py)."""
        return True

    def estimate_s(self, params: SysbenchParams) -> float:
        rows = params.tables * params.table_size
        return 20 + rows / 50_000 + params.warmup + params.runtime + 10

    def data_bytes(self, params: SysbenchParams, load: Load) -> int:
        """One server: its tables, its redo log, the system tables and InnoDB's own files."""
        tables = params.tables * params.table_size * ROW_BYTES
        return tables + params.innodb_log_file_size + SERVER_OVERHEAD_BYTES

    def image(self, params: SysbenchParams) -> ImageSpec:
        return mariadb.image_spec()

    def command(self, params: SysbenchParams, load: Load, target: Target, instance: int) -> list[str]:
        data = f"{target.path}/mariadb-{instance}"
        redo = f"{target.log_path}/mariadb-{instance}" if target.log_path else data  # its path of its own
        script = mariadb.server_script_of(params, data, redo, target.out_dir, sync_of(target), instance)
        return ["sh", "-c", script, "strata-mariadb"]

    # ---- the server template's hooks -------------------------------------------------------

    def ready(self, params: SysbenchParams, load: Load, ctx: MeasureContext, instance: int) -> bool:
        return mariadb.answers(lifecycle.server_log(ctx, instance, self.server.log_name), instance)

    def start_servers(self, params: SysbenchParams, load: Load, ctx: MeasureContext) -> list[float]:
        """The template's, with the server's own first error line in a failure to start: from its log, or from
        its script's words when its setup failed (its data directory out of the mysql user's reach,
        mariadb-install-db)."""
        try:
            return super().start_servers(params, load, ctx)
        except TrialFailure as e:
            said = mariadb.first_error(e.stderr) or mariadb.first_error(_setup_words(ctx.art))
            raise TrialFailure(e.category, f"{e}: {said}" if said else str(e), e.stderr, e.layer) from None

    def load_timeout_s(self, params: SysbenchParams) -> float:
        return 600 + params.tables * params.table_size / 5_000

    def live_rate(self, trial_dir: Path) -> str | None:
        return live.sysbench_rate(trial_dir)  # its clients' per-second lines

    def clients(self, phase: str, params: SysbenchParams, load: Load, out: Path, record: JsonObject) -> list[Client]:
        servers = range(self.instances(params, load))
        return [
            Client(["sh", "-c", CLIENT_SHELL, "sysbench", *self._args(phase, params, k)], out / f"server-{k}")
            for k in servers
        ]

    def _args(self, phase: str, params: SysbenchParams, instance: int) -> list[str]:
        script = params.builtin or params.file or ""
        base = [*mariadb.connection(instance), f"--tables={params.tables}", f"--table-size={params.table_size}"]
        if phase == "load":
            return [*base, f"--threads={min(params.clients, params.tables)}", script, "prepare"]
        argv = [*base, f"--threads={params.clients}", *params.rand()]
        if params.rate is not None:
            argv.append(f"--rate={params.rate}")
        argv += params.options  # the spec's own, checked against sysbench's --help (validate)
        if phase == "warmup":
            return [*argv, f"--time={params.warmup}", script, "run"]
        return [*argv, f"--time={params.runtime}", "--report-interval=1", "--histogram=on", script, "run"]

    def after_phase(
        self, phase: str, params: SysbenchParams, load: Load, ctx: MeasureContext, record: JsonObject
    ) -> None:
        """After the load, every server writes its dirty pages to the data files, outside the run; its version
        and the settings in force are read then."""
        if phase != "load":
            return
        servers = range(self.instances(params, load))
        facts = [mariadb.facts(k) for k in servers]  # before the flush sets some of them for a while
        record["server"] = {**facts[0], "versions": [f.get("version") for f in facts]} if facts else {}
        flushed = [mariadb.flush_dirty_pages(k, FLUSH_TIMEOUT_S) for k in servers]
        for k, f in enumerate(flushed):
            if "error" in f:
                raise self.fail_after(ctx, f"flushing server {k}'s dirty pages after the load failed: {f['error']}")
        record["flushed"] = list(flushed)

    def counters(self, instance: int) -> JsonObject:
        return dict(mariadb.counters(instance))

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        return sp.failure(phase, returncode, stderr)

    def parse_trial(self, params: SysbenchParams, arts: list[Path]) -> Parsed:
        return metrics.parse_trial(params, arts)


def _setup_words(art: Path) -> str:
    """What the servers' scripts said on stderr, instance after instance."""
    out = []
    for inst in sorted(art.glob("inst-*")):
        for name in ("stderr.txt", "stderr"):
            try:
                out.append((inst / name).read_text(errors="replace")[-4000:])
                break
            except OSError:
                continue
    return "\n".join(out)


def _sysbench_version() -> str | None:
    try:
        out = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().removeprefix("sysbench ") or None


SYSBENCH = Sysbench()
PLUGIN: Workload[SysbenchParams] = SYSBENCH  # the registry's entry (workloads/__init__.py), checked against the core
