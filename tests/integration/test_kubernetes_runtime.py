"""The kubernetes runtime through `strata run`, on strata's own single-node cluster (the test bed, built
here from the Go module proxy once): fio in pods on every pod path beside the same file system natively
and through a Docker volume, in one result format; a StorageClass-provisioned claim; a pod deleted
mid-trial ends that trial as `instance_died` and the run goes on; `kill -9` of strata, then `strata
cleanup` leaves no pod, volume, claim, namespace or cluster process behind."""

import contextlib
import json
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from strata.stack.kube.api import ApiError
from strata.stack.runtimes.kubernetes.cluster import connect
from tests.coverage import covers

from .helpers import leftovers, results, start_strata, strata, wait_for, write_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    e = {"STRATA_STATE_DIR": str(tmp_path / "state")}
    yield workdir, e
    strata("cleanup", "--force", env=e)
    assert leftovers(workdir) == []
    assert _bed_processes(tmp_path / "state") == []
    if workdir.exists():
        workdir.rmdir()


def _bed_processes(state: Path) -> list[str]:
    """Processes whose command line names a test bed under this state dir (etcd, kubelet, containerd...)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(state / "kubernetes") in cmd:
                found.append(f"{p.name}: {cmd[:100]}")
    return found


def _spec(workdir, **over):
    spec = {
        "name": "kube",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["native", "docker:overlay2", "kubernetes"],
        "paths": ["bind", "volume", "local", "hostpath", "emptydir", "pvc:strata-hostpath"],
        "workloads": [{"fio": {"preset": "rr", "size": "64MiB", "runtime": 3, "ramp_time": 0}}],
        "loads": ["low"],
        "exclude": [{"runtime": "docker:*", "path": "bind"}],
    }
    spec.update(over)
    return spec


def _api(state: Path):
    beds = list((state / "kubernetes").glob("*/admin.kubeconfig"))
    assert len(beds) == 1, beds
    return connect(str(beds[0])).api


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:native",
    "runtime:docker",
    "runtime:docker:overlay2",
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:native/bind",
    "path:docker/volume",
    "path:kubernetes/local",
    "path:kubernetes/hostpath",
    "path:kubernetes/emptydir",
    "path:kubernetes/pvc",
    "workload:fio",
    "workload:fio@native",
    "workload:fio@docker",
    "workload:fio@kubernetes",
)
def test_fio_in_pods_on_every_path_beside_native_and_docker(tmp_path, env):
    workdir, e = env
    spec = write_spec(tmp_path / "s.yaml", _spec(workdir))
    out = tmp_path / "out"
    cp = strata("run", spec, "-o", out, env=e, timeout=1800)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    rs = {(r["labels"]["runtime"], r["labels"]["path"]): r for r in results(out)}
    assert set(rs) == {
        ("native", "bind"),
        ("docker:overlay2", "volume"),
        *(("kubernetes", p) for p in ("local", "hostpath", "emptydir", "pvc:strata-hostpath")),
    }
    for key, r in rs.items():
        assert r["status"] == "ok", (key, r["flags"]["failed"])
        assert r["metrics"]["read"]["iops"] > 0
        assert r["flags"]["cache"]["suspect"] is False, (key, r["flags"]["cache"])
        assert r["flags"]["cache"]["evidence"]["disks"][0].startswith("loop"), key  # the device under test moved it
    kube = rs[("kubernetes", "hostpath")]
    assert kube["stack_facts"]["runtime"]["bed"] is True and kube["stack_facts"]["runtime"]["version"].startswith("v1.")
    assert kube["collectors"]["cgroups"], "the pod's container cgroup was sampled"
    claim = rs[("kubernetes", "pvc:strata-hostpath")]["stack_facts"]["path"]
    assert claim["storage_class"] == "strata-hostpath" and claim["provisioner"] == "strata.local/hostpath"
    assert claim["volumes"][0]["source"] == "hostPath" and "/strata-k8s/pv/" in claim["volumes"][0]["path"]
    assert rs[("kubernetes", "emptydir")]["stack_facts"]["path"]["volume"] == "emptyDir"
    rep = strata("report", out, "-o", tmp_path / "report", env=e, check=0)
    assert "kubernetes" in rep.stdout
    assert list((tmp_path / "report" / "figures").glob("runtimes-throughput-*.svg")), "pods beside native"


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/pvc-block",
    "workload:fio",
    "workload:fio@kubernetes",
)
def test_fio_on_a_block_claim_is_judged_on_the_loop_device_its_volume_names(tmp_path, env):
    """Issue 58: `pvc-block:strata-loop`: a claim of volumeMode Block, served by the bed's provisioner as a loop
    device over an image on the file system under test, is a device in the pod; fio reads and writes it raw, and
    the cache and flush checks read that loop device (not the kubelet's own loop device over it), then the stack's
    device below the image, then the disk below that."""
    workdir, e = env
    fio = {"size": "64MiB", "runtime": 3, "ramp_time": 0}
    spec = _spec(
        workdir,
        runtimes=[{"type": "kubernetes", "claim_size": "256MiB"}],
        paths=["pvc-block:strata-loop"],
        workloads=[
            {"fio": {"preset": "rr", **fio}},
            {"fio": {"name": "syncw", "rw": "randwrite", "bs": "4k", **fio, "options": {"fsync": 1}}},
        ],
    )
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e, timeout=1200)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    rs = {r["labels"]["workload"]: r for r in results(out)}
    assert set(rs) == {"rr", "syncw"}
    for name, r in rs.items():
        assert r["status"] == "ok", (name, r["flags"]["failed"])
        facts = r["stack_facts"]["path"]
        assert (facts["storage_class"], facts["provisioner"], facts["volume_mode"]) == (
            "strata-loop", "strata.local/loop", "Block",
        )  # fmt: skip
        (volume,) = facts["volumes"]
        assert volume["source"] == "local" and volume["volume_mode"] == "Block", volume
        device = volume["device"]  # the PV's local.path: the loop device the provisioner attached
        assert device.startswith("/dev/loop"), volume
        stack_device = r["stack_facts"]["device"]["kernel_name"]
        cache = r["flags"]["cache"]
        assert cache["suspect"] is False, cache
        disks = cache["evidence"]["disks"]
        assert disks[:2] == [device.removeprefix("/dev/"), stack_device], (disks, device, stack_device)
        written = cache["evidence"]["written"]  # the image was written through: no hole reads as zeros
        assert written["share"] == 1.0 and "/strata-k8s/pv-block/" in written["of"], written
        moved = cache["evidence"]["per_disk"][disks[0]]
        direction = "read" if name == "rr" else "write"
        workload_bytes = cache["evidence"][f"{direction}_workload_bytes"]
        assert workload_bytes > 0 and moved[f"{direction}_bytes"] >= workload_bytes, (moved, workload_bytes)
        print(f"\n{name}: {disks[0]} (the claim's loop device) moved {moved[f'{direction}_bytes']:,} bytes "
              f"of {direction}s for the workload's {workload_bytes:,}; below it {disks[1:]}")  # fmt: skip
    flush = rs["syncw"]["flags"]["flush"]  # each fsync of the device reached the claim's loop device as a flush
    claim_device = rs["syncw"]["stack_facts"]["path"]["volumes"][0]["device"].removeprefix("/dev/")
    assert flush["suspect"] is False and flush["evidence"]["disks"][0] == claim_device, flush
    assert flush["evidence"]["per_disk"][claim_device]["flush_ios"] > 0, flush


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/hostpath",
    "workload:fio",
    "workload:fio@kubernetes",
    "fault:instance_died",
    "fault:instance_died@kubernetes",
)
def test_a_pod_deleted_mid_trial_ends_the_trial_and_the_run_goes_on(tmp_path, env):
    workdir, e = env
    spec = _spec(
        workdir,
        runtimes=["kubernetes"],
        paths=["hostpath"],
        repetitions=2,
        workloads=[{"fio": {"preset": "rr", "size": "64MiB", "runtime": 60, "ramp_time": 0}}],
    )
    out = tmp_path / "out"
    proc = start_strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e)
    wait_for(lambda: bool(list(out.glob("trials/*/inst-0/start"))), 600, "fio in the pod")
    seen = time.time()  # fio's 60 s began before this
    time.sleep(2)
    api = _api(Path(e["STRATA_STATE_DIR"]))
    victims = [
        p["metadata"] for p in api.get("/api/v1/pods")["items"] if p["metadata"]["namespace"].startswith("strata-")
    ]
    assert len(victims) == 1, victims
    api.delete(f"/api/v1/namespaces/{victims[0]['namespace']}/pods/{victims[0]['name']}?gracePeriodSeconds=0")
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 1, text
    rs = sorted(results(out), key=lambda r: r["labels"]["repetition"])
    assert rs[0]["status"] == "failed" and rs[0]["flags"]["failed"]["category"] == "instance_died", rs[0]["flags"]
    # ended when its pod was deleted, not at fio's own end, however slow the machine (the trial's end, whole seconds)
    ended = datetime.fromisoformat(rs[0]["finished_at"]).timestamp()
    assert ended < seen + 60, ended - seen
    assert rs[1]["status"] == "ok", rs[1]["flags"]["failed"]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("local", id="local"),
        pytest.param("pvc-block:strata-loop", id="pvc-block"),
    ],
)
@covers("fault:kill9", "command:cleanup")  # killed before a trial ended: it stores none
def test_kill9_then_cleanup_leaves_no_pod_claim_volume_namespace_or_cluster(tmp_path, env, path):
    """On a block claim (pvc-block:strata-loop) also no loop device: neither the volume's, over its image on the file
    system under test, nor the kubelet's own over the volume's device (its lock of a mapped block volume)."""
    workdir, e = env
    state = Path(e["STRATA_STATE_DIR"])
    spec = _spec(
        workdir,
        runtimes=[{"type": "kubernetes", "claim_size": "256MiB"}],
        paths=[path],
        workloads=[{"fio": {"preset": "rr", "size": "64MiB", "runtime": 120, "ramp_time": 0}}],
    )
    out = tmp_path / "out"
    proc = start_strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e)
    wait_for(lambda: bool(list(out.glob("trials/*/inst-0/start"))), 600, "fio in the pod")
    api = _api(state)
    namespaces = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
    assert [n for n in namespaces if n.startswith("strata-")], namespaces
    volumes = [v["spec"] for v in api.get("/api/v1/persistentvolumes")["items"] if "local" in v["spec"]]
    assert volumes
    (token,) = [d.name for d in (state / "kubernetes").iterdir() if d.is_dir()]
    ours = (str(workdir), f"strata-kubelet-{token}")  # the volume's image; the kubelet's lock over its device
    if path.startswith("pvc-block"):
        assert volumes[0].get("volumeMode") == "Block" and volumes[0]["local"]["path"].startswith("/dev/loop")
        attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        assert [ln for ln in attached.splitlines() if "/strata-k8s/pv-block/" in ln], attached
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert _bed_processes(state), "the cluster outlives a killed strata"
    cp = strata("cleanup", env=e, check=0)
    print(f"\n{cp.stdout}")
    kinds = ("kube-namespace", "kube-object", "kube-node", "kube-process")
    for kind in kinds + (("kube-loop-volumes",) if path.startswith("pvc-block") else ()):
        assert f"undid {kind}" in cp.stdout, kind
    assert "kept" not in cp.stdout
    assert _bed_processes(state) == []
    assert not list((state / "journal").glob("*.jsonl"))
    attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert not [ln for ln in attached.splitlines() if any(o in ln for o in ours)], attached


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:kubeconfig",
    "path:kubernetes/hostpath",
    "path:kubernetes/pvc",
    "workload:fio",
    "workload:fio@kubernetes",
)
def test_a_users_cluster_through_its_kubeconfig(tmp_path, env):
    """A cluster strata did not start (a test bed held by `strata testbed kubernetes up`, reached only through
    its kubeconfig, as a user's): pods pinned to this machine's node, a claim of the cluster's StorageClass,
    the image imported into the node's containerd; nothing of strata's left in the cluster afterwards."""
    workdir, e = env
    bed_env = {"STRATA_STATE_DIR": str(tmp_path / "bed-state")}
    up = strata("testbed", "kubernetes", "up", env=bed_env, timeout=1800)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        facts = json.loads(strata("testbed", "kubernetes", "status", env=bed_env, check=0).stdout)
        runtime = {"type": "kubernetes", "kubeconfig": facts["kubeconfig"], "containerd_socket": facts["containerd"]}
        spec = _spec(workdir, runtimes=[runtime], paths=["hostpath", "pvc:strata-hostpath"])
        out = tmp_path / "out"
        cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e, timeout=1800)
        assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
        rs = {r["labels"]["path"]: r for r in results(out)}
        assert set(rs) == {"hostpath", "pvc:strata-hostpath"}
        for r in rs.values():
            assert r["status"] == "ok", r["flags"]["failed"]
            rt = r["stack_facts"]["runtime"]
            assert rt["node"] == facts["node"] and not rt.get("bed") and rt["cluster"] == facts["server"]
        # the claim's volume is the cluster's (under the bed's own directory), seen from here: checked
        claim = rs["pvc:strata-hostpath"]
        assert claim["stack_facts"]["path"]["volumes"][0]["path"].startswith(facts["root"])
        assert claim["flags"]["cache"]["evidence"]["disks"], claim["flags"]["cache"]
        api = connect(facts["kubeconfig"]).api
        left = [n["metadata"]["name"] for n in api.get("/api/v1/namespaces")["items"]]
        assert not [n for n in left if n.startswith("strata-")], left
        assert not [v for v in api.get("/api/v1/persistentvolumes")["items"] if "local" in v["spec"]]
        # issue 55: a user who authenticates through an exec plugin (EKS's, GKE's, AKS's kind): a script that
        # prints an ExecCredential holding a token the bed's API server accepts (a service account's)
        plugin_kc = _exec_kubeconfig(tmp_path, api, facts, "print-token")
        exec_spec = _spec(workdir, runtimes=[{**runtime, "kubeconfig": str(plugin_kc)}], paths=["hostpath"])
        cp = strata("run", write_spec(tmp_path / "x.yaml", exec_spec), "-o", tmp_path / "x", env=e, timeout=1800)
        assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
        (r,) = results(tmp_path / "x")
        assert r["status"] == "ok" and r["stack_facts"]["runtime"]["cluster"] == facts["server"], r["flags"]
        # a plugin that fails: its own words, exit 2, nothing built
        failing = _exec_kubeconfig(tmp_path, api, facts, "fail")
        bad = _spec(workdir, runtimes=[{**runtime, "kubeconfig": str(failing)}], paths=["hostpath"])
        cp = strata("run", write_spec(tmp_path / "f.yaml", bad), "-o", tmp_path / "f", env=e, timeout=600)
        said = cp.stdout + cp.stderr
        assert cp.returncode == 2 and "error: the session expired, log in again" in said and "Traceback" not in said, (
            said
        )
    finally:
        strata("testbed", "kubernetes", "down", env=bed_env, check=0, timeout=300)


def _exec_kubeconfig(tmp_path: Path, api, facts: dict, mode: str) -> Path:
    """A kubeconfig of the bed whose user is an exec plugin: `print-token` prints a service account's token (an
    ExecCredential v1 with its expiry), `fail` says what a cloud's plugin says when its login expired."""
    sa = "strata-exec"
    with contextlib.suppress(ApiError):  # made once per bed
        api.post("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": sa}})
        api.post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": sa},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "default"}],
            },
        )
    req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    token = api.post(f"/api/v1/namespaces/default/serviceaccounts/{sa}/token", req)["status"]["token"]
    plugin = tmp_path / f"plugin-{mode}"
    if mode == "fail":
        body = 'print("error: the session expired, log in again", file=sys.stderr)\nsys.exit(1)\n'
    else:
        cred = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": token}}
        body = f"print({json.dumps(json.dumps(cred))})\n"
    plugin.write_text(f"#!{sys.executable}\nimport sys\n{body}")
    plugin.chmod(0o755)
    doc = yaml.safe_load(Path(facts["kubeconfig"]).read_text())
    user = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    }
    doc["users"] = [{"name": "exec", "user": user}]
    for c in doc["contexts"]:
        c["context"]["user"] = "exec"
    kc = tmp_path / f"exec-{mode}.kubeconfig"
    kc.write_text(yaml.safe_dump(doc))
    return kc


@covers(
    "device:loop",
    "filesystem:xfs",
    "runtime:kubernetes",
    "runtime:kubernetes:testbed",
    "path:kubernetes/local",
    "workload:ycsb",
    "workload:ycsb@kubernetes",
)
def test_cassandra_under_ycsb_in_a_pod_passes_its_data_integrity_check(tmp_path, env):
    """A server workload in pods: the Cassandra node a pod (host network, its data on a local
    PersistentVolume of the file system under test), the YCSB clients on the host; every read verified."""
    workdir, e = env
    ycsb = {"workload": "a", "records": 1000, "runtime": 8, "warmup": 2, "threads": 4, "data_integrity": True}
    spec = _spec(workdir, devices=[{"type": "loop", "size": "4GiB"}], runtimes=["kubernetes"], paths=["local"])
    spec.update(workloads=[{"ycsb": ycsb}], loads=[{"name": "one", "containers": 1}])
    out = tmp_path / "out"
    cp = strata("run", write_spec(tmp_path / "s.yaml", spec), "-o", out, env=e, timeout=1800)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (r,) = results(out)
    assert r["status"] == "ok", r["flags"]["failed"]
    m = r["metrics"]
    assert m["errors"] == 0 and m["returns"]["VERIFY"] == {"OK": m["operations"]["READ"]}, m["returns"]
    assert m["operations"]["READ"] > 100 and r["stack_facts"]["runtime"]["bed"] is True
