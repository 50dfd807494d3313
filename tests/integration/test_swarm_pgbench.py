"""PostgreSQL under pgbench across hosts, for real, through the server template: two test hosts
(hosts/testbed.py: network namespaces with a dockerd each, one Swarm), strata's agent on each (its image
holds PostgreSQL 15 for the clients), two PostgreSQL servers in containers placed one on host a and one on
host b, each host's pgbench on that host against its own server on its own 127.0.0.1; every host's
measured run starts at the barrier once its server is up and loaded, and the parts merge into one result:
tps summed, every transaction's latency in one histogram. Then nothing is left: Swarm services, agent
containers, servers, daemons, namespaces, mounts, loop devices.

A few minutes here with warm caches (the agent image with PostgreSQL, the server image).
"""

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from strata.hosts.testbed import swarm_bed
from strata.stack.journal import Journal
from tests.coverage import covers

from .helpers import leftovers, postgres_binary, results, strata, tool_version, write_spec

# 1800 s, not the default 600: the test hosts' bed is built first, then each trial builds a PostgreSQL server
# on every host and loads pgbench's tables before it warms up and is timed
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

HOSTS = ["a", "b"]


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    root = Path(f"/var/tmp/pgbench-swarm-it-{uuid.uuid4().hex[:6]}")
    journal = Journal("testbed", state)
    token = ""
    try:
        with swarm_bed(journal, HOSTS, root) as b:
            token = b.bridge.removeprefix("stb")
            yield b, {"STRATA_STATE_DIR": str(state)}
            assert b.manager.docker("service", "ls", "-q").stdout.strip() == "", "Swarm services left"
    finally:
        journal.close()
    links = {p.name for p in Path("/sys/class/net").iterdir()}
    ns = set(os.listdir("/run/netns")) if Path("/run/netns").is_dir() else set()
    assert not {n for n in ns | links if token and token in n}, "namespaces or veths of the test hosts were left"
    assert not root.exists()


def _postgres_in(netns: str) -> list[str]:
    cp = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    found = []
    for pid in cp.stdout.split():
        try:
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if exe in ("postgres", "pgbench"):
            found.append(f"{pid} {exe}")
    return found


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:docker/volume",
    "workload:pgbench",
    "workload:pgbench@hosts",
    "hosts:span",
)
def test_one_server_on_each_host_merges_into_one_result(bed, tmp_path):
    b, env = bed
    spec = {
        "name": "swarm-pgbench",
        "workdir": "/var/tmp/pgbench-swarm-unused",  # every host has its own workdir
        "devices": [{"type": "loop", "name": "loop", "size": "3GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["docker:overlay2"],
        "paths": ["volume"],
        "workloads": [{"pgbench": {"scale": 1, "clients": 2, "threads": 2, "runtime": 8}}],
        "loads": [{"name": "two", "containers": 2}],
        "placement": ["spread"],
        "hosts": b.spec_hosts(),
        "swarm": {"manager": f"unix://{b.manager.sock}", "lost_after_s": 30},
    }
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "spec.yaml", spec), "-o", out, env=env, timeout=1500)
    (r,) = results(out)
    assert r["status"] == "ok", r["flags"].get("failed")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    m, per = r["metrics"], r["metrics"]["hosts"]
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 1} and set(per) == set(HOSTS)
    assert m["tps"] == pytest.approx(sum(per[h]["tps"] for h in HOSTS)) and m["primary"]["unit"] == "tx/s"
    lat = m["write"]["lat_ns"]
    if not m["log"]["weighted"]:  # hosts that sampled their logs at different rates merge weighted (sampling.py)
        assert lat["n"] == sum(per[h]["write"]["lat_ns"]["n"] for h in HOSTS)  # one histogram of every transaction
    assert (
        min(per[h]["write"]["lat_ns"]["p99"] for h in HOSTS)
        <= lat["p99"]
        <= max(per[h]["write"]["lat_ns"]["p99"] for h in HOSTS)
    )
    # the checkpoints of both hosts' servers, the settings in force and the version of the image that ran them
    assert m["checkpoints"]["count"] == m["checkpoints"]["timed"] + m["checkpoints"]["requested"]
    major = tool_version(postgres_binary(), "--version").split(".")[0]  # this host's PostgreSQL, as its image's: 15
    assert m["server"]["version"].startswith(major + ".") and m["server"]["settings"]["fsync"] == "on"
    art = out / "trials" / r["trial_id"] / "hosts"
    for h in HOSTS:
        assert (art / h / "pgbench" / "clients.json").exists() and (art / h / "pgbench" / "run" / "server-0").is_dir()
        assert r["hosts"][h]["part"]["status"] == "ok"
    assert set(r["flags"]["sync"]["hosts"]) == set(HOSTS)
    for h in b.hosts:
        assert leftovers(h.workdir) == [] and _postgres_in(h.netns) == [], f"host {h.name}"
    each = ", ".join(f"{h} {per[h]['tps']:.0f}" for h in HOSTS)
    print(f"\npgbench across two hosts: {m['tps']:.0f} tx/s ({each})")
