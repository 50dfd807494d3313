"""strata image build [SPEC]: build the images a spec's workloads need, once per machine (no registry)."""

from __future__ import annotations

import argparse

NAME = "image"
HELP = "build the workload images (a tarball each) now, instead of on first use"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build"], help="build the image tarballs now")
    p.add_argument(
        "spec",
        nargs="?",
        default="examples/quick.yaml",
        help="build what this experiment's workloads need (default: examples/quick.yaml)",
    )


def main(args: argparse.Namespace) -> int:
    from strata.experiment.load import load_spec
    from strata.stack.runtimes.docker.image import build_image_tarball
    from strata.workloads import plugin_of

    _, workloads = load_spec(args.spec)
    specs = {}
    for w in workloads:
        spec = plugin_of(w).image(w)
        specs[spec.key()] = spec
    for spec in specs.values():
        print(f"image {spec.name}: {build_image_tarball(spec)}")
    return 0
