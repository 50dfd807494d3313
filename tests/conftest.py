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
            for example in ("xu2017-cassandra", "shirinbab-cassandra", "kubernetes")
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
    # the machine's page cache: every trial, and a remote device's setup, drops every cached page
    # (drop_caches), which empties the cache these tests warm; beside another test the target read 39 of 48 MB
    INTEGRATION + "test_remote_nbd.py::test_a_caching_target_shows_in_the_evidence",
    # the same: fuse-overlayfs is flagged because the page cache answers its reads; beside a remote test the
    # device moved 1.5 times the workload's bytes
    INTEGRATION + "test_docker_cache.py",
    INTEGRATION + "test_native.py::test_cache_flag_follows_the_disk_evidence_for_both_loop_modes",
    INTEGRATION + "test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale[cache-check.yaml]",
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


IT = INTEGRATION
STUDY = IT + "test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale["
BENCH = IT + "test_benches.py::test_bench_runs_to_its_result_in_tiny_mode["
FULL_ONLY: dict[str, Why] = {
    # ---- the examples at smoke scale: the default tier runs quick.yaml (the README's main job) and
    # xu2017-remote.yaml (a study); `strata validate --scale smoke` of every example is a unit test
    # (tests/unit/test_scale.py), so each example's plan is checked in the default tier
    STUDY + "cache-check.yaml": covered(IT + "test_docker_cache.py", "fuse-overlayfs flagged as a cache, overlay2 not"),
    STUDY + "jobfile.yaml": covered(IT + "test_native.py::test_every_filesystem_natively", "fio natively and in "
                                    "docker; the job file's parsing is unit-tested (tests/unit/test_fio.py)"),
    STUDY + "kubernetes.yaml": covered(IT + "test_kubernetes_runtime.py::test_fio_in_pods_on_every_path_beside_native_"
                                       "and_docker", "fio in pods on every pod path beside native"),
    STUDY + "ramadan-filesystems.yaml": covered(IT + "test_filebench_workload.py::test_personalities_natively_and_in",
                                                "Filebench personalities in docker containers"),
    STUDY + "shirinbab-cassandra.yaml": alone("a three-node cluster at offered rates as shares of its peak, and the "
                                              "study's values set beside them (Table 2)"),
    STUDY + "shirinbab-cluster-hosts.yaml": covered(IT + "test_studies.py::test_the_studies_table_names_real_examples",
                                                    "a plan only (SPEC_CUTS), which tests/unit/test_scale.py checks"),
    STUDY + "shirinbab-runtimes.yaml": alone("Cassandra natively, in docker, podman and a VM in one study"),
    STUDY + "xu2017-cassandra.yaml": alone("Cassandra containers under every limit preset"),
    STUDY + "xu2017-filesystems.yaml": covered(IT + "test_native.py::test_every_filesystem_natively",
                                               "fio natively on every file system"),
    STUDY + "xu2017-storage.yaml": alone("every docker storage driver, supported or not, in one study"),
    STUDY + "xu2017-placement.yaml": covered(IT + "test_studies.py::test_the_studies_table_names_real_examples",
                                             "a plan only (SPEC_CUTS), which tests/unit/test_scale.py checks"),
    # ---- the benches' tiny runs: each checks that its bench still runs to its figures; the paths are
    # the integration tests' (what a bench adds is its figure, taken by hand: docs/overhead.md)
    BENCH + "auto_repetitions.py]": covered(IT + "test_decisions.py", "repetitions: auto racing on real trials"),
    BENCH + "decisions_sim.py]": covered("tests/unit/test_repetitions.py", "the real decision functions, unit-tested"),
    BENCH + "kubernetes_overhead.py]": covered(IT + "test_kubernetes_runtime.py::test_fio_in_pods", "pods, native"),
    BENCH + "overhead.py]": covered(IT + "test_native.py::test_every_filesystem_natively", "fio natively, in docker"),
    BENCH + "podman_vs_docker.py]": covered(IT + "test_podman.py::test_fio_in_podman", "fio in podman"),
    BENCH + "remote_hosts.py]": covered(IT + "test_swarm.py::test_a_trial_spanning_two_hosts", "test hosts"),
    BENCH + "remote_overhead.py]": covered(IT + "test_remote_nbd.py::test_nbd_device_with_ext4_and_fio", "nbd + fio"),
    BENCH + "report_bench.py]": covered("tests/unit/test_report_snapshot.py", "the report of stored results"),
    BENCH + "spec_fuzz.py]": covered("tests/unit/test_spec_fuzz.py", "1,500 seeded mutants, a superset of its 300"),
    BENCH + "swarm_overhead.py]": covered(IT + "test_swarm.py::test_a_trial_spanning_two_hosts", "the barrier across "
                                          "hosts and its skew"),
    BENCH + "vm_overhead.py]": covered(IT + "test_vm_tcg.py::test_two_vms_at_one_barrier", "VMs at one barrier"),
    BENCH + "wml/run.sh]": covered("tests/unit/test_filebench.py", "the engine, and its cargo tests"),
    BENCH + "ycsb_client.py]": covered(IT + "test_ycsb_run.py::test_native_two_node", "YCSB clients on a cluster"),
    BENCH + "ycsb_cluster_span.py]": covered(IT + "test_swarm.py::test_a_trial_spanning_two_hosts", "a trial across "
                                             "test hosts; Cassandra across hosts: test_swarm_ycsb (full)"),
    BENCH + "ycsb_native_container.py]": covered(IT + "test_ycsb_run.py::test_native_two_node", "Cassandra natively"),
    BENCH + "ycsb_placement.py]": covered(IT + "test_swarm.py::test_a_trial_spanning_two_hosts", "placements on hosts"),
    # ---- docker: the default tier keeps a real strata run in docker (quick.yaml, filebench, kubernetes'
    # beside-docker run), overlay2 on ext4 through every path, and the failure paths
    IT + "test_docker.py::test_driver_runs_every_path[btrfs-on-btrfs]": alone("the btrfs storage driver"),
    IT + "test_docker.py::test_driver_runs_every_path[fuse-overlayfs-on-ext4]": covered(
        IT + "test_docker_cache.py", "fuse-overlayfs through a strata run"),
    IT + "test_docker.py::test_driver_runs_every_path[overlay2-on-xfs]": covered(
        IT + "test_docker.py::test_driver_runs_every_path[overlay2-on-ext4]", "overlay2 through every path"),
    IT + "test_docker.py::test_driver_runs_every_path[vfs-on-ext4]": alone("the vfs storage driver"),
    IT + "test_docker.py::test_device_path_on_a_raw_device": alone("a raw device passed into a container"),
    IT + "test_docker.py::test_eight_containers_start_together": covered(
        IT + "test_robustness.py::test_32_containers_do_their_io_together", "containers released at one barrier"),
    IT + "test_docker.py::test_extra_files_make_a_new_image": alone("an image rebuilt when its files change"),
    IT + "test_docker.py::test_kill9_then_cleanup_leaves_nothing[strata-and-dockerd]": covered(
        IT + "test_docker.py::test_kill9_then_cleanup_leaves_nothing[strata]", "cleanup of a killed docker run"),
    IT + "test_docker.py::test_system_daemon_is_used_as_it_is": alone("docker:system, the user's own daemon"),
    IT + "test_docker.py::test_unsupported_driver_gives_the_daemon_text[btrfs-on-xfs]": covered(
        IT + "test_docker.py::test_unsupported_driver_gives_the_daemon_text[aufs-on-ext4]", "the daemon's own words"),
    IT + "test_docker.py::test_unsupported_driver_gives_the_daemon_text[devicemapper-on-ext4]": covered(
        IT + "test_doctor.py::test_doctor_probes_every_storage_driver", "devicemapper's daemon text"),
    IT + "test_docker.py::test_unsupported_driver_gives_the_daemon_text[zfs-on-ext4]": covered(
        IT + "test_docker.py::test_unsupported_driver_gives_the_daemon_text[aufs-on-ext4]", "the daemon's own words"),
    # ---- kubernetes: the default tier runs fio in pods on every path beside native and docker, and
    # cleanup after kill -9
    IT + "test_kubernetes_pods.py": covered(IT + "test_kubernetes_runtime.py::test_fio_in_pods", "an instance pod at "
                                           "the barrier, under its limits"),
    IT + "test_kubernetes_runtime.py::test_a_pod_deleted_mid_trial": alone("a pod deleted mid-trial: instance_died"),
    IT + "test_kubernetes_runtime.py::test_a_users_cluster_through_its_kubeconfig": alone("a cluster reached through "
                                                                                         "its kubeconfig"),
    IT + "test_kubernetes_runtime.py::test_cassandra_under_ycsb_in_a_pod": alone("Cassandra in a pod"),
    IT + "test_kubernetes_testbed.py": covered(IT + "test_kubernetes_runtime.py::test_kill9_then_cleanup", "the test "
                                              "bed up, used and removed, also after kill -9"),
    # ---- native: the default tier keeps every file system, zram, refusals, failures, kill -9 and SIGTERM
    IT + "test_native.py::test_signal_tears_down_and_resume_finishes[2]": covered(
        IT + "test_native.py::test_signal_tears_down_and_resume_finishes[15]", "a signal, teardown and --resume"),
    # ---- remote: the default tier keeps a strata run on the remote device and the nbd failure paths
    IT + "test_remote_nbd.py::test_fio_in_a_container_on_the_remote_device": covered(
        IT + "test_remote_run.py::test_every_stack_on_the_remote_device", "docker and podman on the remote device"),
    IT + "test_remote_run.py::test_a_killed_target_ends_the_trial": covered(
        IT + "test_remote_nbd.py::test_killed_target_mid_fio", "a killed target mid-trial"),
    IT + "test_remote_run.py::test_kill9_on_a_remote_device_then_one_cleanup_leaves_nothing[podman:overlay]": covered(
        IT + "test_remote_run.py::test_kill9_on_a_remote_device_then_one_cleanup_leaves_nothing[docker:overlay2]",
        "one cleanup after kill -9 on a remote device"),
    # ---- swarm test hosts: the default tier keeps a trial spanning two hosts, an agent lost, kill -9
    IT + "test_swarm.py::test_a_remote_device_served_by_another_host": alone("a remote device across test hosts"),
    IT + "test_swarm.py::test_a_storage_host_lost_mid_trial": covered(IT + "test_swarm.py::test_an_agent_killed",
                                                                     "host_lost, and the run goes on"),
    IT + "test_swarm.py::test_doctor_and_cleanup_on_every_host": alone("doctor on every host"),
    IT + "test_swarm_ycsb.py": alone("Cassandra clusters across test hosts"),
    IT + "test_swarm_pgbench.py": alone("PostgreSQL servers across test hosts, merged into one result"),
    # ---- pgbench: the default tier keeps native servers, servers in containers, a killed server, kill -9
    IT + "test_pgbench.py::test_kill_9_in_a_container_then_cleanup_leaves_nothing": covered(
        IT + "test_pgbench.py::test_kill_9_natively_then_cleanup_leaves_nothing", "cleanup of a killed pgbench run; "
        "a killed docker run's cleanup: test_docker.py::test_kill9_then_cleanup_leaves_nothing[strata]"),
    IT + "test_pgbench.py::test_a_pod_on_the_test_bed": alone("PostgreSQL in a pod"),
    IT + "test_pgbench.py::test_the_servers_image_holds_postgresql_15": covered(
        IT + "test_pgbench.py::test_two_servers_in_containers_on_named_volumes", "the servers' image in use"),
    BENCH + "pgbench_overhead.py]": covered(IT + "test_pgbench.py::test_native_tpcb_like", "pgbench natively"),
    # ---- ycsb: the default tier keeps a native two-node cluster, kill -9 and the node failures
    IT + "test_ycsb_run.py::test_a_killed_database_container": alone("a Cassandra container killed mid-trial"),
    IT + "test_ycsb_run.py::test_strata_loopback": alone("STRATA_LOOPBACK on a real Cassandra"),
    # ---- VMs under TCG: the default tier keeps a strata run on a VM, the device, a bind share, kill -9
    IT + "test_vm_tcg.py::test_a_killed_qemu_fails_the_trial": alone("a killed QEMU"),
    IT + "test_vm_tcg.py::test_a_vm_that_does_not_boot_in_time": alone("a guest that does not boot in time"),
    IT + "test_vm_tcg.py::test_filebench_personality_with_the_engine": covered(
        IT + "test_filebench_workload.py::test_personalities_natively_and_in_two_containers", "the engine's "
        "personalities (the guest holds the same engine)"),
    IT + "test_vm_tcg.py::test_fio_on_a_bind_share[9p]": covered(IT + "test_vm_tcg.py::test_fio_on_a_bind_share[auto]",
                                                                "a bind share into the guest"),
    IT + "test_vm_tcg.py::test_fio_on_a_qcow2_image": alone("a qcow2 image with a guest file system"),
    IT + "test_vm_tcg.py::test_limits_become_vcpus_memory_and_throttling": alone("limits on a VM"),
    IT + "test_vm_tcg.py::test_qemu_block_throttling_on_the_device": alone("QEMU's block throttling"),
}  # fmt: skip


# The default tier's real `strata run` of each plugin and mode (tests/unit/test_suite_layout.py reads the
# registries: a new device, runtime or workload needs its line here, or a reason in NOT_RUN_HERE).
DEFAULT_RUNS: dict[str, str] = {
    "device loop": IT + "test_native.py::test_every_filesystem_natively",
    "device zram": IT + "test_native.py::test_zram_device",
    "device block": IT + "test_native.py::test_block_device_holding_data_is_refused_without_consent",  # a loop dev
    "device remote": IT + "test_remote_run.py::test_every_stack_on_the_remote_device",
    "runtime native": IT + "test_native.py::test_every_filesystem_natively",
    "runtime docker": STUDY + "quick.yaml]",
    "runtime podman": IT + "test_podman.py::test_fio_in_podman_on_every_path_and_driver",
    "runtime vm": IT + "test_vm_tcg.py::test_strata_run_on_a_vm_is_stored_as_emulated_and_leaves_nothing",
    "runtime kubernetes": IT + "test_kubernetes_runtime.py::test_fio_in_pods_on_every_path_beside_native_and_docker",
    "workload fio": IT + "test_native.py::test_every_filesystem_natively",
    "workload filebench": IT + "test_filebench_workload.py::test_personalities_natively_and_in_two_containers",
    "workload pgbench": IT + "test_pgbench.py::test_native_tpcb_like_and_select_only_with_the_cache_rule",
    "workload ycsb": IT + "test_ycsb_run.py::test_native_two_node_cluster_with_replication_2",
    "hosts swarm": IT + "test_swarm.py::test_a_trial_spanning_two_hosts",
    "an example study at smoke scale": STUDY + "xu2017-remote.yaml]",
}
NOT_RUN_HERE: dict[str, str] = {"workload null": "the unit tests' null engine (tests/unit), never run by a user"}


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


# No test can eat the suite's budget: a default limit per test (pytest-timeout), longer only where a test
# module says why (`pytestmark = pytest.mark.timeout(N)` with its reason). The limits are hang guards, far
# above the measured times (docs/development.md), never speed targets.
UNIT_TIMEOUT_S = 120
INTEGRATION_TIMEOUT_S = 600


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", help="the full tier: also the tests FULL_ONLY names")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("timeout") is None:
            limit = INTEGRATION_TIMEOUT_S if item.nodeid.startswith(INTEGRATION) else UNIT_TIMEOUT_S
            item.add_marker(pytest.mark.timeout(limit))
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
