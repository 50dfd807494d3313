"""Docker runtime: a private dockerd per (file system, storage driver), or the user's own.

Each private daemon keeps its images, layers and volumes (`--data-root`) on the
file system under test, so that the storage driver's I/O lands on the device
being measured (DESIGN.md "Private container engines"). It gets its own
socket, exec-root and pidfile under `/run/strata/<id>/` (short: a unix socket
path is limited to 108 bytes), no network (`--bridge=none`, no iptables, no
ip forwarding; containers run with `--network none`) and its own cgroup parent
`strata-<id>`, so that container cgroups are ours and findable after a crash.

Everything is journaled before it is made. The undo of a daemon works from the
journal alone, after `kill -9` of strata: containers outlive a killed dockerd
under containerd-shim, and dockerd bind-mounts its data-root onto itself and
leaves that mount behind when it fails to start (seen with 20.10 here).

This module is longer than ~500 lines because the daemon, its undo and the
containers it runs share the same paths and helpers; splitting them would
spread one resource's life over several files.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from strata.errors import StrataError, TrialFailure
from strata.proc import CommandError, sh
from strata.spec.model import Filesystem, Limits, LoopDevice, Load, Runtime
from strata.stack.filesystem import Mounted
from strata.stack.journal import Journal, undo_action
from strata.stack.runtime import OUT_DIR, SYNC_DIR, InstanceRequest, PathHandle, Unsupported
from strata.workloads.base import InstanceOutput

DOCKERD = "/usr/sbin/dockerd"          # Debian's docker.io 20.10 (HOST-NOTES)
DEBIAN_CLI = "/usr/bin/docker"          # Debian's client, the daemon's own version
SYSTEM_SOCKET = "/var/run/docker.sock"
RUN_ROOT = Path("/run/strata")
DAEMON_START_TIMEOUT_S = 60
DAEMON_STOP_TIMEOUT_S = 20
DEVICE_IN_CONTAINER = "/dev/strata-dev"
DATA_IN_CONTAINER = "/data"
STDERR_TAIL_CHARS = 4000
CREATE_PARALLEL = 8
# The daemon's own environment: a fixed PATH, and a proxy that does not exist so
# that nothing the daemon does by itself can reach a registry (the network rule).
DAEMON_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C",
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
}
# Client variables that would point the CLI somewhere else than `-H`.
CLIENT_ENV_DROP = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")

# Counters each container copies from its own cgroup before it exits (the host
# directory disappears with the container). v1 names first, then v2 names.
CGROUP_FINAL_FILES = (
    "cpuacct/cpuacct.usage", "cpu/cpu.stat", "memory/memory.usage_in_bytes", "memory/memory.max_usage_in_bytes",
    "memory/memory.failcnt", "memory/memory.oom_control", "blkio/blkio.throttle.io_service_bytes",
    "blkio/blkio.throttle.io_serviced",
    "cpu.stat", "memory.current", "memory.peak", "memory.events", "io.stat",
)

# The barrier and timing wrapper each container runs as `sh -c WRAPPER strata-wrap ARGV...`.
# Output goes to files in the out dir (not to container logs, which would be
# written to the data-root on the file system under test during the measurement).
WRAPPER = f"""exec >{OUT_DIR}/stdout 2>{OUT_DIR}/stderr
while [ ! -e {SYNC_DIR}/go ]; do sleep 0.005; done
date +%s.%N >{OUT_DIR}/start
"$@"
rc=$?
date +%s.%N >{OUT_DIR}/end
for f in {' '.join(CGROUP_FINAL_FILES)}; do
  if [ -r /sys/fs/cgroup/$f ]; then echo "== $f"; cat /sys/fs/cgroup/$f; fi
done >{OUT_DIR}/cgroup-final.txt
exit $rc
"""

CAVEATS = {
    "fuse-overlayfs": "fuse-overlayfs accepts O_DIRECT but does not honor it, and blkio throttles do not "
                      "apply through it (HOST-NOTES): layer-path numbers may come from the page cache",
    "vfs": "vfs copies every layer in full: container creation is slow and uses much space",
}


# ---- the docker CLI -----------------------------------------------------------

def docker_cli() -> str:
    """Debian's client matches the daemon (20.10); a newer client on PATH also works."""
    if os.access(DEBIAN_CLI, os.X_OK):
        return DEBIAN_CLI
    cli = shutil.which("docker")
    if not cli:
        raise StrataError("the docker client is not installed", "apt-get install docker.io")
    return cli


def client_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV_DROP}
    env.update(extra)
    return env


def docker(sock: str, *args: str, check: bool = True, timeout: float = 300,
           env: dict | None = None) -> subprocess.CompletedProcess:
    argv = [docker_cli(), "-H", f"unix://{sock}", *args]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or client_env())
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f} s")
    if check and cp.returncode != 0:
        raise CommandError(argv, cp.returncode, cp.stderr.strip() or cp.stdout.strip())
    return cp


def answers(sock: str, timeout: float = 5) -> bool:
    if not os.path.exists(sock):
        return False
    try:
        return docker(sock, "version", "--format", "{{.Server.Version}}", check=False, timeout=timeout).returncode == 0
    except CommandError:
        return False


def info(sock: str) -> dict:
    return json.loads(docker(sock, "info", "--format", "{{json .}}", timeout=30).stdout)


# ---- processes, mounts, cgroups (used by the undo, so they need nothing but paths) ----

def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """Alive and not a zombie (orphans are reaped late by this machine's init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


ENGINE_PROGRAMS = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "docker-init")


def procs_mentioning(marker: str) -> list[int]:
    """Container-engine processes whose command line contains `marker` (our unique run dir):
    dockerd, its containerd and their shims. Never anything else (a user's `less` of our log)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or marker not in _cmdline(int(p.name)):
            continue
        with contextlib.suppress(OSError):
            if os.path.basename(os.readlink(p / "exe")) in ENGINE_PROGRAMS:
                found.append(int(p.name))
    return found


def _signal_and_wait(pids: list[int], sig: int, timeout_s: float) -> list[int]:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = [p for p in pids if _running(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return pids


def cgroup_hierarchies(mountinfo: str | None = None, cgroups_table: str | None = None) -> dict[str, tuple[Path, str]]:
    """Mount point and mounted root of each cgroup hierarchy, keyed as /proc/<pid>/cgroup names
    it ("cpu", "cpu,cpuacct", "name=systemd"; "" for cgroup v2)."""
    found: dict[str, tuple[Path, str]] = {}
    table = cgroups_table if cgroups_table is not None else Path("/proc/cgroups").read_text()
    controllers = {l.split()[0] for l in table.splitlines() if l.strip() and not l.startswith("#")}
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        pre, _, post = line.partition(" - ")
        fstype, _, superopts = (post.split(" ") + ["", "", ""])[:3]
        fields = pre.split(" ")
        where = (Path(fields[4]), fields[3])
        if fstype == "cgroup2":
            found.setdefault("", where)
        elif fstype == "cgroup":
            known = [o for o in superopts.split(",") if o in controllers or o.startswith("name=")]
            found.setdefault(",".join(sorted(known)), where)
    return found


def proc_cgroups(pid: int | str) -> dict[str, Path]:
    """Host directory of each cgroup hierarchy a process is in (hierarchy key -> dir)."""
    mounts = cgroup_hierarchies()
    dirs: dict[str, Path] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        key = ",".join(sorted(controllers.split(","))) if controllers else ""
        if key in mounts:
            mountpoint, root = mounts[key]
            if rel == root or rel.startswith(root.rstrip("/") + "/"):  # a mount may show a subtree only
                dirs[key] = mountpoint / os.path.relpath(rel, root)
    return dirs


def own_cgroup_dirs(parent: str) -> list[str]:
    """Where a daemon started by this process puts `--cgroup-parent parent` (a relative parent
    is taken relative to the cgroup of the process that starts the container, in each hierarchy)."""
    return [str(d / parent) for d in proc_cgroups("self").values()]


def cgroup_dirs(parent: str, known: list[str] | None = None) -> list[Path]:
    """Every cgroup directory of `parent`: those journaled, and any at the top of a hierarchy."""
    dirs = {Path(d) for d in known or []}
    dirs.update(m / parent for m, _ in cgroup_hierarchies().values())
    return sorted(d for d in dirs if d.is_dir())


def cgroup_pids(dirs: list[Path]) -> set[int]:
    pids: set[int] = set()
    for top in dirs:
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in procs.read_text().split())
    return pids


def remove_cgroups(dirs: list[Path], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    for top in dirs:
        for d in sorted((p for p in [top, *top.rglob("*")] if p.is_dir()), key=lambda p: -len(p.parts)):
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)


def mounts_under(path: str, mountinfo: str | None = None) -> list[str]:
    """Mount points at or below `path`, innermost (most recently mounted) first."""
    found = []
    prefix = path.rstrip("/") + "/"
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    for line in text.splitlines():
        mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split(" ")[4])
        if mp == path.rstrip("/") or mp.startswith(prefix):
            found.append(mp)
    return found[::-1]


def unmount_under(path: str) -> None:
    for _ in range(20):  # stacked mounts on one point need one umount each
        mps = mounts_under(path)
        if not mps:
            return
        for mp in mps:
            if sh(["umount", mp], check=False).returncode != 0:
                sh(["umount", "-l", mp], check=False)
    raise StrataError(f"mounts under {path} do not go away: {mounts_under(path)[:5]}", "unmount them by hand")


def remove_tree(path: Path) -> None:
    """rm -rf, never crossing into another file system (nothing mounted below may be deleted)."""
    if not path.exists():
        return
    unmount_under(str(path))
    sh(["rm", "-rf", "--one-file-system", str(path)], timeout=1800)


def prime_blkio(device_path: str, cgroup_name: str, remove: bool) -> None:
    """Make blkio.throttle.io_service_bytes count on the device: the kernel keeps it empty until
    a throttle rule was set once on that device (HOST-NOTES). Set a huge one in the cgroup
    `cgroup_name` (below our own blkio cgroup), then remove the rule (and the cgroup if asked)."""
    blkio = proc_cgroups("self").get("blkio")
    if blkio is None:
        return  # cgroup v2 counts io.stat without this
    st = os.stat(device_path)
    dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    cgroup = blkio / cgroup_name
    cgroup.mkdir(exist_ok=True)
    try:
        knob = cgroup / "blkio.throttle.read_bps_device"
        with contextlib.suppress(OSError):
            knob.write_text(f"{dev} {1 << 50}")
            knob.write_text(f"{dev} 0")
    finally:
        if remove:
            with contextlib.suppress(OSError):
                cgroup.rmdir()


# ---- the daemon ---------------------------------------------------------------

@dataclass
class DaemonPaths:
    id: str
    data_root: Path

    @property
    def run_dir(self) -> Path:
        return RUN_ROOT / self.id

    @property
    def sock(self) -> str:
        return str(self.run_dir / "d.sock")

    @property
    def exec_root(self) -> Path:
        return self.run_dir / "x"

    @property
    def pidfile(self) -> Path:
        return self.run_dir / "d.pid"

    @property
    def log(self) -> Path:
        return self.run_dir / "dockerd.log"

    @property
    def config(self) -> Path:
        return self.run_dir / "daemon.json"

    @property
    def cgroup_parent(self) -> str:
        return f"strata-{self.id}"

    def journal_data(self, driver: str, remove_data_root: bool) -> dict:
        return {"id": self.id, "driver": driver, "sock": self.sock, "run_dir": str(self.run_dir),
                "exec_root": str(self.exec_root), "pidfile": str(self.pidfile), "data_root": str(self.data_root),
                "cgroup_parent": self.cgroup_parent, "cgroup_dirs": own_cgroup_dirs(self.cgroup_parent),
                "remove_data_root": remove_data_root}


def dockerd_argv(paths: DaemonPaths, driver: str) -> list[str]:
    return [DOCKERD, "--config-file", str(paths.config),  # never the user's /etc/docker/daemon.json
            "--data-root", str(paths.data_root), "--exec-root", str(paths.exec_root),
            "-H", f"unix://{paths.sock}", "--pidfile", str(paths.pidfile), "--storage-driver", driver,
            "--bridge=none", "--iptables=false", "--ip-masq=false", "--ip6tables=false", "--ip-forward=false",
            "--cgroup-parent", paths.cgroup_parent, "--shutdown-timeout", "5"]


def daemon_error(log: str) -> str:
    """The daemon's own reason for not starting: its error lines about the storage driver,
    then its final `failed to start daemon: ...` line."""
    errors, final = [], ""
    for line in log.splitlines():
        if line.startswith("failed to start daemon:"):
            final = line.strip()
        elif "level=fatal" in line or ("level=error" in line and ("storage-driver=" in line or "graphdriver" in line)):
            m = re.search(r'msg="((?:[^"\\]|\\.)*)"', line) or re.search(r"msg=(\S+)", line)
            if m:
                errors.append(m.group(1).replace('\\"', '"'))
    parts = list(dict.fromkeys(errors)) + ([final] if final else [])
    if parts:
        return "; ".join(parts)
    tail = [l for l in log.strip().splitlines() if "module=grpc" not in l][-3:]
    return "dockerd exited; its log ends: " + " | ".join(tail)


@dataclass
class Daemon:
    paths: DaemonPaths
    driver: str
    proc: subprocess.Popen
    start_s: float

    @property
    def sock(self) -> str:
        return self.paths.sock

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        with contextlib.suppress(OSError):
            return self.paths.log.read_text(errors="replace")[-chars:]
        return ""


def _wait_ready(paths: DaemonPaths, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unsupported(daemon_error(paths.log.read_text(errors="replace")))
        if answers(paths.sock, timeout=5):
            return
        time.sleep(0.05)
    raise Unsupported(f"dockerd did not answer within {DAEMON_START_TIMEOUT_S} s; "
                      + daemon_error(paths.log.read_text(errors="replace")))


@contextlib.contextmanager
def private_daemon(driver: str, data_root: Path, journal: Journal, *, remove_data_root: bool,
                   prime_device: str | None = None) -> Iterator[Daemon]:
    """Start dockerd, yield it once it answers; stop it and remove all it left on the way out."""
    paths = DaemonPaths(secrets.token_hex(4), data_root)
    data = paths.journal_data(driver, remove_data_root)
    seq = journal.intent("daemon", **data)
    proc = None
    started = False
    try:
        paths.run_dir.mkdir(parents=True)
        data_root.mkdir(parents=True, exist_ok=True)
        paths.config.write_text("{}\n")
        if prime_device:
            prime_blkio(prime_device, paths.cgroup_parent, remove=False)  # dockerd's parent; undo removes it
        t0 = time.monotonic()
        with open(paths.log, "w") as log:
            # own session: a Ctrl-C to strata's process group must not stop the daemon
            # before strata has removed its containers
            proc = subprocess.Popen(dockerd_argv(paths, driver), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=DAEMON_ENV, start_new_session=True)
        journal.update(seq, pid=proc.pid)
        _wait_ready(paths, proc)
        started = True
        yield Daemon(paths, driver, proc, time.monotonic() - t0)
    finally:
        _undo_daemon({**data, "pid": proc.pid if proc else None,
                      "remove_data_root": remove_data_root or not started})
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        journal.release(seq)


@undo_action("daemon")
def _undo_daemon(data: dict) -> None:
    """Stop a private dockerd and remove everything it made, from the journal entry alone."""
    sock, run_dir = data["sock"], data["run_dir"]
    if answers(sock):
        with contextlib.suppress(CommandError):  # a hung daemon: the cgroups below still get killed
            ids = docker(sock, "ps", "-aq", check=False, timeout=30).stdout.split()
            if ids:
                docker(sock, "rm", "-f", "-v", *ids, check=False, timeout=120)
    # containers outlive a killed dockerd under containerd-shim: kill what is in our cgroups
    cgroups = cgroup_dirs(data["cgroup_parent"], data.get("cgroup_dirs"))
    for _ in range(5):
        pids = cgroup_pids(cgroups)
        if not pids:
            break
        _signal_and_wait(sorted(pids), signal.SIGKILL, 5)
    pid = _daemon_pid(data)
    if pid and _signal_and_wait([pid], signal.SIGTERM, DAEMON_STOP_TIMEOUT_S):
        _signal_and_wait([pid], signal.SIGKILL, 5)
    # containerd and its shims carry our run dir in their command lines
    left = _signal_and_wait(procs_mentioning(run_dir.rstrip("/") + "/"), signal.SIGTERM, 5)
    _signal_and_wait(left, signal.SIGKILL, 5)
    for root in (data["data_root"], data["exec_root"], run_dir):
        unmount_under(root)
    remove_cgroups(cgroup_dirs(data["cgroup_parent"], data.get("cgroup_dirs")))
    remove_tree(Path(run_dir))
    if data.get("remove_data_root"):
        remove_tree(Path(data["data_root"]))


def _daemon_pid(data: dict) -> int | None:
    """The dockerd pid, only if that process really is our daemon (pids are reused)."""
    candidates = []
    with contextlib.suppress(OSError, ValueError):
        candidates.append(int(Path(data["pidfile"]).read_text().strip()))
    if data.get("pid"):
        candidates.append(int(data["pid"]))
    for pid in candidates:
        if f"unix://{data['sock']}" in _cmdline(pid) and _running(pid):
            return pid
    return None


@undo_action("container")
def _undo_container(data: dict) -> None:
    sock = data["socket"]
    if not answers(sock):
        if sock == SYSTEM_SOCKET:
            raise StrataError(f"the docker daemon at {sock} does not answer; container {data['name']} may remain",
                              "start the daemon and run `strata cleanup` again")
        return  # a private daemon: its own undo kills what ran in its cgroups
    docker(sock, "rm", "-f", "-v", data["name"], check=False, timeout=120)


@undo_action("volume")
def _undo_volume(data: dict) -> None:
    sock = data["socket"]
    if sock != SYSTEM_SOCKET and not answers(sock):
        return  # gone with the private daemon's data-root
    r = docker(sock, "volume", "rm", "-f", data["name"], check=False, timeout=120)
    if r.returncode != 0 and "no such volume" not in r.stderr.lower():
        raise CommandError(["docker", "volume", "rm", data["name"]], r.returncode, r.stderr)


@undo_action("docker-image")
def _undo_image(data: dict) -> None:
    """An image strata loaded into the user's own daemon (a private daemon's go with its data-root)."""
    if answers(data["socket"]):
        docker(data["socket"], "rmi", data["tag"], check=False, timeout=120)


# ---- command lines ------------------------------------------------------------

def path_args(handle: PathHandle, index: int, device_path: str) -> list[str]:
    inst = handle.per_instance[index] if index < len(handle.per_instance) else {}
    if handle.name == "layer":
        return []
    if handle.name == "volume":
        return ["--mount", f"type=volume,src={inst['volume']},dst={DATA_IN_CONTAINER}"]
    if handle.name == "bind":
        return ["--mount", f"type=bind,src={inst['dir']},dst={DATA_IN_CONTAINER}"]
    if handle.name == "tmpfs":
        return ["--tmpfs", DATA_IN_CONTAINER]
    if handle.name == "device":
        return ["--device", f"{device_path}:{DEVICE_IN_CONTAINER}"]
    raise ValueError(f"unknown path {handle.name}")


def limit_args(limits: Limits, device_path: str) -> list[str]:
    args: list[str] = []
    if limits.cpus is not None:
        args += ["--cpus", f"{limits.cpus:g}"]
    if limits.memory is not None:
        args += ["--memory", str(limits.memory), "--memory-swap", str(limits.memory)]  # no swap
    for key, flag in (("read_bps", "--device-read-bps"), ("write_bps", "--device-write-bps"),
                      ("read_iops", "--device-read-iops"), ("write_iops", "--device-write-iops")):
        value = getattr(limits, key)
        if value is not None:
            args += [flag, f"{device_path}:{value}"]
    return args


def create_argv(name: str, run_id: str, request: InstanceRequest, handle: PathHandle, limits: Limits,
                device_path: str, image: str, sync_dir: Path) -> list[str]:
    for p in (request.out_dir, sync_dir):
        if "," in str(p):
            raise StrataError(f"{p}: docker --mount cannot take a path with a comma", "choose another results dir")
    return ["create", "--name", name, "--label", f"strata.run={run_id}", "--network", "none", "--pull", "never",
            "--log-driver", "none",
            "--mount", f"type=bind,src={request.out_dir},dst={OUT_DIR}",
            "--mount", f"type=bind,src={sync_dir},dst={SYNC_DIR}",
            *path_args(handle, request.index, device_path), *limit_args(limits, device_path),
            image, "/bin/sh", "-c", WRAPPER, "strata-wrap", *request.argv]


def parse_cgroup_final(text: str) -> dict[str, str]:
    """cgroup-final.txt -> {"memory/memory.failcnt": "0", ...} (file path below /sys/fs/cgroup: content)."""
    out: dict[str, list[str]] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("== "):
            key = line[3:].strip()
            out[key] = []
        elif key is not None:
            out[key].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def host_cgroups(pid: int) -> dict[str, str]:
    """controller -> the container's cgroup dir on the host ("cpu", "memory", "blkio", ...;
    "unified" for the cgroup v2 hierarchy)."""
    dirs: dict[str, str] = {}
    for key, d in proc_cgroups(pid).items():
        if not key:
            dirs["unified"] = str(d)
        for c in key.split(","):
            if c and not c.startswith("name="):
                dirs[c] = str(d)
    return dirs


def _read_time(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-STDERR_TAIL_CHARS:]
    except OSError:
        return ""


def _safe(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", text)[:60]


# ---- containers ---------------------------------------------------------------

@dataclass
class Container:
    name: str
    seq: int
    request: InstanceRequest
    removed: bool = False


class DockerRunning:
    """Containers created, started and waiting at the barrier."""

    def __init__(self, session: "DockerSession", sync_dir: Path, limits: Limits):
        self.session = session
        self.sync_dir = sync_dir
        self.limits = limits
        self.containers: list[Container] = []
        self.cgroups: list[dict[str, str]] = []

    def go(self) -> float:
        t = time.time()
        (self.sync_dir / "go").touch()
        return t

    def wait(self, timeout_s: float) -> list[InstanceOutput]:
        codes = self._exit_codes(timeout_s)
        outputs, oom = [], []
        for c, code in zip(self.containers, codes):
            out = self._output(c, code)
            if out is None:
                oom.append(c.request.index)
                out = InstanceOutput(c.request.index, c.request.out_dir, code, _tail(c.request.out_dir / "stderr"))
            outputs.append(out)
        self.stop()
        if oom:
            raise TrialFailure("oom", f"instance(s) {oom} ran out of memory (limit {self.limits.memory} bytes) "
                                      f"and were killed by the OOM killer", outputs[oom[0]].stderr)
        return outputs

    def _exit_codes(self, timeout_s: float) -> list[int]:
        """`docker wait` for all, watching the daemon and the deadline."""
        s = self.session
        names = [c.name for c in self.containers]
        p = subprocess.Popen([docker_cli(), "-H", f"unix://{s.sock}", "wait", *names], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=client_env())
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                out, err = p.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                died = s.daemon is not None and not s.daemon.alive()
                if died or time.monotonic() > deadline:
                    p.kill()
                    p.communicate()
                    if died:
                        self._daemon_died()
                    self.stop()
                    raise TrialFailure("timeout", f"{len(names)} container(s) still ran {timeout_s:.0f} s "
                                                  f"after their expected end")
        if p.returncode != 0:
            if not s.alive():
                self._daemon_died()
            self.stop()
            raise TrialFailure("runtime", f"docker wait failed: {err.strip()}")
        return [int(x) for x in out.split()]

    def _output(self, c: Container, code: int) -> InstanceOutput | None:
        """What one exited container left; None if the OOM killer struck in it."""
        state = json.loads(self.session.docker("inspect", "--format", "{{json .State}}", c.name).stdout)
        out_dir = c.request.out_dir
        final_file = out_dir / "cgroup-final.txt"
        final = parse_cgroup_final(final_file.read_text()) if final_file.exists() else {}
        if state.get("OOMKilled") or re.search(r"^oom_kill [1-9]", final.get("memory/memory.oom_control", ""), re.M):
            return None
        return InstanceOutput(c.request.index, out_dir, code, _tail(out_dir / "stderr"),
                              _read_time(out_dir / "start"), _read_time(out_dir / "end"))

    def _daemon_died(self) -> None:
        s = self.session
        code = s.daemon.proc.poll() if s.daemon else None
        log = s.daemon.log_tail() if s.daemon else ""
        with contextlib.suppress(Exception):
            self.stop()
        raise TrialFailure("daemon_died", f"dockerd ({s.name}) exited with code {code} during the trial", log)

    def stop(self) -> None:
        """Kill and remove every container of this run (idempotent)."""
        s = self.session
        live = [c for c in self.containers if not c.removed]
        if live and s.alive():
            try:
                r = s.docker("rm", "-f", "-v", *[c.name for c in live], check=False, timeout=180)
                gone = r.returncode == 0 or all("no such container" in l.lower() for l in r.stderr.splitlines())
            except CommandError:
                gone = False
            if not gone and s.daemon is None:
                # the user's daemon keeps them: leave the journal entries for `strata cleanup`
                raise StrataError(f"could not remove containers {[c.name for c in live]} from {s.sock}",
                                  "run `strata cleanup` once the docker daemon answers")
            # a private daemon's teardown kills whatever is left in its cgroups
        for c in live:
            c.removed = True
            s.journal.release(c.seq)
        with contextlib.suppress(ValueError):
            s.running.remove(self)


# ---- the session --------------------------------------------------------------

class DockerSession:
    """A docker daemon (private or the user's) with the stack's mounted file system under it."""

    def __init__(self, runtime: Runtime, mounted: Mounted, journal: Journal, sock: str, run_id: str,
                 daemon: Daemon | None, facts: dict):
        self.name = runtime.name
        self.mounted = mounted
        self.journal = journal
        self.sock = sock
        self.id = run_id
        self.daemon = daemon
        self.facts = facts
        self.image: str | None = None
        self.loaded_images: list[tuple[str, int]] = []   # (tag, journal seq), user's daemon only
        self.running: list[DockerRunning] = []
        self._count = 0

    @property
    def data_root(self) -> str:
        return self.facts.get("data_root", "")

    def docker(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return docker(self.sock, *args, **kw)

    def alive(self) -> bool:
        return self.daemon.alive() if self.daemon is not None else answers(self.sock)

    def out_dir_in_instance(self, host_out: Path) -> str:
        return OUT_DIR

    def _need_fs(self, name: str) -> Path:
        if self.mounted.mountpoint is None:
            raise Unsupported(f"the {name} path needs a file system on the device under test (this stack is raw)")
        return self.mounted.mountpoint

    @contextlib.contextmanager
    def path(self, name: str, trial_dir: Path, load: Load) -> Iterator[PathHandle]:
        n = load.containers
        if name in ("layer", "tmpfs"):
            if name == "layer" and self.daemon is not None:
                self._need_fs(name)
            yield PathHandle(name, "dir", DATA_IN_CONTAINER, None, [{} for _ in range(n)])
        elif name == "device":
            if self.mounted.mountpoint is not None:
                raise Unsupported(f"the device path writes the raw device, which holds the mounted "
                                  f"{self.mounted.fs.type} of this stack: use filesystem raw")
            yield PathHandle(name, "device", DEVICE_IN_CONTAINER, self.mounted.device.path, [{} for _ in range(n)])
        elif name == "volume":
            if self.daemon is not None:
                self._need_fs(name)
            with self._volumes(trial_dir, n) as handle:
                yield handle
        elif name == "bind":
            with self._binds(trial_dir, n) as handle:
                yield handle
        else:
            raise Unsupported(f"unknown path {name}")

    @contextlib.contextmanager
    def _volumes(self, trial_dir: Path, n: int) -> Iterator[PathHandle]:
        made: list[dict] = []
        try:
            for i in range(n):
                vname = f"strata-{self.id}-{_safe(trial_dir.name)}-{i}"
                seq = self.journal.intent("volume", socket=self.sock, name=vname)
                made.append({"volume": vname, "seq": seq})
                self.docker("volume", "create", "--label", f"strata.run={self.id}", vname)
            yield PathHandle("volume", "dir", DATA_IN_CONTAINER, str(Path(self.data_root) / "volumes"), made)
        finally:
            for v in made:
                _undo_volume({"socket": self.sock, "name": v["volume"]})
                self.journal.release(v["seq"])

    @contextlib.contextmanager
    def _binds(self, trial_dir: Path, n: int) -> Iterator[PathHandle]:
        base = self._need_fs("bind") / "strata-bind" / _safe(trial_dir.name)
        dirs = [base / str(i) for i in range(n)]
        try:
            for d in dirs:
                d.mkdir(parents=True, exist_ok=True)
            yield PathHandle("bind", "dir", DATA_IN_CONTAINER, str(base), [{"dir": str(d)} for d in dirs])
        finally:
            remove_tree(base)
            with contextlib.suppress(OSError):
                base.parent.rmdir()

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> DockerRunning:
        sync_dir.mkdir(parents=True, exist_ok=True)
        (sync_dir / "go").unlink(missing_ok=True)
        running = DockerRunning(self, sync_dir, load.limits)
        self.running.append(running)
        try:
            if self.image is None:
                from strata.stack.image import ensure_image  # image.py builds on this module
                ensure_image(self)
            argvs = []
            for r in requests:  # journal first, one writer
                r.out_dir.mkdir(parents=True, exist_ok=True)
                for stale in ("start", "end", "stdout", "stderr", "cgroup-final.txt"):
                    (r.out_dir / stale).unlink(missing_ok=True)
                self._count += 1
                name = f"strata-{self.id}-{self._count}"
                seq = self.journal.intent("container", socket=self.sock, name=name)
                running.containers.append(Container(name, seq, r))
                argvs.append(create_argv(name, self.id, r, handle, load.limits, self.mounted.device.path,
                                         self.image, sync_dir))
            # `docker create` takes ~0.3 s (seconds with vfs): create many at once
            with concurrent.futures.ThreadPoolExecutor(CREATE_PARALLEL) as pool:
                ids = list(pool.map(lambda argv: self.docker(*argv, timeout=600).stdout.strip(), argvs))
            for c, cid in zip(running.containers, ids):
                self.journal.update(c.seq, id=cid)
            names = [c.name for c in running.containers]
            self.docker("start", *names, timeout=600)
            pids = self.docker("inspect", "--format", "{{.State.Pid}}", *names).stdout.split()
            running.cgroups = [host_cgroups(int(p)) if int(p) > 0 else {} for p in pids]
        except (CommandError, OSError) as e:
            with contextlib.suppress(CommandError, StrataError):
                running.stop()
            if not self.alive():
                raise TrialFailure("daemon_died", f"dockerd ({self.name}) died while creating containers",
                                   self.daemon.log_tail() if self.daemon else "")
            raise TrialFailure("container_start", f"could not start the containers: {e}")
        return running

    def close(self) -> None:
        """Remove our containers and (on the user's daemon) the images we loaded."""
        for r in list(self.running):
            r.stop()
        for tag, seq in self.loaded_images:
            _undo_image({"socket": self.sock, "tag": tag})
            self.journal.release(seq)
        self.loaded_images.clear()


def session_facts(sock: str, kind: str, mounted: Mounted) -> dict:
    i = info(sock)
    status = {k: v for k, v in (i.get("DriverStatus") or [])}
    root = i.get("DockerRootDir", "")
    backing = status.get("Backing Filesystem") or sh(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", root], check=False).stdout.strip()
    facts = {"runtime": "docker", "daemon": kind, "socket": sock, "dockerd_version": i.get("ServerVersion"),
             "storage_driver": i.get("Driver"), "driver_status": status, "data_root": root,
             "backing_fs": backing, "cgroup_driver": i.get("CgroupDriver"), "cgroup_version": i.get("CgroupVersion"),
             "kernel": i.get("KernelVersion"), "warnings": i.get("Warnings") or []}
    if i.get("Driver") in CAVEATS:
        facts["caveats"] = [CAVEATS[i["Driver"]]]
    return facts


# ---- provisioning -------------------------------------------------------------

@contextlib.contextmanager
def provision_docker(runtime: Runtime, mounted: Mounted, journal: Journal, workdir: Path,
                     host: dict) -> Iterator[DockerSession]:
    driver = runtime.storage_driver or "overlay2"
    if driver == "system":
        if not answers(SYSTEM_SOCKET):
            raise Unsupported(f"no docker daemon answers at {SYSTEM_SOCKET}")
        prime_blkio(mounted.device.path, f"strata-prime-{secrets.token_hex(4)}", remove=True)
        session = DockerSession(runtime, mounted, journal, SYSTEM_SOCKET, secrets.token_hex(4), None,
                                session_facts(SYSTEM_SOCKET, "system", mounted))
        try:
            yield session
        finally:
            session.close()
        return
    reason = available(driver, host)
    if reason:
        raise Unsupported(reason)
    raw = mounted.mountpoint is None
    data_root = (workdir / f"docker-{driver}-{secrets.token_hex(3)}") if raw else mounted.mountpoint / "docker"
    with private_daemon(driver, data_root, journal, remove_data_root=raw,
                        prime_device=mounted.device.path) as daemon:
        facts = {**session_facts(daemon.sock, "private", mounted), "daemon_start_s": round(daemon.start_s, 3),
                 "cgroup_parent": daemon.paths.cgroup_parent}
        session = DockerSession(runtime, mounted, journal, daemon.sock, daemon.paths.id, daemon, facts)
        try:
            yield session
        finally:
            session.close()


def available(driver: str, host: dict) -> str | None:
    """A cheap check, without starting a daemon (STYLE.md item 3); the daemon has the last word."""
    if os.geteuid() != 0:
        return "needs root"
    if not (os.access(DEBIAN_CLI, os.X_OK) or shutil.which("docker")):
        return "the docker client is not installed (apt-get install docker.io)"
    if driver == "system":
        return None if os.path.exists(SYSTEM_SOCKET) else f"no docker daemon socket at {SYSTEM_SOCKET}"
    if not os.access(DOCKERD, os.X_OK):
        return f"{DOCKERD} not found (apt-get install docker.io)"
    if driver == "fuse-overlayfs":
        if not shutil.which("fuse-overlayfs"):
            return "the fuse-overlayfs binary is not installed (apt-get install fuse-overlayfs)"
        if not os.path.exists("/dev/fuse"):
            return "no /dev/fuse (modprobe fuse)"
    if driver == "btrfs" and "btrfs" not in Path("/proc/filesystems").read_text().split():
        return "the kernel has no btrfs (the btrfs driver needs its data-root on a btrfs file system)"
    return None


def incompatible(driver: str, fs_type: str) -> str | None:
    """Combinations that cannot exist, whatever the host (DESIGN.md: skipped with the reason)."""
    if driver == "btrfs" and fs_type != "btrfs":
        return f"the btrfs storage driver needs its data-root on a btrfs file system, not {fs_type}"
    if driver == "zfs":
        return "the zfs storage driver needs its data-root on a zfs dataset; strata does not create zfs pools"
    return None


def probe_driver(driver: str, workdir: Path) -> str | None:
    """Really start a daemon with `driver` on a small loop file system (for `strata doctor`):
    None if it works, else the daemon's own error text."""
    from strata.stack.device import provision_loop
    from strata.stack.filesystem import provision as provision_fs

    reason = available(driver, {})
    if reason or driver == "system":
        return reason if reason or answers(SYSTEM_SOCKET) else f"no docker daemon answers at {SYSTEM_SOCKET}"
    tag = secrets.token_hex(3)
    journal = Journal(f"probe-{driver}-{tag}")
    fs_type = "btrfs" if driver == "btrfs" else "ext4"
    try:
        with provision_loop(LoopDevice(name=f"probe-{tag}", size=256 << 20), journal, workdir) as dev, \
                provision_fs(Filesystem(type=fs_type), dev, journal, workdir) as mounted, \
                provision_docker(Runtime(type="docker", storage_driver=driver), mounted, journal, workdir, {}):
            return None
    except Unsupported as e:
        return str(e)
    finally:
        journal.close()
