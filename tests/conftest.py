"""How the suite runs: integration tests need root (in CI they must run, never skip), and scripts/test runs
the suite in two phases (docs/development.md): every test but the `serial` ones (on parallel workers if
asked: pytest-xdist, with the groups below as the scheduler's units), then the `serial` ones alone. The tables
below are the one place that says which tests may not run beside which, and why."""

import os
from dataclasses import dataclass

import pytest

INTEGRATION = "tests/integration/"

# Tests that use one resource of this machine that only one of them may use at a time, by resource. Each
# is a unit of the parallel scheduler: its tests run on one worker, one after another. A prefix of the node id.
SHARED: dict[str, tuple[str, ...]] = {
    # the machine's cores: each of these keeps both cores busy for minutes (Cassandra's JVMs, a Kubernetes
    # control plane, QEMU under TCG). Two at once starve each other's JVMs (3 workers on 2 cores: YCSB
    # clients with no operation in a 5 s trial), so they run one after another, beside at most one light
    # test. The single-node Kubernetes test bed is among them: the kubelet and containerd use fixed host
    # paths whatever they are told, so only one cluster may exist at a time.
    "heavy": (
        INTEGRATION + "test_kubernetes_",
        INTEGRATION + "test_swarm_ycsb.py",
        INTEGRATION + "test_ycsb_",
        *(
            INTEGRATION + f"test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale[{example}"
            for example in ("xu2017-cassandra", "shirinbab-cassandra")
        ),
        *(
            INTEGRATION + f"test_benches.py::test_bench_runs_to_its_result_in_tiny_mode[{bench}"
            for bench in (
                "kubernetes_overhead",
                "vm_overhead",
                "ycsb_client",
                "ycsb_cluster_span",
                "ycsb_native_container",
                "ycsb_placement",
            )
        ),
    ),
    # test_podman and test_remote_run check that no podman store's cgroup, run root or conmon is left
    # anywhere on the machine: no other test may have one meanwhile
    "podman": (
        INTEGRATION + "test_podman.py",
        INTEGRATION + "test_remote_run.py",
        INTEGRATION + "test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale[shirinbab-runtimes",
        INTEGRATION + "test_benches.py::test_bench_runs_to_its_result_in_tiny_mode[podman_vs_docker.py]",
    ),
}

# Tests that judge timing (instances starting together, I/O windows overlapping, racing on the machine's
# noise, a steady state, TCG guests keeping pace): a busy machine breaks them, so they run alone, after
# the parallel phase.
SERIAL: tuple[str, ...] = (
    INTEGRATION + "test_decisions.py",
    INTEGRATION + "test_robustness.py::test_32_containers_do_their_io_together",
    INTEGRATION + "test_filebench_workload.py::test_personalities_natively_and_in_two_containers",
    INTEGRATION + "test_docker.py::test_driver_runs_every_path",
    INTEGRATION + "test_docker.py::test_eight_containers_start_together",
    INTEGRATION + "test_native.py::test_until_steady_stops_early_and_records_steady_state",
    INTEGRATION + "test_vm_tcg.py",
)

# Files whose tests are independent runs (one example, one bench) or cheap: spread over the workers one by
# one. Every other integration file is a group of its own, so that its module fixtures (a Swarm test bed,
# a dockerd) are built once.
SPREAD: tuple[str, ...] = (
    INTEGRATION + "test_studies.py",
    INTEGRATION + "test_benches.py",
    "tests/unit/",
)


# The two tiers. `scripts/test` runs the default tier: every test but those below, which `scripts/test --full`
# adds. The default tier covers every path once (docs/development.md "Tiers"): lint, the engine's tests, every
# unit test, a real `strata run` per runtime, workload, device type and multi-host mode, one example study at
# smoke scale and the smoke plan of every example. Each full-only test says why it may leave the default tier:
# `covered(TEST, HOW)`, a default-tier test (a node id or its prefix) that runs the same code path, or
# `alone(PATH)`, the path only it exercises, which the full tier keeps. tests/unit/test_suite_layout.py fails
# on an entry that names no collected test, a reason left empty, or a `covered` test that is itself full-only.


@dataclass(frozen=True)
class Why:
    covered_by: str  # a default-tier test that runs the same path ("" for `alone`)
    reason: str


def covered(test: str, how: str) -> Why:
    return Why(test, how)


def alone(path: str) -> Why:
    return Why("", path)


FULL_ONLY: dict[str, Why] = {}


def full_only(nodeid: str) -> Why | None:
    """Why the test runs in the full tier only, or None: it is in the default tier."""
    for prefix, why in FULL_ONLY.items():
        if nodeid.startswith(prefix):
            return why
    return None


def group_of(nodeid: str) -> str | None:
    """The scheduling unit of a test: its shared resource, else its file (None: the test alone)."""
    for resource, prefixes in SHARED.items():
        if nodeid.startswith(prefixes):
            return resource
    if nodeid.startswith(SPREAD):
        return None
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: unknown when it is not loaded (-p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    """Parallel workers take whole groups (group_of): xdist's own `loadgroup` does not group under pytest 9,
    whose node ids it can no longer suffix, so the grouping is this scheduler's."""
    from xdist.scheduler import LoadScopeScheduling

    class ByResource(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    return ByResource(config, log)


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", help="the full tier: also the tests FULL_ONLY names")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
    if not config.getoption("--full"):
        named = {a.replace(os.sep, "/") for a in config.args}  # a test named on the command line runs anyway
        keep = [i for i in items if i.nodeid in named or full_only(i.nodeid) is None]
        if len(keep) < len(items):
            kept = {i.nodeid for i in keep}
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in kept])
            items[:] = keep
    if os.geteuid() == 0 or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="integration: needs root (run scripts/test as root)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)
