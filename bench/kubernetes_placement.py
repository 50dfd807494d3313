"""Study 003 section 6.3's placement on Kubernetes: the same 8 fio pods on one node against 4 + 4 on two nodes.

The bed (`strata testbed kubernetes up --nodes 2 --registry`) is the bench's own; its two nodes are the
experiment's hosts (`hosts: {a: {kubernetes: strata.io/bed-node=1}, b: ...}`), and one `strata run` places
the load's 8 pods all on node 1 (`{a: 8}`) and spread over both (`spread`: 4 + 4), in `--repetitions` rounds
whose order strata draws at random. Each pod: fio random reads of 4 KiB, libaio at QD16, direct I/O, on an
emptyDir, which is its node's own disk. Printed: each trial's IOPS (fio's own JSON, summed over the pods)
with each node's share and its sync overlap, then the geometric mean of the paired ratios spread / one node
(paired by round) with its 95% interval.

On one VM both nodes' disks are loop devices over files of one file system on one virtual disk, and their
kubelets and pods share its two cores: the ratio shows what spreading costs or gains here (a second kubelet,
a second loop device, the barrier across nodes), not what a second machine gives.

    python3 bench/kubernetes_placement.py [--repetitions 5] [--runtime 15] [--tiny]     (root)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import tiny
import yaml
from abba import paired
from kubebed import bed, strata_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from strata.core.jsondoc import num, obj  # noqa: E402
from strata.results.store import load_results  # noqa: E402

MAX_REPETITIONS = 50
PODS = 8


def spec(facts: dict[str, Any], workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    runtime = {
        "type": "kubernetes",
        "kubeconfig": str(Path(facts["root"]) / "admin.kubeconfig"),
        "images": facts["registry"]["prefix"],
        "registry_ca": facts["registry"]["ca"],
    }
    fio = {"rw": "randread", "bs": "4k", "size": args.size, "runtime": args.runtime, "ramp_time": 2,
           "ioengine": "libaio", "direct": 1}  # fmt: skip
    return {
        "name": "kubernetes-placement",
        "workdir": str(workdir),
        "devices": [
            {"type": "loop", "size": "2GiB"}
        ],  # the plan's room for the pods' files (each node's disk holds them)
        "filesystems": ["xfs"],
        "runtimes": [runtime],
        "paths": ["emptydir"],
        "workloads": [{"fio": fio}],
        "loads": [{"name": f"{PODS}pods", "numjobs": 1, "iodepth": 16, "containers": PODS}],
        "hosts": {"a": {"kubernetes": "strata.io/bed-node=1"}, "b": {"kubernetes": "strata.io/bed-node=2"}},
        "placement": [{"a": PODS}, "spread"],
        "repetitions": args.repetitions,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=5, help=f"rounds, 1 to {MAX_REPETITIONS}")
    ap.add_argument("--runtime", type=int, default=15, help="seconds of each trial's measured I/O, 2 to 600")
    ap.add_argument("--size", default="128MiB", help="each pod's file")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, repetitions=1, runtime=3, size="16MiB")
    if not 1 <= args.repetitions <= MAX_REPETITIONS or not 2 <= args.runtime <= 600:
        raise SystemExit(f"--repetitions 1 to {MAX_REPETITIONS}, --runtime 2 to 600 seconds")
    with tempfile.TemporaryDirectory(prefix="strata-bench-kplace-") as tmp:
        root = Path(tmp)
        state = root / "state"
        workdir = Path(f"/var/tmp/strata-bench-kplace-{uuid.uuid4().hex[:8]}")
        with bed(state, "3GiB") as facts:
            (root / "s.yaml").write_text(yaml.safe_dump(spec(facts, workdir, args)))
            run_env = {"STRATA_STATE_DIR": str(root / "run")}
            strata_cli("run", str(root / "s.yaml"), "-o", str(root / "out"), env=run_env)
            results = load_results(root / "out")
        with contextlib.suppress(OSError):
            workdir.rmdir()
    by: dict[tuple[int, str], float] = {}
    for r in sorted(results, key=lambda r: (r.repetition, r.layers.placement.name)):
        where = r.layers.placement.name
        if r.status != "ok":
            print(f"round {r.repetition + 1}: {where}: {r.status} {r.flags.failed}", flush=True)
            continue
        iops = num(obj(r.metrics, "read"), "iops") or 0.0
        per = obj(r.metrics, "hosts")
        shares = ", ".join(f"{h} {num(obj(obj(per, h), 'read'), 'iops') or 0.0:,.0f}" for h in per)
        sync = r.flags.sync
        overlap = sync.extra.get("overlap") if sync else None
        print(f"round {r.repetition + 1}: {where}: {iops:,.0f} IOPS (nodes: {shares}), overlap {overlap}", flush=True)
        by[(r.repetition, where)] = iops
    ratios = [by[(n, "spread")] / by[(n, f"a{PODS}")] for n in range(args.repetitions)
              if (n, "spread") in by and (n, f"a{PODS}") in by]  # fmt: skip
    if not ratios:
        raise SystemExit("no round measured both placements")
    mean, low, high = paired(ratios)
    interval = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "(one pair: no interval)"
    print(
        f"4 + 4 on two nodes / 8 on one, geometric mean of paired ratios: {mean:.3f} {interval} over "
        f"{len(ratios)} rounds",
        flush=True,
    )


if __name__ == "__main__":
    main()
