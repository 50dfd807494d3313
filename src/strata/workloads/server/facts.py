"""`Server`: what a server workload's server is, declared once in its server module (pgbench's postgres.py,
sysbench's mariadb.py, ycsb's cassandra.py) and read by the template and the lifecycle.

The names its messages and files use, the packages a host needs for its clients and native servers, the user
those servers run as, its log on a path of its own and its settings map: facts of the server, not of the tool
that drives it, so they sit beside its start script and its counters.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.workloads.server.script import LOG_NAME
from strata.workloads.server.settings import Rules


@dataclass(frozen=True)
class Log:
    """A server's log that may go on a path of its own (logpath.py): the parameters' key that names the path
    (`key`: pgbench's `wal_path`) and the log in messages (`what`: "WAL")."""

    key: str
    what: str


@dataclass(frozen=True)
class Server:
    """A server workload's server: `what` names one in messages ("PostgreSQL server"; `noun`, in the log tails of
    a failure: "--- server 0"), `log_name` is its log in its out dir, `packages` what a host needs to run its
    clients and its native servers (a host agent's image), `user` the user its native servers run as (root: none
    of their own), `log` its log's own path (None: always with the data), `settings` its settings map's rules
    (None: it has none), `ports_per_run` whether its servers on a host each take a port of the run's block
    (loopback.py: the block's size; None: they do not)."""

    what: str
    packages: tuple[str, ...] = ()
    user: str = "root"
    log: Log | None = None
    settings: Rules | None = None
    ports_per_run: int | None = None
    log_name: str = LOG_NAME
    noun: str = "server"
