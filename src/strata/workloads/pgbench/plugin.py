"""The `pgbench` workload plugin: PostgreSQL 15 servers as the instances, pgbench on the host.

A workload on the server template (workloads/server/): each instance is one PostgreSQL server, run
by the runtime under test like any instance (natively with its data directory on the mount point;
in a container or a pod with it on the layer, a volume, a bind mount or the pod's volume;
`--network host`), so limits, presets, collectors, journal and cleanup are the runtime's. The
template starts the servers and waits until each answers; this module supplies the rest:

- its start command (postgres.py: initdb on the path under test, then the server);
- its ready probe (the server's log says it accepts connections, and its port does);
- its clients: `pgbench -i -s SCALE` per server (the load, then a CHECKPOINT so that the data set is
  on the device before any measurement), an optional warm-up, and the measured run, one pgbench per
  server with `--progress 1 --log` (`-n`: the load already vacuumed);
- its counters around the measured run (the WAL and the blocks, from pg_stat_wal and pg_stat_database);
- its parser (parse.py, metrics.py) and its metric declaration (`METRICS`).
"""

from __future__ import annotations

import pwd
import shutil
from pathlib import Path
from typing import Any

from strata.core.errors import StrataError, TrialFailure
from strata.core.instances import ImageSpec, InstanceOutput, Target
from strata.core.metrics import Axis, Metric, MetricSchema, Show
from strata.core.params import Load, sweep_ends
from strata.workloads.base import MeasureContext, Parsed, Smoke
from strata.workloads.pgbench import postgres
from strata.workloads.pgbench.params import MAX_SCRIPT_BYTES, PgbenchParams
from strata.workloads.server import lifecycle
from strata.workloads.server.clients import Client
from strata.workloads.server.loopback import loopback_octet
from strata.workloads.server.template import ServerTemplate

MiB = 1 << 20
ROWS_BYTES_PER_SCALE = 16 * MiB  # 100,000 accounts and their index, measured: 15.6 MiB a unit
WAL_BYTES = 1 << 30  # PostgreSQL's max_wal_size: what its WAL may hold between checkpoints
SERVER_OVERHEAD_BYTES = 64 * MiB  # the catalog initdb writes, its first WAL segments
MIN_MEMORY_OVER_BUFFERS = 64 * MiB  # a server under a memory limit needs its shared buffers and this
VM_REASON = (
    "a PostgreSQL server in a VM is not supported: the guest image holds no PostgreSQL, and QEMU runs under "
    "TCG emulation on this kind of host (about 100x slower), which would measure the emulator"
)

# What a pgbench result holds (strata/core/metrics.py; metrics.py of this package writes it).
METRICS = MetricSchema(
    fields=(
        Metric("clients", "parameter", type="int", axis=Axis("clients", 2)),
        Metric("threads", "parameter", type="int", export=False),
        Metric("scale", "parameter", type="int", context=True, text=lambda v: f"scale {v}"),
        Metric("script", "parameter", type="str", context=True),
        Metric("rate", "parameter", "tx/s", type="int", export=False, axis=Axis("offered rate (tx/s)", detail=True)),
        Metric("tps", "total", "tx/s", "higher", headline=True, show=Show("TPS", digits=0)),
        Metric("tps", "per_direction", "tx/s", "higher", export=False),
        Metric(
            "lat",
            "latency",
            "ns",
            "lower",
            label="transaction",
            stats=("mean", "p99"),
            show=Show("lat {stat} us", 1000),
        ),
    ),
    breakdown=("lat",),
)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class Pgbench(ServerTemplate[PgbenchParams], Smoke):
    name = "pgbench"
    params = PgbenchParams
    metrics = METRICS
    clients_dir = "pgbench"
    client_what = "the pgbench client"
    server_what = "PostgreSQL server"
    log_name = postgres.LOG_NAME
    vm_reason = VM_REASON
    host_packages = postgres.PACKAGES

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
        if isinstance(script, str) and script.startswith("file:"):
            p = Path(script[len("file:") :])
            p = p if p.is_absolute() else base_dir / p
            if not p.is_file():
                raise ValueError(f"no pgbench script at {p} (script: {script})")
            if p.stat().st_size > MAX_SCRIPT_BYTES:
                raise ValueError(f"the pgbench script {p} is above {MAX_SCRIPT_BYTES >> 20} MiB: is it a script?")
            raw["file"] = str(p.resolve())
        return PgbenchParams.model_validate(raw)

    def available(self, host: dict[str, Any], params: PgbenchParams | None = None) -> str | None:
        for tool in ("postgres", "initdb", "pgbench", "psql"):
            if not Path(postgres.PG_BIN, tool).is_file():
                return (
                    f"PostgreSQL 15 is not installed (apt-get install {' '.join(postgres.PACKAGES)}): {tool} is missing"
                )
        if not shutil.which("setpriv"):
            return "setpriv is missing (apt-get install util-linux): the native servers run as the postgres user"
        try:
            pwd.getpwnam(postgres.USER)
        except KeyError:
            return f"there is no {postgres.USER} user (Debian's postgresql-15 package makes it)"
        try:
            loopback_octet()
        except StrataError as e:
            return e.message()
        return None

    def versions(self) -> dict[str, str | None]:
        return {"postgresql": postgres.version()}

    def problems(self, params: PgbenchParams, load: Load) -> list[tuple[str, str, str]]:
        out = []
        mem, need = load.limits.memory, params.shared_buffers + MIN_MEMORY_OVER_BUFFERS
        if mem is not None and mem < need:
            out.append(
                (
                    "limits.memory",
                    f"a PostgreSQL server with shared_buffers of {params.shared_buffers >> 20} MiB needs a memory "
                    f"limit of at least {need >> 20} MiB, not {mem >> 20} MiB",
                    f"raise limits.memory to at least {need >> 20} MiB, or lower shared_buffers",
                )
            )
        if load.containers > postgres.PORTS_PER_RUN:
            out.append(
                (
                    "containers",
                    f"{load.containers} PostgreSQL servers on one host; each takes a port of the run's "
                    f"{postgres.PORTS_PER_RUN}",
                    f"run at most {postgres.PORTS_PER_RUN} containers",
                )
            )
        return out

    def direct_io(self, params: PgbenchParams) -> bool:
        """The cache rule applies: the workload states the bytes that must reach the device (metrics.py)."""
        return True

    def runtime_s(self, params: PgbenchParams) -> float:
        return float(params.runtime or 0)

    def estimate_s(self, params: PgbenchParams) -> float:
        return 15 + params.scale * 0.5 + params.warmup + params.runtime + 10

    def data_bytes(self, params: PgbenchParams, load: Load) -> int:
        """One server: its tables, the WAL it may keep between checkpoints, the catalog."""
        return params.scale * ROWS_BYTES_PER_SCALE + WAL_BYTES + SERVER_OVERHEAD_BYTES

    def image(self, params: PgbenchParams) -> ImageSpec:
        return postgres.image_spec()

    def command(self, params: PgbenchParams, load: Load, target: Target, instance: int) -> list[str]:
        sync = target.sync_dir or f"{target.out_dir}/../sync"
        data = f"{target.path}/pg-{instance}"
        return ["sh", "-c", postgres.server_script_of(params, data, target.out_dir, sync, instance), "strata-pg"]

    # ---- the server template's hooks -------------------------------------------------------

    def ready(self, params: PgbenchParams, load: Load, ctx: MeasureContext, instance: int) -> bool:
        return postgres.answers(lifecycle.server_log(ctx.art, instance, self.log_name), instance)

    def phases(self, params: PgbenchParams) -> tuple[str, ...]:
        return ("load",) + (("warmup",) if params.warmup else ())

    def phase_timeout_s(self, phase: str, params: PgbenchParams) -> float:
        if phase == "load":
            return 600 + params.scale * 3.0
        return (params.warmup if phase == "warmup" else params.runtime) + 180.0

    def clients(self, phase: str, params: PgbenchParams, load: Load, out: Path, record: dict[str, Any]) -> list[Client]:
        servers = range(self.instances(params, load))
        return [Client(self._argv(phase, params, k), out / f"server-{k}") for k in servers]

    def _argv(self, phase: str, params: PgbenchParams, instance: int) -> list[str]:
        base = [f"{postgres.PG_BIN}/pgbench", *postgres.connection(instance)]
        if phase == "load":
            return [*base, "-i", "-q", "-s", str(params.scale), postgres.DATABASE]
        argv = [*base, "-n", "-c", str(params.clients), "-j", str(params.effective_threads)]
        argv += ["-b", params.builtin] if params.builtin else ["-f", params.file or "", "-s", str(params.scale)]
        if params.rate is not None:
            argv += ["--rate", str(params.rate)]
        if params.max_tries > 1:
            argv += ["--max-tries", str(params.max_tries)]
        if phase == "warmup":
            return [*argv, "-T", str(params.warmup), postgres.DATABASE]
        return [*argv, "-T", str(params.runtime), "--progress", "1", "--log", "--log-prefix", "tx", postgres.DATABASE]

    def after_phase(
        self, phase: str, params: PgbenchParams, load: Load, ctx: MeasureContext, record: dict[str, Any]
    ) -> None:
        """After the load, every server writes its data set to the device (CHECKPOINT), outside the run."""
        if phase != "load":
            return
        for k in range(self.instances(params, load)):
            said = postgres.checkpoint(k)
            if said is not None:
                lifecycle.check_servers(self, ctx)  # a server that died is the cause
                raise TrialFailure("tool_error", f"the CHECKPOINT after the load failed on server {k}: {said}", said)

    def observe(
        self, point: str, params: PgbenchParams, load: Load, ctx: MeasureContext, record: dict[str, Any]
    ) -> None:
        seen = record.setdefault("observed", {})
        seen[point] = [postgres.counters(k) for k in range(self.instances(params, load))]

    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure:
        from strata.workloads.pgbench.parse import failure

        return failure(phase, returncode, stderr)

    def parse(self, params: PgbenchParams, outputs: list[InstanceOutput]) -> Parsed:
        from strata.workloads.pgbench.metrics import parse

        return parse(params, outputs)


PGBENCH = Pgbench()
