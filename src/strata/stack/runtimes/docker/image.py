"""Workload images `strata-<name>:<hash>`, built without any registry, one per ImageSpec.

No daemon of ours ever pulls: the base is a Debian root file system made by
`debootstrap --variant=minbase` from the host's own Debian mirror, imported
with `docker import`; a Dockerfile then installs what the workload declares
(workloads/base.py `image`: Debian packages, binaries, whole directories) with apt-get
(`docker build --network host`, the legacy builder, which never resolves a
local `FROM` against a registry). The result is saved once per machine as a
tarball under `images_dir()` ($STRATA_IMAGE_DIR, else /var/cache/strata/images)
and loaded into each daemon that needs it (measured here: debootstrap ~50 s,
the build ~20-45 s, a load 3-10 s).

The tag's hash covers the Dockerfile text and the files' contents, so a new
engine binary makes a new image and an unchanged one is never rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Protocol

from strata.core.errors import StrataError, Unsupported
from strata.core.instances import Build, ImageSpec
from strata.core.jsondoc import JsonObject
from strata.core.proc import CommandError, sh
from strata.stack.buildcache import SUITE, build_lock, debootstrap, images_dir, scratch
from strata.stack.journal import Journal, Undos, need
from strata.stack.runtimes.docker import client as dk
from strata.stack.runtimes.docker.daemon import private_daemon

BASE_TAG = f"strata-base:{SUITE}"
BUILD_TIMEOUT_S = 1800


def undo_image(data: JsonObject) -> None:
    """An image strata loaded into the user's own daemon (a private daemon's go with its data-root)."""
    sock = need(data, "socket")
    if dk.answers(sock):
        dk.docker(sock, "rmi", need(data, "tag"), check=False, timeout=120)


def dockerfile(spec: ImageSpec) -> str:
    """The Dockerfile of an image: the base, the workload's packages, its files and trees."""
    lines = [f"FROM {BASE_TAG}", "ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8"]
    install = ""
    if spec.packages:
        install = (
            f"apt-get update && apt-get install -y --no-install-recommends {' '.join(sorted(spec.packages))} "
            "&& apt-get clean && rm -rf /var/lib/apt/lists/* && "
        )
    lines.append(f"RUN {install}mkdir -p /data /strata-out /strata-sync")
    if spec.files:
        lines.append("COPY bin/ /usr/local/bin/")
    for i, (dest, _) in enumerate(sorted(spec.trees)):
        lines.append(f"COPY tree{i}/ {dest}/")
    return "\n".join(lines) + "\n"


def image_key(spec: ImageSpec) -> str:
    return hashlib.sha256((dockerfile(spec) + spec.key()).encode()).hexdigest()[:12]


def image_tag(spec: ImageSpec) -> str:
    return f"strata-{spec.name}:{image_key(spec)}"


def tarball_path(spec: ImageSpec) -> Path:
    return images_dir() / f"strata-{spec.name}-{image_key(spec)}.tar"


def base_tarball(journal: Journal) -> Path:
    """The Debian minbase root file system as a tar, made once (call under the build lock)."""
    out = images_dir() / f"strata-base-{SUITE}.tar"
    if out.exists():
        return out
    with scratch(journal, "rootfs") as root:
        debootstrap(root, "the image base")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):  # the .debs debootstrap kept
            for f in (root / cache).glob("*"):
                if f.is_file():
                    f.unlink()
        tmp = out.with_suffix(".tmp")
        sh(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tmp), "."], timeout=BUILD_TIMEOUT_S)
        tmp.rename(out)
    return out


def build_image_tarball(spec: ImageSpec) -> Path:
    """The saved image of `spec`, built once per machine (also for `strata image build`)."""
    out = tarball_path(spec)
    if out.exists():
        return out
    with build_lock():
        if out.exists():
            return out
        journal = Journal(f"image-build-{os.getpid()}-{secrets.token_hex(2)}")
        try:
            base = base_tarball(journal)
            with scratch(journal, "ctx") as ctx:
                _context(ctx, spec)
                _build_in_private_daemon(journal, base, ctx, image_tag(spec), out)
        finally:
            journal.close()
    return out


def image_build(name: str, spec_of: Callable[[], ImageSpec]) -> Build:
    """An image as `strata prepare` builds it; `spec_of` is called late, as a spec may need a build first."""
    return Build(
        f"image {name}",
        lambda: image_tag(spec_of()),
        lambda: tarball_path(spec_of()).exists(),
        lambda: build_image_tarball(spec_of()),
        image=True,
    )


def _context(ctx: Path, spec: ImageSpec) -> None:
    (ctx / "Dockerfile").write_text(dockerfile(spec))
    (ctx / "bin").mkdir()
    for name, src in sorted(spec.files):
        if "/" in name or name in ("", ".", ".."):
            raise StrataError(f"image file name {name!r} is not a plain file name", "use a name like strata-wml")
        shutil.copy2(src, ctx / "bin" / name)
        os.chmod(ctx / "bin" / name, 0o755)
    for i, (_, src) in enumerate(sorted(spec.trees)):
        shutil.copytree(src, ctx / f"tree{i}", symlinks=True)


def _build_in_private_daemon(journal: Journal, base: Path, ctx: Path, tag: str, out: Path) -> None:
    last = None
    for driver in ("overlay2", "vfs"):  # overlay2 unless the state dir cannot hold it
        try:
            with (
                scratch(journal, "build-root") as root,
                private_daemon(driver, root / "docker", journal, remove_data_root=True) as daemon,
            ):
                dk.docker(daemon.sock, "import", str(base), BASE_TAG, timeout=BUILD_TIMEOUT_S)
                try:
                    dk.docker(
                        daemon.sock,
                        "build",
                        "--network",
                        "host",
                        "--pull=false",
                        "-t",
                        tag,
                        str(ctx),
                        timeout=BUILD_TIMEOUT_S,
                        env=dk.client_env(DOCKER_BUILDKIT="0"),
                    )
                except CommandError as e:
                    raise StrataError(
                        f"building {tag} failed: {e.stderr[-2000:]}", "check that apt-get can reach the Debian mirror"
                    )
                tmp = out.with_suffix(".tmp")
                dk.docker(daemon.sock, "save", "-o", str(tmp), tag, timeout=BUILD_TIMEOUT_S)
                tmp.rename(out)
                return
        except Unsupported as e:
            last = e
    raise StrataError(
        f"no private docker daemon could start to build the image: {last}",
        "run `strata doctor` to see which storage drivers work here",
    )


class ImageStore(Protocol):
    """Where `ensure_image` loads an image: a container session (docker's or podman's, session.py)."""

    sock: str
    journal: Journal
    loaded_images: list[tuple[str, int]]  # (tag, journal seq) loaded into the user's own daemon

    @property
    def private(self) -> bool: ...

    def docker(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]: ...


def ensure_image(session: ImageStore, spec: ImageSpec) -> str:
    """Make the image of `spec` present in the session's daemon (loading it at most once); its tag.

    The session is a container session (docker, podman): `docker(...)` runs its client; `private` is False
    for the user's own daemon, whose images strata loaded are removed at teardown."""
    tag = image_tag(spec)
    if session.docker("image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode != 0:
        tarball = build_image_tarball(spec)
        if not session.private:
            seq = session.journal.intent("docker-image", socket=session.sock, tag=tag)
            session.loaded_images.append((tag, seq))
        session.docker("load", "-q", "-i", str(tarball), timeout=BUILD_TIMEOUT_S)
    return tag


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "docker-image": undo_image,
}
