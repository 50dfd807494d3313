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
from tests import coverage  # noqa: E402
from tests.conftest import (  # noqa: E402
    FULL_ONLY,
    INTEGRATION,
    NOT_RUN_HERE,
    SERIAL,
    SHARED,
    SPREAD,
    full_only,
    group_of,
    not_run_here,
)


@pytest.fixture(scope="module")
def declared() -> dict[str, dict | None]:
    """{node id: {"keys"} or None} of every test, as collected with --full."""
    return coverage.collect_declarations()


@pytest.fixture(scope="module")
def nodeids(declared) -> list[str]:
    return list(declared)


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


def test_every_full_only_entry_is_a_collected_test_and_says_why(nodeids):
    """Exact ids (issue 61): an entry that names no test, a truncated name or a whole file, fails here."""
    tests = set(nodeids) | {n.split("[", 1)[0] for n in nodeids}
    for entry, why in FULL_ONLY.items():
        assert entry in tests, f"FULL_ONLY names no collected test (entries are exact test ids): {entry}"
        assert why.reason.strip(), f"{entry}: a full-only test must say why"


def test_a_test_whose_name_extends_a_full_only_entry_stays_in_the_default_tier():
    entry = next(e for e in FULL_ONLY if "[" not in e)
    assert full_only(entry) is FULL_ONLY[entry] and full_only(entry + "[case]") is FULL_ONLY[entry]
    assert full_only(entry + "_and_more") is None


# ---- what the tiers cover, derived from the tests' declarations (tests/coverage.py) ----


def test_every_integration_test_declares_the_keys_it_covers(declared):
    silent = [n for n, d in declared.items() if n.startswith(INTEGRATION) and d is None]
    assert not silent, f"integration tests without @covers(...) (tests/coverage.py): {silent}"


def test_every_declared_key_is_a_key_of_the_registries(declared):
    known = coverage.universe()
    unknown = {
        k: n for n, d in declared.items() if d for k in d["keys"] if k.removeprefix(coverage.REFUSED) not in known
    }
    assert not unknown, f"keys no registry has (a typo, or a plugin gone): {unknown}"
    for entry in NOT_RUN_HERE:
        stands_for = [k for k in known if k == entry or (entry.endswith("*") and k.startswith(entry[:-1]))]
        assert stands_for, f"NOT_RUN_HERE names {entry}, which is no key of the registries"


def test_every_key_runs_in_a_tier_or_says_why_not(declared):
    """Each key of the registries is exercised by a default-tier test, or by a full-only test that says it is
    alone in running it, or is in NOT_RUN_HERE with the reason no test runs it."""
    tiers = coverage.tiers_of(declared)
    for key in coverage.universe():
        why = not_run_here(key)
        if why is not None:
            assert why.strip(), key
            assert key not in tiers, f"{key} is in NOT_RUN_HERE, yet the {tiers.get(key)} tier runs it: drop the entry"
        else:
            assert key in tiers, f"no test runs {key}: declare it on a test that does, or say why in NOT_RUN_HERE"


def test_a_covered_reason_names_default_tests_that_run_each_of_its_keys(declared):
    """`covered(TESTS, HOW)`: the default-tier tests named run every key the full-only test declares."""
    for prefix, why in FULL_ONLY.items():
        if not why.covered_by:
            continue
        covering = [n for n in declared if n.startswith(why.covered_by) and full_only(n) is None]
        assert covering, f"{prefix}: {why.covered_by} names no default-tier test"
        theirs = set().union(*(set((declared[n] or {}).get("keys", ())) for n in covering))
        for node in (n for n in declared if n.startswith(prefix)):
            keys = set((declared[node] or {}).get("keys", ()))
            assert keys <= theirs, f"{node} is said covered by {why.covered_by}, which do not run {keys - theirs}"


def test_the_readme_says_what_only_the_full_tier_runs(declared):
    """The README's list is the derived one (regenerate it with `python -m tests.coverage --readme`)."""
    text = (ROOT / "README.md").read_text()
    begin, end = "<!-- full-tier-only: begin -->", "<!-- full-tier-only: end -->"
    assert begin in text and end in text, "the README lost its list of what only the full tier runs"
    written = text[text.index(begin) + len(begin) : text.index(end)].strip()
    assert written == coverage.full_only_list(declared).strip(), (
        "the README's list of what only the full tier runs is not the derived one: "
        "regenerate it with `.venv/bin/python -m tests.coverage --readme`"
    )


def test_the_tiers_deselect_as_the_table_says(nodeids):
    """`scripts/test` (no --full) leaves exactly the FULL_ONLY tests out; a test named on the command line runs.
    The full tier's ids are the module's own collection with --full (`declared`: every item, before any is
    deselected), so the suite is collected twice here, not three times."""
    full = nodeids
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
