"""The image `strata-cassandra:<hash>`: Debian's Java 17 and the Cassandra jars, no registry.

Built like the fio image (strata.stack.image): the same debootstrap base tarball, imported
into a private daemon, then `docker build --network host` installs `openjdk-17-jre-headless`
from the host's Debian mirror and copies the jars of jars.ensure_cassandra() to
/opt/cassandra/lib. The result is saved once per machine as a tarball in the image cache and
loaded into each daemon that runs a node. The tag's hash covers the Dockerfile and the jar
manifest (every jar's name and sha256), so other jars make another image and the same jars
never a second one. strata writes the node's config at run time (bind-mounted), so the
image holds no configuration.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from pathlib import Path

from strata.stack.buildcache import build_lock, images_dir, scratch
from strata.stack.journal import Journal
from strata.stack.runtimes.docker import client as dk
from strata.stack.runtimes.docker.image import BASE_TAG, BUILD_TIMEOUT_S, _build_in_private_daemon, base_tarball
from strata.workloads.ycsb import jars
from strata.workloads.ycsb.node import CONF_IN_CONTAINER, DATA_IN_CONTAINER, LIB_IN_CONTAINER, LOG_IN_CONTAINER

DOCKERFILE = f"""FROM {BASE_TAG}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \\
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \\
 && apt-get clean && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p {DATA_IN_CONTAINER} {CONF_IN_CONTAINER} {LOG_IN_CONTAINER}
COPY lib/ {LIB_IN_CONTAINER}/
"""


def image_key(cassandra_home: Path) -> str:
    h = hashlib.sha256(DOCKERFILE.encode())
    h.update(b"\0" + jars.manifest_digest(cassandra_home).encode())
    return h.hexdigest()[:12]


def image_tag(cassandra_home: Path) -> str:
    return f"strata-cassandra:{image_key(cassandra_home)}"


def tarball_path(cassandra_home: Path) -> Path:
    return images_dir() / f"strata-cassandra-{image_key(cassandra_home)}.tar"


def build_image_tarball(cassandra_home: Path | None = None) -> Path:
    """The saved image for these jars, built once per machine."""
    home = cassandra_home or jars.ensure_cassandra()
    out = tarball_path(home)
    if out.exists():
        return out
    with build_lock():
        if out.exists():
            return out
        journal = Journal(f"image-build-{os.getpid()}-{secrets.token_hex(2)}")
        try:
            base = base_tarball(journal)
            with scratch(journal, "ctx-cassandra") as ctx:
                (ctx / "Dockerfile").write_text(DOCKERFILE)
                shutil.copytree(home / "lib", ctx / "lib")
                _build_in_private_daemon(journal, base, ctx, image_tag(home), out)
        finally:
            journal.close()
    return out


def ensure_image(sock: str, cassandra_home: Path | None = None) -> str:
    """Make `strata-cassandra:<hash>` present in the daemon at `sock` and return its tag."""
    home = cassandra_home or jars.ensure_cassandra()
    tag = image_tag(home)
    if dk.docker(sock, "image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode != 0:
        dk.docker(sock, "load", "-q", "-i", str(build_image_tarball(home)), timeout=BUILD_TIMEOUT_S)
    return tag
