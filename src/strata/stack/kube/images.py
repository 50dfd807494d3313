"""Images into the test bed's containerd without a registry: `ctr images import` of a tarball.

Workload images are the `docker save` tarballs strata builds for every
runtime (stack/runtimes/docker/image.py); the pods' sandbox image is made
here from the `pause` binary, as a one-layer image in `docker save` format.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from strata.core.proc import sh

from .config import PAUSE_IMAGE

NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin (the kubelet's runtime) reads


def pause_tarball(pause: Path, out: Path) -> Path:
    """A `docker save`-format tarball of PAUSE_IMAGE: the static `pause` binary at /pause, its entrypoint."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        info = t.gettarinfo(str(pause), arcname="pause")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755
        with open(pause, "rb") as f:
            t.addfile(info, f)
    layer_bytes = layer.getvalue()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"]},
        }
    ).encode()
    manifest = json.dumps([{"Config": "config.json", "RepoTags": [PAUSE_IMAGE], "Layers": ["layer.tar"]}]).encode()
    with tarfile.open(out, "w") as t:
        for name, data in (("layer.tar", layer_bytes), ("config.json", config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return out


def import_tarball(sock: Path, tarball: Path, timeout: float = 600) -> str:
    """Import a `docker save` tarball into the bed's containerd; returns ctr's output (the image names)."""
    argv = ["ctr", "--address", str(sock), "-n", NAMESPACE, "images", "import", str(tarball)]
    return sh(argv, timeout=timeout).stdout


def images(sock: Path) -> list[str]:
    out = sh(["ctr", "--address", str(sock), "-n", NAMESPACE, "images", "ls", "-q"], timeout=60).stdout
    return out.split()
