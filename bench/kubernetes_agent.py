"""What strata's agent on a node costs the pod it measures: fio in a pod on node 2 of a test bed of several nodes,
while strata's collectors read the node through the agent once a second, against the same pod with the agent
idle, in paired rounds (ABBA: the sampled side first in even rounds).

The bed (`strata testbed kubernetes up --nodes 2 --registry`) is the bench's own. strata's agent is placed on node 2
as a run places it (runtimes/kubernetes/remote.py), and fio's image is pushed to the bed's registry and pulled by
the node. The sampled side reads, through the API server's pod proxy, what a trial's collectors read each second:
the node's /proc/diskstats, /proc/stat and /proc/meminfo, and four cgroup counters (the hierarchies' own: a read
of a pod's costs the same). Each side is one fio
pod (random reads of 4 KiB, libaio at QD16, direct I/O) on an emptyDir, which is node 2's own disk; its IOPS are
fio's own JSON's. Prints each round and the geometric mean of the paired ratios sampled / idle with its 95%
interval (target >= 0.97).

    python3 bench/kubernetes_agent.py [--rounds 10] [--runtime 15] [--tiny]     (root)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import tiny
from abba import paired
from kubebed import bed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from strata.core.instances import ImageSpec  # noqa: E402
from strata.core.jsondoc import obj  # noqa: E402
from strata.stack.journal import Journal  # noqa: E402
from strata.stack.kube import registry  # noqa: E402
from strata.stack.kube.api import Api  # noqa: E402
from strata.stack.runtimes.docker.image import build_image_tarball, image_tag  # noqa: E402
from strata.stack.runtimes.kubernetes import agent, remote  # noqa: E402
from strata.stack.runtimes.kubernetes.cluster import Cluster, namespace  # noqa: E402
from strata.stack.runtimes.kubernetes.params import KubernetesParams  # noqa: E402

MAX_ROUNDS = 100


def fio_pod(name: str, ns: str, node: str, image: str, runtime: int, size: str) -> dict[str, object]:
    job = (f"fio --name=agent --directory=/data --rw=randread --bs=4k --size={size} --ioengine=libaio --iodepth=16 "
           f"--direct=1 --runtime={runtime} --time_based --ramp_time=2 --output-format=json")  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [
                {
                    "name": "fio",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", f"cat /proc/self/cgroup >/dev/null; {job}"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],  # fmt: skip
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def sample(client: agent.AgentClient, stop: threading.Event, cgroups: list[str]) -> int:
    """Read what the collectors read, once a second, until `stop`; the readings made."""
    n = 0
    while not stop.wait(1.0):
        for path in ["/proc/diskstats", "/proc/stat", "/proc/meminfo", *cgroups]:
            with contextlib.suppress(OSError):
                client.read(path)
                n += 1
    return n


def one(api: Api, ns: str, node: str, image: str, client: agent.AgentClient | None, args: argparse.Namespace) -> float:
    """One fio pod to its end; its IOPS (fio's JSON), the agent sampling the node meanwhile when `client` is given."""
    name = f"fio-{uuid.uuid4().hex[:6]}"
    api.post(f"/api/v1/namespaces/{ns}/pods", fio_pod(name, ns, node, image, args.runtime, args.size))
    path = f"/api/v1/namespaces/{ns}/pods/{name}"
    stop, readings = threading.Event(), [0]
    sampler = None
    if client is not None:
        counters = (
            "cpu,cpuacct/cpuacct.usage",
            "memory/memory.usage_in_bytes",
            "blkio/blkio.throttle.io_service_bytes",
            "pids/pids.current",
        )
        cgroups = [f"/sys/fs/cgroup/{c}" for c in counters]
        sampler = threading.Thread(target=lambda: readings.__setitem__(0, sample(client, stop, cgroups)), daemon=True)
        sampler.start()
    deadline = time.monotonic() + args.runtime + 600
    while obj(api.get(path), "status").get("phase") not in ("Succeeded", "Failed"):
        if time.monotonic() > deadline:
            raise SystemExit(f"pod {name} did not end")
        time.sleep(1)
    stop.set()
    if sampler is not None:
        sampler.join(10)
    log = api.text(f"{path}/log")
    api.delete(path + "?gracePeriodSeconds=0")
    iops: float = json.loads(log[log.index("{") :])["jobs"][0]["read"]["iops"]
    if client is not None and readings[0] == 0:
        raise SystemExit("the sampled side made no reading through the agent")
    return iops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--runtime", type=int, default=15)
    ap.add_argument("--size", default="256m", help="fio's file, as fio writes sizes")
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, rounds=1, runtime=2, size="16m")
    if not 1 <= args.rounds <= MAX_ROUNDS or not 1 <= args.runtime <= 3600:
        raise SystemExit(f"--rounds from 1 to {MAX_ROUNDS}, --runtime from 1 to 3600 s")
    with tempfile.TemporaryDirectory(prefix="strata-bench-agent-") as d, bed(Path(d) / "bed") as facts:
        os.environ["STRATA_STATE_DIR"] = str(Path(d) / "state")
        reg = facts["registry"]
        assert isinstance(reg, dict)
        root = Path(str(facts["root"]))
        pki = root / "pki"
        api = Api(str(facts["server"]), str(pki / "ca.crt"), str(pki / "admin.crt"), str(pki / "admin.key"))
        cluster = Cluster(api, str(root / "admin.kubeconfig"), None, own=False)
        nodes = facts["nodes"]
        assert isinstance(nodes, list)
        node = str(nodes[1]["name"])  # node 2
        params = KubernetesParams(kubeconfig=str(root / "admin.kubeconfig"), images=str(reg["prefix"]),
                                  registry_ca=str(reg["ca"]))  # fmt: skip
        fio = ImageSpec("fio", packages=("fio",))
        image = registry.reference(str(reg["prefix"]), image_tag(fio))
        registry.push(build_image_tarball(fio), image, str(reg["ca"]))
        publish = remote.publisher(params)
        journal = Journal(f"bench-agent-{os.getpid()}")
        try:
            with (
                namespace(cluster, f"strata-bench-{uuid.uuid4().hex[:6]}", journal) as ns,
                remote.placed_agent(cluster, journal, ns, node, params, publish(agent.image())) as rem,
            ):
                one(api, ns, node, image, None, args)  # pulls the image and warms the node: not counted
                ratios = []
                for i in range(args.rounds):
                    got: dict[str, float] = {}
                    for side in ("sampled", "idle") if i % 2 == 0 else ("idle", "sampled"):
                        got[side] = one(api, ns, node, image, rem.agent if side == "sampled" else None, args)
                    ratios.append(got["sampled"] / got["idle"])
                    print(f"round {i + 1}: sampled {got['sampled']:,.0f} IOPS, idle {got['idle']:,.0f} IOPS, "
                          f"ratio {ratios[-1]:.3f}", flush=True)  # fmt: skip
        finally:
            journal.close()
    mean, low, high = paired(ratios)
    interval = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "(no interval: one round)"
    print(f"agent sampling / idle, geometric mean of paired ratios: {mean:.3f} {interval} over {len(ratios)} rounds "
          "(target >= 0.97)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
