"""strata's agent on a Kubernetes node: what strata, away from the node, needs of it, over HTTP.

It runs in a privileged pod on each node a run uses (the node's PID namespace and network, the node's `/sys`
at /host/sys, strata's directory on the node at the same path as on the node), and strata reaches it only
through the API server's pod proxy, never through its own file system. It holds the instances' files (their out
and sync directories: staged by strata, written by the pods, fetched back), releases their start barrier, and
reads for strata's collectors what only the node can: its /proc/diskstats (flushes included), its CPU and
memory, the pods' cgroups, and the block device under a pod's volume. It is this one file and python3
(no strata import), so that its image is small and changes only when this file does.

Routes (JSON unless said; every one but `health` needs the run's token in X-Strata-Token):

    GET    /v1/health                       {node, version, time}
    GET    /v1/time                         {time}: the node's wall clock
    GET    /v1/facts                        {node, kernel, cpus, memory_bytes, kubelet_root}
    GET    /v1/read?path=P                  an allowed file's text (/proc/diskstats, /proc/stat, /proc/meminfo,
                                            /sys/class/block/*, /sys/block/*, /sys/fs/cgroup/*)
    GET    /v1/exists?path=R&path=R         {R: true|false} under the root
    GET    /v1/cat?path=R                   a file under the root (at most 1 MiB), as it is
    GET    /v1/tar?dir=R                    a tar of the directory R under the root
    POST   /v1/untar?dir=R                  a tar (the body) unpacked into R (regular files and directories only)
    POST   /v1/mkdirs                       {"paths": [R, ...]}
    POST   /v1/remove?dir=R                 R removed with everything in it
    POST   /v1/go?dir=R&lead_s=S            the barrier's `go` file in R: the start S from now, ns since the epoch
    POST   /v1/drop_caches                  sync, then the node's page cache dropped
    GET    /v1/disks?path=P                 {disks, fs, source, why}: the block device under a node path (as the
    GET    /v1/disks?pod=UID&volume=NAME    kubelet sees it), or under a pod's volume, and each disk below it; a
                                            block device's path (a block volume's) is that device
"""

from __future__ import annotations

import hmac
import io
import json
import os
import platform
import re
import shutil
import signal
import stat
import sys
import tarfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

VERSION = "1"
HOST_SYS = Path(os.environ.get("STRATA_AGENT_HOST_SYS", "/host/sys"))
MAX_BODY_BYTES = 256 << 20
PROC_READABLE = ("/proc/diskstats", "/proc/stat", "/proc/meminfo", "/proc/loadavg")
SYS_READABLE = re.compile(r"/sys/(class/block|block|dev/block|fs/cgroup)/[\w.,:/@=-]{1,400}")


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Agent:
    def __init__(self, root: Path, token: str, node: str) -> None:
        self.root, self.token, self.node = root.resolve(), token, node

    # -- files under the root -----------------------------------------------------------------

    def under(self, rel: str) -> Path:
        """A path under the root; never outside it."""
        p = (self.root / rel.lstrip("/")).resolve()
        if p != self.root and self.root not in p.parents:
            raise Refused(400, f"{rel!r} is not under the agent's root")
        return p

    def untar(self, rel: str, body: bytes) -> None:
        dest = self.under(rel)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:") as t:
            for m in t.getmembers():
                target = (dest / m.name).resolve()
                if target != dest and dest not in target.parents:
                    raise Refused(400, f"{m.name!r} leaves the directory")
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif m.isfile():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = t.extractfile(m)
                    with open(target, "wb") as out:
                        shutil.copyfileobj(src, out)  # type: ignore[arg-type]
                    os.chmod(target, m.mode & 0o777)
                else:
                    raise Refused(400, f"{m.name!r}: only regular files and directories")

    def tar(self, rel: str) -> bytes:
        src = self.under(rel)
        if not src.is_dir():
            raise Refused(404, f"{rel!r} is not a directory")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:") as t:
            t.add(str(src), arcname=".")
        return buf.getvalue()

    def go(self, rel: str, lead_s: float) -> float:
        """The barrier's release, in the node's own clock: the waiters sleep until the start it names."""
        d = self.under(rel)
        at = time.time() + lead_s
        tmp = d / "go.tmp"
        tmp.write_text(f"{int(at * 1e9)}\n")
        tmp.rename(d / "go")
        return at

    # -- the node ----------------------------------------------------------------------------------

    def read(self, path: str) -> str:
        """/proc's files the collectors read, and /sys's block and cgroup files (the node's /sys, at HOST_SYS):
        a sysfs path may climb through its links (a partition's `../queue`), never out of /sys."""
        if path in PROC_READABLE:
            real = Path(path)
        elif SYS_READABLE.fullmatch(path):
            real = Path(os.path.realpath(HOST_SYS / path[len("/sys/") :]))
            if HOST_SYS.resolve() not in real.parents:
                raise Refused(403, f"{path!r} leaves /sys")
        else:
            raise Refused(403, f"{path!r} is not among the files the agent reads")
        try:
            return real.read_text()
        except OSError as e:
            raise Refused(404, f"{path}: {e.strerror}")

    def facts(self) -> dict[str, object]:
        mem = next((int(x.split()[1]) * 1024 for x in Path("/proc/meminfo").read_text().splitlines()
                    if x.startswith("MemTotal:")), None)  # fmt: skip
        kpid = kubelet_pid(self.node)
        return {
            "node": self.node,
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "memory_bytes": mem,
            "kubelet_root": kubelet_root(kpid) if kpid else None,
            "agent_version": VERSION,
        }

    def disks(self, q: dict[str, list[str]]) -> dict[str, object]:
        kpid = kubelet_pid(self.node)
        if kpid is None:
            raise Refused(500, "no kubelet process on this node (the agent needs the node's PID namespace)")
        if "path" in q:
            path = q["path"][0]
        else:
            pod, volume = _one(q, "pod"), _one(q, "volume")
            if not re.fullmatch(r"[0-9a-f-]{8,64}", pod) or not re.fullmatch(r"[\w.-]{1,253}", volume):
                raise Refused(400, "pod is a pod's uid, volume a volume's name")
            path = volume_path(kpid, pod, volume)
        return disks_under(kpid, path)


def _one(q: dict[str, list[str]], key: str) -> str:
    v = q.get(key)
    if not v:
        raise Refused(400, f"give {key}=")
    return v[0]


def kubelet_pid(node: str = "") -> int | None:
    """The node's kubelet (its command line names `kubelet`): its mount namespace is the node's. Where several
    kubelets share the PID namespace (a test bed's nodes on one machine), the one whose --hostname-override names
    `node`."""
    found: list[tuple[int, str]] = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            argv = (p / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "kubelet" in [os.path.basename(a) for a in argv[:2]]:
            found.append((int(p.name), " ".join(argv)))
    mine = [pid for pid, line in found if f"--hostname-override={node}" in line.split()]
    every = mine or [pid for pid, _ in found]
    return every[0] if every else None


def kubelet_root(pid: int) -> str:
    argv = (Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")).split("\0")
    for i, a in enumerate(argv):
        if a.startswith("--root-dir="):
            return a.split("=", 1)[1]
        if a == "--root-dir" and i + 1 < len(argv):
            return argv[i + 1]
    return "/var/lib/kubelet"


def volume_path(kpid: int, pod: str, volume: str) -> str:
    """Where the kubelet put a pod's volume: pods/UID/volumes/<plugin>/NAME (a CSI volume's data in `mount`), or a
    block volume's link to its device, pods/UID/volumeDevices/<plugin>/NAME."""
    root = kubelet_root(kpid)
    for kind in ("volumes", "volumeDevices"):
        base = Path(f"/proc/{kpid}/root{root}/pods/{pod}/{kind}")
        for plugin in sorted(base.iterdir()) if base.is_dir() else []:
            d = plugin / volume
            if os.path.lexists(d):
                inner = d / "mount" if (d / "mount").is_dir() and plugin.name.endswith("~csi") else d
                return str(inner)[len(f"/proc/{kpid}/root") :]
    raise Refused(404, f"pod {pod} has no volume {volume} under {root}/pods (is it running on this node?)")


def in_node(kpid: int, path: str, hops: int = 8) -> Path:
    """`path` as the node sees it, reached from here through the kubelet's root (/proc/PID/root): a link at the end
    followed there too (an absolute one names the node's path, not this container's)."""
    root = f"/proc/{kpid}/root"
    for _ in range(hops):
        seen = Path(root + path)
        if not seen.is_symlink():
            return seen
        target = os.readlink(seen)
        path = target if target.startswith("/") else os.path.normpath(os.path.join(os.path.dirname(path), target))
    return Path(root + path)


def disks_under(kpid: int, path: str) -> dict[str, object]:
    """The disks holding `path` as the kubelet sees it: its block device (a partition's disk), then each disk
    below a loop device's backing file; none, and why, for a file system no block device holds. A block device's
    path (a block volume's device, or the kubelet's link to it) is that device itself (a partition keeps its
    name), then the disks below it."""
    try:
        st = os.stat(in_node(kpid, path))
    except OSError as e:
        raise Refused(404, f"{path}: {e.strerror}")
    if stat.S_ISBLK(st.st_mode):
        return _below(kpid, block_name(st.st_rdev, whole=False), "block device", path)
    fs, source = mount_of(kpid, path)
    dev = st.st_dev
    if os.major(dev) == 0 and source.startswith("/dev/"):  # btrfs and the like: an anonymous device
        try:
            dev = os.stat(Path(f"/proc/{kpid}/root") / source.lstrip("/")).st_rdev
        except OSError:
            pass
    if os.major(dev) == 0:
        return {"disks": [], "fs": fs, "source": source, "why": f"no block device holds it: {fs} ({source})"}
    return _below(kpid, block_name(dev), fs, source)


def _below(kpid: int, name: str, fs: str, source: str) -> dict[str, object]:
    """The disk `name` and each disk below it: a loop device's backing file's, as the node sees the file."""
    disks: list[str] = []
    while name and name not in disks and len(disks) < 8:
        disks.append(name)
        backing = HOST_SYS / "block" / name / "loop" / "backing_file"
        if not backing.exists():
            break
        try:
            below = os.stat(Path(f"/proc/{kpid}/root") / backing.read_text().strip().lstrip("/")).st_dev
        except OSError:
            break
        name = block_name(below) if os.major(below) else ""
    return {"disks": disks, "fs": fs, "source": source, "why": None}


def block_name(dev: int, whole: bool = True) -> str:
    """The kernel name of a block device's disk (a partition's parent disk; with `whole` False, the partition)."""
    link = HOST_SYS / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    try:
        real = Path(os.path.realpath(link))
    except OSError:
        return ""
    if whole and (real / "partition").exists():
        real = real.parent
    return real.name if real.name != f"{os.major(dev)}:{os.minor(dev)}" else ""


def mount_of(kpid: int, path: str) -> tuple[str, str]:
    """(file system type, source) of the mount that holds `path` in the kubelet's mount namespace."""
    best, found = -1, ("unknown", "unknown")
    for line in Path(f"/proc/{kpid}/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 2:
            continue
        point = fields[4].replace("\\040", " ")
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > best:
            best, found = len(point), (rest[0], rest[1])
    return found


class Handler(BaseHTTPRequestHandler):
    agent: Agent
    server_version = "strata-node-agent/" + VERSION

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: object) -> None:
        self._reply(status, json.dumps(doc).encode())

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        if not 0 <= n <= MAX_BODY_BYTES:
            raise Refused(413, f"a body of {n} bytes")
        return self.rfile.read(n)

    def _serve(self, method: str) -> None:
        url = urlparse(self.path)
        route, q = url.path.rstrip("/"), parse_qs(url.query)
        a = self.agent
        try:
            if route == "/v1/health" and method == "GET":
                return self._json(200, {"node": a.node, "version": VERSION, "time": time.time()})
            if not hmac.compare_digest(self.headers.get("X-Strata-Token", ""), a.token):
                raise Refused(401, "the run's token is missing or wrong")
            if method == "GET":
                if route == "/v1/time":
                    return self._json(200, {"time": time.time()})
                if route == "/v1/facts":
                    return self._json(200, a.facts())
                if route == "/v1/read":
                    return self._reply(200, a.read(_one(q, "path")).encode(), "text/plain")
                if route == "/v1/cat":
                    f = a.under(_one(q, "path"))
                    if not f.is_file() or f.stat().st_size > 1 << 20:
                        raise Refused(404, f"{_one(q, 'path')!r} is not a file of at most 1 MiB under the root")
                    return self._reply(200, f.read_bytes(), "text/plain")
                if route == "/v1/exists":
                    return self._json(200, {r: a.under(r).exists() for r in q.get("path", [])})
                if route == "/v1/tar":
                    return self._reply(200, a.tar(_one(q, "dir")), "application/x-tar")
                if route == "/v1/disks":
                    return self._json(200, a.disks(q))
            if method == "POST":
                if route == "/v1/untar":
                    a.untar(_one(q, "dir"), self._body())
                    return self._json(200, {})
                if route == "/v1/mkdirs":
                    for r in json.loads(self._body() or b"{}").get("paths", []):
                        a.under(str(r)).mkdir(parents=True, exist_ok=True)
                    return self._json(200, {})
                if route == "/v1/remove":
                    shutil.rmtree(a.under(_one(q, "dir")), ignore_errors=True)
                    return self._json(200, {})
                if route == "/v1/go":
                    lead = float(q.get("lead_s", ["0.25"])[0])
                    if not 0 <= lead <= 60:
                        raise Refused(400, "lead_s is from 0 to 60")
                    return self._json(200, {"at": a.go(_one(q, "dir"), lead)})
                if route == "/v1/drop_caches":
                    os.sync()
                    Path("/proc/sys/vm/drop_caches").write_text("3\n")
                    return self._json(200, {})
            raise Refused(404, f"no route {method} {route}")
        except Refused as e:
            self._json(e.status, {"error": str(e)})
        except (OSError, ValueError, tarfile.TarError) as e:
            self._json(500, {"error": f"{type(e).__name__}: {e}"})

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


def main() -> int:
    address = os.environ.get("STRATA_AGENT_ADDRESS", "")
    port = int(os.environ.get("STRATA_AGENT_PORT", "0"))
    token = os.environ.get("STRATA_AGENT_TOKEN", "")
    root = Path(os.environ.get("STRATA_AGENT_ROOT", ""))
    if not address or address in ("0.0.0.0", "::") or not port or len(token) < 16 or not root.is_absolute():
        print("strata-node-agent: STRATA_AGENT_ADDRESS (one address, never a wildcard), STRATA_AGENT_PORT, "
              "STRATA_AGENT_TOKEN (16 or more characters) and STRATA_AGENT_ROOT (absolute) are needed",
              file=sys.stderr)  # fmt: skip
        return 2
    root.mkdir(parents=True, exist_ok=True)
    Handler.agent = Agent(root, token, os.environ.get("STRATA_AGENT_NODE", platform.node()))
    server = ThreadingHTTPServer((address, port), Handler)

    def leave(signum: int, frame: object) -> None:
        """Deleted (strata's end, or its namespace deleted by `strata cleanup`): the run's files on the node go."""
        shutil.rmtree(root, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, leave)
    print(f"strata-node-agent {VERSION} on {address}:{port}, root {root}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
