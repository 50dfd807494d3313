"""Stored results of every older format load: the checked-in result sets were written by strata with
schema 1 and are upgraded in memory (schema.py), never rewritten on disk."""

import json
from pathlib import Path

import pytest

from strata.results.schema import SCHEMA_VERSION, migrate
from strata.results.store import load_results, stored_doc

DATA = Path(__file__).resolve().parents[1] / "data" / "results"


@pytest.mark.parametrize("name", ["small", "fs-compare", "sweeps"])
def test_schema_1_results_load_as_the_current_schema(name):
    on_disk = {p.name: json.loads(p.read_text()) for p in (DATA / name / "trials").glob("*.json")}
    assert {d["schema_version"] for d in on_disk.values()} == {1}
    for r in load_results(DATA / name):
        old = on_disk[Path(r.file).name]
        assert stored_doc(r)["schema_version"] == SCHEMA_VERSION
        p = r.metrics["primary"]
        # the headline the v1 report computed: MB/s for sequential fio, IOPS for random
        if r.trial["workload"].get("rw") in ("read", "write"):
            assert (p["unit"], p["value"]) == ("MB/s", old["metrics"]["primary"]["bw_bytes"] / 1e6)
        else:
            assert (p["unit"], p["value"]) == ("IOPS", old["metrics"]["primary"]["iops"])
        assert p["series"] == "fio_iops" and r.host["tools"]["fio"].startswith("fio-")
        assert all(isinstance(w, dict) and w["flag"] and w["message"] for w in r.warnings)
        assert "storage_driver" not in r.trial["runtime"]
        old_cache = old["flags"].get("cache") or {}
        if old_cache.get("above_raw"):
            assert r.flags.to_json()["above_raw"]["suspect"] and "above_raw" not in r.flags.to_json()["cache"]


@pytest.mark.parametrize("name", ["small", "fs-compare", "sweeps", "bs-sweep"])
def test_results_stored_before_writes_and_the_write_flags_load_without_them(name):
    """Issue 44: `writes`, flags.flush and flags.absorbed, each disk's flushes are additions within schema 2:
    an older result has none, is judged by none, and every table still shows it."""
    from strata.cli.show import table_text
    from strata.results import writes
    from strata.results.flags import Flag

    rs = load_results(DATA / name)
    for r in rs:
        f = r.flags
        assert f.flush is None and f.absorbed is None and not f.warns(Flag.FLUSH) and not f.warns(Flag.ABSORBED)
        assert writes.amplification_of(r.writes) is None and writes.device(r.writes) is None
    assert "WA" in table_text(rs).splitlines()[0]


def test_a_newer_schema_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="upgrade strata"):
        migrate({"schema_version": SCHEMA_VERSION + 1})


def test_migration_is_idempotent_on_current_results():
    doc = {"schema_version": SCHEMA_VERSION, "metrics": {"primary": {"value": 1.0, "unit": "IOPS"}}, "warnings": []}
    assert migrate(json.loads(json.dumps(doc))) == doc


def test_schema_1_drops_the_storage_driver_only_where_the_runtime_has_none():
    """v1 stored docker's default driver with every runtime; a runtime whose parameters have no driver
    (native) loses it, docker keeps its own."""

    def v1(runtime: str) -> dict:
        return {"trial": {"runtime": {"type": runtime, "storage_driver": "overlay2"}, "workload": {"type": "fio"}}}

    assert "storage_driver" not in migrate(v1("native"))["trial"]["runtime"]
    assert migrate(v1("docker"))["trial"]["runtime"]["storage_driver"] == "overlay2"
