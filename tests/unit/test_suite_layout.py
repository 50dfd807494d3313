"""The tables in tests/conftest.py name real tests: which share a resource and which judge timing (a renamed
test would otherwise fall out of its group and run beside what it must not), and the two tiers (a test
would otherwise drop out of CI silently: every full-only test says why, and the default tier runs every
plugin and mode for real)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import (  # noqa: E402
    DEFAULT_RUNS,
    FULL_ONLY,
    NOT_RUN_HERE,
    SERIAL,
    SHARED,
    SPREAD,
    full_only,
    group_of,
)


@pytest.fixture(scope="module")
def nodeids() -> list[str]:
    cp = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider", "--full"],
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


def test_every_full_only_entry_names_collected_tests_and_says_why(nodeids):
    for prefix, why in FULL_ONLY.items():
        assert any(n.startswith(prefix) for n in nodeids), f"FULL_ONLY names no collected test: {prefix}"
        assert why.reason.strip(), f"{prefix}: a full-only test must say why"


def test_a_covering_test_is_in_the_default_tier(nodeids):
    for prefix, why in FULL_ONLY.items():
        if why.covered_by:
            covering = [n for n in nodeids if n.startswith(why.covered_by)]
            assert covering, f"{prefix} is covered by {why.covered_by}, which names no collected test"
            assert any(full_only(n) is None for n in covering), f"{prefix}: {why.covered_by} is full-only too"


def test_every_collected_test_is_in_a_tier(nodeids):
    """Default unless FULL_ONLY says why not: a test in neither is one whose reason went missing."""
    for n in nodeids:
        why = full_only(n)
        assert why is None or why.reason, n


def test_the_default_tier_runs_every_plugin_for_real(nodeids):
    from strata.stack.devices import REGISTRY as DEVICES
    from strata.stack.runtimes import REGISTRY as RUNTIMES
    from strata.workloads import REGISTRY as WORKLOADS

    needed = (
        {f"device {d}" for d in DEVICES} | {f"runtime {r}" for r in RUNTIMES} | {f"workload {w}" for w in WORKLOADS}
    )
    missing = needed - set(DEFAULT_RUNS) - set(NOT_RUN_HERE)
    assert not missing, f"no default-tier strata run of {sorted(missing)} (tests/conftest.py DEFAULT_RUNS)"
    for what, test in DEFAULT_RUNS.items():
        assert test in nodeids or any(n.startswith(test) for n in nodeids), f"{what}: {test} is not collected"
        assert full_only(test) is None, f"{what}: {test} is full-only"


def test_the_tiers_deselect_as_the_table_says():
    """`scripts/test` (no --full) leaves exactly the FULL_ONLY tests out; a test named on the command line runs."""
    full = _collect("--full")
    default = _collect()
    assert set(default) < set(full)
    assert {n for n in full if full_only(n)} == set(full) - set(default)
    named = next(n for n in full if full_only(n) and "test_studies" in n)
    assert _collect(named) == [named]


def _collect(*args: str) -> list[str]:
    target = [a for a in args if "::" in a] or ["tests"]
    flags = [a for a in args if "::" not in a]
    cp = subprocess.run(
        [sys.executable, "-m", "pytest", *target, "--collect-only", "-q", "-p", "no:cacheprovider", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [line for line in cp.stdout.splitlines() if "::" in line]
