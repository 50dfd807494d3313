"""A PostgreSQL 15 server as strata runs it: its port, its settings, its start script, its readiness,
and the counters read from it around the measured run.

The binaries are Debian 12's `postgresql-15` (/usr/lib/postgresql/15/bin), on the host for native
servers and the clients, and in the image strata builds for containers and pods (`image_spec`).

- Address: 127.0.0.1 only, no Unix socket (the network rule). Server k of this run listens on port
  16384 + 64 X + k (X: `STRATA_LOOPBACK`, 0 by default), so two runs on one machine never share a
  port, and every port stays below Linux's ephemeral range (32768 and up).
- PostgreSQL refuses to run as root: the script makes the data directory the `postgres` user's
  (Debian's packages create that user, on the host and in the image) and runs `initdb` and the
  server as that user (`setpriv`, which execs, so the script signals the server itself).
- `initdb -A trust`: the clients on the host connect as `postgres` without a password (nothing
  but 127.0.0.1 can reach the server). It syncs its files, before the server starts, so that its
  writes never land in the measured run.
- Settings on the command line (`-c NAME=VALUE`): the spec's five, `max_connections` for the
  clients and strata's own sessions, and `max_wal_senders=0` with `wal_level=minimal` (which
  PostgreSQL requires).
- Stop: SIGQUIT, PostgreSQL's immediate shutdown (the data is thrown away; no checkpoint waited for).
- Ready: the log says `database system is ready to accept connections` and the port answers.
"""

from __future__ import annotations

import shlex
import socket
import subprocess

from strata.core.instances import ImageSpec
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.server.loopback import loopback_octet
from strata.workloads.server.script import server_script

PG_BIN = "/usr/lib/postgresql/15/bin"
PACKAGES = ("postgresql-15",)
ADDRESS = "127.0.0.1"
USER = "postgres"
DATABASE = "postgres"
PORT_BASE = 16384
PORTS_PER_RUN = 64  # servers of one run on one host
LOG_NAME = "postgres.log"
READY_LINE = "database system is ready to accept connections"
EXTRA_CONNECTIONS = 10  # besides the clients: the load, strata's psql, PostgreSQL's reserved ones
BLOCK_BYTES = 8192  # PostgreSQL's block (Debian's build)
PSQL_TIMEOUT_S = 120


def port(instance: int) -> int:
    if not 0 <= instance < PORTS_PER_RUN:
        raise ValueError(f"server {instance}: a run has {PORTS_PER_RUN} ports per host")
    return PORT_BASE + PORTS_PER_RUN * loopback_octet() + instance


def settings(params: PgbenchParams) -> dict[str, str]:
    """The server's settings, as `postgres -c` takes them."""
    s = {
        "listen_addresses": ADDRESS,
        "unix_socket_directories": "",
        "max_connections": str(params.clients + EXTRA_CONNECTIONS),
        "synchronous_commit": params.synchronous_commit,
        "fsync": "on" if params.fsync else "off",
        "shared_buffers": f"{max(params.shared_buffers >> 10, 128)}kB",
        "wal_level": params.wal_level,
        "full_page_writes": "on" if params.full_page_writes else "off",
    }
    if params.wal_level == "minimal":
        s["max_wal_senders"] = "0"
    return s


def server_command(params: PgbenchParams, data_dir: str, instance: int) -> list[str]:
    argv = [f"{PG_BIN}/postgres", "-D", data_dir, "-c", f"port={port(instance)}"]
    for key, value in settings(params).items():
        argv += ["-c", f"{key}={value}"]
    return as_postgres(argv)


def as_postgres(argv: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", *argv]


def server_script_of(params: PgbenchParams, data_dir: str, out_dir: str, sync_dir: str, instance: int) -> str:
    """The instance's script (for `sh -c`): the data directory on the path under test, initdb, the server."""
    q = shlex.quote
    data, initdb_log = q(data_dir), f"{q(out_dir)}/initdb.log"
    initdb = as_postgres([f"{PG_BIN}/initdb", "-D", data_dir, "-U", USER, "-A", "trust", "-E", "UTF8", "--no-locale"])
    setup = [
        f"mkdir -p {data}",
        f"chown {USER}:{USER} {data} && chmod 700 {data}",
        f"if ! {shlex.join(initdb)} >{initdb_log} 2>&1; then",
        '  echo "initdb failed; its output ends:" >&2',
        f"  tail -c 3000 {initdb_log} >&2",
        "  exit 1",
        "fi",
    ]
    return server_script(
        setup=setup,
        command=shlex.join(server_command(params, data_dir, instance)),
        out_dir=out_dir,
        sync_dir=sync_dir,
        what="PostgreSQL server",
        stop_signal="QUIT",
        log_name=LOG_NAME,
    )


def answers(log_text: str, instance: int, timeout_s: float = 1.0) -> bool:
    """Ready: its log says so, and its port accepts a connection."""
    if READY_LINE not in log_text:
        return False
    try:
        with socket.create_connection((ADDRESS, port(instance)), timeout=timeout_s):
            return True
    except OSError:
        return False


def connection(instance: int) -> list[str]:
    """The client options that reach server `instance` (pgbench's and psql's alike)."""
    return ["-h", ADDRESS, "-p", str(port(instance)), "-U", USER]


# What the measured run made the server do: its WAL (PostgreSQL 15's pg_stat_wal: records, full-page
# images, bytes, writes and fsyncs of the WAL), its blocks read from outside its cache and found in it, and
# the size of the data set.
COUNTERS = ("wal_records", "wal_fpi", "wal_bytes", "wal_write", "wal_sync", "blks_read", "blks_hit", "database_bytes")
COUNTERS_SQL = (
    "select w.wal_records, w.wal_fpi, w.wal_bytes, w.wal_write, w.wal_sync, d.blks_read, d.blks_hit, "
    "pg_database_size(current_database()) from pg_stat_wal w, pg_stat_database d "
    "where d.datname = current_database()"
)


def psql(instance: int, sql: str) -> subprocess.CompletedProcess[str]:
    argv = [f"{PG_BIN}/psql", "-X", "-A", "-t", "-q", "-F", " ", *connection(instance), "-d", DATABASE, "-c", sql]
    return subprocess.run(argv, capture_output=True, text=True, timeout=PSQL_TIMEOUT_S)


def counters(instance: int) -> dict[str, int | str]:
    """The server's counters now; {"error": psql's words} when they cannot be read."""
    try:
        cp = psql(instance, COUNTERS_SQL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    return parse_counters(cp.stdout) if cp.returncode == 0 else {"error": (cp.stderr or cp.stdout)[-500:]}


def parse_counters(text: str) -> dict[str, int | str]:
    fields = text.split()
    if len(fields) != len(COUNTERS) or not all(f.isdigit() for f in fields):
        return {"error": f"unexpected counters from psql: {text[:200]!r}"}
    return dict(zip(COUNTERS, (int(f) for f in fields)))


def checkpoint(instance: int) -> str | None:
    """Write every dirty block of the data set to the device (after the load); psql's words if it failed."""
    try:
        cp = psql(instance, "checkpoint")
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if cp.returncode == 0 else (cp.stderr or cp.stdout)[-500:]


def version() -> str | None:
    try:
        out = subprocess.run([f"{PG_BIN}/postgres", "-V"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().removeprefix("postgres (PostgreSQL) ") or None


def image_spec() -> ImageSpec:
    """The server's image: Debian's PostgreSQL 15 (the clients run on the host)."""
    return ImageSpec("postgres", packages=PACKAGES)
