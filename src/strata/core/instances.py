"""What passes between a workload and a runtime: requests, targets, outputs, images.

A workload builds the command each instance runs (workloads/base.py) and a
runtime runs the instances (stack/runtimes/base.py); neither imports the
other, both import this module. The start of every instance is a barrier:
each is created, runs its `prepare` step (laying out files, outside the
measured window), reports ready, and waits; the collectors start; then all
are released at once (`Running.go`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Protocol, runtime_checkable

from strata.core.jsondoc import JsonObject

# A check polled while instances run: (failure category, message) when something the
# trial depends on is gone (a daemon, a remote target), else None.
Watch = Callable[[], "tuple[str, str] | None"]

# What isolates an instance from the host, as its runtime declares it (a workload may refuse one: ycsb in a VM).
Isolation = Literal["process", "container", "vm"]


@dataclass(frozen=True)
class Target:
    """Where the workload does its I/O, as the instance sees it."""

    kind: str  # "dir" or "device"
    path: str  # directory or block device path inside the instance
    out_dir: str  # where the instance writes its output files
    host_tools: bool = True  # the instance runs on the host: host paths of tools are valid in it
    sync_dir: str = ""  # the start barrier's directory as the instance sees it (a tool that waits itself)
    # a server's log (PostgreSQL's WAL) on a path of its own, as the instance sees it; "": on `path` with its data
    log_path: str = ""


@dataclass(frozen=True)
class ImageSpec:
    """What an instance's image (container image, VM guest) must hold besides the base system.

    `packages`: Debian packages; `files`: {name: host file} copied to /usr/local/bin;
    `trees`: {absolute path in the image: host directory} copied in whole."""

    name: str = "tools"
    packages: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    trees: tuple[tuple[str, str], ...] = ()

    def key(self) -> str:
        """A hash of everything that goes into the image: an unchanged image is never rebuilt."""
        h = hashlib.sha256(json.dumps([self.name, sorted(self.packages)]).encode())
        for name, src in sorted(self.files):
            h.update(b"\0f" + name.encode() + b"\0" + hashlib.sha256(Path(src).read_bytes()).digest())
        for dest, src in sorted(self.trees):
            h.update(b"\0t" + dest.encode() + b"\0" + _tree_digest(Path(src)))
        return h.hexdigest()[:12]

    def grown(self, extras: Iterable[ImageSpec]) -> ImageSpec:
        """This image, named as it is, holding besides what each of `extras` declares: its packages and
        trees, each once, and its files (by name: the first wins). The order does not matter to `key`,
        which sorts, so an image grown by the same declarations keeps its cache key."""
        packages, files, trees = list(self.packages), dict(self.files), list(self.trees)
        for extra in extras:
            packages += [p for p in extra.packages if p not in packages]
            files.update({name: src for name, src in extra.files if name not in files})
            trees += [t for t in extra.trees if t not in trees]
        return ImageSpec(self.name, packages=tuple(packages), files=tuple(files.items()), trees=tuple(trees))


@dataclass(frozen=True)
class Build:
    """One thing strata builds once per machine and caches (an image tarball, the VM guest, the
    Kubernetes binaries, a workload's jars): what it is, its cache key (a new key is a new build),
    whether the cache holds it, and how to build it. `strata prepare` builds a spec's builds before
    any run needs them (experiment/prebuild.py); a run builds what is missing on first use."""

    name: str
    key: Callable[[], str]
    cached: Callable[[], bool]
    make: Callable[[], object]
    apart: bool = False  # built from sources of its own, beside the others (it needs none of them)
    image: bool = False  # an image of a workload's ImageSpec: built after the rest, which a spec may need


@runtime_checkable
class ImageBuilder(Protocol):
    """A runtime whose instances run from an image it builds from a workload's ImageSpec (a container
    image, a VM guest): how `strata prepare` builds it (`image_of` is called late: a spec may need a
    build of its own first, as a Cassandra image needs the jars)."""

    def image_build(self, name: str, image_of: Callable[[], ImageSpec]) -> Build: ...


@runtime_checkable
class Prebuilds(Protocol):
    """A workload or runtime that needs something built before its first trial, besides its image."""

    def builds(self, params: Any) -> list[Build]: ...


def _tree_digest(root: Path) -> bytes:
    """What a tree holds, by content: the same files copied elsewhere or at another time give the same
    digest (a fresh venv's site-packages in the agent image keeps its key from one clone to the next).
    Hashed once per process for the same listing of names, sizes and times."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    listing = tuple((str(p.relative_to(root)), st.st_size, st.st_mtime_ns) for p in files for st in [p.stat()])
    return _content_digest(str(root), listing)


@functools.lru_cache(maxsize=64)
def _content_digest(root: str, listing: tuple[tuple[str, int, int], ...]) -> bytes:
    h = hashlib.sha256()
    for rel, _, _ in listing:
        h.update(rel.encode() + b"\0" + hashlib.sha256((Path(root) / rel).read_bytes()).digest() + b"\n")
    return h.digest()


@dataclass
class InstanceRequest:
    index: int
    argv: list[str]
    out_dir: Path  # on the host; the instance sees it at `Target.out_dir`
    prepare: list[str] | None = None  # runs before the barrier, outside the measured window
    # "host": the instance talks to servers on 127.0.0.0/8; "node": it is a server other hosts reach at its host's
    # node address (a cluster that spans hosts), on that host's network as with "host"
    network: str = "none"
    image: ImageSpec | None = None  # what a container or guest image must hold
    barrier: str = "wrapper"  # "tool": the tool itself writes `ready` and waits for `go` (after its own setup)


@dataclass
class InstanceOutput:
    """What one instance left behind (files under `out_dir` on the host)."""

    index: int
    out_dir: Path
    returncode: int
    stderr: str
    start_time_s: float | None = None  # wall clock when the tool was exec'd (after the barrier)
    end_time_s: float | None = None
    facts: JsonObject = field(default_factory=dict)  # what the runtime says of the instance (stored with the result)


@runtime_checkable
class ReadsNode(Protocol):
    """A Running whose instances run on another machine (a Kubernetes node strata reaches through its agent):
    the collectors read that machine's /proc and /sys files through it (raising OSError when they cannot)."""

    def read(self, path: str) -> str: ...


class Running(Protocol):
    """Instances created, preparing or waiting at the barrier."""

    cgroups: list[dict[str, str]]  # per instance: controller -> cgroup dir on the host ({} if none)

    def ready(self, timeout_s: float) -> None: ...  # every `prepare` done; raises TrialFailure
    def go(self) -> float: ...  # release the barrier; returns the wall-clock time
    def wait(self, timeout_s: float, watch: Watch | None = None) -> list[InstanceOutput]: ...
    # Server instances (a database node) run until the workload tells them to stop: the workload polls
    # `check` meanwhile, which raises TrialFailure when an instance has ended (`oom` when the OOM killer
    # ended it, `instance_died` otherwise) or a watched layer died; it returns None while all run.
    def check(self, watch: Watch | None = None) -> None: ...
    def stop(self) -> None: ...  # kill whatever still runs (Ctrl-C, timeout); idempotent


@runtime_checkable
class FilesElsewhere(Protocol):
    """A Running whose instances' out and sync directories may be on another machine (a Kubernetes node strata
    reaches through its agent): a server workload's lifecycle writes its files there (`signal`: a server's turn
    to start, its stop, beside the copy in the trial's own sync dir) and reads its servers' logs there while
    they run (`output`, raising OSError when it cannot)."""

    def signal(self, name: str) -> None: ...
    def output(self, index: int, name: str) -> str: ...


@runtime_checkable
class Rendezvous(Protocol):
    """Instances that are one host's part of a trial across hosts (hosts/part.py `BarrierRunning`): the
    workload meets the other hosts' parts before it measures ("measure") and after ("measured"), and
    hands back what it measured (`report`). A local run's instances have no such capability."""

    def rendezvous(self, point: str = "measure", check: Callable[[], None] | None = None) -> None: ...
    def report(self, outputs: list[InstanceOutput]) -> None: ...
