"""The kubernetes runtime without a cluster: its spec, its paths, a user's kubeconfig, the provisioner's volumes,
and what cannot be combined with it."""

import base64

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
