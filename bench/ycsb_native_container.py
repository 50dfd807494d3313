#!/usr/bin/env python3
"""One Cassandra node natively and in a container: start time, memory, YCSB A and D throughput.

Not a timed test: run it by hand, as root. The same node config (heap 1 GiB, no memory
limit), the same jars, the same client (native): natively the JVM runs on the host
(127.0.1.1); in the container (`strata-cassandra` image, private dockerd with overlay2,
`--network host`, 127.0.2.1) its data directory is a bind mount. Both data directories are
under /var/tmp on the root disk. Both nodes run at once; each is loaded and warmed up, then
--rounds of A and D runs of --runtime seconds alternate between them (the machine is shared:
interleaving spreads its drift over both); prints the figures and the medians.

    sudo .venv/bin/python bench/ycsb_native_container.py [--records 5000] [--runtime 20] [--rounds 3] [--tiny]
(--tiny: one round of workload A, 5 s runs after a 2 s warm-up, 2 threads, 200 records, both nodes at their
smallest heap under a 1 GiB memory limit, to check that it runs)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

import tiny

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import cassandra_container as cc  # noqa: E402

from strata.stack.journal import Journal  # noqa: E402
from strata.stack.runtimes.docker.client import docker  # noqa: E402
from strata.stack.runtimes.docker.daemon import private_daemon  # noqa: E402
from strata.workloads.ycsb import cassandra, client, jars, node, parse  # noqa: E402


def memory_mib(n: node.Node) -> float:
    if isinstance(n, cc.ContainerNode):
        out = docker(n.socket, "stats", "--no-stream", "--format", "{{.MemUsage}}", n.container).stdout
        used = out.split("/")[0].strip()
        scale = {"GiB": 1024, "MiB": 1, "KiB": 1 / 1024}
        return next(float(used[:-3]) * f for unit, f in scale.items() if used.endswith(unit))
    for line in Path(f"/proc/{n.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_once(n: node.Node, w: str, args: argparse.Namespace, lib: Path, out: Path, runtime_s: int) -> parse.Aggregate:
    run = client.ClientRun(
        "run",
        client.workload_file(w),
        (n.cfg.address,),
        out,
        records=args.records,
        runtime_s=runtime_s,
        threads=args.threads,
        create_schema=False,
        keyspace=f"ycsb{w}",
    )
    r = client.run_client(run, lib, runtime_s + 600)
    return parse.aggregate(
        [parse.ClientOutput(r.stdout_path.read_text(), r.stderr_path.read_text(), run.out_dir / "hdr")]
    )


def prepare(n: node.Node, label: str, args: argparse.Namespace, lib: Path, out: Path) -> dict[str, Any]:
    """Loaded and warmed up (a run of each workload that is not measured)."""
    res = {"mem_ready_mib": memory_mib(n)}
    for w in args.workloads:
        client.run_client(
            client.ClientRun(
                "load",
                client.workload_file(w),
                (n.cfg.address,),
                out / f"load-{w}",
                records=args.records,
                threads=8,
                keyspace=f"ycsb{w}",
            ),
            lib,
            3600,
        )
        run_once(n, w, args, lib, out / f"warmup-{w}", args.warmup)
    print(f"{label}: memory {res['mem_ready_mib']:.0f} MiB when ready", flush=True)
    return res


def _same(path: Path) -> Callable[[int], str]:
    """One folder for every node of a one-node cluster (cluster_configs asks per node index)."""
    return lambda i: str(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--workloads", default="ad")
    ap.add_argument("--memory", type=int, default=None, help="MiB: each node's memory limit, its heap sized for it")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=5, warmup=2, records=200, threads=2, workloads="a", memory=1024)
    os.environ.setdefault("STRATA_STATE_DIR", "/var/tmp/strata-bench-ycsb-state")
    chome, yhome = jars.ensure_cassandra(), jars.ensure_ycsb()
    names, lib = jars.jar_names(chome), yhome / "lib"
    work = Path(f"/var/tmp/strata-bench-ycsb-{uuid.uuid4().hex[:8]}")
    journal = Journal(f"bench-ycsb-nc-{os.getpid()}")
    cfgs = [
        cassandra.cluster_configs(
            c,
            1,
            data_dir=_same(work / f"data{c}"),
            conf_dir=_same(work / f"conf{c}"),
            lib_dir=str(chome / "lib"),
            memory_limit_bytes=args.memory << 20 if args.memory else None,
        )[0]
        for c in (0, 1)
    ]
    res: dict[str, Any] = {}
    try:
        with (
            node.node_dir(journal, work),
            node.node_dir(journal, work / "data0"),
            node.node_dir(journal, work / "data1") as data1,
            node.node_dir(journal, work / "log") as log,
            private_daemon("overlay2", work / "docker", journal, remove_data_root=True) as d,
        ):
            tag = cc.ensure_image(d.sock, chome)
            with contextlib.ExitStack() as stack:
                # one after the other, each started on a quiet machine, ready before the next
                native = stack.enter_context(node.native_node(cfgs[0], names, journal, work / "native.log"))
                native_ready_s = native.wait_ready()
                cont = stack.enter_context(
                    cc.container_node(
                        cc.container_config(cfgs[1]), names, journal, d.sock, tag, data1, work / "conf1", log
                    )
                )
                cont_ready_s = cont.wait_ready()
                nodes = {"native": native, "container": cont}
                for label, n in nodes.items():
                    res[label] = prepare(n, label, args, lib, work / label)
                res["native"]["start_s"], res["container"]["start_s"] = native_ready_s, cont_ready_s
                for rnd in range(args.rounds):  # interleaved, so that the machine's drift hits both
                    for w in args.workloads:
                        for label, n in nodes.items():
                            agg = run_once(n, w, args, lib, work / label / f"r{rnd}-{w}", args.runtime)
                            res[label].setdefault(w, []).append(agg["window_ops_s"] or 0.0)
                            print(
                                f"  round {rnd + 1} {w.upper()} {label:9}: {agg['window_ops_s'] or 0:.0f} ops/s, "
                                f"READ p99 {agg['latency'].get('READ', {}).get('p99_us')} us, "
                                f"errors {agg['errors']}",
                                flush=True,
                            )
                for label, n in nodes.items():
                    res[label]["mem_end_mib"] = memory_mib(n)
                    text = n.read_log()
                    print(
                        f"{label} log: {text.count('GCInspector')} long-GC lines, "
                        f"{sum(ln.startswith('WARN') for ln in text.splitlines())} WARN lines"
                    )
    finally:
        with contextlib.suppress(Exception):
            journal.close()
    report(res, args)
    return 0


def report(res: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"\nmedians over {args.rounds} interleaved rounds of {args.runtime} s after a {args.warmup} s warm-up, "
        f"{args.records} records, {args.threads} threads:"
    )
    for label, r in res.items():
        figs = ", ".join(f"{w.upper()} {statistics.median(r[w]):.0f} ops/s" for w in args.workloads if w in r)
        print(
            f"{label:10} start {r['start_s']:5.1f} s, memory {r['mem_ready_mib']:.0f}/{r.get('mem_end_mib', 0):.0f} "
            f"MiB (ready/end), {figs}"
        )
    for w in args.workloads:
        pairs = [c / n for n, c in zip(res["native"].get(w, []), res["container"].get(w, [])) if n]
        if pairs:
            print(
                f"workload {w.upper()}: container / native = {statistics.median(pairs):.2f} (median of paired rounds)"
            )


if __name__ == "__main__":
    sys.exit(main())
