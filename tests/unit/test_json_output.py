"""`--json` on show, compare, validate, doctor, studies and report: each document parses, names its schema and
holds to it (strata/cli/schemas.py), each schema is pinned to its version, and docs/json.md says what they hold."""

import json
from pathlib import Path

import jsonschema
import pytest

from strata.cli import schemas
from strata.cli.main import main
from strata.cli.show import table_text
from strata.results.store import load_results

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "results"

# A schema changed without a new version breaks every script that reads it. When a change is deliberate:
# members only added, keep the version and update its fingerprint here; anything removed, renamed or changed
# in meaning, raise the version in schemas.VERSIONS (and say so in docs/json.md's history).
PINNED = {
    "strata.show/1": "d4f0ccb066a6b709",
    "strata.compare/1": "d67c279b1ccbecee",
    "strata.validate/1": "b5d2df63588dd0ba",
    "strata.doctor/1": "d2c7e3bfd3ca2722",
    "strata.studies/1": "09148445cd70fee6",
    "strata.report/1": "191a96f33946b637",
}


def _doc(capsys, argv: list[str], rc: int = 0) -> dict:
    assert main(argv) == rc
    doc = json.loads(capsys.readouterr().out)
    command = argv[0]
    assert doc["schema"] == schemas.schema_id(command)
    jsonschema.validate(doc, schemas.schema(command), cls=jsonschema.Draft202012Validator)
    return doc


def test_every_schema_is_valid_and_pinned_to_its_version():
    assert set(schemas.VERSIONS) == set(schemas.PAYLOADS)
    for command in schemas.VERSIONS:
        jsonschema.Draft202012Validator.check_schema(schemas.schema(command))
    assert {schemas.schema_id(c): schemas.fingerprint(c) for c in schemas.VERSIONS} == PINNED


def test_show_json_carries_every_row_the_text_shows(capsys):
    doc = _doc(capsys, ["show", "--json", str(DATA / "quick-a")])
    text = table_text(load_results(str(DATA / "quick-a"))).splitlines()
    rows = text[2 : 2 + len(doc["rows"])]
    assert len(doc["rows"]) == 56 and all(r and not r.startswith(" ") for r in rows)
    assert len(text) == 2 + 56 or text[2 + 56] == ""  # no row the JSON lacks
    for row, line in zip(doc["rows"], rows):
        words = line.split()
        assert words[:5] == [row["stack"], row["labels"]["workload"], row["labels"]["load"],
                             str(row["repetition"]), row["status"]]  # fmt: skip
        iops = row["values"].get("IOPS")
        assert words[5] == ("-" if iops is None else f"{iops:.0f}")


def test_show_json_of_failed_and_flagged_trials(capsys):
    doc = _doc(capsys, ["show", "--json", str(DATA / "small")])
    assert any("CACHE" in r["flags"] and r["warnings"] for r in doc["rows"])
    assert "CACHE" in doc["legend"]["flags"]


def test_compare_json(capsys):
    doc = _doc(capsys, ["compare", "--json", str(DATA / "quick-a"), str(DATA / "quick-b")])
    assert len(doc["matches"]) == 20 and doc["gate"] is None
    assert {m["b_is"] for m in doc["matches"]} <= {"better", "worse", "same", "undecided"}


def test_validate_json_lists_every_trial_and_the_part(capsys):
    spec = str(ROOT / "examples" / "quick.yaml")
    whole = _doc(capsys, ["validate", "--json", spec])
    assert whole["part"] is None and whole["repetitions"]["mode"] == "auto"
    part = _doc(capsys, ["validate", "--json", spec, "--only", "xfs and rr and not docker", "--set", "repetitions=3"])
    assert part["part"] == {"only": "xfs and rr and not docker", "of_trials": 60}
    assert part["repetitions"] == {"mode": "fixed", "count": 3}
    assert {t["label"].split()[0] for t in part["trials"]} == {"loop/xfs/native/bind"}
    assert len(part["trials"]) == 6 and all(t["labels"]["workload"] == "rr" for t in part["trials"])


def test_doctor_json(capsys):
    doc = _doc(capsys, ["doctor", "--quick", "--json"])
    assert doc["host"]["cpus"] >= 1
    assert {"layer": "filesystem", "name": "xfs"}.items() <= next(
        c for c in doc["checks"] if c["name"] == "xfs"
    ).items()


def test_doctor_json_of_a_cluster_that_is_not_there(capsys, tmp_path):
    doc = _doc(capsys, ["doctor", "--json", "--kubernetes", str(tmp_path / "none")], rc=1)
    assert doc["kubernetes"]["healthy"] is False and doc["kubernetes"]["rows"][0]["problem"]


def test_studies_json(capsys):
    doc = _doc(capsys, ["studies", "--json"])
    assert [s["study"] for s in doc["studies"]] == ["003", "002", "004", "001"]
    assert all(s["findings"] for s in doc["studies"])
    one = _doc(capsys, ["studies", "--json", "002"])
    assert [s["study"] for s in one["studies"]] == ["002"]


def test_report_json(capsys, tmp_path):
    doc = _doc(capsys, ["report", "--json", str(DATA / "small"), "-o", str(tmp_path), "--jobs", "1"])
    assert doc["trials"]["total"] == 16 and doc["configurations"]
    assert (tmp_path / "report.html").exists() and doc["report"] == str(tmp_path / "report.html")


def test_export_ndjson(capsys, tmp_path):
    out = tmp_path / "t.ndjson"
    assert main(["export", str(DATA / "small"), "--ndjson", str(out)]) == 0
    lines = out.read_bytes().splitlines()
    assert len(lines) == 16 and all(json.loads(x)["trial_id"] for x in lines)
    capsys.readouterr()
    assert main(["export", str(DATA / "small"), "--ndjson", "-"]) == 0
    cap = capsys.readouterr()
    assert cap.out.encode().splitlines() == lines and "16 lines" not in cap.out


def test_json_has_no_nan():
    from strata.cli.jsonout import document

    doc = document("show", {"x": float("nan"), "y": [float("inf"), 1.5]})
    assert doc["x"] is None and doc["y"] == [None, 1.5]


def test_docs_json_md_is_generated_from_the_schemas():
    from strata.cli.schemas import markdown

    assert (ROOT / "docs" / "json.md").read_text() == markdown(), (
        "docs/json.md is out of date: python -c 'from strata.cli.schemas import markdown; print(markdown(), end=\"\")' "
        "> docs/json.md"
    )


@pytest.mark.parametrize("command", sorted(schemas.VERSIONS))
def test_every_command_with_a_schema_takes_json(command):
    from strata.cli.main import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    assert any("--json" in a.option_strings for a in sub._actions)
