#!/usr/bin/env python3
"""One Cassandra node natively and in a container: start time, memory, YCSB A and D throughput.

Not a timed test: run it by hand, as root. The same node config (heap 1 GiB, no memory
limit), the same jars, the same client (native, 127.0.1.1): natively the JVM runs on the
host; in the container (`strata-cassandra` image, private dockerd with overlay2, `--network
host`) its data directory is a bind mount. Both data directories are under /var/tmp on the
root disk. For each: start, load --records for A and D, then --rounds of A and D runs of
--runtime seconds; prints the figures and the medians.

    sudo .venv/bin/python bench/ycsb_native_container.py [--records 5000] [--runtime 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from strata.stack.dockerd import docker, private_daemon  # noqa: E402
from strata.stack.journal import Journal  # noqa: E402
from strata.workloads.ycsb import cassandra, client, image, jars, node, parse  # noqa: E402


def memory_mib(n: node.Node) -> float:
    if n.container:
        out = docker(n.socket, "stats", "--no-stream", "--format", "{{.MemUsage}}", n.container).stdout
        used = out.split("/")[0].strip()
        scale = {"GiB": 1024, "MiB": 1, "KiB": 1 / 1024}
        return next(float(used[:-3]) * f for unit, f in scale.items() if used.endswith(unit))
    for line in Path(f"/proc/{n.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(n: node.Node, label: str, args, lib: Path, out: Path) -> dict:
    start_s = n.wait_ready()
    res = {"start_s": start_s, "mem_ready_mib": memory_mib(n)}
    host = n.cfg.address
    for w in args.workloads:
        client.run_client(client.ClientRun("load", client.workload_file(w), (host,), out / f"load-{w}",
                                           records=args.records, threads=8, keyspace=f"ycsb{w}"), lib, 3600)
    for rnd in range(args.rounds):
        for w in args.workloads:
            run = client.ClientRun("run", client.workload_file(w), (host,), out / f"r{rnd}-{w}", records=args.records,
                                   runtime_s=args.runtime, threads=args.threads, create_schema=False,
                                   keyspace=f"ycsb{w}")
            r = client.run_client(run, lib, args.runtime + 600)
            agg = parse.aggregate([parse.ClientOutput(r.stdout_path.read_text(), r.stderr_path.read_text(),
                                                      run.out_dir / "hdr")])
            res.setdefault(w, []).append(agg["window_ops_s"] or 0.0)
            print(f"  {label} round {rnd + 1} {w.upper()}: {agg['window_ops_s'] or 0:.0f} ops/s "
                  f"(YCSB overall {agg['throughput_ops_s']:.0f}), READ p99 "
                  f"{agg['latency'].get('READ', {}).get('p99_us')} us, errors {agg['errors']}", flush=True)
    res["mem_end_mib"] = memory_mib(n)
    print(f"{label}: ready in {start_s:.1f} s, memory {res['mem_ready_mib']:.0f} MiB when ready, "
          f"{res['mem_end_mib']:.0f} MiB after the runs", flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--workloads", default="ad")
    args = ap.parse_args()
    os.environ.setdefault("STRATA_STATE_DIR", "/var/tmp/strata-bench-ycsb-state")
    chome, yhome = jars.ensure_cassandra(), jars.ensure_ycsb()
    names, lib = jars.jar_names(chome), yhome / "lib"
    work = Path(f"/var/tmp/strata-bench-ycsb-{uuid.uuid4().hex[:8]}")
    journal = Journal(f"bench-ycsb-nc-{os.getpid()}")
    cfg = cassandra.cluster_configs(0, 1, data_dir=lambda i: str(work / "data"), conf_dir=lambda i: str(work / "conf"),
                                    lib_dir=str(chome / "lib"))[0]
    results = {}
    try:
        with node.node_dir(journal, work):
            with node.node_dir(journal, work / "data"), \
                    node.native_node(cfg, names, journal, work / "native.log") as n:
                results["native"] = measure(n, "native", args, lib, work / "native")
            with private_daemon("overlay2", work / "docker", journal, remove_data_root=True) as d, \
                    node.node_dir(journal, work / "data") as data, node.node_dir(journal, work / "log") as log:
                tag = image.ensure_image(d.sock, chome)
                with node.container_node(node.container_config(cfg), names, journal, d.sock, tag, data,
                                         work / "conf", log) as n:
                    results["container"] = measure(n, "container", args, lib, work / "container")
    finally:
        with contextlib.suppress(Exception):
            journal.close()
    print(f"\nmedians over {args.rounds} rounds of {args.runtime} s, {args.records} records, {args.threads} threads:")
    for label, r in results.items():
        figs = ", ".join(f"{w.upper()} {statistics.median(r[w]):.0f} ops/s" for w in args.workloads)
        print(f"{label:10} start {r['start_s']:5.1f} s, memory {r['mem_ready_mib']:.0f}/{r['mem_end_mib']:.0f} MiB "
              f"(ready/end), {figs}")
    if len(results) == 2:
        for w in args.workloads:
            ratio = statistics.median(results["container"][w]) / statistics.median(results["native"][w])
            print(f"workload {w.upper()}: container / native = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
