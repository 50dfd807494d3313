"""`docker create` command lines, and the wrapper each container runs (pure functions).

The wrapper is the start barrier: it runs the instance's prepare step (laying
out files: outside the measured window), marks the instance ready, waits for
the `go` file, records when the tool started and ended, and copies the
container's final cgroup counters into the out dir (its cgroup directory on
the host disappears with it). Output goes to files in the out dir, never to
container logs, which would be written to the data-root on the file system
under test during the measurement.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from strata.core import release
from strata.core.errors import StrataError
from strata.core.instances import InstanceRequest
from strata.core.params import Limits
from strata.stack.paths import DEVICE_IN_CONTAINER, OUT_DIR, SYNC_DIR, PathHandle

PREPARE_FAILED = 90  # the wrapper's exit code when the prepare step failed

# Counters each container copies from its own cgroup before it exits. v1 names first, then v2 names.
CGROUP_FINAL_FILES = (
    "cpuacct/cpuacct.usage",
    "cpu/cpu.stat",
    "memory/memory.usage_in_bytes",
    "memory/memory.max_usage_in_bytes",
    "memory/memory.failcnt",
    "memory/memory.oom_control",
    "blkio/blkio.throttle.io_service_bytes",
    "blkio/blkio.throttle.io_serviced",
    "cpu.stat",
    "memory.current",
    "memory.peak",
    "memory.events",
    "io.stat",
)

# Run as `sh -c WRAPPER strata-wrap ARGV...`; the prepare step, if any, is OUT_DIR/prepare.sh; with
# OUT_DIR/tool-barrier the tool itself writes `ready` and waits for `go` (after setting itself up).
WRAPPER = f"""exec >{OUT_DIR}/stdout 2>{OUT_DIR}/stderr
if [ -e {OUT_DIR}/prepare.sh ]; then
  sh {OUT_DIR}/prepare.sh >{OUT_DIR}/prepare.log 2>&1 || {{ cat {OUT_DIR}/prepare.log >&2; exit {PREPARE_FAILED}; }}
fi
if [ ! -e {OUT_DIR}/tool-barrier ]; then
  date +%s.%N >{OUT_DIR}/ready
{release.wait_sh(f"{SYNC_DIR}/{release.GO}")}fi
date +%s.%N >{OUT_DIR}/start
"$@"
rc=$?
date +%s.%N >{OUT_DIR}/end
for f in {" ".join(CGROUP_FINAL_FILES)}; do
  if [ -r /sys/fs/cgroup/$f ]; then echo "== $f"; cat /sys/fs/cgroup/$f; fi
done >{OUT_DIR}/cgroup-final.txt
exit $rc
"""


def prepare_script(request: InstanceRequest) -> str | None:
    """The prepare step as the wrapper runs it (None: nothing to prepare)."""
    return f"exec {shlex.join(request.prepare)}\n" if request.prepare else None


def stage(request: InstanceRequest) -> None:
    """The instance's out dir as the wrapper expects it (a container's or a pod's): what an earlier attempt left
    gone, the tool's own barrier marked, the prepare step written."""
    request.out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("ready", "start", "end", "stdout", "stderr", "cgroup-final.txt", "prepare.sh", "tool-barrier"):
        (request.out_dir / stale).unlink(missing_ok=True)
    if request.barrier == "tool":
        (request.out_dir / "tool-barrier").touch()
    script = prepare_script(request)
    if script:
        (request.out_dir / "prepare.sh").write_text(script)


def path_args(handle: PathHandle, index: int, device_path: str) -> list[str]:
    """The `create` options that give the container its path, at the handle's place in it (the data's at
    DATA_IN_CONTAINER, a server's log of its own at LOG_IN_CONTAINER)."""
    inst = handle.per_instance[index] if index < len(handle.per_instance) else {}
    dst = handle.target_path
    if handle.name == "layer":
        return []
    if handle.name == "volume":
        return ["--mount", f"type=volume,src={inst['volume']},dst={dst}"]
    if handle.name == "bind":
        return ["--mount", f"type=bind,src={inst['dir']},dst={dst}"]
    if handle.name == "tmpfs":
        return ["--tmpfs", dst]
    if handle.name == "device":
        return ["--device", f"{device_path}:{DEVICE_IN_CONTAINER}"]
    raise ValueError(f"unknown path {handle.name}")


def limit_args(limits: Limits, device_path: str) -> list[str]:
    args: list[str] = []
    if limits.cpus is not None:
        args += ["--cpus", f"{limits.cpus:g}"]
    if limits.memory is not None:
        args += ["--memory", str(limits.memory), "--memory-swap", str(limits.memory)]  # no swap
    for key, value in limits.io().items():
        args += [f"--device-{key.replace('_', '-')}", f"{device_path}:{value}"]  # read_bps: --device-read-bps
    return args


def create_argv(
    name: str,
    run_id: str,
    request: InstanceRequest,
    handle: PathHandle,
    limits: Limits,
    device_path: str,
    image: str,
    sync_dir: Path,
    extra: tuple[str, ...] = (),
) -> list[str]:
    for p in (request.out_dir, sync_dir):
        if "," in str(p):
            raise StrataError(f"{p}: docker --mount cannot take a path with a comma", "choose another results dir")
    network = "host" if request.network in ("host", "node") else "none"  # never a bridge (the network rule)
    return [
        "create",
        "--name",
        name,
        "--label",
        f"strata.run={run_id}",
        "--network",
        network,
        "--pull",
        "never",
        "--log-driver",
        "none",
        *extra,
        "--mount",
        f"type=bind,src={request.out_dir},dst={OUT_DIR}",
        "--mount",
        f"type=bind,src={sync_dir},dst={SYNC_DIR}",
        *path_args(handle, request.index, device_path),
        *(path_args(handle.log, request.index, device_path) if handle.log else ()),  # a server's log, beside
        *limit_args(limits, device_path),
        image,
        "/bin/sh",
        "-c",
        WRAPPER,
        "strata-wrap",
        *request.argv,
    ]
