"""The stored result's format: its version, its history, and the migrations that read every older one.

Stored results are never rewritten (append-only): a result of an older
version is upgraded in memory when it is loaded, one version at a time, as
asv's `results.py` does (`update_to_2`).

History (SCHEMA_VERSION):
    1  first version: status, stack, labels, trial, metrics, flags, host, stack_facts, collectors
    2  metrics.primary names the headline (value, unit, metric, series); flags.above_raw is its own
       flag (v1 folded it into flags.cache); warnings are {flag, message}; host.tools holds tool
       versions; the native runtime has no storage_driver key; flags.sync says what its skew is
       based on (`basis`) and, like every judgement, has `reason` and `evidence`; flags.steady
       keeps the tool's verdict as `tool`. Each workload upgrades its own part (Workload.upgrade).
    Additions within 2, read with a default when absent: `design` (how the repetitions were taken,
    `{repetitions: N | auto, min, max, margin}`; absent: fixed repetitions, margin 5%); `design.looks`
    (the planned looks of `auto`; absent: stored before looks were planned, when every round was one);
    `writes` (the syncs and O_DIRECT writes the workload declared, each layer's write amplification:
    results/writes.py; absent: derived from the cache evidence and the collectors where they say),
    `flags.flush` and `flags.absorbed` (absent: not judged), and each disk's write merges, flushes,
    discards and write cache in `collectors.diskstats` (absent: not collected).
"""

from __future__ import annotations

from strata.core.jsondoc import JsonObject, JsonValue, arr, as_obj, obj, text
from strata.results import validity
from strata.results.flags import Flag, Judgement
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import Upgrading

SCHEMA_VERSION = 2


def migrate(doc: JsonObject) -> JsonObject:
    """Upgrade a stored result (in place) to SCHEMA_VERSION; raises ValueError for a newer one."""
    version = doc.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"schema_version {version!r} is not a version number")
    if version > SCHEMA_VERSION:
        raise ValueError(f"schema_version {version}; this strata reads up to {SCHEMA_VERSION}: upgrade strata")
    for step in MIGRATIONS[version - 1 :]:
        step(doc)
    doc["schema_version"] = SCHEMA_VERSION
    return doc


def update_to_2(doc: JsonObject) -> None:
    flags = obj(doc, "flags")
    cache = obj(flags, "cache")
    if cache.get("above_raw"):
        ev = as_obj(cache.pop("above_raw"), "flags.cache.above_raw")
        said = text(ev, "reason")
        flags["above_raw"] = {
            "suspect": True,
            "reason": said,
            "evidence": {k: v for k, v in ev.items() if k != "reason"},
        }
        cache["reason"] = (
            text(cache, "reason").replace(said, "").strip("; ") or "every layer moved the workload's bytes"
        )
        cache["suspect"] = validity.bytes_moved(Judgement.from_json(Flag.CACHE, cache)) is False
    sync = flags.get("sync")
    if isinstance(sync, dict):  # v1 wrote no reason or evidence when not suspect
        defaults: tuple[tuple[str, JsonValue], ...] = (("basis", "wrapper"), ("reason", ""), ("evidence", {}))
        for key, default in defaults:
            sync.setdefault(key, default)
    doc["warnings"] = [_warning_v2(w) for w in arr(doc, "warnings")]
    runtime = obj(obj(doc, "trial"), "runtime")
    kind = runtime.get("type")
    plugin = RUNTIMES.get(kind) if isinstance(kind, str) else None
    if plugin is not None and "storage_driver" not in plugin.params.model_fields:  # v1 stored docker's with native
        runtime.pop("storage_driver", None)
    _upgrade_workload(doc, 1)


def _upgrade_workload(doc: JsonObject, version: int) -> None:
    """The plugin of the result's workload upgrades its own part of the format, where it changed."""
    kind = obj(obj(doc, "trial"), "workload").get("type")
    wl = WORKLOADS.get(kind) if isinstance(kind, str) else None
    if isinstance(wl, Upgrading):
        wl.upgrade(doc, version)


def _warning_v2(w: JsonValue) -> JsonValue:
    if isinstance(w, dict):
        return w
    flag, _, message = str(w).partition(": ")
    if flag == "cache" and "the raw device's" in message:
        flag = "above_raw"
    return {"flag": flag, "message": message}


MIGRATIONS = [update_to_2]  # MIGRATIONS[k - 1] upgrades version k to k + 1
