"""A MariaDB 10.11 server as strata runs it: its address and port, its settings, its start script, its
readiness, and what is read from it (its counters, its settings in force, its version).

The binaries are Debian 12's `mariadb-server` (mariadbd, mariadb-install-db), on the host for native servers
and in the image strata builds for containers and pods (`image_spec`); the clients (sysbench, and the
`mariadb` client strata's own queries go through) run on the host.

- Address: 127.0.0.2, port 16384 + 64 X + k for server k of this run (X: `STRATA_LOOPBACK`): the loopback
  block of the run (PostgreSQL's servers take the same ports on 127.0.0.1), below Linux's ephemeral range.
  Its Unix socket is `mariadbd.sock` in its data directory (mariadbd works there, so the path stays short).
- Settings in one option file, `<out>/my.cnf` (`[mariadbd]`), read by mariadb-install-db and mariadbd alike
  (an InnoDB page size, say, must be the same for both): the address, the data directory and the redo log's
  (`innodb_log_group_home_dir`: the data directory, or the redo log's path of its own), the spec's InnoDB
  settings, its `settings` map, and `max_connections` for the clients and strata's own sessions.
- mariadb-install-db makes the data directory as the `mysql` user (Debian's package creates it; mariadbd
  drops root for it, `user=mysql`), a root account that 127.0.0.1 reaches without a password (nothing but
  the loopback reaches the server) and the `sbtest` database (`--extra-file`). Natively, the script first
  checks that the mysql user can reach the data directory, and says which directory stops it.
- Stop: SIGKILL (the data is thrown away; no shutdown waited for).
- Ready: its log says `ready for connections` and its port answers.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time

from strata.core.instances import ImageSpec
from strata.core.jsondoc import JsonObject
from strata.workloads.server import lifecycle
from strata.workloads.server.facts import Log, Server
from strata.workloads.server.loopback import PORTS_PER_RUN, port
from strata.workloads.server.script import server_script, write_files
from strata.workloads.server.settings import Catalog, Known, Rules, in_force
from strata.workloads.sysbench.params import NOTATION, SysbenchParams

PACKAGES = ("mariadb-server",)
HOST_PACKAGES = ("mariadb-server", "mariadb-client", "sysbench")
MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"
CLIENT = "/usr/bin/mariadb"
ADDRESS = "127.0.0.2"
USER = "mysql"
DATABASE = "sbtest"
LOG_NAME = "mariadbd.log"
CONFIG = "my.cnf"
READY_LINE = "ready for connections"
EXTRA_CONNECTIONS = 10  # besides the clients: the load's, strata's own queries
CLIENT_TIMEOUT_S = 120
FLUSH_IO_CAPACITY = 100_000  # pages a second InnoDB may flush while strata empties its buffer pool of dirty pages
# A line mariadbd, mariadb-install-db or the script write when they fail, and those that only follow the cause.
ERROR_LINE = re.compile(r"\[ERROR\]|\bERROR\b|error:|Permission denied|No space left|cannot reach", re.I)
CONSEQUENCE = re.compile(
    r"\] Aborting$|Unknown/unsupported storage engine|Plugin '\w+' registration as a STORAGE ENGINE failed"
)

# What strata sets itself, refused in the settings map with the key that sets it.
MANAGED = {
    "port": "strata gives each server a port of the run's loopback block",
    "bind_address": f"strata's servers listen on {ADDRESS} only",
    "socket": "strata puts the socket in the data directory",
    "datadir": "strata puts the data directory on the path under test",
    "user": f"strata runs the server as the {USER} user",
    "innodb_log_group_home_dir": "set `redo_log` (a path of its own), or leave the redo log with the data",
    "skip_networking": "the clients reach the server over the loopback",
    "log_error": "strata keeps the server's log in the trial's artifacts",
    "max_connections": "strata sets it from `clients`",
    **{k: f"set it with the workload's own key `{k}`" for k in SysbenchParams().innodb()},
}


def config(params: SysbenchParams, data_dir: str, redo_dir: str, instance: int) -> str:
    """The server's option file."""
    lines = [
        "[mariadbd]",
        f"user={USER}",
        f"datadir={data_dir}",
        f"innodb_log_group_home_dir={redo_dir}",
        f"bind_address={ADDRESS}",
        f"port={port(instance)}",
        "socket=mariadbd.sock",
        "skip_name_resolve",
        f"max_connections={params.clients + EXTRA_CONNECTIONS}",
        *(f"{k}={v}" for k, v in params.innodb().items()),
        *(f"{k}={v}" for k, v in params.settings.items()),
    ]
    return "\n".join(lines) + "\n"


def server_script_of(
    params: SysbenchParams, data_dir: str, redo_dir: str, out_dir: str, sync_dir: str, instance: int
) -> str:
    """The instance's script (for `sh -c`): the data directory (and the redo log's) on the path under test,
    mariadb-install-db, then mariadbd."""
    q = shlex.quote
    cnf, init, install_log = f"{out_dir}/{CONFIG}", f"{out_dir}/init.sql", f"{q(out_dir)}/install-db.log"
    dirs = " ".join(q(d) for d in dict.fromkeys((data_dir, redo_dir)))
    as_user = f"setpriv --reuid={USER} --regid={USER} --init-groups"
    reach, enter = f"{as_user} test -w", f"{as_user} test -x"
    install = [INSTALL_DB, f"--defaults-file={cnf}", "--auth-root-authentication-method=normal", "--skip-test-db"]
    setup = [
        *write_files({cnf: config(params, data_dir, redo_dir, instance), init: f"CREATE DATABASE {DATABASE};\n"}),
        f"mkdir -p {dirs}",
        f"chown {USER}:{USER} {dirs} && chmod 700 {dirs}",
        f"for d in {dirs}; do",
        f'  if ! {reach} "$d"; then',
        f'    stop=""; p="$d"; while [ "$p" != / ]; do p=$(dirname "$p"); {enter} "$p" || stop="$p"; done',
        f'    echo "error: the {USER} user cannot reach $d: it cannot enter ${{stop:-a directory above it}}; let'
        f' {USER} through (chmod o+x), or put the workdir where every user may enter" >&2',
        "    exit 1",
        "  fi",
        "done",
        f"if ! {shlex.join(install)} --extra-file={q(init)} >{install_log} 2>&1; then",
        '  echo "mariadb-install-db failed; its output ends:" >&2',
        f"  tail -c 3000 {install_log} >&2",
        "  exit 1",
        "fi",
    ]
    command = shlex.join([MARIADBD, f"--defaults-file={cnf}"])
    return server_script(
        setup=setup, command=command, out_dir=out_dir, sync_dir=sync_dir, what="MariaDB server", log_name=LOG_NAME
    )


def answers(log_text: str, instance: int) -> bool:
    """Ready: its log says so, and its port accepts a connection."""
    return lifecycle.listening(log_text, READY_LINE, ADDRESS, port(instance))


def first_error(text: str) -> str | None:
    """The first line of the server's log (or its setup's words) that says what failed: mariadbd writes the cause
    first and its consequences after it (`Aborting`)."""
    for line in text.splitlines():
        if ERROR_LINE.search(line) and not CONSEQUENCE.search(line):
            return line.strip()[:300]
    return None


def connection(instance: int) -> list[str]:
    """The options that reach server `instance` (sysbench's)."""
    return [
        "--db-driver=mysql",
        f"--mysql-host={ADDRESS}",
        f"--mysql-port={port(instance)}",
        "--mysql-user=root",
        f"--mysql-db={DATABASE}",
    ]


def query(instance: int, sql: str) -> subprocess.CompletedProcess[str]:
    argv = [CLIENT, "--no-defaults", "--protocol=tcp", "-h", ADDRESS, "-P", str(port(instance)), "-u", "root"]
    return subprocess.run([*argv, "-N", "-B", "-e", sql], capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)


def _table(instance: int, sql: str) -> list[list[str]] | str:
    """A query's rows, each its columns (the client's batch output escapes a tab within a value); the client's
    words when it failed."""
    try:
        cp = query(instance, sql)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if cp.returncode != 0:
        return (cp.stderr or cp.stdout)[-500:] or f"the mariadb client exited with {cp.returncode}"
    return [line.split("\t") for line in cp.stdout.splitlines()]


def _rows(instance: int, sql: str) -> dict[str, str] | str:
    """A query's two-column rows as {first: second}; the client's words when it failed."""
    table = _table(instance, sql)
    return table if isinstance(table, str) else {r[0]: r[1] for r in table if len(r) == 2}


# What the measured run made the server do (SHOW GLOBAL STATUS): the bytes and pages InnoDB read from its
# files (Innodb_data_read is every byte; Innodb_buffer_pool_reads the pages its buffer pool did not hold), the
# redo log it wrote, the data pages and doublewrite pages it wrote, its fsyncs; and the data set's size.
STATUS = (
    "Innodb_data_read",
    "Innodb_data_reads",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_read_requests",
    "Innodb_os_log_written",
    "Innodb_log_writes",
    "Innodb_data_written",
    "Innodb_pages_written",
    "Innodb_dblwr_pages_written",
    "Innodb_data_fsyncs",
)
COUNTERS = (*(s.lower() for s in STATUS), "data_set_bytes", "page_bytes")
COUNTERS_SQL = (
    "SHOW GLOBAL STATUS WHERE Variable_name IN ({}); "
    "SELECT 'data_set_bytes', COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
    f"WHERE table_schema = '{DATABASE}'; SELECT 'page_bytes', @@innodb_page_size"
).format(", ".join(f"'{s}'" for s in STATUS))


def counters(instance: int) -> dict[str, int | str]:
    """The server's counters now; {"error": the client's words} when they cannot be read."""
    rows = _rows(instance, COUNTERS_SQL)
    if isinstance(rows, str):
        return {"error": rows}
    return parse_counters(rows)


def parse_counters(rows: dict[str, str]) -> dict[str, int | str]:
    low = {k.lower(): v.strip() for k, v in rows.items()}
    missing = [k for k in COUNTERS if not low.get(k, "").isdigit()]
    if missing:
        return {"error": f"the server did not give {', '.join(missing)}"}
    return {k: int(low[k]) for k in COUNTERS}


# The settings the server had in force: every one not at its compiled-in value, and these always.
ALWAYS = (
    "innodb_page_size",
    "innodb_buffer_pool_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_log_file_size",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
    "innodb_use_native_aio",
    "innodb_log_file_buffering",
    "innodb_data_file_buffering",
    "innodb_flush_neighbors",
    "log_bin",
    "sync_binlog",
    "version",
)
FACTS_SQL = (
    "SELECT LOWER(variable_name), IFNULL(global_value, ''), global_value_origin "
    "FROM information_schema.system_variables WHERE global_value_origin <> 'COMPILE-TIME' "
    f"OR LOWER(variable_name) IN ({', '.join(repr(s) for s in ALWAYS)})"
)


def facts(instance: int) -> JsonObject:
    """What the running server says of itself: its version and its settings in force, each with where its
    value came from (COMMAND-LINE: strata's option file; COMPILE-TIME: its default; AUTO: sized by itself)."""
    table = _table(instance, FACTS_SQL)
    if isinstance(table, str):
        return {"error": table}
    rows = sorted(r for r in table if len(r) == 3)
    values = {name: value for name, value, _ in rows}
    sources = {name: source for name, _, source in rows}
    return in_force(values, sources, "version", ("page_bytes", "innodb_page_size"))


def flush_dirty_pages(instance: int, timeout_s: float) -> JsonObject:
    """Write every dirty page of the buffer pool to the data files (after the load, outside the measured run):
    InnoDB flushes until none is dirty once its share of dirty pages may be 0, at an I/O capacity raised for
    it; its own settings are restored after. How many were dirty, how long it took, or the client's words."""
    before = _rows(
        instance,
        "SELECT 'cap', @@innodb_io_capacity; SELECT 'max', @@innodb_io_capacity_max; "
        "SELECT 'pct', @@innodb_max_dirty_pages_pct",
    )
    if isinstance(before, str):
        return {"error": before}
    high = max(FLUSH_IO_CAPACITY, int(before.get("max", "0") or 0))
    said = _rows(
        instance,
        f"SET GLOBAL innodb_io_capacity_max = {high}; SET GLOBAL innodb_io_capacity = {high}; "
        "SET GLOBAL innodb_max_dirty_pages_pct = 0",
    )
    t0, dirty, first = time.monotonic(), -1, None
    try:
        while time.monotonic() - t0 < timeout_s:
            rows = _rows(instance, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
            if isinstance(rows, str):
                return {"error": rows}
            dirty = int(rows.get("Innodb_buffer_pool_pages_dirty", "-1") or -1)
            first = dirty if first is None else first
            if dirty == 0:
                break
            time.sleep(0.25)
    finally:
        restored = _rows(
            instance,
            f"SET GLOBAL innodb_max_dirty_pages_pct = {before.get('pct', '90')}; "
            f"SET GLOBAL innodb_io_capacity = {before.get('cap', '200')}; "
            f"SET GLOBAL innodb_io_capacity_max = {before.get('max', '2000')}",
        )
    for failed in (said, restored):
        if isinstance(failed, str):
            return {"error": failed}
    return {"dirty_pages": first, "left": dirty, "seconds": round(time.monotonic() - t0, 2)}


def catalog() -> Catalog | None:
    """Every setting the host's mariadbd knows (`mariadbd --verbose --help`: its options with their kind, `=#`
    a number, none a boolean, `=name` a word), or None when it cannot be read."""
    try:
        cp = subprocess.run(
            [MARIADBD, "--no-defaults", "--verbose", "--help"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    known = parse_catalog(cp.stdout)
    if not known:
        return None
    return Catalog(f"`mariadbd --verbose --help` (MariaDB {version() or '10.11'})", known)


OPTION = re.compile(r"^  --([A-Za-z0-9_-]+)(\[=#\]|=#|\[=name\]|=name)?(\s|$)")
KINDS = {"=#": "int", "[=#]": "int", "=name": "string", "[=name]": "enum", None: "bool"}


# What the template reads of the server (facts.py); the settings' catalog is read when it is called, so that a
# test's stand-in for it holds.
RULES = Rules(lambda: catalog(), MANAGED, NOTATION)
SERVER = Server("MariaDB server", HOST_PACKAGES, USER, Log("redo_log", "redo log"), RULES, PORTS_PER_RUN, LOG_NAME)


def parse_catalog(text: str) -> dict[str, Known]:
    known: dict[str, Known] = {}
    for line in text.splitlines():
        if m := OPTION.match(line):
            name = m.group(1).replace("-", "_").lower()
            known[name] = Known(name, KINDS[m.group(2)])
    return known


def version() -> str | None:
    try:
        out = subprocess.run([MARIADBD, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Ver (\S+)", out)
    return m.group(1) if m else None


def image_spec() -> ImageSpec:
    """The server's image: Debian's MariaDB 10.11 (the clients run on the host)."""
    return ImageSpec("mariadb", packages=PACKAGES)
