#!/usr/bin/env python3
"""Overhead of strata's sysbench workload: MariaDB under sysbench through `strata run` natively against the same
server and sysbench by hand, on the same xfs on the same loop device, for oltp_read_write and
oltp_point_select. Run as root.

Fair by construction, the baseline chosen before any figure:
- the same steps: a fresh xfs, mariadb-install-db with strata's option file, mariadbd on 127.0.0.2, `sysbench
  SCRIPT prepare`, every dirty page written to the data files, the warm-up, then the measured `sysbench SCRIPT
  run --threads=C --time=RUNTIME`. strata's run also asks sysbench for its per-second reports and its latency
  histogram, and reads InnoDB's counters and settings around it: that is what strata costs, so the baseline
  leaves them out; oltp_point_select, at the most transactions a second, pays the most;
- the same cgroups: each side's server in a cgroup of its own at the root of every hierarchy (where strata's
  native runtime puts its instances, stack/hostprocs.py), each side's sysbench in this script's own (where
  strata runs its clients);
- `sync` and a drop of the page cache before each side;
- the sides in ABBA order (by hand first in even pairs, strata first in odd ones: the VM's drift over minutes
  falls on both), at least 10 pairs of each script.

The headline, per script: the geometric mean of the paired ratios strata / by hand with its 95% interval
(Student's t on the log ratios); target: the interval lies above 0.95. Prints each pair; exits 0 either way.
Usage: sudo .venv/bin/python bench/sysbench_overhead.py [--pairs 10] [--runtime 30] [--warmup 10] [--clients 8]
       [--tables 4] [--table-size 25000] [--scripts oltp_read_write,oltp_point_select] [--hand-only 8,2] [--tiny]
(--hand-only 8,2: the spread alone, only the side by hand at 8 and 2 clients alternated, --pairs fresh servers
each: the sd of log tps that a design's client count and number of pairs rest on)
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from abba import arguments, bounded, compare, own_cgroup, scripts_of, sh

from strata.workloads.server import loopback
from strata.workloads.sysbench import mariadb
from strata.workloads.sysbench.params import SysbenchParams

TARGET = 0.95
HAND = loopback.PORTS_PER_RUN - 1  # the by-hand server's place in this run's port block: never strata's server 0


def by_hand(mnt: Path, args: argparse.Namespace, script: str) -> float:
    """The server and sysbench as a careful user runs them: strata's settings and steps, without its reports."""
    params = _params(args, script)
    data = mnt / "by-hand"
    data.mkdir()
    sh("chown", "mysql:mysql", data)
    cnf, init = mnt.parent / "by-hand.cnf", mnt.parent / "by-hand.sql"
    cnf.write_text(mariadb.config(params, str(data), str(data), HAND))
    init.write_text(f"CREATE DATABASE {mariadb.DATABASE};\n")
    sh(mariadb.INSTALL_DB, f"--defaults-file={cnf}", "--auth-root-authentication-method=normal", "--skip-test-db",
       f"--extra-file={init}")  # fmt: skip
    with own_cgroup("sb", "hand") as dirs, open(mnt.parent / "by-hand.log", "w") as log:

        def join() -> None:
            for d in dirs:
                (d / "cgroup.procs").write_text(str(os.getpid()))

        argv = [mariadb.MARIADBD, f"--defaults-file={cnf}"]
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=join)
        try:
            _wait_port(loopback.port(HAND), server)
            base = ["sysbench", *mariadb.connection(HAND), f"--tables={args.tables}", f"--table-size={args.table_size}"]
            sh(*base, f"--threads={min(args.clients, args.tables)}", script, "prepare")
            flushed = mariadb.flush_dirty_pages(HAND, 600)
            if "error" in flushed:
                raise SystemExit(f"flushing the by-hand server's dirty pages failed: {flushed['error']}")
            run = [*base, f"--threads={args.clients}"]
            if args.warmup:
                sh(*run, f"--time={args.warmup}", script, "run")
            return tps_of(sh(*run, f"--time={args.runtime}", script, "run"))
        finally:
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=60)


def tps_of(out: str) -> float:
    """The transactions per second sysbench printed (a clear error, not a traceback, when it printed none)."""
    m = re.search(r"^\s+transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", out, re.M)
    if m is None:
        raise SystemExit(f"sysbench printed no `transactions:` line:\n{out[-2000:]}")
    return float(m.group(1))


def _wait_port(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server by hand exited {server.returncode}")
        try:
            with socket.create_connection((mariadb.ADDRESS, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server by hand did not answer within 120 s")


def _params(args: argparse.Namespace, script: str) -> SysbenchParams:
    return SysbenchParams(**_workload(args, script))


def _workload(args: argparse.Namespace, script: str) -> dict[str, Any]:
    return {"script": script, "tables": args.tables, "table_size": args.table_size, "clients": args.clients,
            "runtime": args.runtime, "warmup": args.warmup}  # fmt: skip


def main() -> int:
    ap = arguments(warmup=10, scripts="oltp_read_write,oltp_point_select")
    ap.add_argument("--tables", type=bounded(1, 10_000), default=4, help="1 to 10000")
    ap.add_argument("--table-size", type=bounded(1, 1_000_000_000), default=25_000, help="1 to 1000000000")
    args = ap.parse_args()
    small = {"pairs": 2, "runtime": 3, "warmup": 0, "table_size": 1000, "scripts": "oltp_point_select", "size": "2G"}
    scripts = scripts_of(args, **small)
    return compare(
        "sysbench",
        args,
        scripts,
        lambda mnt, script: by_hand(mnt, args, script),
        lambda script: _workload(args, script),
        TARGET,
        lambda clients: (
            f"sysbench {args.tables} tables x {args.table_size:,} rows, {clients} clients, "
            f"{args.warmup} s warm-up, {args.runtime} s runs"
        ),
    )


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench/sysbench_overhead.py: run as root")
    sys.exit(main())
