#!/usr/bin/env python3
"""Overhead of strata's pgbench workload: PostgreSQL under pgbench through `strata run` natively against the same
server and pgbench by hand, on the same xfs on the same loop device, for tpcb-like and select-only. Run as root.

Fair by construction (issue 43), the baseline chosen before any figure:
- the same steps: a fresh xfs, `initdb`, the server with strata's settings on 127.0.0.1, `pgbench -i -s SCALE`,
  a CHECKPOINT that writes the data set and a second that starts the checkpoints' clock, the warm-up (with
  pgbench's VACUUM), then the measured `pgbench -n -M simple -c C -j J -T RUNTIME`. strata's run also writes
  pgbench's per-second progress and a line per transaction (its latencies and series): that is what strata
  costs, so the baseline leaves them out; select-only, at the most transactions a second, pays the most;
- the same cgroups: each side's server in a cgroup of its own at the root of every hierarchy (where strata's
  native runtime puts its instances, stack/hostprocs.py), each side's pgbench in this script's own (where
  strata runs its clients);
- `sync` and a drop of the page cache before each side (strata drops it again before its trial);
- the sides in ABBA order (by hand first in even pairs, strata first in odd ones: the VM's drift over minutes
  falls on both), at least 10 pairs of each script.

The headline, per script: the geometric mean of the paired ratios strata / by hand with its 95% interval
(Student's t on the log ratios); target: the interval lies above 0.95. Prints each pair; exits 0 either way.
Usage: sudo .venv/bin/python bench/pgbench_overhead.py [--pairs 10] [--runtime 30] [--warmup 15] [--scale 10]
       [--scripts tpcb-like,select-only] [--hand-only 8,2] [--tiny]
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

from strata.workloads.pgbench import postgres
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.pgbench.plugin import init_options
from strata.workloads.server import loopback

PG = postgres.PG_BIN
TARGET = 0.95


def as_postgres(*argv: str | Path) -> list[str]:
    return postgres.as_postgres([str(a) for a in argv])


def by_hand(mnt: Path, args: argparse.Namespace, script: str, port: int) -> float:
    """The server and pgbench as a careful user runs them: strata's settings and steps, without its logs."""
    params = _params(args, script)
    data = mnt / "by-hand"
    data.mkdir()
    sh("chown", "postgres:postgres", str(data))
    sh(*as_postgres(f"{PG}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"))
    opts = [x for k, v in {"port": port, **postgres.settings(params)}.items() for x in ("-c", f"{k}={v}")]
    argv = as_postgres(f"{PG}/postgres", "-D", data, *opts)
    logged = mnt.parent / "by-hand.log"
    with own_cgroup("pg", "hand") as dirs, open(logged, "w") as log:

        def join() -> None:
            for d in dirs:
                (d / "cgroup.procs").write_text(str(os.getpid()))

        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=join)
        try:
            _wait_ready(port, server, logged)
            conn = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
            sh(f"{PG}/pgbench", *conn, *init_options(params), "postgres")
            for _ in range(2):  # the data set to the device, then the checkpoints' clock (as strata does)
                sh(f"{PG}/psql", "-X", "-q", *conn, "-d", "postgres", "-c", "checkpoint")
            run = ["-c", str(args.clients), "-j", str(params.effective_threads), "-M", "simple", "-b", script]
            if args.warmup:
                sh(f"{PG}/pgbench", *conn, *run, "-T", str(args.warmup), "postgres")  # with its VACUUM
            vacuumed = ["-n"] if args.warmup else []  # pgbench's VACUUM ran before the warm-up, else before the run
            out = sh(f"{PG}/pgbench", *conn, *vacuumed, *run, "-T", str(args.runtime), "postgres")
            return tps_of(out)
        finally:
            server.send_signal(signal.SIGQUIT)
            server.wait(timeout=60)


def tps_of(out: str) -> float:
    """The transactions per second pgbench printed (a clear error, not a traceback, when it printed none)."""
    m = re.search(r"^tps = ([\d.]+)", out, re.M)
    if m is None:
        raise SystemExit(f"pgbench printed no `tps = ` line:\n{out[-2000:]}")
    return float(m.group(1))


def _wait_ready(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    """Until the server's log says it accepts connections and its port answers (as strata waits for it)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server by hand exited {server.returncode}:\n{log.read_text()[-2000:]}")
        if postgres.READY_LINE in log.read_text(errors="replace"):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                pass
        time.sleep(0.2)
    raise SystemExit("the server by hand did not answer within 120 s")


def _params(args: argparse.Namespace, script: str) -> PgbenchParams:
    return PgbenchParams(**_workload(args, script))


def _workload(args: argparse.Namespace, script: str) -> dict[str, Any]:
    return {"script": script, "scale": args.scale, "clients": args.clients, "threads": args.threads,
            "runtime": args.runtime, "warmup": args.warmup}  # fmt: skip


def main() -> int:
    ap = arguments(warmup=15, scripts="tpcb-like,select-only")
    ap.add_argument("--scale", type=bounded(1, 100_000), default=10, help="1 to 100000")
    ap.add_argument("--threads", type=bounded(1, 1000), default=2, help="1 to 1000")
    args = ap.parse_args()
    scripts = scripts_of(args, pairs=1, runtime=3, warmup=0, scale=1, size="2G")
    port = loopback.port(loopback.PORTS_PER_RUN - 1)  # the last of this run's block: never strata's server 0
    return compare(
        "pgbench",
        args,
        scripts,
        lambda mnt, script: by_hand(mnt, args, script, port),
        lambda script: _workload(args, script),
        TARGET,
        lambda clients: (
            f"pgbench scale {args.scale}, {clients} clients x {args.threads} threads, {args.warmup} s "
            f"warm-up, {args.runtime} s runs"
        ),
    )


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench/pgbench_overhead.py: run as root")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped bench still removes its device and files
    sys.exit(main())
