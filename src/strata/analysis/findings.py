"""The claims of the seed studies, each a check over the user's results.

Every Finding quotes a claim from a study (docs/studies.md) with its source (section, figure or table),
states the criterion strata applies, and checks it: held or not held only when the 95% interval of the
compared quantity lies wholly on one side of the criterion, inconclusive otherwise (with what would
decide it), not measured when the results hold nothing the claim speaks about; always with the numbers.
The thresholds are looser than the studies' own numbers on purpose: the studies ran NVMe SSDs, the user
may run a loop file; a claim holds when its direction and rough size hold.

FINDINGS is the registry: add a claim by adding one Finding to it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from strata.analysis.checks_apps import limit_hurts_most, p99_grows_past_peak, replication_cost
from strata.analysis.checks_containers import (
    bandwidth_limit_harmless,
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
    volume_bind_similar,
    xfs_worst_mail,
)
from strata.analysis.checks_fs import (
    above_raw_is_cache,
    btrfs_driver_slow,
    btrfs_nodatacow,
    btrfs_rr_blocksize,
    btrfs_small_random,
    clat_dominates,
    devicemapper_slow,
    dioread_nolock,
    ext4_beats_xfs_rw,
    ext4_jobs_flat,
    ext4_rr_below_raw,
    latency_high_load,
    overlay_layer_near_raw,
    sequential_either_fs,
    slat_small_high_load,
    volume_driver_independent,
    volume_near_host,
    xfs_beats_ext4_rr,
    xfs_jobs_cliff,
    xfs_near_raw,
)
from strata.analysis.verdict import HELD, INCONCLUSIVE, NOT_HELD, NOT_MEASURED, S001, S002, S003, S004, Outcome

__all__ = ["FINDINGS", "Finding", "Outcome", "evaluate", "HELD", "NOT_HELD", "INCONCLUSIVE", "NOT_MEASURED"]


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    source: str
    criterion: str
    check: Callable


F = Finding
FINDINGS: list[Finding] = [
    F(
        "xfs-near-raw",
        "File I/O on xfs closely resembles the raw block device for random and sequential "
        "workloads, except purely random writes.",
        f"{S003} section 5.1, Figures 3a-3b",
        "xfs (no mount options) at >= 0.90x raw for random read, sequential read and write",
        xfs_near_raw,
    ),
    F(
        "ext4-rr-below-raw",
        "ext4 random reads under high load run ~25% below the raw block device.",
        f"{S003} section 5.1",
        "ext4 random read at the highest load <= 0.90x raw",
        ext4_rr_below_raw,
    ),
    F(
        "ext4-dioread-nolock",
        "ext4 mounted with dioread_nolock reads randomly ~25% faster.",
        f"{S003} section 5.1, Figure 3f",
        "ext4,dioread_nolock random read at the highest load >= +10% over ext4",
        dioread_nolock,
    ),
    F(
        "xfs-jobs-cliff",
        "xfs random write IOPS fall off a cliff past 24 parallel jobs.",
        f"{S003} section 5.1, Figure 3e",
        "best xfs random-write IOPS past 24 jobs < 0.80x the best up to 24",
        xfs_jobs_cliff,
    ),
    F(
        "ext4-jobs-flat",
        "ext4 random write IOPS stay about the same regardless of the number of jobs.",
        f"{S003} section 5.1, Figure 3e",
        "ext4 random-write IOPS over a jobs sweep within 20% of the best",
        ext4_jobs_flat,
    ),
    F(
        "xfs-for-random-reads",
        "If a workload is random-read intensive, xfs is the better host file system.",
        f"{S003} section 5.1",
        "xfs random read at the highest load >= 0.95x ext4",
        xfs_beats_ext4_rr,
    ),
    F(
        "ext4-for-concurrent-writes",
        "With many concurrent random writes, ext4 avoids xfs's write lock contention.",
        f"{S003} section 5.1",
        "ext4 random write at the highest load >= 0.95x xfs",
        ext4_beats_xfs_rw,
    ),
    F(
        "sequential-either-fs",
        "For sequential workloads either xfs or ext4 works well.",
        f"{S003} section 5.1",
        "ext4 and xfs sequential read/write >= 0.90x raw",
        sequential_either_fs,
    ),
    F(
        "btrfs-small-random",
        "btrfs performs much worse than the other options for small random reads and writes.",
        f"{S003} section 5.2, Figures 3c, 3d, 3g",
        "btrfs random I/O at <= 16 KiB < 0.80x the better of ext4/xfs",
        btrfs_small_random,
    ),
    F(
        "btrfs-rr-blocksize",
        "btrfs achieves its best random read performance once blocks reach 32 KiB.",
        f"{S003} section 5.2, Figure 3g",
        "btrfs random-read ratio to raw at >= 32 KiB above the one at 4 KiB",
        btrfs_rr_blocksize,
    ),
    F(
        "btrfs-nodatacow",
        "Without copy-on-write, btrfs random write performance increases 5x.",
        f"{S003} section 5.2, Figure 3h; {S002} section III-A",
        "btrfs,nodatacow random write >= 2x btrfs",
        btrfs_nodatacow,
    ),
    F(
        "overlay-layer-near-raw",
        "aufs and overlay drivers achieve performance similar to the raw block device.",
        f"{S003} section 5.2, Figures 3c-3d; {S002} section III-A",
        "overlay2/aufs writable layer >= 0.90x raw",
        overlay_layer_near_raw,
    ),
    F(
        "btrfs-driver-slow",
        "The btrfs storage driver performs much worse than the others for random workloads.",
        f"{S003} section 5.2, Figures 3c-3d",
        "docker:btrfs layer random I/O < 0.80x docker:overlay2 layer",
        btrfs_driver_slow,
    ),
    F(
        "devicemapper-slow",
        "direct-lvm (devicemapper) adds code paths unsuited to I/O intensive applications.",
        f"{S003} section 5.3; {S002} section III-B",
        "docker:devicemapper layer < 0.90x docker:overlay2 layer",
        devicemapper_slow,
    ),
    F(
        "volume-near-host-fs",
        "Data volumes match the host file system's throughput.",
        f"{S003} section 5.3, Figures 3k-3l; {S002} section III-B",
        "a container volume within 5% of native on the same file system",
        volume_near_host,
    ),
    F(
        "volume-driver-independent",
        "Data volume performance is independent of the storage driver.",
        f"{S003} section 5.3",
        "volumes under >= 2 storage drivers within 5% of each other",
        volume_driver_independent,
    ),
    F(
        "above-raw-is-cache",
        "A result above the raw device means a cache answered (loop-lvm: 1.4x raw, O_DIRECT not respected).",
        f"{S003} sections 5.2 and 5.5, Figures 3i-3j",
        "every configuration above 1.10x raw (device and cache-flagged trials together) has "
        "diskstats showing the disk moved < 50% of the workload's bytes",
        above_raw_is_cache,
    ),
    F(
        "latency-high-load",
        "Under high load queueing makes latency ~20x longer than under low load.",
        f"{S003} section 5.5, Figure 4",
        "random-read total latency at the highest load >= 5x the lowest load",
        latency_high_load,
    ),
    F(
        "clat-dominates",
        "clat takes up most of the I/O latency; slat is a small portion under low load.",
        f"{S003} section 5.5, Figure 4a",
        "low-load slat < 20% of total latency",
        clat_dominates,
    ),
    F(
        "slat-negligible-high-load",
        "Under high load the application overhead slat is less than 1%.",
        f"{S003} section 5.5, Figure 4b",
        "high-load slat < 1% of total latency",
        slat_small_high_load,
    ),
    F(
        "containers-peak",
        "Aggregate throughput rises with containers, peaks (about four) and then falls.",
        f"{S003} section 6.1, Figure 6a",
        "over >= 3 container counts, the peak is inside and the last count is >= 10% below it",
        containers_peak,
    ),
    F(
        "p99-grows-faster",
        "With more containers, p99 latency grows much faster than the mean.",
        f"{S003} sections 6.1 and 7, Figure 6b",
        "p99 growth factor > mean growth factor over the container sweep",
        p99_grows_faster,
    ),
    F(
        "per-container-share",
        "N containers share one device: MB/s per container falls about as 1/N.",
        f"{S004} section 4, Tables 2-5",
        "aggregate of N containers within 20% of one container's",
        per_container_share,
    ),
    F(
        "ext4-best-file-mail",
        "ext4 is the best backing file system for the file server and mail workloads.",
        f"{S004} section 4, Tables 3-4 and section 5",
        "ext4 MB/s >= 0.95x the best file system, per workload/path/containers",
        ext4_best_file_mail,
    ),
    F(
        "xfs-worst-mail",
        "xfs is not suitable for workloads dominated by synchronous random writes (mail).",
        f"{S004} section 4, Table 3 and section 5",
        "xfs MB/s <= 1.05x the worst file system for mail",
        xfs_worst_mail,
    ),
    F(
        "btrfs-worst-fileserver",
        "btrfs is not suitable for random and sequential write workloads (file server).",
        f"{S004} section 4, Table 4 and section 5",
        "btrfs MB/s <= 1.05x the worst file system for the file server",
        btrfs_worst_fileserver,
    ),
    F(
        "volume-bind-similar",
        "Docker volumes and bind mounts perform similarly.",
        f"{S004} section 4, Tables 2-5",
        "volume within 10% of bind mount on the same file system",
        volume_bind_similar,
    ),
    F(
        "container-near-native",
        "A container on a volume or bind mount reaches native throughput.",
        f"{S001} section 4.1, Table 2; {S002} section IV",
        "container >= 0.95x native on the same file system",
        container_near_native,
    ),
    F(
        "containers-beat-vms",
        "Containers reach about 30% more throughput than VMs (mixed load; 20-25% write, over 40% read).",
        f"{S001} section 4, Figure 1",
        "container >= 1.10x the VM on the same file system and path",
        containers_beat_vms,
    ),
    F(
        "remote-near-local",
        "Remote NVMe over Fabrics storage reaches within 6-12% of direct-attached storage.",
        f"{S003} sections 5.4 and 6.1, Figure 6a",
        "remote device >= 0.88x the direct-attached one, all else equal",
        remote_near_local,
    ),
    F(
        "remote-gap-closes",
        "Remote storage matches direct-attached storage most closely under high I/O load; the fabric's "
        "added latency matters most at low load.",
        f"{S003} section 5.4 and 5.5, Figures 3 and 4",
        "remote/local throughput at the highest load >= remote/local at the lowest load, same stack and workload",
        remote_gap_closes,
    ),
    F(
        "memory-limit-hurts",
        "A per-container memory limit cuts aggregate throughput (MEM: -47% at 4 containers).",
        f"{S003} section 6.2, Figure 7a, Table 2",
        "with a memory limit, throughput >= 20% below the unlimited run",
        memory_limit_hurts,
    ),
    F(
        "memory-limit-hurts-most",
        "Of the single-resource limits, memory (MEM) has the most significant impact on throughput.",
        f"{S003} section 6.2, Figure 7a, Table 2",
        "at one container count, the MEM preset's change against no limit is below CPU's and BW's",
        limit_hurts_most,
    ),
    F(
        "p99-grows-past-peak",
        "Past the peak container count, tail latency keeps growing while throughput falls.",
        f"{S003} section 6.1, Figure 6b",
        "p99 at the largest count above p99 at the peak count",
        p99_grows_past_peak,
    ),
    F(
        "replication-cost",
        "A higher replication factor costs latency: each request waits for more replicas.",
        f"{S001} section 4, Figures 4-6",
        "mean latency at the highest replication factor above the lowest, all else equal",
        replication_cost,
    ),
    F(
        "bandwidth-limit-harmless",
        "A per-container disk bandwidth limit barely changes aggregate throughput.",
        f"{S003} section 6.2, Figure 7a",
        "with a bps limit, within 10% of the unlimited run",
        bandwidth_limit_harmless,
    ),
]


def evaluate(a) -> list[tuple[Finding, Outcome]]:
    """Every claim on the analysis; cells measured under emulation (a VM under TCG) never enter a
    claim about storage performance."""
    view = dataclasses.replace(a, cells=[c for c in a.cells if not c.emulated])
    return [(f, f.check(view)) for f in FINDINGS]
