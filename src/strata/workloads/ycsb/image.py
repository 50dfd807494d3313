"""The Cassandra image: the generic ImageSpec of the ycsb workload (Debian's Java 17 and the jars).

It is built by the image code every workload's image goes through (the runtimes'): the debootstrap
base, `openjdk-17-jre-headless` from the host's Debian mirror, and the jars of
jars.ensure_cassandra() copied whole to /opt/cassandra/lib (ImageSpec `trees`). The tag's hash
covers the packages and every jar, so other jars make another image and the same jars never a
second one. strata writes the node's config at run time, so the image holds no configuration.
"""

from __future__ import annotations

from pathlib import Path

from strata.core.instances import ImageSpec
from strata.workloads.ycsb import jars

LIB_IN_IMAGE = "/opt/cassandra/lib"
PACKAGES = ("openjdk-17-jre-headless", "procps")


def image_spec(cassandra_home: Path | None = None) -> ImageSpec:
    home = cassandra_home or jars.ensure_cassandra()
    return ImageSpec("cassandra", packages=PACKAGES, trees=((LIB_IN_IMAGE, str(home / "lib")),))
