"""The Cassandra image: the generic ImageSpec of the ycsb workload (Debian's Java 17 and the jars).

It is built by the image code every workload uses (stack/runtimes/docker/image.py): the debootstrap
base, `openjdk-17-jre-headless` from the host's Debian mirror, and the jars of
jars.ensure_cassandra() copied whole to /opt/cassandra/lib (ImageSpec `trees`). The tag's hash
covers the packages and every jar, so other jars make another image and the same jars never a
second one. strata writes the node's config at run time, so the image holds no configuration.
"""

from __future__ import annotations

from pathlib import Path

from strata.instances import ImageSpec
from strata.stack.runtimes.docker import client as dk
from strata.stack.runtimes.docker import image as dimage
from strata.workloads.ycsb import jars

LIB_IN_IMAGE = "/opt/cassandra/lib"
PACKAGES = ("openjdk-17-jre-headless", "procps")


def image_spec(cassandra_home: Path | None = None) -> ImageSpec:
    home = cassandra_home or jars.ensure_cassandra()
    return ImageSpec("cassandra", packages=PACKAGES, trees=((LIB_IN_IMAGE, str(home / "lib")),))


def ensure_image(sock: str, cassandra_home: Path | None = None) -> str:
    """The image present in the daemon at `sock` (for tools that drive a bare daemon: benches, tests)."""
    spec = image_spec(cassandra_home)
    tag = dimage.image_tag(spec)
    if dk.docker(sock, "image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode != 0:
        dk.docker(sock, "load", "-q", "-i", str(dimage.build_image_tarball(spec)), timeout=dimage.BUILD_TIMEOUT_S)
    return tag
