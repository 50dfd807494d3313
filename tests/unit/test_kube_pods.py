"""The kubernetes runtime's pods (in progress): the manifest of an instance, limits, a pod's end."""

import json
from pathlib import Path

import pytest

from strata.core.errors import FAILURE_CATEGORIES
from strata.core.instances import InstanceRequest
from strata.core.params import Limits
from strata.stack.runtimes.docker.cmdline import WRAPPER
from strata.stack.runtimes.kubernetes import pods


def manifest(path="hostpath", limits=None, network="none") -> dict:
    req = InstanceRequest(1, ["fio", "--name=x"], Path("/r/out/1"), network=network)
    return pods.pod_manifest(
        "strata-r1-1", "strata-r1", "r1", pods.Placement("node-a"), req, path, "/mnt/fs/data1", limits or Limits(),
        "img:1", "/r/sync",
    )  # fmt: skip


def test_an_instance_is_a_pod_pinned_to_its_node_under_the_wrapper():
    m = manifest()
    spec = m["spec"]
    assert spec["nodeName"] == "node-a" and spec["restartPolicy"] == "Never"
    c = spec["containers"][0]
    assert c["command"] == ["/bin/sh", "-c", pods.CGROUP_NOTE + WRAPPER, "strata-wrap", "fio", "--name=x"]
    assert c["imagePullPolicy"] == "Never" and "resources" not in c
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["out"]["hostPath"]["path"] == "/r/out/1" and vols["sync"]["hostPath"]["path"] == "/r/sync"
    assert vols["data"]["hostPath"] == {"path": "/mnt/fs/data1", "type": "Directory"}
    assert m["metadata"]["labels"] == {"strata.run": "r1", "strata.instance": "1"}


def test_no_in_cluster_client_and_no_host_network_unless_asked():
    spec = manifest()["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False
    assert "hostNetwork" not in spec
    assert manifest(network="host")["spec"]["hostNetwork"] is True
    assert manifest(network="node")["spec"]["hostNetwork"] is True  # a server other nodes reach at its node's address


def test_servers_on_a_remote_nodes_loopback_are_refused_but_not_those_on_its_address():
    def reqs(network):
        return [InstanceRequest(0, ["x"], Path("/o/0")), InstanceRequest(1, ["x"], Path("/o/1"), network=network)]

    why = pods.unreachable_servers(reqs("host"), "node-b")
    assert "reach its servers on the loopback" in why and "not on node-b" in why and "cluster.hosts" in why
    assert pods.unreachable_servers(reqs("host"), None) is None  # this machine's node: the loopback is theirs
    assert pods.unreachable_servers(reqs("node"), "node-b") is None
    assert pods.unreachable_servers(reqs("none"), "node-b") is None


def test_limits_become_resources_with_equal_requests():
    c = manifest(limits=Limits(cpus=1.5, memory=256 << 20))["spec"]["containers"][0]
    assert c["resources"] == {
        "limits": {"cpu": "1500m", "memory": str(256 << 20)},
        "requests": {"cpu": "1500m", "memory": str(256 << 20)},
    }


def test_block_io_limits_are_refused_with_the_reason():
    assert pods.unsupported_limits(Limits(cpus=1)) is None
    why = pods.unsupported_limits(Limits(read_bps=20 << 20, write_iops=100))
    assert "no block-I/O limit" in why and "read_bps" in why and "write_iops" in why


def test_emptydir_and_unknown_paths():
    assert {"name": "data", "emptyDir": {}} in manifest("emptydir")["spec"]["volumes"]
    with pytest.raises(ValueError):
        manifest("pvc:fast")


def test_pod_names_are_dns_labels():
    name = pods.pod_name("Run_ID.with+odd" + "x" * 80, 12)
    assert len(name) <= 63 and name == name.lower() and all(ch.isalnum() or ch == "-" for ch in name)


@pytest.mark.parametrize(
    "status,category",
    [
        ({"containerStatuses": [{"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}, "oom"),
        ({"reason": "Evicted", "message": "The node was low on resource: memory."}, "instance_died"),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "ErrImageNeverPull"}}}]}, "instance_died"),
        ({"containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}, None),
        ({"containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}, None),
        ({"phase": "Running"}, None),
    ],
)
def test_a_pods_end(status, category):
    got = pods.pod_end({"metadata": {"name": "p"}, "status": status})
    assert (got[0] if got else None) == category
    if got:
        assert got[0] in FAILURE_CATEGORIES


def test_a_pod_on_another_node_goes_by_its_hostname_with_the_runs_tolerations_and_pulls_its_image():
    """Issue 55: a node strata reaches through its agent: the scheduler admits the pod there (and binds a
    WaitForFirstConsumer claim there), its image from the user's registry with the pull secret."""
    req = InstanceRequest(0, ["fio"], Path("/r/out/0"))
    tol = {"key": "dedicated", "operator": "Equal", "value": "storage", "effect": "NoSchedule"}
    where = pods.Placement("node-b", by_name=False, tolerations=(tol,), pull="IfNotPresent", pull_secret="regcred")
    m = pods.pod_manifest(
        "p", "ns", "r1", where, req, "hostpath", "/var/lib/strata/ns/data/t/0", Limits(), "reg:5000/s/fio:1",
        "/var/lib/strata/ns/trials/t/sync", out_dir="/var/lib/strata/ns/trials/t/inst-0",
    )  # fmt: skip
    spec = m["spec"]
    assert "nodeName" not in spec and spec["nodeSelector"] == {"kubernetes.io/hostname": "node-b"}
    assert spec["tolerations"] == [tol] and spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["out"]["hostPath"]["path"] == "/var/lib/strata/ns/trials/t/inst-0"  # on the node, not here
    assert pods.pod_end({"metadata": {"name": "p"}, "status": {"containerStatuses": [
        {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "x509: unknown authority"}}}]}}) == (
        "instance_died", "pod p cannot start: ImagePullBackOff: x509: unknown authority")  # fmt: skip


def test_a_deleted_pod_ends_the_trial():
    assert pods.pod_end(None)[0] == "instance_died"
    assert pods.pod_end({"metadata": {"name": "p", "deletionTimestamp": "x"}, "status": {}})[0] == "instance_died"
    json.dumps(manifest())  # the manifest is plain JSON


def test_a_servers_log_on_a_path_of_its_own_is_a_second_volume():
    req = InstanceRequest(0, ["postgres"], Path("/r/out/0"), network="host")
    m = pods.pod_manifest(
        "p", "ns", "r1", pods.Placement("node-a"), req, "hostpath", "/mnt/fs/d0", Limits(), "img:1", "/r/sync", None,
        ("local", "/mnt/fs/l0", "log-0"),
    )  # fmt: skip
    mounts = {v["name"]: v["mountPath"] for v in m["spec"]["containers"][0]["volumeMounts"]}
    vols = {v["name"]: v for v in m["spec"]["volumes"]}
    assert mounts["data"] == "/data" and mounts["log"] == "/log"
    assert vols["log"] == {"name": "log", "persistentVolumeClaim": {"claimName": "log-0"}}
    assert "log" not in {v["name"] for v in manifest()["spec"]["volumes"]}
    assert pods.LOG_PATHS == ("hostpath", "local")  # on the stack's device: the cache check sees the log's writes


def test_a_block_claim_is_a_device_in_the_container_not_a_mount():
    """pvc-block:CLASS (issue 58): the claim is the pod's `data` volume, attached as `volumeDevices` at the device path
    every runtime hands a device at; nothing is mounted at /data."""
    req = InstanceRequest(0, ["fio", "--filename=/dev/strata-dev"], Path("/r/out/0"))
    m = pods.pod_manifest(
        "p", "ns", "r1", pods.Placement("node-a"), req, "pvc-block:strata-loop", None, Limits(), "img:1", "/r/sync",
        "data-0",
    )  # fmt: skip
    c = m["spec"]["containers"][0]
    assert c["volumeDevices"] == [{"name": "data", "devicePath": "/dev/strata-dev"}]
    assert [v["name"] for v in c["volumeMounts"]] == ["out", "sync"]
    vols = {v["name"]: v for v in m["spec"]["volumes"]}
    assert vols["data"] == {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}
    assert "volumeDevices" not in manifest()["spec"]["containers"][0]  # a directory's path: mounted, as before
    assert {"name": "data", "mountPath": "/data"} in manifest()["spec"]["containers"][0]["volumeMounts"]
    with pytest.raises(ValueError):
        manifest("pvc-block:strata-loop")  # a claim's path without its claim


def test_a_block_claim_asks_for_volume_mode_block():
    block = pods.claim_manifest("data-0", "strata-loop", 512 << 20, block=True)
    assert block["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "strata-loop",
        "resources": {"requests": {"storage": str(512 << 20)}},
        "volumeMode": "Block",
    }
    files = pods.claim_manifest("data-0", "", 1 << 30, volume="pv-1")
    assert "volumeMode" not in files["spec"] and files["spec"]["volumeName"] == "pv-1"
    assert files["kind"] == "PersistentVolumeClaim" and files["metadata"] == {"name": "data-0"}
