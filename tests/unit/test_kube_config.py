"""The Kubernetes test bed's configuration: every address obeys the network rule; the build's go.mod."""

import ipaddress
import json
import re
import tarfile
from pathlib import Path

import pytest

from strata.stack.kube import build, config, images, pki

ALLOWED = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("192.0.2.0/24")]
IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:/(\d{1,2}))?(?![\d.])")


def plan(tmp_path: Path) -> config.Plan:
    return config.Plan("a1b2c3", tmp_path / "bed", "192.0.2.224/28", "192.0.2.208/28", 23790, 23800, 26443)


def all_text(p: config.Plan) -> str:
    kube = Path("/cache/kube")
    parts = [
        config.etcd_argv(p),
        config.apiserver_argv(kube, p),
        config.controller_manager_argv(kube, p),
        config.scheduler_argv(kube, p),
        config.kubelet_argv(kube, p),
        config.kubelet_config(p),
        config.cni_config(p),
        config.addresses(p),
        [config.containerd_config(p), config.kubeconfig(p, "admin")],
        [pki.extensions(c) for c in config.certificates(p)],
    ]
    return json.dumps(parts)


def test_every_configured_address_is_loopback_or_test_range(tmp_path):
    text = all_text(plan(tmp_path))
    found = IPV4.findall(text)
    assert len(found) > 10  # the scan sees the addresses (not vacuous)
    for addr, prefix in found:
        net = ipaddress.ip_network(f"{addr}/{prefix or 32}", strict=False)
        assert any(net.subnet_of(a) for a in ALLOWED), f"{addr}/{prefix} breaks the network rule"


def test_a_private_range_anywhere_would_be_caught(tmp_path):
    p = plan(tmp_path)
    bad = config.Plan(p.token, p.root, p.node_block, "10.96.0.0/28", 1, 2, 3)
    nets = [ipaddress.ip_network(f"{a}/{m or 32}", strict=False) for a, m in IPV4.findall(all_text(bad))]
    assert not all(any(n.subnet_of(a) for a in ALLOWED) for n in nets)


def test_node_pods_and_services_apart(tmp_path):
    p = plan(tmp_path)
    node = ipaddress.ip_network(p.node_block)
    first, last = (ipaddress.ip_address(a) for a in p.pod_range)
    assert p.node_addr == "192.0.2.225"
    assert first in node and last in node and ipaddress.ip_address(p.node_addr) < first
    assert last == ipaddress.ip_address("192.0.2.238")  # never the broadcast address
    assert not node.overlaps(ipaddress.ip_network(p.service_block))
    assert p.first_service_addr == "192.0.2.209"


def test_listeners_on_loopback_or_node_address(tmp_path):
    p = plan(tmp_path)
    api = config.apiserver_argv(Path("/k"), p)
    assert "--bind-address=127.0.0.1" in api and f"--advertise-address={p.node_addr}" in api
    assert f"--service-cluster-ip-range={p.service_block}" in api
    kubelet = config.kubelet_config(p)
    assert kubelet["address"] == p.node_addr and kubelet["readOnlyPort"] == 0 and kubelet["healthzPort"] == 0
    for argv in (config.controller_manager_argv(Path("/k"), p), config.scheduler_argv(Path("/k"), p)):
        assert "--secure-port=0" in argv  # they serve nothing
    etcd = " ".join(config.etcd_argv(p))
    assert "--listen-client-urls=http://127.0.0.1:23790" in etcd and "--listen-metrics-urls=" in etcd
    assert 'stream_server_address = "127.0.0.1"' in config.containerd_config(p)


def test_kubelet_runs_on_cgroup_v1_with_cgroupfs_and_no_dns(tmp_path):
    k = config.kubelet_config(plan(tmp_path))
    assert k["failCgroupV1"] is False and k["cgroupDriver"] == "cgroupfs"
    assert k["cgroupRoot"] == "/strata-k8s-a1b2c3"
    assert k["resolvConf"] == "" and "clusterDNS" not in k


def test_pods_have_no_default_route_and_no_masquerade(tmp_path):
    plugin = config.cni_config(plan(tmp_path))["plugins"][0]
    assert plugin["bridge"] == "skba1b2c3"
    assert not plugin["isGateway"] and not plugin["isDefaultGateway"] and not plugin["ipMasq"]
    assert plugin["ipam"]["routes"] == []


def test_go_mod_replaces_every_staging_module_by_its_published_version():
    mod = build.go_mod("v1.34.4")
    assert "require k8s.io/kubernetes v1.34.4" in mod
    replaces = re.findall(r"^\tk8s\.io/(\S+) => k8s\.io/(\S+) (\S+)$", mod, re.M)
    assert len(replaces) == len(build.STAGING) == 31
    assert all(a == b and v == "v0.34.4" for a, b, v in replaces)


def test_go_sources_ship_with_the_package():
    assert (build.GO_DIR / "main.go").is_file() and (build.GO_DIR / "pause" / "main.go").is_file()
    main = (build.GO_DIR / "main.go").read_text()
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        assert f'"{name}"' in main


def test_certificates_name_the_node_and_every_apiserver_address(tmp_path):
    p = plan(tmp_path)
    certs = {c.name: c for c in config.certificates(p)}
    assert certs["kubelet-client"].cn == "system:node:strata-a1b2c3" and certs["kubelet-client"].org == "system:nodes"
    ext = pki.extensions(certs["apiserver"])
    assert "IP:127.0.0.1" in ext and "IP:192.0.2.225" in ext and "IP:192.0.2.209" in ext
    assert "serverAuth" in ext and "clientAuth" in pki.extensions(certs["admin"])


@pytest.mark.parametrize("user", ["admin", "scheduler"])
def test_kubeconfig_points_at_the_loopback_apiserver(tmp_path, user):
    k = json.loads(config.kubeconfig(plan(tmp_path), user))
    assert k["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:26443"
    assert k["users"][0]["user"]["client-certificate"].endswith(f"pki/{user}.crt")


def test_pause_image_is_a_docker_save_tarball(tmp_path):
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF-not-really")
    out = images.pause_tarball(binary, tmp_path / "pause.tar")
    with tarfile.open(out) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        assert manifest[0]["RepoTags"] == [config.PAUSE_IMAGE]
        cfg = json.load(t.extractfile("config.json"))
        assert cfg["config"]["Entrypoint"] == ["/pause"]
        with tarfile.open(fileobj=t.extractfile("layer.tar")) as layer:
            assert layer.getnames() == ["pause"] and layer.getmember("pause").mode == 0o755


def test_sockets_stay_short_whatever_the_state_dir(tmp_path):
    # regression: containerd refused "<state>/containerd.sock.ttrpc": unix socket path too long (> 104)
    p = config.Plan("a1b2c3", tmp_path / ("x" * 120), "192.0.2.224/28", "192.0.2.208/28", 1, 2, 3)
    assert len(str(p.containerd_sock) + ".ttrpc") < 104
    assert f'address = "{p.containerd_sock}"' in config.containerd_config(p)
    assert config.kubelet_config(p)["containerRuntimeEndpoint"] == f"unix://{p.containerd_sock}"


def test_logs_and_runc_state_stay_in_the_bed(tmp_path):
    # regression: pod logs in /var/log/pods and runc state in /run/containerd/runc outlived the bed
    p = plan(tmp_path)
    assert config.kubelet_config(p)["podLogsDir"] == str(p.root / "pod-logs")
    assert f'Root = "{p.run_dir / "runc"}"' in config.containerd_config(p)
    assert "/var/lib/kubelet" in config.FIXED_HOST_DIRS and "/var/log/containers" in config.FIXED_HOST_DIRS


def test_missing_parts_name_their_packages(tmp_path):
    from strata.stack.kube import bed

    (tmp_path / "bridge").write_text("")
    missing = bed.missing_parts(
        which=lambda prog: None if prog in ("etcd", "ctr") else f"/usr/bin/{prog}", cni_dir=tmp_path
    )
    assert "etcd (package etcd-server)" in missing and "ctr (package containerd)" in missing
    assert f"CNI plugin {tmp_path / 'host-local'} (package containernetworking-plugins)" in missing
    assert not any("bridge" in m or "runc" in m for m in missing)


def multi(tmp_path: Path, n: int = 3) -> tuple[config.Plan, list[config.NodePlan]]:
    """A bed of `n` nodes: the control plane on the bridge's first address, node I on the next, pods apart."""
    p = config.Plan("a1b2c3", tmp_path / "bed", "192.0.2.224/28", "192.0.2.208/28", 23790, 23800, 26443, "192.0.2.225")
    addresses = [str(a) for a in ipaddress.ip_network(p.node_block).hosts()]
    pods = ["192.0.2.192/28", "192.0.2.176/28", "192.0.2.160/28"][:n]
    from strata.stack.kube import nodes

    return p, nodes.plans(p.token, p.root, addresses[1:], pods, p.server)


def test_a_bed_of_several_nodes_keeps_the_network_rule_on_every_node(tmp_path):
    """Issue 55: each node's flags and files, with the control plane's, name only loopback and 192.0.2.0/24."""
    p, ns = multi(tmp_path)
    kube = Path("/cache/kube")
    parts = [all_text(p)] + [
        json.dumps(
            [
                config.kubelet_argv(kube, n),
                config.kubelet_config(n),
                config.cni_config(n),
                config.containerd_config(n, {"192.0.2.10:5000": "/ca.crt"}),
                config.kubeconfig(n, "kubelet-client"),
                n.enter(["true"]),
            ]
        )
        for n in ns
    ]
    found = IPV4.findall("".join(parts))
    assert len(found) > 30
    for addr, prefix in found:
        net = ipaddress.ip_network(f"{addr}/{prefix or 32}", strict=False)
        assert any(net.subnet_of(a) for a in ALLOWED), f"{addr}/{prefix} breaks the network rule"


def test_the_apiserver_listens_where_the_nodes_reach_it(tmp_path):
    p, ns = multi(tmp_path)
    assert f"--bind-address={p.bind}" in config.apiserver_argv(Path("/k"), p) and p.server.startswith(
        "https://192.0.2.225:"
    )
    assert all(n.server == p.server for n in ns)
    assert all(
        json.loads(config.kubeconfig(n, "kubelet-client"))["clusters"][0]["cluster"]["server"] == p.server for n in ns
    )
    apiserver = next(c for c in config.certificates(p, ns) if c.name == "apiserver")
    assert "192.0.2.225" in apiserver.ips


def test_each_node_is_apart_from_the_others(tmp_path):
    """Names, addresses, pods' blocks, cgroup roots, sockets and namespaces: none shared between two nodes."""
    _, ns = multi(tmp_path)
    for attr in ("node_name", "node_addr", "node_block", "cgroup_root", "containerd_sock", "netns", "mount_ns", "root"):
        values = [getattr(n, attr) for n in ns]
        assert len(set(values)) == len(values), attr
    assert [n.node_addr for n in ns] == ["192.0.2.226", "192.0.2.227", "192.0.2.228"]
    assert all(len(str(n.containerd_sock)) + len(".ttrpc") < 104 for n in ns)
    n = ns[1]
    assert n.enter(["kubelet"])[:3] == ["nsenter", f"--net=/run/netns/{n.netns}", f"--mount={n.mount_ns}"]
    assert (
        config.kubelet_config(n)["address"] == n.node_addr and config.kubelet_config(n)["cgroupRoot"] == n.cgroup_root
    )


def test_each_node_has_its_own_kubelet_certificates(tmp_path):
    p, ns = multi(tmp_path, 2)
    certs = {c.name: c for c in config.certificates(p, ns)}
    assert "kubelet" not in certs and "kubelet-client" not in certs  # no node is this machine
    for n in ns:
        assert certs[f"kubelet-n{n.index}"].ips == (n.node_addr,)
        assert certs[f"kubelet-client-n{n.index}"].cn == f"system:node:{n.node_name}"


def test_containerd_trusts_a_registry_by_its_ca_only(tmp_path):
    toml = config.containerd_config(plan(tmp_path), {"192.0.2.40:5000": "/bed/registry-ca.crt"})
    assert '[plugins."io.containerd.grpc.v1.cri".registry.configs."192.0.2.40:5000".tls]' in toml
    assert 'ca_file = "/bed/registry-ca.crt"' in toml and "insecure_skip_verify" not in toml
    assert "registry.configs" not in config.containerd_config(plan(tmp_path))
