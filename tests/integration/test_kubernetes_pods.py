"""The kubernetes runtime's pods (in progress) on the real test bed: an instance's pod waits at the start
barrier until `go`, runs fio on a hostPath directory under the trial's limits with its output in the out
dir (the same wrapper as docker's containers), and a pod past its memory limit ends as `oom`."""

import json
import os

import pytest

from strata.core.instances import ImageSpec, InstanceRequest
from strata.core.params import Limits
from strata.stack.journal import Journal
from strata.stack.kube.bed import kubernetes_bed
from strata.stack.runtimes.docker.image import build_image_tarball, image_tag
from strata.stack.runtimes.kubernetes import pods
from tests.coverage import covers

from . import ledger
from .helpers import cgroup_v2, wait_for

pytestmark = pytest.mark.integration

FIO = ImageSpec("fio", packages=("fio",))


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    old = os.environ.get("STRATA_STATE_DIR")
    os.environ["STRATA_STATE_DIR"] = str(state)  # the bed's root and journal
    journal = Journal("kube-pods-test", state)
    try:
        with kubernetes_bed(journal, log=lambda _: None) as b:
            ledger.built("runtime:kubernetes", "runtime:kubernetes:testbed")
            b.load_image(build_image_tarball(FIO))
            b.api.post("/api/v1/namespaces", {"metadata": {"name": "strata-it"}})
            yield b
    finally:
        journal.close()
        if old is None:
            os.environ.pop("STRATA_STATE_DIR")
        else:
            os.environ["STRATA_STATE_DIR"] = old
    assert not (state / "journal" / "kube-pods-test.jsonl").exists()


def _run(bed, tmp_path, name, argv, limits, release=True):
    out, sync, data = (tmp_path / d for d in ("out", "sync", "data"))
    for d in (out, sync, data):
        d.mkdir()
    req = InstanceRequest(0, argv, out)
    m = pods.pod_manifest(
        name, "strata-it", "it", pods.Placement(bed.plan.node_name), req, "hostpath", str(data), limits,
        image_tag(FIO), str(sync),
    )  # fmt: skip
    bed.api.post("/api/v1/namespaces/strata-it/pods", m)
    path = f"/api/v1/namespaces/strata-it/pods/{name}"
    if release:
        wait_for(lambda: (out / "ready").exists(), 120, "the instance at the barrier")
        assert not (out / "start").exists()  # held at the barrier
        (sync / "go").touch()
    wait_for(lambda: bed.api.get(path)["status"].get("phase") in ("Succeeded", "Failed"), 180, "the pod's end")
    pod = bed.api.get(path)
    if (out / "start").exists():  # past the barrier: it ran on its hostPath volume
        ledger.built("path:kubernetes/hostpath")
    end = pods.pod_end(pod)
    if end:
        ledger.failed(end[0], "kubernetes")
    elif pod["status"]["phase"] == "Succeeded" and argv[0] == "fio":
        ledger.built("workload:fio", "workload:fio@kubernetes")
    return pod, out, data


@covers(
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/hostpath",
    "workload:fio",
    "workload:fio@kubernetes",
)
def test_an_instance_pod_waits_at_the_barrier_then_runs_fio_under_its_limits(bed, tmp_path):
    argv = ["fio", "--name=k", "--directory=/data", "--rw=randread", "--bs=4k", "--size=4m", "--direct=1"]
    argv += ["--output-format=json"]
    pod, out, data = _run(bed, tmp_path, "inst-fio", argv, Limits(cpus=0.5, memory=128 << 20))
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert pods.pod_end(pod) is None
    assert float((out / "start").read_text()) >= float((out / "ready").read_text())
    job = json.loads((out / "stdout").read_text())["jobs"][0]
    assert job["read"]["io_bytes"] == 4 << 20
    assert (data / "k.0.0").stat().st_size == 4 << 20
    c = pod["spec"]["containers"][0]["resources"]
    assert c["limits"] == {"cpu": "500m", "memory": str(128 << 20)} and pod["status"]["qosClass"] == "Guaranteed"
    if cgroup_v2():
        pytest.skip("this host has cgroup v2: the wrapper's final counters are cgroup v1 files (docs/limits.md)")
    final = (out / "cgroup-final.txt").read_text()
    assert "== memory/memory.max_usage_in_bytes" in final  # the wrapper saw its pod's cgroup (v1)


@covers(
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/hostpath",
    "fault:oom",
    "fault:oom@kubernetes",
)
def test_a_pod_past_its_memory_limit_ends_as_oom(bed, tmp_path):
    argv = ["sh", "-c", 'a=$(head -c 400000000 /dev/zero | tr "\\0" a)']
    pod, _, _ = _run(bed, tmp_path, "inst-hog", argv, Limits(memory=64 << 20))
    assert pods.pod_end(pod)[0] == "oom", pod["status"]
