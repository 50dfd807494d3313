"""strata image build: build the workload image tarball once (debootstrap, no registry)."""

from __future__ import annotations

NAME = "image"
HELP = "build the workload image (fio, engine) as a tarball, once per machine"


def add_arguments(p):
    p.add_argument("action", choices=["build"], help="build the image tarball now")


def main(args) -> int:
    from strata.stack.image import build_image_tarball, default_extra_files
    path = build_image_tarball(default_extra_files())
    print(f"image tarball: {path}")
    return 0
