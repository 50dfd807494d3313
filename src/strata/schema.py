"""The stored result's format: its version, its history, and the migrations that read every older one.

Stored results are never rewritten (append-only): a result of an older
version is upgraded in memory when it is loaded, one version at a time, as
asv's `results.py` does (`update_to_2`).

History (SCHEMA_VERSION):
    1  first version: status, stack, labels, trial, metrics, flags, host, stack_facts, collectors
    2  metrics.primary names the headline (value, unit, metric, series); flags.above_raw is its own
       flag (v1 folded it into flags.cache); warnings are {flag, message}; host.tools holds tool
       versions (v1: host.fio_version); the native runtime has no storage_driver key; flags.sync
       says what its skew is based on (`basis`); flags.steady keeps the tool's verdict as `tool`
"""

from __future__ import annotations

SCHEMA_VERSION = 2
RANDOM_RW = ("randread", "randwrite", "randrw", "randtrim")


def migrate(doc: dict) -> dict:
    """Upgrade a stored result (in place) to SCHEMA_VERSION; raises ValueError for a newer one."""
    version = doc.get("schema_version", 1)
    if version > SCHEMA_VERSION:
        raise ValueError(f"schema_version {version}; this strata reads up to {SCHEMA_VERSION}: upgrade strata")
    for step in MIGRATIONS[version - 1 :]:
        step(doc)
    doc["schema_version"] = SCHEMA_VERSION
    return doc


def update_to_2(doc: dict) -> None:
    _primary_v2(doc)
    flags = doc.get("flags") or {}
    cache = flags.get("cache") or {}
    if cache.get("above_raw"):
        ev = cache.pop("above_raw")
        flags["above_raw"] = {
            "suspect": True,
            "reason": ev.get("reason", ""),
            "evidence": {k: v for k, v in ev.items() if k != "reason"},
        }
        cache["reason"] = (
            cache.get("reason", "").replace(ev.get("reason", ""), "").strip("; ")
            or "every layer moved the workload's bytes"
        )
        shares = [v for k, v in (cache.get("evidence") or {}).items() if k.endswith("_disk_share")]
        cache["suspect"] = bool(shares) and min(shares) < 0.5
    if isinstance(flags.get("sync"), dict):
        flags["sync"].setdefault("basis", "wrapper")
    if isinstance(flags.get("steady"), dict) and "fio" in flags["steady"]:
        flags["steady"]["tool"] = flags["steady"].pop("fio")
    doc["warnings"] = [_warning_v2(w) for w in doc.get("warnings") or []]
    host = doc.get("host") or {}
    if "fio_version" in host:
        host.setdefault("tools", {})["fio"] = host.pop("fio_version")
    runtime = (doc.get("trial") or {}).get("runtime") or {}
    if runtime.get("type") == "native":
        runtime.pop("storage_driver", None)


def _primary_v2(doc: dict) -> None:
    """The headline as the v1 report computed it: MB/s for Filebench and sequential fio, else IOPS."""
    m = doc.get("metrics") or {}
    p = m.get("primary")
    if not isinstance(p, dict) or "value" in p:
        return
    rw = ((doc.get("trial") or {}).get("workload") or {}).get("rw")
    if m.get("kind") == "filebench":
        value, unit, metric = (
            (p.get("mb_per_s"), "MB/s", "mb_per_s")
            if p.get("mb_per_s") is not None
            else (p.get("ops_per_s"), "ops/s", "ops_per_s")
        )
    elif rw and rw not in RANDOM_RW and p.get("bw_bytes") is not None:
        value, unit, metric = p["bw_bytes"] / 1e6, "MB/s", "bw_bytes"
    elif p.get("iops") is not None:
        value, unit, metric = float(p["iops"]), "IOPS", "iops"
    else:
        value, unit, metric = None, "", ""
    fio = m.get("kind") == "fio"
    p.update(
        value=value, unit=unit, metric=metric, series="fio_iops" if fio else None, series_unit="IOPS" if fio else None
    )


def _warning_v2(w) -> dict:
    if isinstance(w, dict):
        return w
    flag, _, message = str(w).partition(": ")
    if flag == "cache" and "the raw device's" in message:
        flag = "above_raw"
    return {"flag": flag, "message": message}


MIGRATIONS = [update_to_2]  # MIGRATIONS[k - 1] upgrades version k to k + 1
