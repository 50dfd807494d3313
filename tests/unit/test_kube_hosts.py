"""Kubernetes nodes as the experiment's hosts (issue 57): the spec, the nodes resolved, each part pinned to its
node, a local agent per node stopped and undone, and a node whose kubelet stopped renewing its Lease."""

import copy
import os
import signal
import subprocess
import sys
import time

import pytest

from strata.core.errors import SpecErrors, StrataError
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.hosts import kubenodes
from strata.hosts.executor import HostAgent, part_trial_of
from strata.stack.kube.api import ApiError
from strata.stack.runtimes.kubernetes import lease as lease_mod
from strata.stack.runtimes.kubernetes.lease import NodeLease

RUNTIME = {"type": "kubernetes", "kubeconfig": "/nonexistent/admin.kubeconfig", "images": "192.0.2.1:5000/strata"}
SPEC = {
    "name": "k",
    "workdir": "/var/tmp/strata-k",
    "devices": [{"type": "loop", "size": "512MiB"}],
    "filesystems": ["xfs"],
    "runtimes": [RUNTIME],
    "paths": ["emptydir"],
    "workloads": [{"fio": {"rw": "randread", "size": "64MiB", "runtime": 5}}],
    "loads": [{"name": "eight", "numjobs": 1, "iodepth": 1, "containers": 8}],
    "hosts": {"a": {"kubernetes": "n2"}, "b": {"kubernetes": "role=storage"}},
    "placement": ["spread", {"a": 8}, {"a": 4, "b": 4}],
}


def _errors(mutate):
    spec = copy.deepcopy(SPEC)
    mutate(spec)
    with pytest.raises(SpecErrors) as e:
        parse_spec(spec)
    return str(e.value)


def test_kubernetes_nodes_as_hosts_place_as_swarm_hosts_do():
    exp, wls = parse_spec(copy.deepcopy(SPEC))
    assert kubenodes.is_kubernetes(exp) and exp.hosts["b"].selector == "kubernetes:role=storage"
    trials, _ = expand(exp, wls)
    placed = {t.placement.name: dict(t.placement.instances) for t in trials}
    assert placed == {"spread": {"a": 4, "b": 4}, "a8": {"a": 8}, "a4+b4": {"a": 4, "b": 4}}
    # the nodes are part of each trial's identity: results of other nodes never pass for these
    assert dict(trials[0].placement.nodes) == {"a": "kubernetes:n2", "b": "kubernetes:role=storage"}


@pytest.mark.parametrize(
    "mutate, said",
    [
        (lambda s: s["runtimes"].append("native"), "runtime native does not run on the Kubernetes nodes"),
        (lambda s: s["runtimes"][0].pop("kubeconfig"), "does not run on the Kubernetes nodes"),
        (lambda s: s["runtimes"][0].update(node="n2"), "the hosts name the nodes"),
        (lambda s: s["hosts"].update(c="swarm-node"), "Swarm nodes and Kubernetes nodes in one experiment"),
        (lambda s: s["hosts"].update(c={"kubernetes": "n2"}), "hosts a and c name one node, n2"),
        (lambda s: s["hosts"]["a"].update(docker="unix:///x"), "a Kubernetes node is reached through its API"),
        (lambda s: s["hosts"]["a"].update(node="x"), "exactly one of `node:` or `label:`"),
        (lambda s: s["hosts"]["a"].update(kubernetes="no spaces"), "a node's name or a label selector"),
    ],
)
def test_kubernetes_hosts_that_cannot_be_are_spec_errors(mutate, said):
    assert said in _errors(mutate)


def test_each_part_runs_its_pods_on_its_own_node():
    exp, wls = parse_spec(copy.deepcopy(SPEC))
    (t,) = [t for t in expand(exp, wls)[0] if t.placement.name == "spread"]
    node = HostAgent("b", {"hostname": "n3", "address": "192.0.2.20", "kubernetes": True}, None, "id")
    part = part_trial_of(t, node, t.workload, t.load.model_copy(update={"containers": 4}))
    assert part.runtime.node == "n3" and part.load.containers == 4 and part.placement is None
    assert t.runtime.node is None  # the trial's own runtime is left as the spec has it
    swarm = HostAgent("b", {"hostname": "node-b", "address": "192.0.2.20"}, None, "id")
    assert part_trial_of(t, swarm, t.workload, t.load).runtime.node is None


class FakeApi:
    def __init__(self, nodes):
        self.nodes = nodes

    def get(self, path):
        if path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            if name not in self.nodes:
                raise ApiError(404, "not found")
            return self.nodes[name]
        selector = path.partition("labelSelector=")[2]
        key, _, value = selector.partition("=")
        return {"items": [n for n in self.nodes.values() if not key or n["metadata"]["labels"].get(key) == value]}


def _node(name, address, labels=None, ready=True):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
        },
    }


def _resolve(monkeypatch, nodes, hosts):
    from strata.stack.runtimes.kubernetes import cluster

    monkeypatch.setattr(cluster, "connect", lambda *a, **k: cluster.Cluster(FakeApi(nodes), "k", None, False))
    spec = copy.deepcopy(SPEC)
    spec["hosts"], spec["placement"] = hosts, ["spread"]
    spec["loads"][0]["containers"] = len(hosts)
    return kubenodes.resolve_nodes(parse_spec(spec)[0])


def test_each_host_resolves_to_a_ready_node_by_name_or_label(monkeypatch):
    nodes = {"n2": _node("n2", "192.0.2.18"), "n3": _node("n3", "192.0.2.19", {"role": "storage"})}
    found = _resolve(monkeypatch, nodes, {"a": {"kubernetes": "n2"}, "b": {"kubernetes": "role=storage"}})
    assert found == {
        "a": {"hostname": "n2", "address": "192.0.2.18", "kubernetes": True},
        "b": {"hostname": "n3", "address": "192.0.2.19", "kubernetes": True},
    }


def test_a_node_that_is_missing_not_ready_or_named_twice_is_an_error(monkeypatch):
    nodes = {"n2": _node("n2", "192.0.2.18", {"role": "x"}), "n3": _node("n3", "192.0.2.19", ready=False)}
    with pytest.raises(StrataError, match="host b: the cluster has no node n9"):
        _resolve(monkeypatch, nodes, {"a": {"kubernetes": "n2"}, "b": {"kubernetes": "n9"}})
    with pytest.raises(StrataError, match="host b: node n3 cannot take the run's pods: not Ready"):
        _resolve(monkeypatch, nodes, {"a": {"kubernetes": "n2"}, "b": {"kubernetes": "n3"}})
    with pytest.raises(StrataError, match="two hosts of the experiment are one node: n2"):
        _resolve(monkeypatch, nodes, {"a": {"kubernetes": "n2"}, "b": {"kubernetes": "role=x"}})


def _fake_agent(state, ignore_term=False):
    """A process whose command line names the agent's module and its state dir, as a local agent's does."""
    body = "import signal, time\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
    body += "time.sleep(120)\n"
    return subprocess.Popen([sys.executable, "-c", body, kubenodes.AGENT_MODULE, str(state)])


@pytest.mark.parametrize("ignore_term", [False, True])
def test_a_local_agent_is_stopped_then_killed_and_its_directories_removed(tmp_path, monkeypatch, ignore_term):
    monkeypatch.setattr(kubenodes, "STOP_S", 1.0)
    state, work = tmp_path / "state", tmp_path / "work"
    (state / "agent" / "journal").mkdir(parents=True)
    work.mkdir()
    other = _fake_agent(tmp_path / "another")  # another run's agent: never touched
    proc = _fake_agent(state, ignore_term)
    try:
        time.sleep(0.3 if ignore_term else 0)  # the handler in place
        kubenodes._undo_agent({"state": str(state), "workdir": str(work), "host": "a"})
        assert proc.wait(5) == (-signal.SIGKILL if ignore_term else -signal.SIGTERM)
        assert not state.exists() and not work.exists()
        assert other.poll() is None
    finally:
        for p in (proc, other):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()


def test_a_lease_that_stops_changing_is_a_node_lost(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(lease_mod.time, "monotonic", lambda: now[0])
    renewed = ["2026-12-07T10:00:00.000000Z"]
    seen = []

    def get(path):
        seen.append(path)
        return {"spec": {"renewTime": renewed[0]}}

    lease = NodeLease(get, "n2", lost_after_s=30)
    assert lease.lost() is None and seen == ["/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2"]
    now[0] += 1  # read at most every CHECK_S
    assert lease.lost() is None and len(seen) == 1
    for _ in range(4):  # renewed every 10 s: never lost, however long the trial
        now[0] += 10
        renewed[0] = f"2026-12-07T10:00:{int(now[0]) % 60:02d}.000000Z"
        assert lease.lost() is None
    now[0] += 25
    assert lease.lost() is None  # 25 s without a renewal: within the bound
    now[0] += 10
    why = lease.lost()
    assert why is not None and why.startswith("node n2: its kubelet has not renewed its Lease for 35 s")


@pytest.mark.parametrize("status", [403, 404])
def test_a_lease_strata_may_not_read_is_not_judged(monkeypatch, status):
    now = [0.0]
    monkeypatch.setattr(lease_mod.time, "monotonic", lambda: now[0])

    def get(path):
        raise ApiError(status, "no")

    lease = NodeLease(get, "n2", lost_after_s=15)
    for _ in range(10):
        now[0] += 60
        assert lease.lost() is None


def test_a_lease_unwatched_between_trials_is_judged_from_the_next_read(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(lease_mod.time, "monotonic", lambda: now[0])
    lease = NodeLease(lambda path: {"spec": {"renewTime": "t0"}}, "n2", lost_after_s=30)
    assert lease.lost() is None
    now[0] += 300  # no trial watched it meanwhile: not 300 s without a renewal
    assert lease.lost() is None
    for _ in range(16):  # watched again, and never renewed
        now[0] += 2
        why = lease.lost()
    assert why is not None and "for 32 s" in why


def test_the_session_ends_a_trial_on_a_lost_node_as_host_lost():
    from types import SimpleNamespace

    from strata.stack.runtimes.kubernetes.session import KubernetesSession

    lost = SimpleNamespace(lost=lambda: "node n2: its kubelet has not renewed its Lease for 31 s")
    assert KubernetesSession.watch(SimpleNamespace(watch_bed=None, lease=lost, agent_pod=None)) == (
        "host_lost",
        "node n2: its kubelet has not renewed its Lease for 31 s",
    )
    alive = SimpleNamespace(lost=lambda: None)
    assert KubernetesSession.watch(SimpleNamespace(watch_bed=None, lease=alive, agent_pod=None)) is None


def test_strata_s_agent_pod_ended_on_a_node_is_that_node_lost_at_once(monkeypatch):
    """strata reaches a node only through its agent's pod there (restartPolicy Never): killed, deleted or evicted,
    the node is lost to strata, whatever its kubelet's Lease says; the session ends the trial as host_lost."""
    from pathlib import Path
    from types import SimpleNamespace

    from strata.stack.runtimes.kubernetes.lease import AgentPod
    from strata.stack.runtimes.kubernetes.session import KubernetesSession

    now = [0.0]
    monkeypatch.setattr(lease_mod.time, "monotonic", lambda: now[0])
    path = "/api/v1/namespaces/strata-r1/pods/strata-agent-n2"
    pod = {"metadata": {}, "status": {"phase": "Running"}}
    reads = []

    def get(p):
        reads.append(p)
        if pod is None:
            raise ApiError(404, "not found")
        return pod

    watch = AgentPod(get, path, "n2")
    assert watch.lost() is None
    now[0] += 0.5
    assert watch.lost() is None and len(reads) == 1  # read at most every CHECK_S
    killed = {"terminated": {"exitCode": 137, "reason": "Error"}}
    pod = {"metadata": {}, "status": {"phase": "Failed", "containerStatuses": [{"state": killed}]}}
    now[0] += 3
    why = watch.lost()
    assert why == (
        "node n2: strata's agent there (pod strata-agent-n2) ended (Error 137): strata reaches the node only through it"
    )
    alive = SimpleNamespace(lost=lambda: None)
    assert KubernetesSession.watch(SimpleNamespace(watch_bed=None, lease=alive, agent_pod=watch)) == ("host_lost", why)
    # the trial fails so, and its runtime is built again for the next trial: a new session places a new agent
    from strata.core.errors import TrialFailure
    from strata.core.params import Limits
    from strata.stack.runtimes.kubernetes.running import KubeRunning

    for gone, layer in ((True, "runtime"), (False, None)):
        session = SimpleNamespace(watch=lambda: ("host_lost", why), agent_gone=gone)
        with pytest.raises(TrialFailure) as e:
            KubeRunning(session, Path("/nonexistent"), Limits()).check()
        assert (e.value.category, str(e.value), e.value.layer) == ("host_lost", why, layer)
    pod = None
    deleted = AgentPod(get, path, "n2")
    assert deleted.lost() == "node n2: strata's agent there (pod strata-agent-n2) was deleted"
    deleting = AgentPod(lambda p: {"metadata": {"deletionTimestamp": "t"}, "status": {"phase": "Running"}}, path, "n2")
    assert "(pod strata-agent-n2) ended (being deleted)" in deleting.lost()

    def refused(p):
        raise ApiError(403, "forbidden")

    assert AgentPod(refused, path, "n2").lost() is None  # not judged


@pytest.mark.parametrize("command", ["doctor", "cleanup"])
def test_doctor_and_cleanup_on_every_host_say_what_to_run_instead_for_kubernetes_nodes(command):
    from strata.hosts import fleet

    exp, _ = parse_spec(copy.deepcopy(SPEC))
    call = (lambda: fleet.doctor(exp, False)) if command == "doctor" else (lambda: fleet.cleanup(exp))
    with pytest.raises(StrataError, match="hosts are Kubernetes nodes") as e:
        call()
    assert "`strata cleanup` undoes what a run left on the nodes" in e.value.fix


def test_an_agents_directory_with_a_mount_still_under_it_is_kept(tmp_path):
    """Its journal failed to undo a mount: removing the directory would delete what the mounted file system
    holds. It is left, and said, for `strata cleanup` to undo first."""
    work = tmp_path / "kube-a"
    (work / "mnt").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(work / "mnt")], check=True)
    try:
        (work / "mnt" / "data").write_text("kept")
        with pytest.raises(RuntimeError, match="is still mounted under"):
            kubenodes._remove(work)
        assert (work / "mnt" / "data").read_text() == "kept"
    finally:
        subprocess.run(["umount", str(work / "mnt")], check=True)
    kubenodes._remove(work)
    assert not work.exists()


def test_a_servers_lifecycle_files_on_a_node_reached_through_its_agent_are_written_and_read_there(tmp_path):
    """A Cassandra node's turn to start and its stop reach the pod's sync dir on its node, and its log is read there
    while it runs (the pods' files are on the node, not on strata's machine); strata's own copy stays beside."""
    import tarfile
    from types import SimpleNamespace

    from strata.core.instances import FilesElsewhere, InstanceRequest
    from strata.core.params import Limits
    from strata.stack.runtimes.kubernetes.agent import AgentError
    from strata.stack.runtimes.kubernetes.running import KubeRunning, OnNode, Pod

    node_root = tmp_path / "node"

    class Agent:
        def put_dir(self, local, rel):
            with tarfile.open(tmp_path / "t.tar", "w") as t:
                t.add(str(local), arcname=".")
            with tarfile.open(tmp_path / "t.tar") as t:
                t.extractall(node_root / rel, filter="data")

        def cat(self, rel):
            f = node_root / rel
            if not f.is_file():
                raise AgentError(f"node-b: 404 {rel!r} is not a file")
            return f.read_text()

    sync = tmp_path / "art" / "sync"
    sync.mkdir(parents=True)
    on_node = OnNode(SimpleNamespace(agent=Agent()), "trials/t-1", {0: "trials/t-1/inst-0"})
    running = KubeRunning(SimpleNamespace(), sync, Limits(), on_node)
    running.pods.append(Pod("strata-1-0", InstanceRequest(0, ["x"], tmp_path / "art" / "inst-0", network="node")))
    assert isinstance(running, FilesElsewhere)
    running.signal("start-1")
    assert (node_root / "trials/t-1/sync/start-1").is_file() and (sync / "start-1").is_file()
    with pytest.raises(OSError):  # not written yet
        running.output(0, "node.log")
    (node_root / "trials/t-1/inst-0").mkdir(parents=True)
    (node_root / "trials/t-1/inst-0/node.log").write_text("Starting listening for CQL clients")
    assert running.output(0, "node.log") == "Starting listening for CQL clients"
    with pytest.raises(OSError, match="no instance 3"):
        running.output(3, "node.log")
    local = KubeRunning(SimpleNamespace(), sync, Limits())  # this machine's node: the files are here
    local.pods.append(Pod("strata-1-0", InstanceRequest(0, ["x"], tmp_path / "here")))
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "node.log").write_text("here")
    assert local.output(0, "node.log") == "here"
