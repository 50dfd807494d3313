"""What each part of the Kubernetes test bed is told: addresses, flags and configuration files.

Pure functions of a `Plan` (no processes, no files), so unit tests can read
every address the cluster is given. The network rule: the node address, the
pod range and the service range are /28 blocks of 192.0.2.0/24 that
stack/netns.py finds free on this machine, every listener is on 127.0.0.1 or
the node address, and no component is told of any other range (no kube-proxy,
no cluster DNS, no pod CIDR allocation, no default route in a pod).

The node (its bridge) and its pods share one /28: the bridge holds the first
address, which is the node's InternalIP and the pods' gateway, and host-local
hands out the rest. The service /28 is allocated by the apiserver only: no
packet is ever sent to it (nothing routes or proxies it).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from strata.core.jsondoc import JsonObject

KUBERNETES_VERSION = "v1.34.4"  # the last minor whose kubelet runs on cgroup v1 by default (see docs)
BLOCK_PREFIX = 28
PAUSE_IMAGE = "strata.local/pause:1"
LOOPBACK = "127.0.0.1"


# Paths the kubelet and containerd use whatever they are told (constants in their code): the kubelet's
# device-plugin socket and its container-log symlinks, containerd's shim sockets and libcni's cache.
# A bed removes those it found missing (it made them); in the others only what points into the bed.
FIXED_HOST_DIRS = ("/var/lib/kubelet", "/var/log/containers", "/var/lib/cni", "/run/containerd")


@dataclass(frozen=True)
class Plan:
    token: str
    root: Path  # certificates, configuration, data of etcd, containerd and the kubelet, logs
    node_block: str  # the bridge's /28: node address first, pods after it (a bed of several: the nodes')
    service_block: str  # the apiserver's service range: allocated, never routed
    etcd_port: int
    etcd_peer_port: int
    apiserver_port: int
    # where the apiserver listens: the loopback, or on a bed of several nodes the bridge's first address, which
    # the nodes reach from their namespaces (and strata from this machine's)
    bind: str = LOOPBACK

    @property
    def node_name(self) -> str:
        return f"strata-{self.token}"

    @property
    def node_labels(self) -> str:
        return ""

    @property
    def bridge(self) -> str:
        return f"skb{self.token}"[:15]

    @property
    def node_addr(self) -> str:
        return str(next(ipaddress.ip_network(self.node_block).hosts()))

    @property
    def pod_range(self) -> tuple[str, str]:
        hosts = list(ipaddress.ip_network(self.node_block).hosts())
        return str(hosts[1]), str(hosts[-1])

    @property
    def first_service_addr(self) -> str:
        return str(next(ipaddress.ip_network(self.service_block).hosts()))

    @property
    def cgroup_root(self) -> str:
        """Where the kubelet puts its kubepods tree in every hierarchy (apart from any other cluster's)."""
        return f"/strata-k8s-{self.token}"

    @property
    def server(self) -> str:
        return f"https://{self.bind}:{self.apiserver_port}"

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    @property
    def run_dir(self) -> Path:
        """Sockets: short paths whatever the state dir (a unix socket's path, with containerd's ".ttrpc"
        suffix, must stay under 104 bytes)."""
        return Path(f"/run/strata-k8s-{self.token}")

    @property
    def kubelet_dir(self) -> Path:
        """The kubelet's root dir (pod volumes, its sockets): on disk, at a short path for the same reason."""
        return Path(f"/var/lib/strata-kubelet-{self.token}")

    @property
    def containerd_sock(self) -> Path:
        return self.run_dir / "containerd.sock"


# The node's disk on a bed of several nodes, mounted in the node's own mount namespace, and strata's agent's root
# there (bound onto that disk), both paths as the node's processes see them.
NODE_DATA = Path("/var/lib/strata-node")
BED_NODE_LABEL = "strata.io/bed-node"  # on a bed of several nodes node I carries strata.io/bed-node=I
AGENT_ROOT = Path("/var/lib/strata")


@dataclass(frozen=True)
class NodePlan:
    """One node of a bed of several: a test host (its own network and mount namespaces, containerd, kubelet,
    cgroup root and disk). It offers what the node-side functions below read of a `Plan` (NodeSide): its own
    directory, name, address, pods' /28 and sockets."""

    token: str
    index: int  # 1..N
    root: Path  # its certificates, configuration, containerd's data and logs, on this machine
    node_addr: str  # on the bed's bridge
    node_block: str  # its pods' /28, on a bridge inside its namespace
    server: str  # the apiserver, as the node reaches it

    @property
    def node_name(self) -> str:
        return f"strata-{self.token}-n{self.index}"

    @property
    def node_labels(self) -> str:
        """The node's index as a label, which a spec selects it by whatever the bed's token (BED_NODE_LABEL=2)."""
        return f"{BED_NODE_LABEL}={self.index}"

    @property
    def netns(self) -> str:
        return f"strata-k8s-{self.token}-n{self.index}"

    @property
    def bridge(self) -> str:
        return "strata-pods"  # inside the node's namespace: no other node's bridge shares its name space

    @property
    def pod_range(self) -> tuple[str, str]:
        hosts = list(ipaddress.ip_network(self.node_block).hosts())
        return str(hosts[0]), str(hosts[-1])

    @property
    def cgroup_root(self) -> str:
        return f"/strata-k8s-{self.token}-n{self.index}"

    @property
    def run_dir(self) -> Path:
        return Path(f"/run/strata-k8s-{self.token}-n{self.index}")

    @property
    def kubelet_dir(self) -> Path:
        return NODE_DATA / "kubelet"  # on the node's disk: emptyDir volumes are the node's

    @property
    def containerd_sock(self) -> Path:
        return self.run_dir / "containerd.sock"

    @property
    def mount_ns(self) -> Path:
        """The file that holds the node's mount namespace (a bind mount of /proc/PID/ns/mnt)."""
        return self.root.parent / "ns" / f"n{self.index}.mnt"

    @property
    def disk_file(self) -> Path:
        return self.root / "disk.img"

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def enter(self, argv: list[str]) -> list[str]:
        """`argv` run inside the node: its network and mount namespaces."""
        return ["nsenter", f"--net=/run/netns/{self.netns}", f"--mount={self.mount_ns}", "--", *argv]


# ---- certificates ------------------------------------------------------------------


@dataclass(frozen=True)
class CertSpec:
    name: str
    cn: str
    org: str = ""
    ips: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()
    server: bool = False


def certificates(plan: Plan, nodes: list[NodePlan] | None = None) -> list[CertSpec]:
    """Every certificate the cluster uses, each signed by the bed's own CA: the control plane's, and each node's
    kubelet's (`kubelet`, `kubelet-client`; on a bed of several nodes `kubelet-nI`, `kubelet-client-nI`)."""
    out = [
        CertSpec(
            "apiserver",
            "kube-apiserver",
            ips=tuple(dict.fromkeys((LOOPBACK, plan.bind, plan.node_addr, plan.first_service_addr))),
            dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            server=True,
        ),
        CertSpec("apiserver-kubelet-client", "kube-apiserver-kubelet-client", org="system:masters"),
        CertSpec("admin", "strata-admin", org="system:masters"),
        CertSpec("controller-manager", "system:kube-controller-manager"),
        CertSpec("scheduler", "system:kube-scheduler"),
    ]
    sides: list[tuple[str, NodeSide]] = [(f"-n{n.index}", n) for n in nodes] if nodes else [("", plan)]
    for suffix, n in sides:
        out.append(CertSpec(f"kubelet-client{suffix}", f"system:node:{n.node_name}", org="system:nodes"))
        out.append(CertSpec(f"kubelet{suffix}", n.node_name, ips=(n.node_addr,), dns=(n.node_name,), server=True))
    return out


class NodeSide(Protocol):
    """What the node-side configuration reads of a plan: the single node's `Plan`, or a `NodePlan`."""

    @property
    def token(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def node_name(self) -> str: ...
    @property
    def node_labels(self) -> str: ...
    @property
    def node_addr(self) -> str: ...
    @property
    def node_block(self) -> str: ...
    @property
    def bridge(self) -> str: ...
    @property
    def pod_range(self) -> tuple[str, str]: ...
    @property
    def cgroup_root(self) -> str: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def kubelet_dir(self) -> Path: ...
    @property
    def containerd_sock(self) -> Path: ...
    def path(self, *parts: str) -> Path: ...


def kubeconfig(plan: NodeSide, user: str) -> str:
    """A kubeconfig for `user` (a certificate name in the plan's pki) talking to the apiserver."""
    pki = plan.path("pki")
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "strata", "cluster": {"server": plan.server, "certificate-authority": str(pki / "ca.crt")}}
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate": str(pki / f"{user}.crt"),
                        "client-key": str(pki / f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "strata", "context": {"cluster": "strata", "user": user}}],
            "current-context": "strata",
        },
        indent=1,
    )


# ---- processes -------------------------------------------------------------------


def etcd_argv(plan: Plan) -> list[str]:
    client = f"http://{LOOPBACK}:{plan.etcd_port}"
    peer = f"http://{LOOPBACK}:{plan.etcd_peer_port}"
    return [
        "etcd",
        f"--name={plan.node_name}",
        f"--data-dir={plan.path('etcd')}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster={plan.node_name}={peer}",
        "--listen-metrics-urls=",
        "--log-level=warn",
    ]


def apiserver_argv(kube: Path, plan: Plan) -> list[str]:
    pki = plan.path("pki")
    return [
        str(kube),
        "kube-apiserver",
        f"--etcd-servers=http://{LOOPBACK}:{plan.etcd_port}",
        f"--bind-address={plan.bind}",
        f"--secure-port={plan.apiserver_port}",
        f"--advertise-address={plan.node_addr}",
        f"--service-cluster-ip-range={plan.service_block}",
        "--service-node-port-range=30000-30100",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        f"--kubelet-certificate-authority={pki / 'ca.crt'}",
        "--kubelet-preferred-address-types=InternalIP",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",  # strata's agent on a node is a privileged pod (its namespace's PSA admits it)
        "--enable-admission-plugins=NodeRestriction",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager_argv(kube: Path, plan: Plan) -> list[str]:
    pki = plan.path("pki")
    return [
        str(kube),
        "kube-controller-manager",
        f"--kubeconfig={plan.path('controller-manager.kubeconfig')}",
        "--leader-elect=false",
        "--secure-port=0",
        f"--service-cluster-ip-range={plan.service_block}",
        "--allocate-node-cidrs=false",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        "--profiling=false",
        "--v=1",
    ]


def scheduler_argv(kube: Path, plan: Plan) -> list[str]:
    return [
        str(kube),
        "kube-scheduler",
        f"--kubeconfig={plan.path('scheduler.kubeconfig')}",
        "--leader-elect=false",
        "--secure-port=0",
        "--profiling=false",
        "--v=1",
    ]


def kubelet_argv(kube: Path, plan: NodeSide) -> list[str]:
    return [
        str(kube),
        "kubelet",
        f"--config={plan.path('kubelet.json')}",
        f"--kubeconfig={plan.path('kubelet.kubeconfig')}",
        f"--root-dir={plan.kubelet_dir}",
        f"--cert-dir={plan.kubelet_dir / 'pki'}",
        f"--hostname-override={plan.node_name}",
        f"--node-ip={plan.node_addr}",
        *([f"--node-labels={plan.node_labels}"] if plan.node_labels else []),
        "--v=1",
    ]


def kubelet_config(plan: NodeSide) -> JsonObject:
    """KubeletConfiguration: cgroup v1 allowed explicitly (failCgroupV1), cgroupfs driver, listening on
    the node address only, no DNS handed to pods, eviction thresholds that a shared machine does not
    trip."""
    pki = plan.path("pki")
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": plan.cgroup_root,
        "podLogsDir": str(plan.path("pod-logs")),
        "containerRuntimeEndpoint": f"unix://{plan.containerd_sock}",
        "address": plan.node_addr,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "tlsCertFile": str(pki / "kubelet.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "resolvConf": "",
        "failSwapOn": False,
        "enableServer": True,
        "serializeImagePulls": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "podPidsLimit": 4096,
        "registerNode": True,
    }


def containerd_config(plan: NodeSide, registries: dict[str, str] | None = None) -> str:
    """containerd 1.6 (version 2 configuration): its own root, state and socket; runc with cgroupfs;
    the bed's CNI configuration; the pause image strata built; pod namespaces under its state dir;
    oom_score_adj never below containerd's own; `registries` (host:port -> CA file) trusted for pulls, their
    certificate verified against that CA (never skipped)."""
    c = plan.path("containerd")
    return f"""version = 2
root = "{c / "root"}"
state = "{c / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{plan.containerd_sock}"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "{LOOPBACK}"
  stream_server_port = "0"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # no CAP_SYS_RESOURCE here (a VM's container): a negative oom_score_adj (the sandboxes' -998, Guaranteed
  # pods' -997) fails runc's init ("can't get final child's PID from pipe: EOF"); clamp it at containerd's own
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{plan.run_dir / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{plan.path("cni")}"
""" + "".join(
        f"""  [plugins."io.containerd.grpc.v1.cri".registry.configs."{host}".tls]
    ca_file = "{ca}"
"""
        for host, ca in sorted((registries or {}).items())
    )


def cni_config(plan: NodeSide) -> JsonObject:
    """The pods' network: a veth each on the bed's bridge (which strata made and addressed), addresses
    from the node's /28, no default route (a pod reaches the node and its neighbours, nothing else)."""
    first, last = plan.pod_range
    return {
        "cniVersion": "0.4.0",
        "name": f"strata-{plan.token}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": plan.bridge,
                "isGateway": False,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": plan.node_block, "rangeStart": first, "rangeEnd": last}]],
                    "routes": [],
                    "dataDir": str(plan.path("cni", "ipam")),
                },
            },
        ],
    }


def addresses(plan: Plan) -> dict[str, str]:
    """Every address and range the cluster is configured with, by what it is (for the network rule's checks)."""
    return {
        "node": plan.node_addr,
        "node_block": plan.node_block,
        "pod_range": "-".join(plan.pod_range),
        "service_block": plan.service_block,
        "apiserver": f"{plan.bind}:{plan.apiserver_port}",
        "etcd": f"{LOOPBACK}:{plan.etcd_port}",
        "etcd_peer": f"{LOOPBACK}:{plan.etcd_peer_port}",
        "kubelet": f"{plan.node_addr}:10250",
        "containerd_stream": f"{LOOPBACK}:0",
    }
