"""The machine-wide cache of built images and guests, and the scratch directories of a build.

Shared by every plugin that builds something from Debian without a registry
(the container images, the VM guest, the Cassandra image), so none of them
imports another runtime's modules to find it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject
from strata.core.proc import CommandError, sh
from strata.stack.journal import Journal, Undos, need
from strata.stack.procfs import remove_tree

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_TIMEOUT_S = 1800


def images_dir() -> Path:
    """Built once per machine and shared by every run (and test), whatever its state dir."""
    return Path(os.environ.get("STRATA_IMAGE_DIR", "/var/cache/strata/images"))


def debian_mirror(apt: Path = Path("/etc/apt")) -> str:
    """The host's own Debian mirror for `SUITE` (sources.list or deb822 .sources), else deb.debian.org."""
    for f in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]:
        with contextlib.suppress(OSError):
            for line in f.read_text().splitlines():
                m = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
                if m and m.group(2) == SUITE:
                    return m.group(1)
    for f in sorted((apt / "sources.list.d").glob("*.sources")):
        with contextlib.suppress(OSError):
            for stanza in re.split(r"\n\s*\n", f.read_text()):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
                if (
                    "deb" in fields.get("Types", "").split()
                    and SUITE in fields.get("Suites", "").split()
                    and fields.get("Enabled", "yes") != "no"
                    and fields.get("URIs")
                ):
                    return str(fields["URIs"].split()[0])
    return DEFAULT_MIRROR


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    images_dir().mkdir(parents=True, exist_ok=True)
    with open(images_dir() / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # two runs never build at once; the second finds the tarball
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _undo_build_dir(data: JsonObject) -> None:
    """A debootstrap target or a build context: unmount what debootstrap left (proc, maybe a
    bind of /dev), then delete without crossing file systems."""
    remove_tree(Path(need(data, "path")))


@contextlib.contextmanager
def scratch(journal: Journal, name: str) -> Iterator[Path]:
    path = images_dir() / f"{name}-{secrets.token_hex(4)}"
    seq = journal.intent("build-dir", path=str(path))
    try:
        path.mkdir(parents=True)
        yield path
    finally:
        _undo_build_dir({"path": str(path)})
        journal.release(seq)


def debootstrap(root: Path, what: str, include: tuple[str, ...] = ()) -> None:
    """A Debian `SUITE` minbase into `root` from the host's own mirror; `what` names it in the error."""
    if not shutil.which("debootstrap"):
        raise StrataError("debootstrap is not installed", "apt-get install debootstrap")
    mirror = debian_mirror()
    extra = [f"--include={','.join(include)}"] if include else []
    try:
        sh(["debootstrap", "--variant=minbase", *extra, SUITE, str(root), mirror], timeout=DEBOOTSTRAP_TIMEOUT_S)
    except CommandError as e:
        raise StrataError(
            f"debootstrap of {what} (Debian {SUITE} from {mirror}) failed: {e.stderr[-1500:]}",
            "check that the Debian mirror in /etc/apt/sources.list is reachable",
        )


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "build-dir": _undo_build_dir,
}
