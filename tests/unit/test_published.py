"""The studies' own numbers as a result set (analysis/studies/published.py, issue 42): each finding judged on them by
its own check, as on a user's trials; every verdict held, or the finding marked as strata's own reading with
the study's counter-examples named; `strata studies` prints it all on a fresh install."""

import subprocess
import sys
from pathlib import Path

import pytest

from strata.analysis.cells.query import summary_of
from strata.analysis.findings.findings import FINDINGS, HELD, INCONCLUSIVE, NOT_HELD, NOT_MEASURED
from strata.analysis.studies import paper, published, studies

ROOT = Path(__file__).resolve().parents[2]
# A finding its study's numbers leave undecided, and why: what the check reads that the study does not publish.
UNDECIDED = {"above-raw-is-cache": "no byte evidence"}
BY_ID = {f.id: f for f in FINDINGS}


def _value(study, where, what_part):
    (v,) = [v for v in paper.load() if v.study == study and v.where == where and what_part in v.what]
    return v


def test_every_verdict_on_a_studys_own_numbers_is_held_or_marked():
    """The issue's criterion: where a study publishes the numbers a finding compares, the finding holds on
    them, unless it is strata's own reading, which then names every counter-example of the study's."""
    bad = []
    for f in FINDINGS:
        for study in published.studies_of(f):
            o = published.judged(f, study)
            if o.status in (HELD, NOT_MEASURED):
                continue
            if o.status == NOT_HELD and f.own_reading:
                against = [n.removesuffix(" (against)") for n in o.numbers if n.endswith(" (against)")]
                assert against and all(n in published.said(f) for n in against), f.id
                continue
            if o.status == INCONCLUSIVE and f.id in UNDECIDED:
                assert all(UNDECIDED[f.id] in n for n in o.needs), (f.id, o.needs)
                continue
            bad.append(f"{f.id} on study {study}: {o.status}: {o.detail}")
    assert not bad, "\n".join(bad)


def test_the_verdicts_are_not_vacuous():
    """Most findings meet their study's numbers, each of the issue's five among them."""
    judged = {f.id: published.judged(f) for f in FINDINGS}
    held = {k for k, o in judged.items() if o.status == HELD}
    assert len(held) >= 20, held
    assert {"vm-cpu-overhead", "remote-near-local", "bind-slightly-better"} <= held
    assert judged["per-container-share"].status == NOT_HELD and BY_ID["per-container-share"].own_reading
    for fid in held:
        assert judged[fid].numbers and all(n.startswith("study 00") for n in judged[fid].numbers), fid


def test_a_published_number_is_the_measurement_of_its_configuration():
    """Study 004's Table 3 as stored results: the trial strata runs for each cell, the study's MB/s per
    container times the containers as the headline, two identical repetitions."""
    (case,) = [c for c in published.cases("004") if c.name == "Table 3"]
    assert len(case.results) == 36 and len(case.values) == 18
    v1 = _value("004", "Table 3", "varmail, ext4, Docker volume, 2 containers")
    cells = published.measured("004", "Table 3").cells
    (c,) = [c for c in cells if c.fs_type == "ext4" and c.path == "volume" and c.containers == 2]
    assert c.values == [2 * v1.value] * 2 and summary_of(c).ci_low == summary_of(c).ci_high == 2 * v1.value
    assert c.trial["runtime"]["storage_driver"] == "overlay2" and c.trial["workload"]["personality"] == "varmail"
    (b,) = [c for c in cells if c.fs_type == "btrfs" and c.path == "bind" and c.containers == 1]
    assert b.trial["runtime"]["storage_driver"] == "btrfs"  # the study's driver on btrfs (studies.yaml)


def test_a_change_sets_its_configuration_from_its_baseline():
    """Figure 3a: ext4 random reads 25% below the raw device and below xfs, at 32 jobs x QD32 (paper.yaml):
    the raw device at its anchor, ext4 from it, xfs from ext4."""
    below = _value("003", "Figure 3a", "throughput below the raw block device by")
    cells = published.measured("003", "Figure 3a").cells
    by_fs = {c.fs_type: summary_of(c).mean for c in cells}
    assert by_fs["raw"] == published.ANCHORS["throughput"]
    assert by_fs["ext4"] == pytest.approx(by_fs["raw"] * (1 - below.value / 100))
    assert by_fs["xfs"] == pytest.approx(by_fs["raw"])
    assert all(c.load["numjobs"] == 32 and c.load["iodepth"] == 32 for c in cells)


def test_a_latency_at_a_known_load_gives_its_throughput():
    """Figure 4: a fio load's I/Os in flight over its mean latency (Little's law), each side of a change."""
    cells = published.measured("003", "Figure 4").cells
    for c in cells:
        lat_s = c.latency(None, "mean").mean / 1e9
        assert summary_of(c).mean == pytest.approx(c.outstanding / lat_s)
    more = _value("003", "Figure 4a", "total latency higher than direct-attached by")
    low = {c.trial["device"]["type"]: c for c in cells if c.outstanding == 1}
    ratio = low["remote"].latency(None, "mean").mean / low["loop"].latency(None, "mean").mean
    assert ratio == pytest.approx(1 + more.value / 100)


def test_a_database_held_to_a_rate_ran_at_it():
    """001 Table 2: each load at its fixed rate (80K, 60K, 20K tps: the offered share of 200K)."""
    cells = published.measured("001", "Table 2").cells
    rates = {c.workload["profile"]: summary_of(c).mean for c in cells}
    assert rates == {"mixed": 80000, "read": 60000, "write": 20000}


def test_a_case_that_gives_one_configuration_two_numbers_is_refused():
    a = _value("003", "Figure 6a", "(smallest gap)")
    b = _value("003", "Figure 6a", "(largest gap)")
    same = [a.__class__(**{**a.__dict__, "case": ""}), b.__class__(**{**b.__dict__, "case": ""})]
    with pytest.raises(ValueError, match=r"study 003, case Figure 6a: .* own \(paper.yaml `case`\)"):
        published.build("003", studies.by_study("003").published, same)


def test_every_value_is_a_result_or_left_out_with_why():
    for s in studies.load():
        values = [v for v in paper.load() if v.study == s.study]
        held = [v for c in published.cases(s.study) for v in c.values]
        left = published.left_out(s.study)
        assert len(held) + len(left) == len(values), s.study
        assert all(len(x.why) > 20 for x in left)


def test_strata_studies_runs_on_a_fresh_install(tmp_path):
    """Only what strata ships: in an empty directory, with no state and no results."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "STRATA_STATE_DIR": str(tmp_path / "state")}
    out = subprocess.run(
        [sys.executable, "-m", "strata.cli.main", "studies"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for s in studies.load():
        assert f"study {s.study}: {s.reference}" in text
        for e in s.experiments:
            assert f"    {e.where}: {e.shows}" in text
    for f in FINDINGS:
        assert f"    {f.id}" in text and f.criterion in text
    assert "per-container-share (strata's own reading): not held" in text
    assert "vm-cpu-overhead: held" in text and "+29.0 points" in text
    bad = subprocess.run([sys.executable, "-m", "strata.cli.main", "studies", "005"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "no study 005" in bad.stderr


def test_every_experiment_names_a_real_example():
    for s in studies.load():
        for e in s.experiments:
            assert e.example is None or (ROOT / "examples" / e.example).is_file(), (s.study, e.where)
            assert bool(e.section) != bool(e.not_reproduced) or e.example, (s.study, e.where)


def test_a_relation_the_study_does_not_state_is_marked_derived():
    """Issue 54: `strata studies` printed "nvmf/xfs/native/bind: 13.2x the low-load latency" for Figure 4, a
    factor the study never states (section 5.5: 12x for NVMf, 20x direct-attached): the case sets NVMf's high
    load from direct-attached's 20x and the network's "less than 2%", its low load from the +54%, so 20 x 1.02 /
    1.54. A number relating a pair the study states no relation for says it is derived; the study's own 20x
    and 12x do not; a number resting on a bound the study gives says so."""
    from strata.analysis.studies.stated import DERIVED

    lines = published.judged(BY_ID["latency-high-load"], "003").numbers
    (nvmf,) = [n for n in lines if n.startswith("study 003 Figure 4: nvmf/")]
    assert "13.2x the low-load latency" in nvmf and nvmf.endswith(f"({DERIVED})")
    stated = [n for n in lines if n != nvmf]
    assert [n.split(": ", 1)[1].split(" the ")[0] for n in stated] == [
        "das/xfs/native/bind: 20.0x",
        "nvmf/xfs/native/bind: 12.0x",
    ]
    assert not any(DERIVED in n for n in stated)
    (slat,) = published.judged(BY_ID["slat-negligible-high-load"], "003").numbers
    assert slat.endswith("(the study gives a bound, not a number: less than 1%)") and DERIVED not in slat
    gap = published.judged(BY_ID["remote-gap-closes"], "003")  # two stated relations, compared: not derived
    assert gap.status == HELD and not any(DERIVED in n for n in gap.numbers)


def test_every_number_on_the_studies_numbers_names_the_cells_it_relates():
    """The derived mark rests on each decision naming its cells (findings/verdict.py `Decision.of`): on every
    case of every study, every number of every finding does, each a cell of the case."""
    for s in studies.load():
        for c in published.cases(s.study):
            keys = {cell.key for cell in published.measured(s.study, c.name).cells}
            for f in FINDINGS:
                o = f.check(published.view(published.measured(s.study, c.name)))
                assert len(o.compared) == len(o.numbers), (f.id, c.name)
                for of in o.compared:
                    assert of and all(a in keys and b in keys for a, b in of), (f.id, c.name, of)
