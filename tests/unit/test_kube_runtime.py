"""The kubernetes runtime without a cluster: its spec, its paths, a user's kubeconfig, the provisioner's volumes,
and what cannot be combined with it."""

import base64
from pathlib import Path

import pytest
import yaml

from strata.core.errors import SpecErrors, StrataError
from strata.core.params import Limits
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.stack.kube import provisioner
from strata.stack.runtimes.kubernetes import cluster, pods, running
from strata.stack.runtimes.kubernetes.params import KubernetesParams
from strata.stack.runtimes.kubernetes.runtime import KUBERNETES


def _spec(**over):
    doc = {
        "name": "k",
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": ["raw", "xfs"],
        "runtimes": ["kubernetes"],
        "paths": ["hostpath", "local", "emptydir", "pvc:fast-ssd"],
        "workloads": [{"fio": {"preset": "rr", "size": "64MiB"}}],
    }
    doc.update(over)
    return parse_spec(doc)


def test_pod_paths_expand_on_a_file_system_and_never_on_raw():
    exp, workloads = _spec()
    trials, skipped = expand(exp, workloads)
    assert sorted(t.path for t in trials) == ["emptydir", "hostpath", "local", "pvc:fast-ssd"]
    assert all(t.filesystem.type == "xfs" for t in trials)
    assert any("not raw" in s.reason for s in skipped) or any("raw has no directory" in s.reason for s in skipped)


@pytest.mark.parametrize("bad", ["pvc", "pvc:", "pvc:Fast", "hostpath:x", "pvcs:a", "pvc:a_b"])
def test_a_malformed_path_is_a_spec_error(bad):
    with pytest.raises(SpecErrors) as e:
        _spec(paths=[bad])
    assert "paths" in str(e.value)


def test_block_io_limits_are_refused_with_the_reason():
    assert "no block-I/O limit" in KUBERNETES.refused_limits(Limits(read_bps=1 << 20))
    assert "preset BW" in KUBERNETES.refused_limits(Limits(preset="BW"))
    assert KUBERNETES.refused_limits(Limits(cpus=1, memory=1 << 30)) is None
    exp, workloads = _spec(paths=["hostpath"], loads=[{"name": "bw", "limits": {"read_bps": "10m"}}])
    trials, skipped = expand(exp, workloads)
    assert not [t for t in trials if t.runtime.type == "kubernetes"]
    assert any("no block-I/O limit" in s.reason for s in skipped)


def test_params_name_and_claim_size():
    assert KubernetesParams().name == "kubernetes"
    p = KubernetesParams(kubeconfig="/k", context="prod", claim_size="10GiB")
    assert p.name == "kubernetes:prod" and p.claim_size == 10 << 30
    with pytest.raises(ValueError):
        KubernetesParams(claim_size=1024)


def test_a_kubeconfig_with_inline_credentials_or_a_token(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    ca = base64.b64encode(b"CA PEM").decode()
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://192.0.2.9:6443", "certificate-authority-data": ca}}],
        "users": [
            {"name": "u", "user": {"client-certificate": "u.crt", "client-key-data": base64.b64encode(b"K").decode()}},
            {"name": "t", "user": {"token": "s3cret"}},
            {"name": "x", "user": {"exec": {"command": "aws"}}},
        ],
        "contexts": [
            {"name": "a", "context": {"cluster": "c", "user": "u"}},
            {"name": "b", "context": {"cluster": "c", "user": "t"}},
            {"name": "e", "context": {"cluster": "c", "user": "x"}},
        ],
        "current-context": "a",
    }
    kc = tmp_path / "config"
    kc.write_text(yaml.safe_dump(doc))
    a = cluster.connect(str(kc))
    assert a.api.server == "https://192.0.2.9:6443" and a.api.cert == str(tmp_path / "u.crt")
    assert open(a.api.ca, "rb").read() == b"CA PEM" and open(a.api.key, "rb").read() == b"K"
    assert (tmp_path / "state" / "kube-credentials").stat().st_mode & 0o777 == 0o700
    assert cluster.connect(str(kc), "b").api.token == "s3cret"
    with pytest.raises(StrataError, match="the credential plugin's apiVersion is missing"):
        cluster.connect(str(kc), "e")
    with pytest.raises(StrataError, match="no context named 'zz'"):
        cluster.connect(str(kc), "zz")


def test_the_provisioner_serves_a_claim_with_a_pinned_hostpath_volume(tmp_path):
    claim = {
        "metadata": {"name": "data-0", "namespace": "strata-1", "uid": "u-1"},
        "spec": {"resources": {"requests": {"storage": "2Gi"}}, "storageClassName": provisioner.CLASS},
    }
    pv = provisioner.volume_for(claim, "node-a", tmp_path)
    assert pv["metadata"]["name"] == "pvc-u-1"
    assert pv["spec"]["claimRef"]["uid"] == "u-1" and pv["spec"]["capacity"] == {"storage": "2Gi"}
    assert pv["spec"]["hostPath"]["path"] == str(tmp_path / "pvc-u-1")
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term["values"] == ["node-a"]


def test_a_claim_becomes_the_pods_data_volume():
    assert pods.data_volume("pvc:fast", None, "data-0") == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": "data-0"},
    }
    assert pods.data_volume("local", "/x", "data-1")["persistentVolumeClaim"]["claimName"] == "data-1"
    with pytest.raises(ValueError):
        pods.data_volume("pvc:fast", None, None)


def test_a_pod_ended_on_its_own_gives_its_exit_code():
    pod = {"status": {"containerStatuses": [{"state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}}
    assert running._exit_code(pod) == 3
    assert running._exit_code({"status": {"containerStatuses": [{"state": {"running": {}}}]}}) is None
    assert running._exit_code(None) is None


# ---- pvc-block:CLASS: a claim of volumeMode Block, a device in the pod (issue 58) ----------------------------


@pytest.mark.parametrize(
    "bad,said",
    [
        ("pvc-block", "'pvc-block' names no StorageClass: write pvc-block:CLASS"),
        ("pvc-block:", "'pvc-block:' names no StorageClass: write pvc-block:CLASS"),
        ("pvc-block:Fast", "'Fast' is not a StorageClass's name"),
        ("pvc-block:a_b", "'a_b' is not a StorageClass's name"),
        ("pvcblock:a", "one of layer, volume"),
        ("emptydir:a", "only pvc:CLASS and pvc-block:CLASS take an argument"),
    ],
)
def test_a_malformed_block_claim_path_is_a_spec_error_that_says_how_to_write_it(bad, said):
    with pytest.raises(SpecErrors) as e:
        _spec(paths=[bad])
    assert "paths" in str(e.value) and said in str(e.value), str(e.value)


def test_fio_on_a_block_claim_gets_a_device_and_a_workload_that_needs_a_directory_is_refused():
    from strata.stack.paths import path_target_kind

    assert KUBERNETES.target_kind(KubernetesParams(), "pvc-block:strata-loop") == "device"
    assert KUBERNETES.target_kind(KubernetesParams(), "pvc:strata-hostpath") == "dir"
    assert path_target_kind("pvc-block:x") == "device" and path_target_kind("pvc:x") == "dir"
    exp, workloads = _spec(
        paths=["pvc-block:strata-loop"],
        workloads=[{"fio": {"preset": "rr", "size": "64MiB"}}, {"filebench": {"personality": "varmail"}}],
    )
    trials, skipped = expand(exp, workloads)
    assert [(t.path, t.workload.type, t.filesystem.type) for t in trials] == [("pvc-block:strata-loop", "fio", "xfs")]
    (refused,) = [s for s in skipped if "varmail" in s.label and "/xfs/" in s.label]
    assert "the filebench workload needs a directory, and the pvc-block:strata-loop path of kubernetes gives a " in (
        refused.reason
    )
    assert "(local, hostpath, emptydir, pvc:CLASS)" in refused.reason, refused.reason  # the runtime's directories
    (raw,) = [s for s in skipped if " rr " in s.label and "/raw/" in s.label]
    assert "needs a file system on the device, not raw" in raw.reason, raw.reason


def test_a_servers_log_is_never_put_on_a_block_claim():
    from strata.workloads.server import logpath

    assert "pvc-block" not in logpath.DIR_PATHS and "device" not in logpath.DIR_PATHS
    with pytest.raises(ValueError, match="not a path for a server's log"):
        logpath.name("pvc-block:strata-loop")


def test_the_workloads_data_must_fit_a_block_claim_at_plan_time():
    from strata.experiment.plan import _fit_errors

    exp, workloads = _spec(
        paths=["pvc-block:strata-loop"],
        runtimes=[{"type": "kubernetes", "claim_size": "32MiB"}],
        workloads=[{"fio": {"preset": "rr", "size": "64MiB"}}],
    )
    trials, _ = expand(exp, workloads)
    ((where, problem, fix),) = _fit_errors(exp, trials)
    assert where == "workloads (rr)"
    assert problem == (
        "64 MiB of data do not fit the 32 MiB device the kubernetes runtime gives each instance on "
        "pvc-block:strata-loop"
    ), problem
    assert "`claim_size` larger" in fix
    exp, workloads = _spec(paths=["pvc-block:strata-loop"], runtimes=[{"type": "kubernetes", "claim_size": "64MiB"}])
    assert _fit_errors(exp, expand(exp, workloads)[0]) == []
    assert KUBERNETES.path_bytes(KubernetesParams(claim_size="1GiB"), "pvc:x") is None  # a file system's: not fixed


def test_the_provisioner_serves_a_block_claim_with_a_pinned_local_volume_of_its_loop_device(tmp_path):
    claim = {
        "metadata": {"name": "data-0", "namespace": "strata-1", "uid": "u-2"},
        "spec": {
            "resources": {"requests": {"storage": "536870912"}},
            "storageClassName": provisioner.BLOCK_CLASS,
            "volumeMode": "Block",
            "accessModes": ["ReadWriteOnce"],
        },
    }
    assert provisioner.unservable(claim) is None
    pv = provisioner.block_volume_for(claim, "node-a", "/dev/loop7", tmp_path / "pvc-u-2.img")
    spec = pv["spec"]
    assert pv["metadata"]["name"] == "pvc-u-2"
    assert pv["metadata"]["annotations"] == {
        "pv.kubernetes.io/provisioned-by": provisioner.BLOCK_PROVISIONER,
        provisioner.IMAGE: str(tmp_path / "pvc-u-2.img"),
    }
    assert spec["volumeMode"] == "Block" and spec["local"] == {"path": "/dev/loop7"} and "hostPath" not in spec
    assert spec["storageClassName"] == "strata-loop" and spec["capacity"] == {"storage": "536870912"}
    assert spec["claimRef"]["uid"] == "u-2" and spec["persistentVolumeReclaimPolicy"] == "Delete"
    term = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a"]}
    assert "volumeMode" not in provisioner.volume_for(claim, "node-a", tmp_path)["spec"]  # a directory's


def test_each_bed_class_refuses_the_other_volume_mode_with_the_class_that_serves_it():
    def claim(cls, mode):
        return {"spec": {"storageClassName": cls, "volumeMode": mode}}

    assert "a claim of volumeMode Block takes strata-loop" in provisioner.unservable(claim("strata-hostpath", "Block"))
    assert "takes strata-hostpath" in provisioner.unservable(claim("strata-loop", "Filesystem"))
    assert "takes strata-hostpath" in provisioner.unservable({"spec": {"storageClassName": "strata-loop"}})
    assert provisioner.unservable(claim("strata-hostpath", "Filesystem")) is None
    assert provisioner.unservable(claim("fast-ssd", "Block")) is None  # another class: not the bed's to say


def test_a_block_claims_image_is_its_request_in_whole_mib():
    from strata.stack.kube import loopvolumes

    assert loopvolumes.quantity_bytes("4Gi") == 4 << 30 and loopvolumes.quantity_bytes("500M") == 500 * 10**6
    assert loopvolumes.quantity_bytes("1073741824") == 1 << 30
    assert loopvolumes.image_bytes("500M") == 477 << 20  # 476.8 MiB, rounded up
    assert loopvolumes.image_bytes("1") == 1 << 20 and loopvolumes.image_bytes("64Mi") == 64 << 20
    with pytest.raises(ValueError, match="is not a quantity of bytes"):
        loopvolumes.quantity_bytes("1.5Gi")
    assert loopvolumes.image_path(Path("/d"), "pvc-u") == Path("/d/pvc-u.img")


def test_several_instances_devices_are_checked_on_the_disks_below_them_all():
    from strata.stack.runtimes.kubernetes.session import common_layers, device_name, disks_under_device

    assert common_layers([["loop7", "loop3", "vda"]]) == ["loop7", "loop3", "vda"]
    assert common_layers([["loop7", "loop3", "vda"], ["loop8", "loop3", "vda"]]) == ["loop3", "vda"]
    assert common_layers([["nvme1n1"], ["nvme2n1"]]) == [] and common_layers([]) == []
    assert device_name(__file__) is None and device_name("/nonexistent") is None  # no block device
    assert disks_under_device("strata-no-such-disk") == ["strata-no-such-disk"]  # no loop device: nothing below


def test_a_dead_kubelet_or_containerd_of_the_bed_is_the_runtimes_death_named(tmp_path):
    """Issue 62 for the test bed's daemons: decided from their own processes (a pid that exited), not from a
    client's error; the session's watch names each dead one as `daemon_died`, which the stack cache reads to
    build the runtime again (test_runner.py holds that rule for any runtime's watch)."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from strata.stack.kube.procs import Processes
    from strata.stack.runtimes.kubernetes.session import KubernetesSession

    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = Processes(None, [], "strata-k8s-test", tmp_path)  # no journal: nothing is started
        procs.pids = {"containerd": alive.pid, "kubelet": exited.pid}
        assert procs.dead() == ["kubelet"]
        watched = KubernetesSession.watch(SimpleNamespace(watch_bed=procs.dead, lease=None, agent_pod=None))
        assert watched == ("daemon_died", "the Kubernetes test bed's kubelet exited")
        procs.pids = {"containerd": alive.pid}
        assert KubernetesSession.watch(SimpleNamespace(watch_bed=procs.dead, lease=None, agent_pod=None)) is None
        # your cluster: no bed
        assert KubernetesSession.watch(SimpleNamespace(watch_bed=None, lease=None, agent_pod=None)) is None
    finally:
        alive.kill()
        alive.wait()
