"""What a fio run asked of the device beyond its bytes: its syncs and its O_DIRECT writes, from fio's own JSON.

fio counts the syncs it issued (`sync.total_ios` of each job: its `fsync=N`, `fdatasync=N`,
`sync_file_range` and `end_fsync` calls) and, with `sync=1` (or `sync`, `dsync`), every write is a
sync of its own (O_SYNC, O_DSYNC). Each job's options are read from the JSON (`job options`, else
`global options`), so a job file declares the same as strata's own command line. One JSON entry stands
for `numjobs` jobs under `group_reporting` and for one job otherwise (each clone listed apart).

How many syncs may wait at once (`Syncs.streams`): one per job for engines that wait for a job's
queue to drain before they sync (libaio, measured here: 1 job at iodepth 32 with fsync=1 made 1.18
device flushes per fsync on ext4) and the synchronous ones; `iodepth` per job for the others
(io_uring queues its fsyncs beside its writes: 3.4 fsyncs per device flush at iodepth 32).
"""

from __future__ import annotations

from strata.core.jsondoc import JsonObject, arr, as_obj, obj, whole
from strata.workloads.base import DirectWrites, Syncs
from strata.workloads.latency import figure

# Engines with at most one sync of a job at a time (fio's engines/libaio.c syncs once its queue is empty).
SERIAL_SYNC_ENGINES = ("libaio", "psync", "sync", "vsync", "pvsync", "pvsync2", "mmap")
SYNC_OPTIONS = ("fsync", "fdatasync", "sync_file_range", "end_fsync", "fsync_on_close")
SYNCED_WRITES = ("1", "sync", "dsync", "true")  # `sync=`: each write is O_SYNC or O_DSYNC


def jobs(doc: JsonObject) -> list[JsonObject]:
    """The job entries of an instance's fio JSON."""
    return [as_obj(j, "a job") for j in arr(doc, "jobs")]


def option(doc: JsonObject, job: JsonObject, key: str, default: str = "") -> str:
    """A job's option as fio ran it: its own, else the global section's, else `default`."""
    v = obj(job, "job options").get(key)
    if v is None:
        v = obj(doc, "global options").get(key)
    return str(v) if v is not None else default


def jobs_of(doc: JsonObject, job: JsonObject) -> int:
    """The jobs one JSON entry stands for: numjobs under group_reporting (one entry), else 1 (each clone)."""
    numjobs = _int(option(doc, job, "numjobs", "1"), 1)
    same = sum(1 for j in jobs(doc) if j.get("jobname") == job.get("jobname"))
    return max(1, numjobs // max(1, same))


def _int(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default


def _streams(doc: JsonObject, job: JsonObject) -> int:
    engine = option(doc, job, "ioengine", "psync").split(":")[0]
    depth = 1 if engine in SERIAL_SYNC_ENGINES else max(1, _int(option(doc, job, "iodepth", "1"), 1))
    return jobs_of(doc, job) * depth


def _synced_writes(doc: JsonObject, job: JsonObject) -> bool:
    return option(doc, job, "sync", "0").lower() in SYNCED_WRITES


def syncs(docs: list[JsonObject]) -> Syncs:
    """The syncs of every job of every instance, by fio's count (0: it asked for none)."""
    count = streams = calls = 0
    kinds: list[str] = []
    for doc in docs:
        for job in jobs(doc):
            # fio 3.33 counts fsync= calls in sync.total_ios but not fdatasync= ones (0 for 227 fdatasyncs,
            # measured): the sync latency's own count holds both
            called = max(whole(obj(job, "sync"), "total_ios") or 0, whole(obj(obj(job, "sync"), "lat_ns"), "N") or 0)
            writes = int(figure(obj(job, "write"), "total_ios")) if _synced_writes(doc, job) else 0
            if not called and not writes:
                continue
            count += called + writes
            calls += called
            streams += _streams(doc, job)
            kinds += [k for k in SYNC_OPTIONS if called and option(doc, job, k, "0") not in ("0", "")]
            if writes:
                kinds.append("O_DSYNC writes" if option(doc, job, "sync").lower() == "dsync" else "O_SYNC writes")
    what = " and ".join(dict.fromkeys(kinds)) or "fio's syncs"
    return Syncs(count, max(1, streams) if count else 0, what, by_writes=count > 0 and calls == 0)


def direct_writes(docs: list[JsonObject]) -> DirectWrites | None:
    """The writes of every job, when every job that wrote did so with O_DIRECT (None: none did, or some
    wrote through the page cache, whose writes the device takes later and merged)."""
    writing = [(doc, job) for doc in docs for job in jobs(doc) if figure(obj(job, "write"), "total_ios")]
    if not writing or any(option(doc, job, "direct", "0") not in ("1", "true") for doc, job in writing):
        return None
    return DirectWrites(
        sum(int(figure(obj(job, "write"), "total_ios")) for _, job in writing),
        sum(int(figure(obj(job, "write"), "io_bytes")) for _, job in writing),
        all(option(doc, job, "rw", "read").split(":")[0].startswith("rand") for doc, job in writing),
    )
