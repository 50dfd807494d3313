"""`strata prepare` on the real cache, as scripts/prepare left it: every build of the examples is there,
said with its cache key, which names the tarball a run loads (so a run never builds it again)."""

import re
from pathlib import Path

import pytest

from strata.stack.buildcache import images_dir
from tests.coverage import covers

from .helpers import strata

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@covers("command:prepare")
def test_prepare_finds_every_build_of_the_examples_in_the_cache():
    specs = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))
    cp = strata("prepare", "--check", *specs, timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[-1].startswith("prepare: ") and "cached" in lines[-1] and "missing" not in lines[-1]
    image = next(line for line in lines if line.startswith("image fio: cached"))
    tag = re.search(r"cache key (strata-fio:\w+)", image).group(1)
    assert (images_dir() / f"strata-fio-{tag.split(':')[1]}.tar").is_file()
    assert any(line.startswith("VM guest (fio): cached") for line in lines)  # the workload's image in a guest
    assert any(line.startswith("Kubernetes test bed binaries: cached") for line in lines)


@covers("command:image")
def test_image_build_names_each_workloads_tarball_in_the_cache():
    """`strata image build SPEC`: the tarball of each workload image the spec needs, built or found."""
    cp = strata("image", "build", str(ROOT / "examples" / "postgres.yaml"), timeout=900)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    (line,) = [ln for ln in cp.stdout.splitlines() if ln.startswith("image postgres: ")]
    tarball = Path(line.split(": ", 1)[1])
    assert tarball.parent == images_dir() and tarball.is_file() and tarball.name.startswith("strata-postgres-")
