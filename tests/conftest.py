"""How the suite runs: integration tests need root (in CI they must run, never skip), and scripts/test runs
the suite in two phases (docs/development.md): every test but the `serial` ones (on parallel workers if
asked: pytest-xdist, with the groups below as the scheduler's units), then the `serial` ones alone. The tables
below are the one place that says which tests may not run beside which, and why."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.coverage import DRIVER_MODULES, declared, refused_here

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
                "kubernetes_agent",
                "kubernetes_overhead",
                "kubernetes_placement",
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
        INTEGRATION + "test_benches.py::test_bench_runs_to_its_result_in_tiny_mode[chaos.py]",
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
    # the host's CPU: a quiet run must be quiet, and the planted busy loops would slow every other test
    INTEGRATION + "test_pgbench.py::test_a_cpu_hog_beside_the_run_is_flagged_saturated_and_a_quiet_run_not",
    INTEGRATION + "test_vm_tcg.py",
    # the machine's page cache: every trial, and a remote device's setup, drops every cached page
    # (drop_caches), which empties the cache these tests warm; beside another test the target read 39 of 48 MB
    INTEGRATION + "test_remote_nbd.py::test_a_caching_target_shows_in_the_evidence",
    # the same: fuse-overlayfs is flagged because the page cache answers its reads; beside a remote test the
    # device moved 1.5 times the workload's bytes
    INTEGRATION + "test_docker_cache.py",
    INTEGRATION + "test_native.py::test_cache_flag_follows_the_disk_evidence_for_both_loop_modes",
    INTEGRATION + "test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale[cache-check.yaml]",
    # the same: node 3's disk without direct I/O is flagged because the page cache answers its reads; beside a
    # remote test, its loop device moved 1.13 times the workload's bytes (the whole module: one test bed)
    INTEGRATION + "test_kubernetes_nodes.py",
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
# adds. What each test runs is its declaration (`@covers`, tests/coverage.py), and the default tier's keys are
# derived from them: tests/unit/test_suite_layout.py checks that every key of the registries is run by a
# default-tier test, or only by full-only tests (the README lists those keys), or is in NOT_RUN_HERE with its
# reason. Each full-only test says why it may leave the default tier: `covered(TESTS, HOW)`, default-tier tests
# (node ids or their prefixes) that run every key it declares, or `alone(WHAT)`, what only it runs, which the
# full tier keeps. Entries are exact test ids (a parametrized test's case, or the test without its case for all
# of them), never prefixes or files: a test added to a file, or named after another, is in the default tier
# until it says otherwise.


@dataclass(frozen=True)
class Why:
    covered_by: tuple[str, ...]  # the default-tier tests that run each of its keys (empty for `alone`)
    reason: str


def covered(tests: str | tuple[str, ...], how: str) -> Why:
    return Why((tests,) if isinstance(tests, str) else tests, how)


def alone(what: str) -> Why:
    return Why((), what)


IT = INTEGRATION
STUDY = IT + "test_studies.py::test_every_example_runs_to_a_complete_report_at_smoke_scale["
BENCH = IT + "test_benches.py::test_bench_runs_to_its_result_in_tiny_mode["
DOCKER_DRIVER = IT + "test_docker.py::test_driver_runs_every_path["
KUBE = IT + "test_kubernetes_runtime.py::"
VM = IT + "test_vm_tcg.py::"
FULL_ONLY: dict[str, Why] = {
    # ---- the examples at smoke scale: the default tier runs quick.yaml (the README's main job), etcd-disk.yaml
    # and xu2017-remote.yaml (a study); `strata validate --scale smoke` of every example is a unit test
    # (tests/unit/test_scale.py), so each example's plan is checked in the default tier
    STUDY + "cache-check.yaml]": alone("the cache-check example whole: fuse-overlayfs beside overlay2 and native"),
    STUDY + "jobfile.yaml]": alone("a .fio job file run natively and in docker, through to the report"),
    STUDY + "kubernetes.yaml]": alone("the kubernetes example whole: fio on every pod path beside native"),
    STUDY + "postgres.yaml]": alone("the PostgreSQL example whole: pgbench natively and in docker through a volume, "
                                   "a bind mount and the layer on xfs and ext4, under a memory limit, to its "
                                   "report (40 trials: 5 to 8 minutes of a worker)"),
    STUDY + "mariadb.yaml]": alone("the MariaDB example whole: sysbench natively and in docker through a volume and a "
                                  "bind mount on xfs and ext4, to its report"),
    STUDY + "ramadan-filesystems.yaml]": alone("Filebench personalities on ext4, xfs and btrfs with the btrfs driver"),
    STUDY + "shirinbab-cassandra.yaml]": alone("a three-node cluster at offered rates as shares of its peak, and the "
                                               "study's values set beside them (Table 2)"),
    STUDY + "shirinbab-cluster-hosts.yaml]": alone("the smoke plan of Cassandra clusters across four test hosts"),
    STUDY + "shirinbab-runtimes.yaml]": alone("fio and Filebench natively, in docker, podman and a VM in one study"),
    STUDY + "xu2017-cassandra.yaml]": alone("Cassandra containers under every limit preset"),
    STUDY + "xu2017-filesystems.yaml]": alone("the file system study's sweeps through to its figures"),
    STUDY + "xu2017-storage.yaml]": alone("every docker storage driver, supported or not, in one study"),
    STUDY + "xu2017-placement.yaml]": alone("the smoke plan of Cassandra containers placed on two Swarm hosts"),
    IT + "test_engine_build.py::test_two_checkouts_at_different_paths_build_the_same_engine": alone(
        "two release builds of the engine at other paths (minutes of CPU): the same binary as the checkout's"
    ),
    # ---- the benches' tiny runs: each checks that its bench still runs to its figures (what a bench adds is its
    # figure, taken by hand: docs/overhead.md); oracle_margin's tiny run (synthetic trials, seconds) is default
    IT + "test_benches.py::test_an_abba_bench_measures_the_spread_by_hand_alone_in_tiny_mode": alone(
        "bench/sysbench_overhead.py --hand-only in its tiny mode"
    ),
    **{
        BENCH + f"{bench}]": alone(f"bench/{bench} in its tiny mode")
        for bench in (
            "auto_repetitions.py", "chaos.py", "decisions_sim.py", "device_writes.py", "kubernetes_agent.py",
            "kubernetes_overhead.py", "kubernetes_placement.py",
            "order_cost.py", "overhead.py", "pgbench_overhead.py", "podman_vs_docker.py", "remote_hosts.py",
            "remote_overhead.py", "report_bench.py", "spec_fuzz.py", "swarm_overhead.py", "sysbench_overhead.py",
            "vm_overhead.py", "wml/run.sh", "ycsb_client.py", "ycsb_cluster_span.py", "ycsb_native_container.py",
            "ycsb_placement.py",
        )
    },
    # ---- docker: the default tier keeps a real strata run in docker (quick.yaml, filebench, kubernetes'
    # beside-docker run), overlay2 on ext4 through every path, the raw device in a container, the user's own
    # daemon, every driver this host refuses, and the failure paths
    DOCKER_DRIVER + "btrfs-on-btrfs]": alone("the btrfs storage driver"),
    DOCKER_DRIVER + "fuse-overlayfs-on-ext4]": alone("fuse-overlayfs on the volume, bind and tmpfs paths (the layer "
                                                     "path: test_docker_cache.py)"),
    DOCKER_DRIVER + "overlay2-on-xfs]": covered(
        (DOCKER_DRIVER + "overlay2-on-ext4]", IT + "test_docker_cache.py"), "overlay2 through every path; xfs"),
    DOCKER_DRIVER + "vfs-on-ext4]": alone("the vfs storage driver"),
    IT + "test_docker.py::test_eight_containers_start_together": covered(
        (IT + "test_robustness.py::test_32_containers_do_their_io_together", DOCKER_DRIVER + "overlay2-on-ext4]"),
        "containers released at one barrier, on a volume; ext4"),
    IT + "test_docker.py::test_extra_files_make_a_new_image": alone("an image rebuilt when its files change"),
    IT + "test_docker.py::test_kill9_then_cleanup_leaves_nothing[strata-and-dockerd]": covered(
        IT + "test_docker.py::test_kill9_then_cleanup_leaves_nothing[strata]", "cleanup of a killed docker run"),
    # ---- kubernetes: the default tier runs fio in pods on every path beside native and docker, and cleanup
    # after kill -9
    IT + "test_kubernetes_pods.py::test_an_instance_pod_waits_at_the_barrier_then_runs_fio_under_its_limits": alone(
        "a pod under cpu and memory limits (the default tier's pods run without limits)"),
    IT + "test_kubernetes_pods.py::test_a_pod_past_its_memory_limit_ends_as_oom": alone("a pod's OOM"),
    KUBE + "test_a_pod_deleted_mid_trial_ends_the_trial_and_the_run_goes_on": alone(
        "a pod deleted mid-trial: instance_died as kubernetes reports it"),
    KUBE + "test_kill9_then_cleanup_leaves_no_pod_claim_volume_namespace_or_cluster[pvc-block]": covered(
        (KUBE + "test_kill9_then_cleanup_leaves_no_pod_claim_volume_namespace_or_cluster[local]",
         KUBE + "test_fio_on_a_block_claim_is_judged_on_the_loop_device_its_volume_names"),
        "cleanup after kill -9 with a block claim mapped: its loop device and the kubelet's lock over it detached"),
    KUBE + "test_a_users_cluster_through_its_kubeconfig": alone("a cluster reached through its kubeconfig, its user "
                                                                "an exec credential plugin too"),
    IT + "test_kubernetes_nodes.py::test_each_node_is_a_test_host_of_its_own_and_keeps_the_network_rule": alone(
        "a test bed of several nodes, each a test host, the network rule on every node"),
    IT + "test_kubernetes_nodes.py::test_fio_on_node_2_is_judged_from_node_2s_disk_and_a_planted_cache_on_node_3_is_"
         "flagged": alone("fio on another node through strata's agent, images from a registry, its disks judged"),
    IT + "test_kubernetes_nodes.py::test_kill_9_of_strata_mid_trial_then_one_cleanup_leaves_nothing_in_the_cluster_"
         "or_on_a_node": alone("kill -9 mid-trial on another node, then one cleanup in the cluster and every node"),
    IT + "test_kubernetes_nodes.py::test_eight_fio_pods_spread_over_two_nodes_are_one_trial_judged_node_by_node": alone(
        "one trial's pods over two nodes: merged, each node's metrics and cache check"),
    IT + "test_kubernetes_nodes.py::test_a_nodes_kubelet_stopped_mid_trial_is_host_lost_naming_it_and_the_next_trial_"
         "runs": alone("a node's kubelet stopped mid-trial: host_lost naming it"),
    IT + "test_kubernetes_nodes.py::test_kill_9_of_strata_with_pods_on_two_nodes_then_one_cleanup_leaves_"
         "nothing": alone("kill -9 with pods on two nodes, then one cleanup: the nodes' agents stopped, nothing left"),
    IT + "test_kubernetes_nodes.py::test_the_kubernetes_nodes_example_runs_at_smoke_scale_on_three_nodes": alone(
        "examples/kubernetes-nodes.yaml at smoke scale on a bed of three nodes"),
    IT + "test_kubernetes_nodes.py::test_strata_s_agent_on_a_node_killed_mid_trial_is_host_lost_naming_it_and_the_"
         "next_trial_runs": alone("strata's agent on a node killed mid-trial: host_lost naming it, a new agent next"),
    IT + "test_kubernetes_nodes.py::test_one_cassandra_cluster_over_three_nodes_at_rf_3_passes_its_data_integrity_"
         "check": alone("one Cassandra cluster over three Kubernetes nodes, three JVMs beside the bed"),
    KUBE + "test_cassandra_under_ycsb_in_a_pod_passes_its_data_integrity_check": alone("Cassandra in a pod"),
    IT + "test_kubernetes_testbed.py::test_up_runs_fio_in_a_pod_and_down_leaves_nothing": alone(
        "`strata testbed kubernetes up` and `down`"),
    IT + "test_kubernetes_testbed.py::test_after_kill_9_of_the_holder_nothing_is_left": alone(
        "the test bed's holder killed, then `cleanup`, `down` or `up`"),
    IT + "test_kubernetes_testbed.py::test_down_leaves_a_socket_another_process_bound_in_a_fixed_dir_the_"
         "bed_made": alone("`testbed down` beside another process"),
    # ---- native: the default tier keeps every file system, zram, refusals, failures, kill -9 and SIGTERM
    IT + "test_native.py::test_signal_tears_down_and_resume_finishes[2]": covered(
        IT + "test_native.py::test_signal_tears_down_and_resume_finishes[15]", "a signal, teardown and --resume"),
    # ---- remote: the default tier keeps a strata run on the remote device and the nbd failure paths
    IT + "test_remote_nbd.py::test_fio_in_a_container_on_the_remote_device": covered(
        IT + "test_remote_run.py::test_every_stack_on_the_remote_device", "docker on the remote device"),
    IT + "test_remote_run.py::test_a_killed_target_ends_the_trial_and_the_next_one_gets_a_fresh_storage_host": covered(
        (IT + "test_remote_nbd.py::test_killed_target_mid_fio", IT + "test_remote_run.py::test_every_stack"),
        "a killed target mid-trial; a strata run on the remote device"),
    IT + "test_remote_run.py::test_kill9_on_a_remote_device_then_one_cleanup_leaves_nothing[podman:overlay]": alone(
        "podman's store on a remote device, cleaned up after kill -9"),
    # ---- swarm test hosts: the default tier keeps a trial spanning two hosts, an agent lost, kill -9
    IT + "test_swarm.py::test_a_remote_device_served_by_another_host": alone("a remote device across test hosts"),
    IT + "test_swarm.py::test_a_storage_host_lost_mid_trial_is_host_lost_and_the_run_goes_on": alone(
        "a storage host lost mid-trial"),
    IT + "test_swarm.py::test_doctor_and_cleanup_on_every_host": alone("doctor and cleanup with --hosts"),
    IT + "test_swarm_ycsb.py::test_cassandra_on_one_host_and_across_two": alone("Cassandra on test hosts"),
    IT + "test_swarm_ycsb.py::test_one_cluster_across_two_hosts_with_its_clients_on_one": alone(
        "one Cassandra cluster across two hosts"),
    IT + "test_swarm_ycsb.py::test_a_database_on_one_host_with_its_clients_on_a_host_of_their_own": alone(
        "YCSB clients on a host of their own"),
    IT + "test_swarm_ycsb.py::test_a_node_killed_on_a_serving_host_fails_the_trial_there": alone(
        "a Cassandra node killed on a test host"),
    IT + "test_swarm_pgbench.py::test_one_server_on_each_host_merges_into_one_result": alone(
        "PostgreSQL servers across test hosts, merged into one result"),
    # ---- pgbench: the default tier keeps native servers, servers in containers, a killed server, kill -9
    IT + "test_pgbench.py::test_kill_9_in_a_container_then_cleanup_leaves_nothing": covered(
        (IT + "test_pgbench.py::test_kill_9_natively", IT + "test_pgbench.py::test_two_servers_in_containers"),
        "cleanup of a killed pgbench run; servers in containers on volumes"),
    IT + "test_pgbench.py::test_a_pod_on_the_test_bed": alone("PostgreSQL in a pod"),
    IT + "test_pgbench.py::test_select_only_beyond_a_containers_memory_limit_reads_the_device_and_is_not_flagged":
        alone("a data set beyond a container's memory limit, not flagged as cached"),
    IT + "test_pgbench.py::test_two_compared_trials_hold_the_same_checkpoints": alone(
        "the same number of checkpoints inside two compared trials"),
    IT + "test_pgbench.py::test_the_wal_on_a_bind_mount_of_its_own_in_a_container_and_natively": alone(
        "PostgreSQL's WAL on a path of its own"),
    IT + "test_pgbench.py::test_under_an_offered_rate_the_advice_compares_p99_latency": alone(
        "an advice under an offered rate that compares p99 latency"),
    # ---- sysbench: the default tier keeps native servers, a server in a container, kill -9 natively
    IT + "test_sysbench.py::test_kill_9_in_a_container_then_cleanup_leaves_nothing": covered(
        (IT + "test_sysbench.py::test_kill_9_natively", IT + "test_sysbench.py::test_a_server_in_a_container"),
        "cleanup of a killed sysbench run; a MariaDB server in a container on a volume"),
    IT + "test_sysbench.py::test_a_pod_on_the_test_bed": alone("MariaDB in a pod"),
    # ---- ycsb: the default tier keeps a native two-node cluster, kill -9 and the node failures
    IT + "test_ycsb_run.py::test_a_killed_database_container_fails_its_trial_and_the_run_goes_on": alone(
        "a Cassandra container killed mid-trial"
    ),
    IT + "test_ycsb_run.py::test_strata_loopback_moves_the_nodes_to_a_block_of_their_own": alone(
        "STRATA_LOOPBACK on a real Cassandra"
    ),
    IT + "test_ycsb_run.py::test_under_a_target_the_latency_is_timed_from_the_intended_start": alone(
        "Cassandra under an offered rate, timed from each operation's intended start"
    ),
    IT + "test_ycsb_validity.py::test_a_data_set_beyond_its_containers_memory_limit_is_not_flagged": alone(
        "a Cassandra data set beyond a container's memory limit (1.2 million records), read from the device and not "
        "flagged"
    ),
    # ---- VMs under TCG: the default tier keeps a strata run on a VM, the device, a bind share, kill -9
    VM + "test_a_killed_qemu_fails_the_trial_and_leaves_nothing": alone("a killed QEMU"),
    VM + "test_a_vm_that_does_not_boot_in_time_fails_with_its_console": alone("a guest that does not boot in time"),
    VM + "test_filebench_personality_with_the_engine": alone("a Filebench personality in a guest"),
    VM + "test_fio_on_a_bind_share[9p]": alone("a bind share into the guest over 9p"),
    VM + "test_fio_on_a_qcow2_image_with_a_guest_file_system": alone("a qcow2 image with a guest file system"),
    VM + "test_limits_become_vcpus_memory_and_throttling": alone("limits on a VM"),
    VM + "test_qemu_block_throttling_on_the_device": alone("QEMU's block throttling"),
    VM + "test_a_vm_disk_cache_that_drops_the_guests_flushes_is_flagged": alone(
        "a VM disk cache that drops the guest's flushes, flagged"),
}  # fmt: skip


# The keys of tests/coverage.py's universe that no integration test runs, each with the reason
# (tests/unit/test_suite_layout.py fails on a key that no test declares and that is not here, and on an entry
# here that a test does run). A key ending in `*` stands for every key it begins.
NO_TEST = "no integration test runs it"
NOT_RUN_HERE: dict[str, str] = {
    "device:remote:nvme-tcp": "this VM's kernel has no nvme-tcp or nvmet module: unit-tested with fakes only "
    "(tests/unit/test_remote_unit.py)",
    "workload:null*": "the unit tests' null engine (tests/unit), never run by a user",
    "workload:ycsb@vm": "impossible: the server template refuses VMs (its `vm_reason`)",
    "workload:pgbench@vm": "impossible: the server template refuses VMs (its `vm_reason`)",
    "workload:sysbench@vm": "impossible: the server template refuses VMs (its `vm_reason`)",
    "workload:ycsb@podman": f"{NO_TEST}: Cassandra runs in containers through docker (test_ycsb_run.py)",
    "workload:pgbench@podman": f"{NO_TEST}: PostgreSQL runs in containers through docker (test_pgbench.py)",
    "workload:sysbench@podman": f"{NO_TEST}: MariaDB runs in containers through docker (test_sysbench.py)",
    "workload:sysbench@hosts": f"{NO_TEST}: MariaDB servers across test hosts are the template's, which "
    "test_swarm_pgbench.py runs with PostgreSQL; the agent image holds mariadb-server, mariadb-client and sysbench",
    "workload:filebench@kubernetes": f"{NO_TEST}: Filebench personalities run natively, in docker, podman and VMs",
    "workload:filebench@hosts": f"{NO_TEST}: Filebench personalities run on this host only",
    "fault:oom@native": f"{NO_TEST}: native instances take no memory limit",
    "fault:oom@podman": f"{NO_TEST}: podman's containers are watched by docker's code (test_docker.py's OOM)",
    "fault:oom@vm": f"{NO_TEST}: a VM's memory limit is its guest's RAM",
    "fault:timeout@native": f"{NO_TEST}: a native instance past its deadline",
    "fault:timeout@podman": f"{NO_TEST}: podman's containers are watched by docker's code (test_docker.py's timeout)",
    "fault:timeout@vm": f"{NO_TEST}: a guest that does not boot in time is `boot_timeout` (test_vm_tcg.py)",
    "fault:timeout@kubernetes": f"{NO_TEST}: a pod past its deadline",
    "fault:instance_died@podman": f"{NO_TEST}: podman's containers are watched by docker's code "
    "(test_ycsb_run.py's killed container)",
    "fault:instance_died@vm": f"{NO_TEST}: the server workloads, whose instances may die, refuse VMs",
    "fault:bad_input": f"{NO_TEST}: each tool's refusal is unit-tested on captured outputs (tests/unit/test_fio.py, "
    "test_filebench.py, test_pgbench_parse.py)",
    "fault:parse": f"{NO_TEST}: unreadable outputs are unit-tested (tests/unit/test_pgbench_parse.py, "
    "test_contracts.py)",
    "fault:not_ready": f"{NO_TEST}: unit-tested (tests/unit/test_server_template.py, test_ycsb_workload.py)",
    "fault:vm_start": f"{NO_TEST}: unit-tested (tests/unit/test_vm_unit.py)",
    "fault:prepare": f"{NO_TEST}: unit-tested (tests/unit/test_docker_unit.py, test_hosts.py)",
    "fault:stopped_early": f"{NO_TEST}: unit-tested on the engine's output (tests/unit/test_filebench.py)",
    "fault:internal": f"{NO_TEST}: a bug in strata, by definition unplanned; its record is unit-tested "
    "(tests/unit/test_flags.py)",
    "fault:container_start": f"{NO_TEST}: unit-tested on a fake docker client that the daemon refuses "
    "(tests/unit/test_docker_unit.py)",
    "fault:runtime": f"{NO_TEST}: unit-tested on a fake docker client whose `docker wait` fails on a live daemon "
    "(tests/unit/test_docker_unit.py)",
    "command:studies": "reads the studies' published numbers, no machine: tests/unit/test_published.py runs it",
}


# Drivers this kernel cannot run: tried, and each refusal checked in the daemon's own words (`refused:` keys).
for _driver, _module in DRIVER_MODULES.items():
    for _runtime in ("docker", "podman"):
        if refused_here(_driver):
            NOT_RUN_HERE[f"runtime:{_runtime}:{_driver}"] = (
                f"refused on this host (no {_module} module): test_{_runtime}.py checks the refusal"
            )


def not_run_here(key: str) -> str | None:
    """Why no test runs `key`, or None."""
    for entry, why in NOT_RUN_HERE.items():
        if key == entry or (entry.endswith("*") and key.startswith(entry[:-1])):
            return why
    return None


def full_only(nodeid: str) -> Why | None:
    """Why the test runs in the full tier only, or None: it is in the default tier. An entry is a test's exact
    id, or a parametrized test's id without its case (then every case): never a prefix, so a new test whose
    name extends an entry's stays in the default tier."""
    return FULL_ONLY.get(nodeid) or FULL_ONLY.get(nodeid.split("[", 1)[0])


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
    dump = os.environ.get("STRATA_COVERAGE_DUMP")  # tests/unit/test_suite_layout.py reads the declarations
    if dump:
        _dump_declarations(Path(dump), items)
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


def _dump_declarations(path: Path, items) -> None:
    """{node id: {"keys": [...]}} of every collected test that declares `covers`, and None for
    one that does not."""
    out = {}
    for item in items:
        d = declared(item)
        out[item.nodeid] = None if d is None else {"keys": sorted(d)}
    path.write_text(json.dumps(out, indent=0, sort_keys=True))
