"""`docker:DRIVER`: containers of a private dockerd per (file system, storage driver), or of your own daemon.

The plugin of the runtime layer; the session (session.py) prepares the paths and runs the containers. What
Docker and Podman share as plugins (their paths, limits, image and words) is `ContainerEngine`, which Podman
(podman.py) derives from too, with its own store, checks and doctor.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Generic, Iterator, Literal, Self, TypeVar

from pydantic import Field, model_validator

from strata.core.instances import Build, ImageBuilder, ImageSpec, Isolation
from strata.core.jsondoc import JsonObject
from strata.core.params import Strict, shorthand
from strata.stack import buildcache
from strata.stack.filesystems.base import FilesystemParams, Mounted
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.paths import path_target_kind
from strata.stack.runtimes.docker import containers, daemon, image
from strata.stack.runtimes.docker.daemon import available, incompatible
from strata.stack.runtimes.docker.image import image_build
from strata.stack.runtimes.docker.probe import probe_driver
from strata.stack.runtimes.docker.session import LOG_PATHS, DockerSession, docker_session

DRIVERS = ("overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "zfs", "aufs", "system")
P = TypeVar("P", bound=Strict)


class DockerParams(Strict):
    """Containers of a private dockerd per (file system, storage driver), or of your own daemon."""

    type: Literal["docker"] = "docker"
    storage_driver: Literal["overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "zfs", "aufs", "system"] = (
        Field(
            default="overlay2",
            description="the storage driver of strata's private daemon; `system` = your running daemon, as it is",
        )
    )
    name: str = Field(default="", description="default: docker:DRIVER")

    @model_validator(mode="after")
    def _name(self) -> Self:
        if not self.name:
            object.__setattr__(self, "name", f"docker:{self.storage_driver}")
        return self


class ContainerEngine(ImageBuilder, Undoing, Generic[P]):
    """What a container engine's plugin is, Docker's and Podman's alike: the same paths (a server's log on a
    second volume, bind mount or tmpfs), concurrent instances with limits, images from a `docker save`
    tarball, `NAME:DRIVER` in a spec; and the undo actions of its containers, volumes and images, and of the
    private daemon and scratch directories an image build uses."""

    name: str
    baseline = False
    isolation: Isolation = "container"
    paths = ("layer", "volume", "bind", "tmpfs", "device")
    log_paths = LOG_PATHS
    concurrent = True
    limits = True
    undo: Undos = {**containers.UNDO, **image.UNDO, **daemon.UNDO, **buildcache.UNDO}

    def image_build(self, name: str, image_of: Callable[[], ImageSpec]) -> Build:
        """The workload's image as a `docker save` tarball, loaded into each daemon or store that runs it."""
        return image_build(name, image_of)

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text, "storage_driver")

    def target_kind(self, params: P, path: str) -> str:
        return path_target_kind(path)


class Docker(ContainerEngine[DockerParams]):
    name = "docker"
    params = DockerParams

    def available(self, host: JsonObject, params: DockerParams | None = None) -> str | None:
        return available(params.storage_driver if params else "overlay2", host)

    def impossible(self, params: DockerParams, fs: FilesystemParams) -> str | None:
        return incompatible(params.storage_driver, fs.type)

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]:
        """Each storage driver: the cheap check, then (with `probe`) a real daemon's own answer."""
        rows = []
        for driver in DRIVERS:
            reason = available(driver, host)
            if reason is None and driver != "system":
                reason = (
                    probe_driver(driver, Path("/var/tmp/strata-doctor"))
                    if probe
                    else "not probed (--quick): only the daemon itself can tell"
                )
            rows.append((f"docker:{driver}", reason))
        return rows

    @contextlib.contextmanager
    def provision(
        self, params: DockerParams, mounted: Mounted, journal: Journal, workdir: Path, host: JsonObject
    ) -> Iterator[DockerSession]:
        with docker_session(params.name, params.storage_driver, mounted, journal, workdir, host) as session:
            yield session


DOCKER = Docker()
