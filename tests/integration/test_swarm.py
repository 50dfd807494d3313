"""Experiments across hosts on Docker Swarm, on test hosts made here (hosts/testbed.py): two network
namespaces on a bridge, a dockerd each, one Swarm. strata deploys its agent to both as Swarm services,
runs a trial spanning both hosts through `strata run`, survives an agent killed mid-trial (that trial
fails as host_lost naming the host, the next one runs), checks and cleans every host, and leaves
nothing behind: services, agent containers, daemons, namespaces, veths, the bridge, mounts, loop
devices."""

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from strata.hosts.testbed import swarm_bed
from strata.stack.journal import Journal
from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration

HOSTS = ["a", "b"]


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    root = Path(f"/var/tmp/strata-swarm-it-{uuid.uuid4().hex[:6]}")
    journal = Journal("testbed", state)
    token, run_dirs = "", []
    try:
        with swarm_bed(journal, HOSTS, root) as b:
            token = b.bridge.removeprefix("stb")
            run_dirs = [Path(h.sock).parent for h in b.hosts]
            assert len(_net(token)) == 1 + 2 * len(HOSTS)  # the bridge, and a namespace and a veth per host
            yield b, {"STRATA_STATE_DIR": str(state)}
            for h in b.hosts:
                assert _agents(h) == [], f"agent containers left on host {h.name}"
            assert b.manager.docker("service", "ls", "-q").stdout.strip() == "", "Swarm services left"
    finally:
        journal.close()
    assert _net(token) == set(), "namespaces, veths or the bridge of the test hosts were left behind"
    assert not root.exists()
    assert run_dirs and not any(d.exists() for d in run_dirs), "a test host's dockerd run dir was left"
    assert not [ln for ln in _processes() if any(str(d) in ln for d in run_dirs)], "a test host's dockerd still runs"


def _processes() -> list[str]:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()


def _net(token: str) -> set[str]:
    """This test bed's namespaces and links (other tests on the machine make their own)."""
    ns = set(os.listdir("/run/netns")) if Path("/run/netns").is_dir() else set()
    links = {p.name for p in Path("/sys/class/net").iterdir()}
    return {n for n in ns | links if token and token in n}


def _agents(h) -> list[str]:
    return h.docker("ps", "-a", "--filter", "label=strata.agent=1", "--format", "{{.Names}}").stdout.split()


def _spec(bed, tmp_path, **over) -> Path:
    spec = {
        "name": "swarm",
        "workdir": "/var/tmp/strata-swarm-unused",  # every host has its own workdir
        "devices": [{"type": "loop", "name": "loop", "size": "512MiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"fio": {"rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 4, "direct": True}}],
        "loads": [{"name": "two", "containers": 2}],
        "placement": ["spread"],
        "hosts": bed.spec_hosts(),
        # 15 s: beside a JVM on the other worker, 5 s of silence is not a lost host
        "swarm": {"manager": f"unix://{bed.manager.sock}", "lost_after_s": 15},
        **over,
    }
    return write_spec(tmp_path / "spec.yaml", spec)


def _clean(bed) -> None:
    for h in bed.hosts:
        assert leftovers(h.workdir) == [], f"host {h.name}"
        assert _agents(h) == []
    assert bed.manager.docker("service", "ls", "-q").stdout.strip() == ""


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
)
def test_a_trial_spanning_two_hosts(bed, tmp_path):
    b, env = bed
    out = tmp_path / "out"
    strata("run", _spec(b, tmp_path), "-o", out, env=env, check=0)
    (r,) = results(out)
    assert r["status"] == "ok"
    assert r["trial"]["placement"]["instances"] == {"a": 1, "b": 1}
    per_host = r["metrics"]["hosts"]
    assert set(per_host) == {"a", "b"} and all(per_host[h]["primary"]["value"] > 0 for h in HOSTS)
    total = sum(per_host[h]["primary"]["value"] for h in HOSTS)
    assert abs(r["metrics"]["primary"]["value"] - total) <= 0.02 * total  # the aggregate is the hosts' sum
    for h in HOSTS:
        entry = r["hosts"][h]
        assert entry["facts"]["kernel"] and entry["node"]["hostname"] == f"strata-{h}"
        assert "offset_s" in entry["clock"] and "kernel" in entry["clock"]
        assert (out / "trials" / r["trial_id"] / "hosts" / h / "command.json").exists()
    sync = r["flags"]["sync"]
    assert set(sync["hosts"]) == {"a", "b"} and sync["host_skew_s"] is not None
    assert r["flags"]["cache"]["suspect"] is False
    _clean(b)


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:span",
    "hosts:one",
    "fault:host_lost",
)
def test_an_agent_killed_mid_trial_is_host_lost_and_the_run_goes_on(bed, tmp_path):
    b, env = bed
    out = tmp_path / "out"
    fio = {"rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 30, "direct": True}
    # spread x two: one instance on each host; b x one: host b alone (the other two combinations are
    # impossible natively and skipped)
    loads = [{"name": "two", "containers": 2}, {"name": "one", "containers": 1}]
    spec = _spec(b, tmp_path, workloads=[{"fio": fio}], placement=["spread", "b"], loads=loads)
    proc = start_strata("run", spec, "-o", out, env=env)
    host_a = b.hosts[0]
    try:
        wait_for(lambda: _fio_running(host_a.workdir), 240, "fio on host a")
        (agent,) = [n for n in _agents(host_a) if not n.count(".")]
        t_kill = time.monotonic()
        host_a.docker("kill", agent)
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    lost = [r for r in results(out) if r["trial"]["placement"]["name"] == "spread"]
    assert len(lost) == 1 and lost[0]["status"] == "failed", output
    failed = lost[0]["flags"]["failed"]
    assert failed["category"] == "host_lost" and "host a" in failed["message"], failed
    print(f"\nthe run ended {time.monotonic() - t_kill:.0f} s after the agent was killed")
    assert proc.returncode == 1, output  # a failed trial: exit 1, and the run went on to its end
    (on_b,) = [r for r in results(out) if r["trial"]["placement"]["name"] == "b"]
    assert on_b["status"] == "ok", on_b.get("flags", {}).get("failed")
    # the restarted agent undid what the killed one left (its fio, mount, loop device)
    wait_for(lambda: leftovers(host_a.workdir) == [], 60, "host a's leftovers undone")
    _clean(b)


def _fio_running(workdir: Path) -> bool:
    cp = subprocess.run(["pgrep", "-af", "fio"], capture_output=True, text=True)
    return any(str(workdir) in line and "--time_based" in line for line in cp.stdout.splitlines())


@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_cleanup_after_kill_9_removes_the_services_and_what_the_agents_built(bed, tmp_path):
    b, env = bed
    fio = {"rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 60, "direct": True}
    proc = start_strata("run", _spec(b, tmp_path, workloads=[{"fio": fio}]), "-o", tmp_path / "out", env=env)
    try:
        wait_for(lambda: all(_fio_running(h.workdir) for h in b.hosts), 240, "fio on both hosts")
    finally:
        proc.kill()  # SIGKILL: strata undoes nothing itself
        proc.wait()
    assert b.manager.docker("service", "ls", "-q").stdout.strip() != ""  # the services outlived strata
    cp = strata("cleanup", env=env, check=0)
    assert "undid swarm-service" in cp.stdout
    # removing a service stops its launcher, which stops its agent, which tears its stacks down
    wait_for(lambda: all(leftovers(h.workdir) == [] for h in b.hosts), 120, "the agents' stacks torn down")
    _clean(b)


@covers("hosts:doctor-on-every-host", "hosts:cleanup-on-every-host")
def test_doctor_and_cleanup_on_every_host(bed, tmp_path):
    b, env = bed
    spec = _spec(b, tmp_path)
    cp = strata("doctor", "--quick", "--hosts", spec, env=env, check=0)
    for h in HOSTS:
        assert f"host {h}: node strata-{h}" in cp.stdout
    assert "clock" in cp.stdout and "filesystem xfs" in " ".join(cp.stdout.split())
    cp = strata("cleanup", "--hosts", spec, env=env, check=0)
    assert all(f"host {h}: " in cp.stdout for h in HOSTS)
    _clean(b)


def _tx_bytes(h) -> int:
    """Bytes sent by the test host's interfaces (in its namespace), apart from loopback."""
    out = subprocess.run(["ip", "-n", h.netns, "-j", "-s", "link"], capture_output=True, text=True, check=True).stdout
    return sum(ln["stats64"]["tx"]["bytes"] for ln in json.loads(out) if ln["ifname"] != "lo")


@covers(
    "device:remote",
    "device:remote:nbd",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:one",
    "hosts:storage-host",
)
def test_a_remote_device_served_by_another_host(bed, tmp_path):
    """Host b serves the store (nbdkit on its own address); host a attaches over the bridge (nbdfuse +
    loop), makes xfs and runs fio; the storage host's bytes are the cache check's lowest layer."""
    b, env = bed
    host_a, host_b = b.hosts
    out = tmp_path / "out"
    fio = {"rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 5, "direct": True}
    spec = _spec(
        b,
        tmp_path,
        devices=[{"type": "remote", "host": "b", "size": "512MiB"}],
        workloads=[{"fio": fio}],
        loads=[{"name": "one", "containers": 1}],
        placement=["a"],
    )
    sent_before = _tx_bytes(host_b)
    strata("run", spec, "-o", out, env=env, check=0)
    sent = _tx_bytes(host_b) - sent_before
    (r,) = results(out)
    assert r["status"] == "ok", r["flags"].get("failed")
    assert r["trial"]["device"]["host"] == "b" and set(r["metrics"]["hosts"]) == {"a"}
    storage = r["hosts"]["b"]
    assert storage["role"] == "storage" and storage["served_at"].startswith(f"{host_b.addr}:")
    facts = r["stack_facts"]["hosts"]["a"]["device"]
    assert facts["storage_host"] == "b" and facts["client"] == "fuse"
    read = r["flags"]["cache"]["evidence"]["read_workload_bytes"]
    assert read > 32 << 20 and storage["moved"]["nbdkit"]["read_bytes"] >= read / 2
    assert sent >= read, f"host b sent {sent} bytes for {read} bytes read: the reads did not cross the network"
    assert r["flags"]["cache"]["suspect"] is False and "b:nbdkit" in r["flags"]["cache"]["evidence"]["per_disk"]
    _clean(b)


@covers(
    "device:remote",
    "device:remote:nbd",
    "filesystem:xfs",
    "runtime:native",
    "path:native/bind",
    "workload:fio",
    "workload:fio@hosts",
    "hosts:one",
    "hosts:storage-host",
    "fault:host_lost",
)
def test_a_storage_host_lost_mid_trial_is_host_lost_and_the_run_goes_on(bed, tmp_path):
    b, env = bed
    host_a, host_b = b.hosts
    out = tmp_path / "out"
    fio = {"rw": "randread", "bs": "4k", "size": "64MiB", "runtime": 30, "direct": True}
    spec = _spec(
        b,
        tmp_path,
        devices=[{"type": "remote", "host": "b", "size": "512MiB"}],
        workloads=[{"fio": fio}],
        loads=[{"name": "one", "containers": 1}],
        placement=["a"],
        repetitions=2,
    )
    proc = start_strata("run", spec, "-o", out, env=env)
    try:
        wait_for(lambda: _fio_running(host_a.workdir), 240, "fio on host a")
        (agent,) = [n for n in _agents(host_b) if not n.count(".")]
        host_b.docker("kill", agent)
        output, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    first, second = sorted(results(out), key=lambda r: r["trial"]["repetition"])
    assert first["status"] == "failed", output
    failed = first["flags"]["failed"]
    assert failed["category"] == "host_lost" and "the storage host" in failed["message"], failed
    assert "strata-b" in failed["message"]
    # the run went on to its end: the next trial ran if b's agent was back in time, else it is host_lost too
    assert second["status"] == "ok" or second["flags"]["failed"]["category"] == "host_lost", second["flags"]
    assert proc.returncode == 1, output
    # --resume runs the failed trials again, with new agents (the first thing b's does is undo what the
    # killed one left: its nbdkit, backing file and run dir) and a new target on b
    strata("run", spec, "--resume", "-o", out, env=env, check=0)
    assert [r["status"] for r in results(out)] == ["ok", "ok"]
    _clean(b)
