#!/usr/bin/env python3
"""Overhead of strata's pgbench workload: PostgreSQL under pgbench through `strata run` natively against
the same pgbench by hand, on the same xfs on the same loop device. Run as root.

Both sides do the same before they measure: a fresh xfs, `initdb`, the server with the same settings on
127.0.0.1, `pgbench -i -s SCALE`, a CHECKPOINT. Then by hand is what a user types, `pgbench -n -c C -j J
-T RUNTIME`, and strata's run is the workload's, which also writes pgbench's per-second progress and a
log line per transaction (its latencies and series): that is part of what strata costs, so the
baseline leaves them out. The headline is strata's tps over pgbench's own by hand, target >= 0.97.

The sides alternate within each round, in turn first (this VM drifts by tens of percent over minutes):
the headline is the median of the per-round (paired) ratios; the ratio of the medians is printed
beside it. Prints the ratio; exits 0 either way.
Usage: sudo .venv/bin/python bench/pgbench_overhead.py [--rounds 5] [--runtime 20] [--scale 10] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tiny
import yaml

from strata.workloads.pgbench import postgres
from strata.workloads.pgbench.params import PgbenchParams

PG = postgres.PG_BIN


def sh(*argv: str) -> str:
    cp = subprocess.run(argv, capture_output=True, text=True)
    if cp.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} exited {cp.returncode}:\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}")
    return cp.stdout.strip()


def as_postgres(*argv: str | Path) -> list[str]:
    return postgres.as_postgres([str(a) for a in argv])


def by_hand(mnt: Path, args: argparse.Namespace, port: int) -> float:
    """The server and pgbench as a user runs them (the same settings as strata's server)."""
    data = mnt / "by-hand"
    data.mkdir()
    sh("chown", "postgres:postgres", str(data))
    sh(*as_postgres(f"{PG}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"))
    settings = postgres.settings(_params(args))
    opts = [x for k, v in {"port": port, **settings}.items() for x in ("-c", f"{k}={v}")]
    argv = as_postgres(f"{PG}/postgres", "-D", data, *opts)
    log = open(mnt.parent / "by-hand.log", "w")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_port(port, server)
        conn = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        sh(f"{PG}/pgbench", *conn, "-i", "-q", "-s", str(args.scale), "postgres")
        sh(f"{PG}/psql", "-X", "-q", *conn, "-d", "postgres", "-c", "checkpoint")
        out = sh(
            f"{PG}/pgbench", *conn, "-n", "-c", str(args.clients), "-j", str(args.threads), "-T", str(args.runtime),
            "-b", "tpcb-like", "postgres",
        )  # fmt: skip
        return tps_of(out)
    finally:
        server.send_signal(signal.SIGQUIT)
        server.wait(timeout=60)
        log.close()


def tps_of(out: str) -> float:
    """The transactions per second pgbench printed (a clear error, not a traceback, when it printed none)."""
    m = re.search(r"^tps = ([\d.]+)", out, re.M)
    if m is None:
        raise SystemExit(f"pgbench printed no `tps = ` line:\n{out[-2000:]}")
    return float(m.group(1))


def _wait_port(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server by hand exited {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server by hand did not answer within 120 s")


def _params(args: argparse.Namespace) -> PgbenchParams:
    return PgbenchParams(**_workload(args))


def _workload(args: argparse.Namespace) -> dict[str, Any]:
    return {"script": "tpcb-like", "scale": args.scale, "clients": args.clients, "threads": args.threads,
            "runtime": args.runtime}  # fmt: skip


def by_strata(dev: str, args: argparse.Namespace, work: Path, n: int) -> float:
    spec = {
        "name": f"pgbench-overhead-{n}",
        "workdir": str(work / "wd"),
        "devices": [{"type": "block", "path": dev, "destroy": True}],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"pgbench": _workload(args)}],
    }
    (work / f"s{n}.yaml").write_text(yaml.safe_dump(spec))
    out = work / f"r{n}"
    cp = subprocess.run(
        [sys.executable, "-m", "strata.cli.main", "run", str(work / f"s{n}.yaml"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if cp.returncode != 0:
        raise SystemExit(f"strata run failed ({cp.returncode}):\n{cp.stdout[-3000:]}\n{cp.stderr[-3000:]}")
    (p,) = (out / "trials").glob("*.json")
    r = json.loads(p.read_text())
    assert r["status"] == "ok", r["flags"]["failed"]
    tps: float = r["metrics"]["tps"]
    return tps


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", default="3G", help="the loop device's backing file (G or M)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=3, scale=1, size="2G")
    size_mib = int(args.size[:-1]) * (1024 if args.size.endswith("G") else 1)
    work = Path(tempfile.mkdtemp(prefix="strata-pgbench-overhead-", dir="/var/tmp"))
    work.chmod(0o755)  # the postgres user walks through it to its data directory
    img = work / "dev.img"
    sh("dd", "if=/dev/zero", f"of={img}", "bs=1M", f"count={size_mib}", "oflag=direct", "status=none")
    dev = sh("losetup", "--find", "--show", "--direct-io=on", str(img))
    mnt = work / "mnt"
    mnt.mkdir()
    port = postgres.port(postgres.PORTS_PER_RUN - 1)  # the last of this run's block: never strata's server 0
    hand, strata = [], []
    try:
        for i in range(args.rounds):
            for side in ("hand", "strata") if i % 2 == 0 else ("strata", "hand"):
                if side == "hand":
                    sh("mkfs.xfs", "-f", "-q", "-K", dev)
                    sh("mount", dev, str(mnt))
                    try:
                        hand.append(by_hand(mnt, args, port))
                    finally:
                        sh("umount", str(mnt))
                else:
                    strata.append(by_strata(dev, args, work, i))
            print(f"round {i + 1}: by hand {hand[-1]:.0f} tx/s, strata native {strata[-1]:.0f} tx/s", flush=True)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["losetup", "-d", dev])
        subprocess.run(["rm", "-rf", str(work)])
    m = statistics.median
    ratio = m([a / b for a, b in zip(strata, hand)])
    print(
        f"strata / by hand: {ratio:.3f} median of {args.rounds} paired ratios (target >= 0.97); "
        f"ratio of medians {m(strata) / m(hand):.3f} ({m(strata):.0f} / {m(hand):.0f} tx/s)"
    )
    print(
        f"pgbench tpcb-like, scale {args.scale}, {args.clients} clients x {args.threads} threads, {args.runtime} s, "
        f"{args.rounds} alternated rounds, xfs on a loop device with direct I/O"
    )
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench/pgbench_overhead.py: run as root")
    sys.exit(main())
