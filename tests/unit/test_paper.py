"""The studies' published numbers as data (src/strata/analysis/studies/paper.yaml): the file loads, every study
has values, study 004's Tables 2 to 5 are complete, no value is given twice, and a malformed entry is
refused with its name."""

from collections import Counter

import pytest
import yaml

from strata.analysis.studies import paper

TABLES_004 = {"Table 2": "webserver", "Table 3": "varmail", "Table 4": "fileserver", "Table 5": "randomfileaccess"}


@pytest.fixture(scope="module")
def values():
    return paper.load()


def test_loads_and_every_study_has_values(values):
    assert all(isinstance(v, paper.PaperValue) for v in values)
    counts = Counter(v.study for v in values)
    assert set(counts) == set(paper.STUDIES)
    assert counts["004"] == 72 and counts["001"] >= 54


def test_the_yaml_ships_with_the_package():
    assert paper.PATH.parent.name == "studies" and paper.PATH.is_file()


def test_004_tables_have_every_cell(values):
    """Each of Tables 2 to 5: 3 file systems x 2 paths x 1, 2 and 3 containers, all printed."""
    for where, workload in TABLES_004.items():
        cells = {
            (v.match["filesystem"], v.match["path"], v.match["containers"]): v
            for v in values
            if v.study == "004" and v.where == where
        }
        want = {(fs, p, n) for fs in ("ext4", "xfs", "btrfs") for p in ("volume", "bind") for n in (1, 2, 3)}
        assert set(cells) == want, where
        assert all(v.read == "table" and v.match["workload"] == workload for v in cells.values())
    t4 = {v.what: v.value for v in values if v.study == "004" and v.where == "Table 4"}
    assert t4["fileserver, ext4, Docker volume, 1 container: MB/s per container"] == 168.03
    assert t4["fileserver, btrfs, bind mount, 3 containers: MB/s per container"] == 19.31


def test_001_table_2_is_complete(values):
    """3 replication factors x 3 loads x 3 runtimes x (CPU, latency)."""
    t2 = [v for v in values if v.study == "001" and v.where == "Table 2"]
    assert len(t2) == 54
    assert Counter(v.unit for v in t2) == {"percent": 27, "ms": 27}


def test_no_value_given_twice(values):
    dup = [k for k, n in Counter(v.key for v in values).items() if n > 1]
    assert not dup


def test_every_entry_is_well_formed(values):
    for v in values:
        assert v.read in paper.READS and v.unit in paper.UNITS, v.key
        assert set(v.match) <= set(paper.MATCH_KEYS), v.key
        if v.unit == "ratio":
            assert v.baseline, v.key


GOOD = {
    "study": "004",
    "where": "Table 3",
    "what": "varmail, ext4, Docker volume, 1 container: MB/s per container",
    "read": "table",
    "unit": "MB/s",
    "value": 3.6,
    "baseline": None,
    "match": {"workload": "varmail", "containers": 1},
    "note": "",
}


@pytest.mark.parametrize(
    "change, says",
    [
        ({"study": "005"}, "study '005'"),
        ({"study": 4}, "study 4"),
        ({"where": ""}, "`where` must be a non-empty string"),
        ({"what": "  "}, "`what` must be a non-empty string"),
        ({"read": "plot"}, "read 'plot'"),
        ({"unit": "GB/s"}, "unit 'GB/s'"),
        ({"value": float("nan")}, "not a finite number"),
        ({"value": "3.6"}, "not a finite number"),
        ({"value": True}, "not a finite number"),
        ({"match": {"device": "loop"}}, "match key 'device'"),
        ({"match": {"containers": [1, 2]}}, "match containers"),
        ({"match": {"metric": "speed"}}, "metric 'speed'"),
        ({"unit": "ratio", "value": 5}, "a ratio needs a baseline"),
        ({"unit": "points", "value": 29}, "a change in percentage points needs a baseline"),
        ({"case": 3}, "case must be a string"),
        ({"colour": "red"}, "unknown field(s) colour"),
    ],
)
def test_a_malformed_entry_is_refused_with_its_name(tmp_path, change, says):
    bad = {**GOOD, **change}
    f = tmp_path / "paper.yaml"
    f.write_text(yaml.safe_dump([GOOD | {"where": "Table 2"}, bad]))
    with pytest.raises(ValueError) as e:
        paper.load(f)
    msg = str(e.value)
    assert msg.startswith("paper.yaml entry 1") and says in msg
    if isinstance(bad["what"], str) and bad["what"].strip():
        assert bad["what"] in msg


def test_a_missing_field_and_a_duplicate_are_refused(tmp_path):
    f = tmp_path / "paper.yaml"
    f.write_text(yaml.safe_dump([{k: v for k, v in GOOD.items() if k != "unit"}]))
    with pytest.raises(ValueError, match=r"entry 0 \(004, Table 3, varmail.*missing unit"):
        paper.load(f)
    f.write_text(yaml.safe_dump([GOOD, GOOD]))
    with pytest.raises(ValueError, match="entry 1 .*the same study, where and what as entry 0"):
        paper.load(f)
    f.write_text(yaml.safe_dump({"study": "004"}))
    with pytest.raises(ValueError, match="expected a list"):
        paper.load(f)
