"""Run strata for real (root, loop devices, file systems) and check nothing is left behind."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.integration import ledger


def write_spec(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec))
    return path


def strata(*args, env=None, timeout=900, check=None) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(
            [sys.executable, "-m", "strata.cli.main", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        ledger.command(list(args), None)
        raise
    ledger.command(list(args), cp.returncode)
    if check is not None:
        assert cp.returncode == check, f"exit {cp.returncode}\nstdout:\n{cp.stdout}\nstderr:\n{cp.stderr}"
    return cp


def _interruptible() -> None:
    # A job started in the background of a non-interactive shell (CI under nohup) inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt: give strata the terminal's default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_strata(*args, env=None) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "strata.cli.main", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=_interruptible,
    )
    ledger.started(list(args), proc)
    return proc


def results(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "trials").glob("*.json")) if ".attempt-" not in p.name]


def leftovers(workdir: Path) -> list[str]:
    """Mounts, mount points, loop devices and processes of ours still around (empty: clean)."""
    left = []
    for line in Path("/proc/mounts").read_text().splitlines():
        if str(workdir) in line.split(" ")[1]:
            left.append(f"mount {line.split(' ')[1]}")
    if (workdir / "mnt").exists():
        left.append(f"directory {workdir / 'mnt'}: {[c.name for c in (workdir / 'mnt').iterdir()]}")
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left += [f"loop {ln}" for ln in loops.splitlines() if str(workdir) in ln]
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(workdir) in cmd and int(p.name) != os.getpid():
                left.append(f"process {p.name}: {cmd[:120]}")
    return left


def wait_for(predicate, timeout_s: float, what: str, every_s: float = 0.2):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


def podman_left() -> list[str]:
    """conmon processes and cgroups of a strata podman store still around."""
    left = [str(d) for d in Path("/sys/fs/cgroup").glob("*/strata-podman-*")]
    left += [str(d) for d in Path("/run/strata").glob("p-*")]
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if os.path.basename(os.readlink(p / "exe")) == "conmon" and b"strata" in (p / "cmdline").read_bytes():
                    left.append(f"conmon {p.name}")
            except OSError:
                continue
    return left


# ---- probes of the host the suite runs on: assertions follow what the host has, not this VM's kind ----


def tool_version(*argv: str) -> str:
    """The version a tool prints of itself: `dockerd --version` 'Docker version 20.10.24+dfsg1, build ...',
    `sysbench --version` 'sysbench 1.0.20', `mariadbd --version` 'mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 ...',
    `postgres --version` 'postgres (PostgreSQL) 15.8'."""
    out = subprocess.run(list(argv), capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"(?:version |Ver |\) |^\S+ )(\d+\.\d+[\w.+~-]*)", out, re.M)
    assert m, f"{' '.join(argv)} printed no version: {out!r}"
    return m.group(1).rstrip(",")


def postgres_binary() -> str:
    """This host's PostgreSQL server (Debian's /usr/lib/postgresql/MAJOR/bin/postgres), the newest major."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    assert found, "no PostgreSQL server under /usr/lib/postgresql (scripts/install installs it)"
    return str(found[-1])


def kernel_has(module: str) -> bool:
    """The running kernel has `module`, loaded, built in or loadable (modprobe's dry run)."""
    if Path(f"/sys/module/{module}").exists():
        return True
    return subprocess.run(["modprobe", "-n", module], capture_output=True).returncode == 0


def cgroup_v2() -> bool:
    return Path("/sys/fs/cgroup/cgroup.controllers").exists()
