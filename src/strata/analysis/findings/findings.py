"""The claims of the seed studies, each a check over the user's results.

Every Finding states a claim of a study in strata's words, with its source (section, figure or table) and
the study's own sentence (`quote`: an id of quotes.yaml, where every quotation strata makes lives), states
the criterion strata applies, and checks it: held or not held only when the 95% interval of the
compared quantity lies wholly on one side of the criterion, inconclusive otherwise (with what would
decide it), not measured when the results hold nothing the claim speaks about; always with the numbers.
A criterion reads the study's claim as the study states it: its own comparison (percentage points
where it speaks of points, a direction where it says "slightly better"), at the load it names; its
bound may be looser than the study's number (2x for btrfs's 5x: a loop file is not the study's SSD),
never on the other side of it. Where a study publishes the numbers a claim compares, the claim is held
on them: the same check runs on the studies' own numbers as a result set (analysis/studies/published.py,
`strata studies`; tests/unit/test_published.py keeps every such verdict held). A finding without a
quote is strata's own reading of a study's tables; it says so, and shows the study's numbers that bear
on it (`said`).

FINDINGS is the registry: add a claim by adding one Finding to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from strata.analysis.findings.checks_apps import limit_hurts_most, p99_grows_past_peak, replication_cost
from strata.analysis.findings.checks_containers import (
    bandwidth_limit_harmless,
    bind_slightly_better,
    btrfs_worst_fileserver,
    container_near_native,
    containers_beat_vms,
    containers_peak,
    ext4_best_file_mail,
    memory_limit_hurts,
    p99_grows_faster,
    per_container_share,
    remote_gap_closes,
    remote_near_local,
    xfs_worst_mail,
)
from strata.analysis.findings.checks_cpu import (
    all_limits_tail,
    cpu_limit_helps,
    cpu_rises_with_clusters,
    latency_rises_with_clusters,
    native_cpu_lowest,
    target_cpu_low,
    vm_cpu_overhead,
    writes_rise_reads_fall,
)
from strata.analysis.findings.checks_fs import (
    above_raw_is_cache,
    btrfs_driver_slow,
    btrfs_nodatacow,
    btrfs_rr_blocksize,
    btrfs_small_random,
    device_part_dominates,
    dioread_nolock,
    ext4_beats_xfs_rw,
    ext4_jobs_flat,
    ext4_rr_below_raw,
    latency_high_load,
    overlay_layer_near_raw,
    sequential_either_fs,
    submission_small_high_load,
    volume_driver_independent,
    volume_near_host,
    xfs_beats_ext4_rr,
    xfs_jobs_cliff,
    xfs_near_raw,
)
from strata.analysis.findings.verdict import HELD, INCONCLUSIVE, NOT_HELD, NOT_MEASURED, S001, S002, S003, S004, Outcome

if TYPE_CHECKING:
    from strata.analysis.measured.measurements import Measurements

M = TypeVar("M", bound="Measurements")

__all__ = ["FINDINGS", "Finding", "Outcome", "evaluate", "HELD", "NOT_HELD", "INCONCLUSIVE", "NOT_MEASURED"]


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str  # strata's words, never in quotes
    source: str
    criterion: str
    check: Callable[[Measurements], Outcome]
    quote: str | None = None  # the study's own sentence: an id of quotes.yaml (None: strata's own reading)
    reading: str = ""  # strata's own reading: of what of the study, in words (study 004's Tables 2 to 5)

    @property
    def own_reading(self) -> bool:
        """No sentence of the study says it: strata reads it from the study's numbers."""
        return self.quote is None


F = Finding
FINDINGS: list[Finding] = [
    F(
        "xfs-near-raw",
        "File I/O on xfs closely resembles the raw block device for random and sequential "
        "workloads, except purely random writes.",
        f"{S003} section 5.1, Figures 3a-3b",
        "xfs (no mount options) at >= 0.90x raw for random read, sequential read and write",
        xfs_near_raw,
        quote="003-xfs-near-raw",
    ),
    F(
        "ext4-rr-below-raw",
        "ext4 random reads under high load run ~25% below the raw block device.",
        f"{S003} section 5.1",
        "ext4 random read at the highest load <= 0.90x raw",
        ext4_rr_below_raw,
        quote="003-ext4-rr-25",
    ),
    F(
        "ext4-dioread-nolock",
        "ext4 mounted with dioread_nolock reads randomly ~25% faster.",
        f"{S003} section 5.1, Figure 3f",
        "ext4,dioread_nolock random read at the highest load >= +10% over ext4",
        dioread_nolock,
        quote="003-dioread-nolock",
    ),
    F(
        "xfs-jobs-cliff",
        "xfs random write IOPS fall off a cliff past 24 parallel jobs.",
        f"{S003} section 5.1, Figure 3e",
        "best xfs random-write IOPS past 24 jobs < 0.80x the best up to 24",
        xfs_jobs_cliff,
        quote="003-xfs-cliff",
    ),
    F(
        "ext4-jobs-flat",
        "ext4 random write IOPS stay about the same regardless of the number of jobs.",
        f"{S003} section 5.1, Figure 3e",
        "ext4 random-write IOPS over a jobs sweep within 20% of the best",
        ext4_jobs_flat,
        quote="003-ext4-flat",
    ),
    F(
        "xfs-for-random-reads",
        "If a workload is random-read intensive, xfs is the better host file system.",
        f"{S003} section 5.1",
        "xfs random read at the highest load >= 0.95x ext4",
        xfs_beats_ext4_rr,
        quote="003-xfs-for-reads",
    ),
    F(
        "ext4-for-concurrent-writes",
        "With many concurrent random writes, ext4 avoids xfs's write lock contention.",
        f"{S003} section 5.1",
        "ext4 random write at the highest load >= 0.95x xfs",
        ext4_beats_xfs_rw,
        quote="003-ext4-for-writes",
    ),
    F(
        "sequential-either-fs",
        "For sequential workloads either xfs or ext4 works well.",
        f"{S003} section 5.1",
        "ext4 and xfs sequential read/write >= 0.90x raw",
        sequential_either_fs,
        quote="003-sequential-either",
    ),
    F(
        "btrfs-small-random",
        "btrfs performs much worse than the other options for small random reads and writes.",
        f"{S003} section 5.2, Figures 3c, 3d, 3g",
        "btrfs random I/O at <= 16 KiB < 0.80x the better of ext4/xfs",
        btrfs_small_random,
        quote="003-btrfs-small-blocks",
    ),
    F(
        "btrfs-rr-blocksize",
        "btrfs achieves its best random read performance once blocks reach 32 KiB.",
        f"{S003} section 5.2, Figure 3g",
        "btrfs random-read ratio to raw at >= 32 KiB above the one at 4 KiB",
        btrfs_rr_blocksize,
        quote="003-btrfs-32kb",
    ),
    F(
        "btrfs-nodatacow",
        "Without copy-on-write, btrfs random write performance increases 5x.",
        f"{S003} section 5.2, Figure 3h; {S002} section III-A",
        "btrfs,nodatacow random write >= 2x btrfs",
        btrfs_nodatacow,
        quote="003-btrfs-nocow",
    ),
    F(
        "overlay-layer-near-raw",
        "aufs and overlay drivers achieve performance similar to the raw block device.",
        f"{S003} section 5.2, Figures 3c-3d; {S002} section III-A",
        "overlay2/aufs writable layer >= 0.90x raw, at the highest load measured, above one I/O in flight "
        "(the study's default high load)",
        overlay_layer_near_raw,
        quote="003-overlay-near-raw",
    ),
    F(
        "btrfs-driver-slow",
        "The btrfs storage driver performs much worse than the others for random workloads.",
        f"{S003} section 5.2, Figures 3c-3d",
        "docker:btrfs layer random I/O < 0.80x docker:overlay2 layer",
        btrfs_driver_slow,
        quote="003-btrfs-driver-worse",
    ),
    F(
        "volume-near-host-fs",
        "Data volumes match the host file system's throughput.",
        f"{S003} section 5.3, Figures 3k-3l; {S002} section III-B",
        "a container volume within 5% of native on the same file system",
        volume_near_host,
        quote="003-volume-matches-xfs",
    ),
    F(
        "volume-driver-independent",
        "Data volume performance is independent of the storage driver.",
        f"{S003} section 5.3",
        "volumes under >= 2 storage drivers within 5% of each other",
        volume_driver_independent,
        quote="003-volume-independent",
    ),
    F(
        "above-raw-is-cache",
        "A result above the raw device means a cache answered (loop-lvm: 1.4x raw, O_DIRECT not respected).",
        f"{S003} sections 5.2 and 5.5, Figures 3i-3j",
        "every configuration above 1.10x raw (device and cache-flagged trials together) has "
        "diskstats showing the disk moved < 50% of the workload's bytes (undecided without byte evidence)",
        above_raw_is_cache,
        quote="003-loop-lvm-odirect",
    ),
    F(
        "latency-high-load",
        "Under high load queueing makes latency ~20x longer than under low load.",
        f"{S003} section 5.5, Figure 4",
        "random-read total latency at the highest load >= 5x the lowest load",
        latency_high_load,
        quote="003-latency-20x",
    ),
    F(
        "clat-dominates",
        "clat takes up most of the I/O latency; slat is a small portion under low load.",
        f"{S003} section 5.5, Figure 4a",
        "low-load slat < 20% of total latency",
        device_part_dominates,
        quote="003-clat-substantial",
    ),
    F(
        "slat-negligible-high-load",
        "Under high load the application overhead slat is less than 1%.",
        f"{S003} section 5.5, Figure 4b",
        "high-load slat < 1% of total latency",
        submission_small_high_load,
        quote="003-network-slat-high",
    ),
    F(
        "containers-peak",
        "Aggregate throughput rises with containers, peaks (about four) and then falls.",
        f"{S003} section 6.1, Figure 6a",
        "over >= 3 container counts, the peak is inside and the last count is >= 10% below it",
        containers_peak,
        quote="003-peak-four",
    ),
    F(
        "p99-grows-faster",
        "With more containers, p99 latency grows much faster than the mean.",
        f"{S003} sections 6.1 and 7, Figure 6b",
        "p99 growth factor > mean growth factor over the container sweep",
        p99_grows_faster,
        quote="003-p99-faster",
    ),
    F(
        "per-container-share",
        "N containers share one disk: MB/s per container falls about as 1/N (strata's reading of the tables).",
        f"{S004} section 4, Tables 2-5",
        "aggregate of N containers within 20% of one container's",
        per_container_share,
        reading="study 004's Tables 2 to 5",
    ),
    F(
        "ext4-best-file-mail",
        "ext4 is the best backing file system for the file server and mail workloads.",
        f"{S004} section 4, Tables 3-4 and section 5",
        "ext4 MB/s >= 0.95x the best file system, per workload/path/containers",
        ext4_best_file_mail,
        quote="004-ext4-optimal",
    ),
    F(
        "xfs-worst-mail",
        "xfs is not suitable for workloads dominated by synchronous random writes (mail).",
        f"{S004} section 4, Table 3 and section 5",
        "xfs MB/s <= 1.05x the worst file system for mail",
        xfs_worst_mail,
        quote="004-xfs-mail",
    ),
    F(
        "btrfs-worst-fileserver",
        "btrfs is not suitable for random and sequential write workloads (file server).",
        f"{S004} section 4, Table 4 and section 5",
        "btrfs MB/s <= 1.05x the worst file system for the file server",
        btrfs_worst_fileserver,
        quote="004-btrfs-fileserver",
    ),
    F(
        "bind-slightly-better",
        "Bind mounts perform slightly better than volumes, whatever the number of containers (file server and "
        "random file access).",
        f"{S004} section 4, Tables 4-5",
        "per workload and count of containers, bind mount above volume (> 1.00x) over the file systems "
        "measured (the geometric mean of bind / volume), file server and random file access",
        bind_slightly_better,
        quote="004-bind-better",
    ),
    F(
        "container-near-native",
        "A container on a volume or bind mount reaches native throughput.",
        f"{S001} section 4.1 and summary; {S002} section IV",
        "container >= 0.95x native on the same file system (a database flat out: held to an offered rate, "
        "every runtime runs that rate)",
        container_near_native,
        quote="001-as-native",
    ),
    F(
        "containers-beat-vms",
        "Containers reach about 30% more throughput than VMs (mixed load; 20-25% write, over 40% read).",
        f"{S001} section 4, Figure 1",
        "container >= 1.10x the VM on the same file system and path (a database flat out)",
        containers_beat_vms,
        quote="001-containers-30",
    ),
    F(
        "remote-near-local",
        "Under high load, remote NVMe over Fabrics storage reaches within 6-12% of direct-attached storage "
        "(Cassandra's throughput; at low load the study's fio latency is 54% higher remote).",
        f"{S003} sections 5.4 and 6.1, Figure 6a",
        "remote device >= 0.88x the direct-attached one, all else equal, at high load only: more than one I/O "
        "in flight per instance and the most measured (fio), a database flat out",
        remote_near_local,
        quote="003-nvmf-within",
    ),
    F(
        "remote-gap-closes",
        "Remote storage matches direct-attached storage most closely under high I/O load; the fabric's "
        "added latency matters most at low load.",
        f"{S003} section 5.4 and 5.5, Figures 3 and 4",
        "remote/local throughput at the highest load >= remote/local at the lowest load, same stack and workload",
        remote_gap_closes,
        quote="003-nvmf-random",
    ),
    F(
        "memory-limit-hurts",
        "A per-container memory limit cuts aggregate throughput (MEM: -47% at 4 containers).",
        f"{S003} section 6.2, Figure 7a, Table 2",
        "with a memory limit alone (MEM, or memory given as a value; no cpu or bandwidth limit), throughput "
        ">= 20% below the unlimited run",
        memory_limit_hurts,
        quote="003-mem-47",
    ),
    F(
        "memory-limit-hurts-most",
        "Of the single-resource limits, memory (MEM) has the most significant impact on throughput.",
        f"{S003} section 6.2, Figure 7a, Table 2",
        "at one container count, the MEM preset's change against no limit is below CPU's and BW's",
        limit_hurts_most,
        quote="003-mem-most",
    ),
    F(
        "p99-grows-past-peak",
        "Past the peak container count, tail latency keeps growing while throughput falls.",
        f"{S003} sections 6.1 and 7, Figure 6b",
        "p99 at the largest count above p99 at the peak count",
        p99_grows_past_peak,
        quote="003-p99-exponential",
    ),
    F(
        "replication-cost",
        "A higher replication factor costs latency: each request waits for more replicas.",
        f"{S001} section 4.1, Figure 3 and Table 2",
        "mean latency at the highest replication factor above the lowest, all else equal",
        replication_cost,
        quote="001-rf1-latency",
    ),
    F(
        "bandwidth-limit-harmless",
        "A per-container disk bandwidth limit barely changes aggregate throughput.",
        f"{S003} section 6.2, Figure 7a",
        "with a bandwidth limit alone (BW, or read_bps/write_bps given as values; no cpu or memory limit), "
        "within 10% of the unlimited run",
        bandwidth_limit_harmless,
        quote="003-bw-harmless",
    ),
    F(
        "cpu-rises-with-clusters",
        "More Cassandra clusters at once cost more CPU for the same work, in containers as in VMs.",
        f"{S001} section 4.2, Figures 4-6",
        "the servers' CPU per 1,000 ops/s at the most clusters above one cluster's (> 1.00x), same load "
        "and offered rate",
        cpu_rises_with_clusters,
        quote="001-cpu-clusters",
    ),
    F(
        "latency-rises-with-clusters",
        "More Cassandra clusters at once raise the mean latency.",
        f"{S001} section 4.2, Figures 7-9",
        "mean latency of every operation at the most clusters above one cluster's (> 1.00x), same load and "
        "offered rate",
        latency_rises_with_clusters,
        quote="001-latency-clusters",
    ),
    F(
        "native-cpu-lowest",
        "The nonvirtualized cluster uses the least CPU; a container's costs at least as much.",
        f"{S001} section 4.1, Table 2",
        "a container's servers' CPU per 1,000 ops/s >= the native one's (>= 1.00x), same database and load",
        native_cpu_lowest,
        quote="001-table2-lowest",
    ),
    F(
        "vm-cpu-overhead",
        "A VM costs more CPU than the nonvirtualized host for the same work, by up to 29 percentage points.",
        f"{S001} section 4.1, Figure 2 and Table 2",
        "a VM's host CPU at native's throughput 0 to 29 percentage points above native's (the study's Table 2: "
        "75% against 46%), same workload, file system and load (KVM only: an emulated VM is never compared)",
        vm_cpu_overhead,
        quote="001-vm-cpu-29",
    ),
    F(
        "target-cpu-low",
        "A storage target needs little CPU: 2.4% for two servers, so one target could serve about 50.",
        f"{S003} section 7, Figure 8d",
        "a remote device's target process <= 2% of its host's CPUs for the one client it serves (50 within its CPU)",
        target_cpu_low,
        quote="003-target-cpu",
    ),
    F(
        "cpu-limit-helps",
        "A per-container CPU limit raises aggregate throughput at 4 containers (+13%).",
        f"{S003} section 6.2, Figure 7a",
        "with the CPU preset at 4 or more containers, throughput above the unlimited run (> 0%)",
        cpu_limit_helps,
        quote="003-cpu-13",
    ),
    F(
        "all-limits-tail",
        "Limiting every resource (ALL) raises tail latency by more than three times in the worst case.",
        f"{S003} section 6.2, Figure 7c",
        "at some container count, p99 with the ALL preset >= 2x the unlimited run's (the study: more than 3x)",
        all_limits_tail,
        quote="003-all-tail",
    ),
    F(
        "writes-rise-reads-fall",
        "Flat out, the write load gains from more Cassandra clusters at once; the read load is best with one.",
        f"{S001} sections 4 and 5, Figure 1",
        "flat-out throughput at the most clusters above one cluster's for writes (> 1.00x), below it for reads "
        "(< 1.00x)",
        writes_rise_reads_fall,
        quote="001-writes-reads-clusters",
    ),
]


def view(a: M) -> M:
    """What the findings read of an analysis: cells measured under emulation (a VM under TCG) never enter
    a claim about storage performance."""
    return dataclasses.replace(a, cells=[c for c in a.cells if not c.emulated])


def evaluate(a: Measurements) -> list[tuple[Finding, Outcome]]:
    """Every claim on the analysis."""
    seen = view(a)
    return [(f, f.check(seen)) for f in FINDINGS]
