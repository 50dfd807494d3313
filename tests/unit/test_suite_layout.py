"""The tables in tests/conftest.py that say which tests share a resource and which judge timing name real
tests: a renamed test or file would otherwise fall out of its group and run beside what it must not."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import SERIAL, SHARED, SPREAD, group_of  # noqa: E402


@pytest.fixture(scope="module")
def nodeids() -> list[str]:
    cp = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    ids = [line for line in cp.stdout.splitlines() if "::" in line]
    assert ids, cp.stdout[-2000:] + cp.stderr[-2000:]
    return ids


def test_every_prefix_names_a_collected_test(nodeids):
    prefixes = [p for ps in SHARED.values() for p in ps] + list(SERIAL) + list(SPREAD)
    dead = [p for p in prefixes if not any(n.startswith(p) for n in nodeids)]
    assert not dead, f"tests/conftest.py names tests that do not exist: {dead}"


def test_groups():
    assert group_of("tests/integration/test_kubernetes_pods.py::test_x") == "heavy"
    assert group_of("tests/integration/test_swarm_ycsb.py::test_x") == "heavy"
    assert group_of("tests/integration/test_swarm.py::test_x") == "tests/integration/test_swarm.py"
    assert group_of("tests/integration/test_benches.py::test_b[ycsb_placement.py]") is None  # not the real id
    assert (
        group_of("tests/integration/test_benches.py::test_bench_runs_to_its_result_in_tiny_mode[ycsb_placement.py]")
        == "heavy"
    )
    assert (
        group_of("tests/integration/test_benches.py::test_bench_runs_to_its_result_in_tiny_mode[remote_overhead.py]")
        is None
    )
    assert group_of("tests/integration/test_docker.py::test_x") == "tests/integration/test_docker.py"
    assert group_of("tests/integration/test_studies.py::test_every[quick.yaml]") is None
    assert (
        group_of("tests/integration/test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale"
                 "[shirinbab-runtimes.yaml]")
        == "podman"
    )  # fmt: skip
    assert group_of("tests/unit/test_spec.py::test_x") is None
