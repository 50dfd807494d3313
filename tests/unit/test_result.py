"""results/result.py: the typed Result and its codec. Every stored result set of tests/data (schema 1, and
schema 2 with and without its additions) reads as a Result whose stored form is the migrated document, the
files keep their bytes, and a result the run builds round-trips."""

import hashlib
import json
from pathlib import Path

import pytest

from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.results.flags import Flag, Flags
from strata.results.result import OPTIONAL, Result
from strata.results.schema import SCHEMA_VERSION, migrate
from strata.results.store import RESULT_FIELDS, ResultStore
from strata.run.trial import base_result, failed_result

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
SETS = sorted(p.parent.name for p in DATA.glob("*/trials"))


def _files(name: str) -> list[Path]:
    return sorted(p for p in (DATA / name / "trials").glob("*.json"))


def test_every_stored_set_is_checked():
    assert {"small", "fs-compare", "sweeps", "bs-sweep", "pgbench-ee1f538"} <= set(SETS)


@pytest.mark.parametrize("name", SETS)
def test_every_stored_result_reads_as_a_result_of_the_current_form(name):
    for path in _files(name):
        raw = path.read_bytes()
        before = hashlib.sha256(raw).hexdigest()
        r = Result.from_stored(json.loads(raw))
        migrated = migrate(json.loads(raw))
        migrated.pop("schema_version")
        assert r.to_json() == migrated, path.name  # every key read, none lost, none added
        assert r.trial_id == migrated["trial_id"] and r.status in ("ok", "failed", "unsupported")
        assert r.labels["workload"] == migrated["labels"]["workload"]
        assert r.headline == (
            float(migrated["metrics"]["primary"]["value"]) if migrated["metrics"].get("primary") else None,
            (migrated["metrics"].get("primary") or {}).get("unit") or "",
        )
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # read, never rewritten


def test_a_newer_key_is_kept_as_read():
    doc = {"trial_id": "x", "status": "ok", "flags": {"failed": None}, "added_later": {"n": 1}}
    r = Result.from_json(doc)
    assert r.extra == {"added_later": {"n": 1}} and r.to_json()["added_later"] == {"n": 1}


def test_a_newer_version_is_refused():
    with pytest.raises(ValueError, match="upgrade strata"):
        Result.from_stored({"schema_version": SCHEMA_VERSION + 1})


def _trial(tmp_path):
    exp, wls = parse_spec(
        {
            "name": "unit",
            "workdir": str(tmp_path / "work"),
            "devices": ["loop"],
            "filesystems": ["xfs"],
            "runtimes": ["native"],
            "paths": ["bind"],
            "workloads": [{"null": {"iops": 500}}],
            "loads": ["low"],
        }
    )
    return expand(exp, wls)[0][0]


def test_a_built_result_is_stored_with_the_keys_of_before_and_round_trips(tmp_path):
    t = _trial(tmp_path)
    r = failed_result(base_result(t, "run", "unit", {"kernel": "k"}), "unsupported", "no", status="unsupported")
    doc = r.to_json()
    # the keys every result had before the type; the optional ones only once set
    assert set(doc) == set(RESULT_FIELDS) - {"schema_version", *OPTIONAL} | {"status", "artifacts"}
    assert doc["flags"]["failed"]["category"] == "unsupported" and doc["labels"]["repetition"] == 0
    assert Result.from_json(doc).to_json() == doc
    r.started_at = r.finished_at = "2026-11-28T00:00:00+00:00"
    r.duration_s = 0.0
    path = ResultStore(tmp_path / "out").write(r)
    stored = json.loads(path.read_text())
    assert stored["schema_version"] == SCHEMA_VERSION and stored["duration_s"] == 0.0 and "setup_s" not in stored
    assert Result.from_stored(stored).to_json() == doc | {"started_at": r.started_at, "finished_at": r.finished_at,
                                                            "duration_s": 0.0}  # fmt: skip


def test_the_flags_are_typed():
    r = Result.from_json({"flags": {"failed": {"category": "oom", "message": "m", "stderr": ""}}})
    assert r.flags.failed is not None and r.flags.failed.category == "oom"
    r.flags.update(Flags({Flag.FAILED: None}))
    assert r.to_json()["flags"] == {"failed": None}
