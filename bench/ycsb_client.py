#!/usr/bin/env python3
"""Is the YCSB client the bottleneck? (issue 8; not a timed test: run it by hand, as root)

Against one Cassandra node (native, 127.0.1.1, heap 1 GiB, data in a directory under
/var/tmp), after loading the records, for workloads A and D, interleaved over --rounds:
- one client process with T threads against two client processes with T/2 threads each (the
  same offered concurrency; the second process doubles only the client's own resources:
  JVM, driver, connections). If two processes get clearly more, one was the bottleneck;
- the client's CPU share of the machine during the measured window (first operation to the
  end of the run), beside the node's share and the whole machine's busy share, sampled from
  /proc every half second.

Prints the figures (medians over rounds) and the node's start time and memory.

    sudo .venv/bin/python bench/ycsb_client.py [--records 20000] [--runtime 30] [--rounds 3] [--threads 16] [--tiny]
(--tiny: one round of workload A, 5 s runs of 2 threads on 200 records, the node at its smallest heap, to check
that it runs)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import tiny

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from strata.stack.journal import Journal  # noqa: E402
from strata.workloads.ycsb import cassandra, client, jars, node, parse  # noqa: E402

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1


def proc_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime + stime


def host_busy_s() -> float:
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(v) - v[3] - v[4]) * TICK_S  # all but idle and iowait


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_clients(
    n_procs: int, threads: int, workload: str, args: argparse.Namespace, host: str, lib: Path, out: Path, node_pid: int
) -> dict[str, Any]:
    """n_procs clients at once; CPU shares over the window in which operations ran."""
    runs = [
        client.ClientRun(
            "run",
            client.workload_file(workload),
            (host,),
            out / f"c{i}",
            records=args.records,
            runtime_s=args.runtime,
            threads=threads,
            create_schema=False,
            keyspace=f"ycsb{workload}",
        )
        for i in range(n_procs)
    ]
    t0 = time.monotonic()
    procs = [client.start_client(r, lib) for r in runs]
    samples, first_op = [], None
    while not all(client.exited(p) for p in procs):
        samples.append((time.monotonic(), sum(proc_cpu_s(p.pid) for p in procs), proc_cpu_s(node_pid), host_busy_s()))
        if first_op is None and all(
            any(s.operations > 0 for s in parse.parse_status((r.out_dir / "stderr.txt").read_text(errors="replace")))
            for r in runs
        ):
            first_op = samples[-1][0]
        time.sleep(0.5)
    for p, r in zip(procs, runs):
        client.wait_client(p, r, t0, timeout_s=args.runtime + 600)
    end = t0 + args.runtime - 1.0  # maxexecutiontime counts from the client's start
    window = [s for s in samples if first_op is not None and first_op <= s[0] <= end]
    (a, b) = (window[0], window[-1]) if len(window) >= 2 else (samples[0], samples[-1])
    wall = (b[0] - a[0]) * CORES
    agg = parse.aggregate(
        [
            parse.ClientOutput(
                r.out_dir.joinpath("stdout.txt").read_text(),
                r.out_dir.joinpath("stderr.txt").read_text(),
                r.out_dir / "hdr",
            )
            for r in runs
        ]
    )
    return {
        "ops_s": agg["window_ops_s"] or 0.0,
        "client_cpu": (b[1] - a[1]) / wall,
        "node_cpu": (b[2] - a[2]) / wall,
        "host_busy": (b[3] - a[3]) / wall,
        "errors": agg["errors"],
        "p99_read_us": (agg["latency"].get("READ") or {}).get("p99_us"),
    }


def load(workload: str, args: argparse.Namespace, host: str, lib: Path, out: Path) -> None:
    client.run_client(
        client.ClientRun(
            "load",
            client.workload_file(workload),
            (host,),
            out,
            records=args.records,
            threads=8,
            keyspace=f"ycsb{workload}",
        ),
        lib,
        timeout_s=3600,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--runtime", type=int, default=30, help="seconds per client run (maxexecutiontime)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16, help="total client threads (the study's 16)")
    ap.add_argument("--workloads", default="ad")
    ap.add_argument("--memory", type=int, default=None, help="MiB the node's heap is sized for (default: 1 GiB heap)")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=5, records=200, threads=2, workloads="a", memory=1024)
    os.environ.setdefault("STRATA_STATE_DIR", "/var/tmp/strata-bench-ycsb-state")
    chome, yhome = jars.ensure_cassandra(), jars.ensure_ycsb()
    lib = yhome / "lib"
    work = Path(f"/var/tmp/strata-bench-ycsb-{uuid.uuid4().hex[:8]}")
    journal = Journal(f"bench-ycsb-{os.getpid()}")
    cfg = cassandra.cluster_configs(
        0,
        1,
        data_dir=lambda i: str(work / "data"),
        conf_dir=lambda i: str(work / "conf"),
        lib_dir=str(chome / "lib"),
        memory_limit_bytes=args.memory << 20 if args.memory else None,
    )[0]
    try:
        with (
            node.node_dir(journal, work),
            node.node_dir(journal, work / "data"),
            node.native_node(cfg, jars.jar_names(chome), journal, work / "node.log") as n,
        ):
            start_s = n.wait_ready()
            pid = n.pid
            assert pid is not None  # native_node yields the node it started
            print(
                f"node ready in {start_s:.1f} s; RSS {rss_mib(pid):.0f} MiB (heap "
                f"{cassandra.heap_bytes(cfg.memory_limit_bytes) >> 20} MiB); {CORES} cores"
            )
            for w in args.workloads:
                load(w, args, cfg.address, lib, work / f"load-{w}")
            rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for rnd in range(args.rounds):
                for w in args.workloads:
                    for label, procs in (("1 client", 1), ("2 clients", 2)):
                        r = run_clients(
                            procs, args.threads // procs, w, args, cfg.address, lib, work / f"r{rnd}-{w}-{procs}", pid
                        )
                        rows.setdefault((w, label), []).append(r)
                        print(
                            f"  round {rnd + 1} workload {w.upper()} {label} x {args.threads // procs} threads: "
                            f"{r['ops_s']:.0f} ops/s, client CPU {r['client_cpu']:.0%}, "
                            f"node CPU {r['node_cpu']:.0%}, machine busy {r['host_busy']:.0%}, "
                            f"errors {r['errors']}",
                            flush=True,
                        )
            print(f"node RSS after the runs: {rss_mib(pid):.0f} MiB")
    finally:
        journal.close()
    report(rows, args)
    return 0


def report(rows: dict[tuple[str, str], list[dict[str, Any]]], args: argparse.Namespace) -> None:
    med = statistics.median
    print(
        f"\nmedians over {args.rounds} rounds, {args.runtime} s runs, {args.records} records, "
        f"{args.threads} client threads in all:"
    )
    print(
        f"{'workload':8} {'clients':10} {'ops/s':>8} {'client CPU':>11} {'node CPU':>9} {'busy':>6} {'READ p99 us':>12}"
    )
    for (w, label), rs in rows.items():
        p99 = [r["p99_read_us"] for r in rs if r["p99_read_us"]]
        print(
            f"{w.upper():8} {label:10} {med([r['ops_s'] for r in rs]):8.0f} {med([r['client_cpu'] for r in rs]):11.0%} "
            f"{med([r['node_cpu'] for r in rs]):9.0%} {med([r['host_busy'] for r in rs]):6.0%} "
            f"{med(p99) if p99 else float('nan'):12.0f}"
        )
    for w in args.workloads:
        one, two = rows[(w, "1 client")], rows[(w, "2 clients")]
        ratios = [b["ops_s"] / a["ops_s"] for a, b in zip(one, two) if a["ops_s"]]
        if ratios:
            print(
                f"workload {w.upper()}: 2 clients / 1 client = {med(ratios):.2f} (median of paired rounds; "
                f"~1.0 means one client process is not the bottleneck)"
            )


if __name__ == "__main__":
    sys.exit(main())
