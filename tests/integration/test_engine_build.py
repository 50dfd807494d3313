"""The engine (strata-wml) builds the same byte for byte wherever the checkout is (scripts/cargo-env remaps its
paths): two copies at different paths give one hash, the checkout's own build's, so the images and the VM guest
that hold it keep their cache keys and a second clone needs no new prepare (docs/development.md)."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from strata.workloads.engine import REPO_BUILD
from tests.coverage import covers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]  # two release builds with fat LTO: minutes

ROOT = Path(__file__).resolve().parents[2]


def _build(checkout: Path) -> str:
    """Copy the engine's sources and scripts/cargo-env to `checkout`, build it there as scripts/install does, and
    return the binary's sha256."""
    shutil.copytree(ROOT / "engine", checkout / "engine", ignore=shutil.ignore_patterns("target"))
    (checkout / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "cargo-env", checkout / "scripts" / "cargo-env")
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    cp = subprocess.run(
        [
            "bash",
            "-c",
            f". scripts/cargo-env && {cargo} build -q --release --offline --manifest-path engine/Cargo.toml",
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CARGO_TARGET_DIR": str(checkout / "engine" / "target")},
    )
    assert cp.returncode == 0, cp.stderr[-3000:]
    return hashlib.sha256((checkout / "engine/target/release/strata-wml").read_bytes()).hexdigest()


@covers()  # a build, no trial
def test_two_checkouts_at_different_paths_build_the_same_engine(tmp_path):
    assert REPO_BUILD.is_file(), "the checkout's engine is not built: run scripts/install"
    first = _build(tmp_path / "a")
    second = _build(tmp_path / "somewhere" / "else" / "b")
    assert first == second
    assert first == hashlib.sha256(REPO_BUILD.read_bytes()).hexdigest(), "not the checkout's own build"
