"""A PostgreSQL 15 server as strata runs it: its port, its settings, its start script, its readiness,
and the counters read from it around the measured run.

The binaries are Debian 12's `postgresql-15` (/usr/lib/postgresql/15/bin), on the host for native
servers and the clients, and in the image strata builds for containers and pods (`image_spec`).

- Address: 127.0.0.1 only, no Unix socket (the network rule). Server k of this run listens on port
  16384 + 64 X + k (X: `STRATA_LOOPBACK`, 0 by default), so two runs on one machine at once, each given its
  own X, never share a port (with one X, the second server to start says its port was taken), and every port
  stays below Linux's ephemeral range (32768 and up).
- PostgreSQL refuses to run as root: the script makes the data directory the `postgres` user's
  (Debian's packages create that user, on the host and in the image) and runs `initdb` and the
  server as that user (`setpriv`, which execs, so the script signals the server itself).
- `initdb -A trust`: the clients on the host connect as `postgres` without a password (nothing
  but 127.0.0.1 can reach the server). It syncs its files, before the server starts, so that its
  writes never land in the measured run.
- Settings on the command line (`-c NAME=VALUE`): the spec's own keys, its `settings` map,
  `max_connections` for the clients and strata's own sessions, and `max_wal_senders=0` with
  `wal_level=minimal` (which PostgreSQL requires). Those strata sets itself are refused in the map
  (`MANAGED`); every other name is checked against `postgres --describe-config` (`catalog`).
- The WAL on a path of its own (`wal_path`): `initdb --waldir` puts it there, the server reaches it through
  `pg_wal`, a symbolic link.
- Stop: SIGQUIT, PostgreSQL's immediate shutdown (the data is thrown away; no checkpoint waited for).
- Ready: the log says `database system is ready to accept connections` and the port answers.
- Read from the running server: its version (that of the image that ran it), the settings in force
  (`pg_settings`), and its counters before and after the measured run: the WAL (pg_stat_wal), the blocks
  read from outside its cache and found in it (pg_stat_database), the checkpoints and the buffers written
  by checkpoints, the background writer and the backends (pg_stat_bgwriter).
"""

from __future__ import annotations

import functools
import shlex
import subprocess

from strata.core.instances import ImageSpec
from strata.core.jsondoc import JsonObject
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.server import lifecycle
from strata.workloads.server.facts import Log, Server
from strata.workloads.server.loopback import PORTS_PER_RUN, port
from strata.workloads.server.script import server_script
from strata.workloads.server.settings import Catalog, Known, Rules, in_force

PG_BIN = "/usr/lib/postgresql/15/bin"
PACKAGES = ("postgresql-15",)
ADDRESS = "127.0.0.1"
USER = "postgres"
DATABASE = "postgres"
LOG_NAME = "postgres.log"
READY_LINE = "database system is ready to accept connections"
EXTRA_CONNECTIONS = 10  # besides the clients: the load, strata's psql, PostgreSQL's reserved ones
BLOCK_BYTES = 8192  # PostgreSQL's block (Debian's build); the server's own `block_size` is read and stored
PSQL_TIMEOUT_S = 120
SEP = "\x1f"  # between psql's fields: no setting's value holds it
# The settings strata sets itself, refused in the `settings` map (lower-case name -> how strata sets it).
MANAGED = {
    "port": "strata gives each server a port of the run's block (STRATA_LOOPBACK)",
    "listen_addresses": "strata's servers listen on 127.0.0.1 only (the network rule)",
    "unix_socket_directories": "strata's servers take no Unix socket (the clients connect over 127.0.0.1)",
    "data_directory": "strata puts the data on the path under test",
    "config_file": "strata passes every setting on the server's command line",
    "hba_file": "strata's servers trust the clients on 127.0.0.1 (initdb -A trust)",
    "ident_file": "strata's servers trust the clients on 127.0.0.1 (initdb -A trust)",
    "max_connections": "strata sets it from `clients` (and its own sessions)",
    "logging_collector": "strata reads the server's log on its stderr (the ready line, the errors)",
    "log_destination": "strata reads the server's log on its stderr (the ready line, the errors)",
    **{
        k: f"set it with the workload's key `{k}`"
        for k in (
            "synchronous_commit",
            "fsync",
            "shared_buffers",
            "wal_level",
            "full_page_writes",
            "checkpoint_timeout",
            "max_wal_size",
        )
    },
}
# Settings stored with every trial whatever their source: those that decide what reaches the device, and when.
STORED = (
    "block_size",
    "wal_block_size",
    "wal_segment_size",
    "data_checksums",
    "wal_sync_method",
    "wal_compression",
    "wal_writer_delay",
    "wal_writer_flush_after",
    "commit_delay",
    "checkpoint_completion_target",
    "checkpoint_flush_after",
    "bgwriter_flush_after",
    "backend_flush_after",
    "effective_io_concurrency",
    "huge_pages",
    "min_wal_size",
    "server_version",
)


def settings(params: PgbenchParams) -> dict[str, str]:
    """The server's settings, as `postgres -c` takes them: strata's, the spec's keys, then its map."""
    s = {
        "listen_addresses": ADDRESS,
        "unix_socket_directories": "",
        "max_connections": str(params.clients + EXTRA_CONNECTIONS),
        "synchronous_commit": params.synchronous_commit,
        "fsync": "on" if params.fsync else "off",
        "shared_buffers": f"{max(params.shared_buffers >> 10, 128)}kB",
        "wal_level": params.wal_level,
        "full_page_writes": "on" if params.full_page_writes else "off",
        "checkpoint_timeout": f"{params.checkpoint_timeout}s",
        "max_wal_size": f"{max(params.max_wal_size >> 20, 32)}MB",
    }
    if params.wal_level == "minimal":
        s["max_wal_senders"] = "0"
    return s | params.settings


@functools.cache
def catalog() -> Catalog | None:
    """Every setting the host's PostgreSQL knows (`postgres --describe-config`: name, context, group, type,
    ...), or None when it cannot be read."""
    try:
        cp = subprocess.run([f"{PG_BIN}/postgres", "--describe-config"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    kinds = {"BOOLEAN": "bool", "INTEGER": "int", "REAL": "real", "ENUM": "enum", "STRING": "string"}
    known = {}
    for line in cp.stdout.splitlines():
        f = line.split("\t")
        if len(f) >= 4 and f[0]:
            known[f[0].lower()] = Known(f[0], kinds.get(f[3], "string"))
    if cp.returncode != 0 or not known:
        return None
    return Catalog(f"`postgres --describe-config` (PostgreSQL {version() or '15'})", known)


# What the template reads of the server (facts.py); the settings' catalog is read when it is called, so that a
# test's stand-in for it holds.
RULES = Rules(lambda: catalog(), MANAGED)
SERVER = Server("PostgreSQL server", PACKAGES, USER, Log("wal_path", "WAL"), RULES, PORTS_PER_RUN, LOG_NAME)


def server_command(params: PgbenchParams, data_dir: str, instance: int) -> list[str]:
    argv = [f"{PG_BIN}/postgres", "-D", data_dir, "-c", f"port={port(instance)}"]
    for key, value in settings(params).items():
        argv += ["-c", f"{key}={value}"]
    return as_postgres(argv)


def as_postgres(argv: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", *argv]


def server_script_of(
    params: PgbenchParams, data_dir: str, out_dir: str, sync_dir: str, instance: int, wal_dir: str = ""
) -> str:
    """The instance's script (for `sh -c`): the data directory on the path under test (and the WAL's on its
    own path), initdb, the server."""
    q = shlex.quote
    data, initdb_log = q(data_dir), f"{q(out_dir)}/initdb.log"
    initdb = [f"{PG_BIN}/initdb", "-D", data_dir, "-U", USER, "-A", "trust", "-E", "UTF8", "--no-locale"]
    dirs = [data] + ([q(wal_dir)] if wal_dir else [])
    setup = [
        f"mkdir -p {' '.join(dirs)}",
        f"chown {USER}:{USER} {' '.join(dirs)} && chmod 700 {' '.join(dirs)}",
        f"if ! {shlex.join(as_postgres(initdb + (['--waldir', wal_dir] if wal_dir else [])))} >{initdb_log} 2>&1; then",
        '  echo "initdb failed; its output ends:" >&2',
        f"  tail -c 3000 {initdb_log} >&2",
        "  exit 1",
        "fi",
        f"readlink -f {data}/pg_wal >{q(out_dir)}/wal-dir.txt",  # where its WAL is: the data's, or its own path
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


def answers(log_text: str, instance: int) -> bool:
    """Ready: its log says so, and its port accepts a connection."""
    return lifecycle.listening(log_text, READY_LINE, ADDRESS, port(instance))


def connection(instance: int) -> list[str]:
    """The client options that reach server `instance` (pgbench's and psql's alike)."""
    return ["-h", ADDRESS, "-p", str(port(instance)), "-U", USER]


# What the measured run made the server do: its WAL (PostgreSQL 15's pg_stat_wal: records, full-page images,
# bytes, writes and fsyncs of the WAL), its blocks read from outside its cache and found in it, its checkpoints
# (timed, requested: forced by WAL volume or asked for) with the milliseconds spent writing and syncing them,
# the buffers written by checkpoints, by the background writer and by the backends themselves (and the fsyncs
# the backends had to make), and the size of the data set (pg_stat_bgwriter is PostgreSQL 15's: 17 moved the
# checkpoints to pg_stat_checkpointer).
COUNTERS = (
    "wal_records",
    "wal_fpi",
    "wal_bytes",
    "wal_write",
    "wal_sync",
    "blks_read",
    "blks_hit",
    "checkpoints_timed",
    "checkpoints_req",
    "checkpoint_write_time",
    "checkpoint_sync_time",
    "buffers_checkpoint",
    "buffers_clean",
    "buffers_backend",
    "buffers_backend_fsync",
    "buffers_alloc",
    "database_bytes",
)
FLOAT_COUNTERS = ("checkpoint_write_time", "checkpoint_sync_time")  # milliseconds
COUNTERS_SQL = (
    "select w.wal_records, w.wal_fpi, w.wal_bytes, w.wal_write, w.wal_sync, d.blks_read, d.blks_hit, "
    "b.checkpoints_timed, b.checkpoints_req, b.checkpoint_write_time, b.checkpoint_sync_time, "
    "b.buffers_checkpoint, b.buffers_clean, b.buffers_backend, b.buffers_backend_fsync, b.buffers_alloc, "
    "pg_database_size(current_database()) from pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d "
    "where d.datname = current_database()"
)
FACTS_SQL = (
    "select name, setting, coalesce(unit, ''), source from pg_settings "
    "where source not in ('default', 'override', 'client', 'session') "
    f"or name in ({', '.join(repr(n) for n in STORED)}) order by name"
)


def psql(instance: int, sql: str, sep: str = " ") -> subprocess.CompletedProcess[str]:
    argv = [f"{PG_BIN}/psql", "-X", "-A", "-t", "-q", "-F", sep, *connection(instance), "-d", DATABASE, "-c", sql]
    return subprocess.run(argv, capture_output=True, text=True, timeout=PSQL_TIMEOUT_S)


def counters(instance: int) -> dict[str, int | float | str]:
    """The server's counters now; {"error": psql's words} when they cannot be read."""
    try:
        cp = psql(instance, COUNTERS_SQL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    return parse_counters(cp.stdout) if cp.returncode == 0 else {"error": (cp.stderr or cp.stdout)[-500:]}


def parse_counters(text: str) -> dict[str, int | float | str]:
    fields = text.split()
    out: dict[str, int | float | str] = {}
    if len(fields) == len(COUNTERS):
        for name, f in zip(COUNTERS, fields):
            if f.isdigit():
                out[name] = int(f)
            elif name in FLOAT_COUNTERS and _is_float(f):
                out[name] = float(f)
            else:
                break
        else:
            return out
    return {"error": f"unexpected counters from psql: {text[:200]!r}"}


def _is_float(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False


def facts(instance: int) -> JsonObject:
    """What the running server says of itself: its version, its block size, and the settings in force (those
    not at their built-in default, and STORED), each as `setting` with its unit (`8kB`, `30s`) and its
    source; {"error": psql's words} when they cannot be read."""
    try:
        cp = psql(instance, FACTS_SQL, SEP)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    if cp.returncode != 0:
        return {"error": (cp.stderr or cp.stdout)[-500:]}
    return parse_facts(cp.stdout)


def with_unit(setting: str, unit: str) -> str:
    """A pg_settings value with its unit, as postgres -c takes it: ("16384", "8kB") -> "131072kB"."""
    digits = len(unit) - len(unit.lstrip("0123456789"))
    if digits and setting.lstrip("-").isdigit():  # a unit of several base units: 8kB blocks, 16MB segments
        return f"{int(setting) * int(unit[:digits])}{unit[digits:]}"
    return setting + unit


def parse_facts(text: str) -> JsonObject:
    settings_: dict[str, str] = {}
    sources: dict[str, str] = {}
    for line in text.splitlines():
        f = line.split(SEP)
        if len(f) != 4:
            continue
        name, setting, unit, source = f
        settings_[name] = with_unit(setting, unit)
        sources[name] = source
    return in_force(settings_, sources, "server_version", ("block_bytes", "block_size"))


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
