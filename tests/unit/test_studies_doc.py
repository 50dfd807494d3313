"""The studies, said once (issue 35): docs/studies.md's tables of the studies (with what differs here and
why) and of their headline claims (checked by which finding, or why not here) are generated from
analysis/studies/studies.yaml, and the report's section on the studies repeats the same differences."""

import sys
from pathlib import Path

import pytest

from strata.analysis.findings.findings import FINDINGS
from strata.analysis.studies import studies

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "studies.md"
ASPECTS = {"device", "sizes", "durations", "versions", "distributions", "preconditioning"}


def test_the_page_is_generated_from_the_data():
    page = PAGE.read_text()
    assert studies.render(page) == page, "regenerate it: python3 -m strata.analysis.studies.studies docs/studies.md"


def test_every_study_says_what_differs_and_every_claim_is_marked():
    loaded = studies.load()
    assert [s.study for s in loaded] == ["003", "002", "004", "001"]
    said = {what for s in loaded for what, _ in s.differs}
    assert ASPECTS <= said, ASPECTS - said
    for s in loaded:
        assert s.differs and s.claims, s.study
        for c in s.claims:
            assert c.finding or (c.not_checkable and len(c.not_checkable) > 30), c.quote.id
    claims = studies.claims()
    assert claims.count("`finding:") >= 30 and "not checkable here:" in claims


def test_the_findings_the_issue_asks_for_check_a_headline_claim():
    checked = {c.finding for s in studies.load() for c in s.claims if c.finding}
    wanted = {
        "cpu-rises-with-clusters",
        "vm-cpu-overhead",
        "target-cpu-low",
        "cpu-limit-helps",
        "all-limits-tail",
        "writes-rise-reads-fall",
    }
    assert wanted <= checked <= {f.id for f in FINDINGS}


def test_a_claim_without_finding_or_reason_is_refused(tmp_path):
    bad = tmp_path / "studies.yaml"
    bad.write_text(
        '- {study: "003", reference: r, measures: m, differs: [{what: device, text: t}],'
        " claims: [{quote: 003-xfs-cliff}]}\n"
    )
    with pytest.raises(ValueError, match="needs a finding or why it is not checkable"):
        studies.load.__wrapped__(bad)
    bad.write_text(
        '- {study: "001", reference: r, measures: m, differs: [{what: device, text: t}],'
        " claims: [{quote: 003-xfs-cliff, finding: xfs-jobs-cliff}]}\n"
    )
    with pytest.raises(ValueError, match="a quote of study 003"):
        studies.load.__wrapped__(bad)


def test_the_report_repeats_the_differences_of_the_studies_it_sets_beside():
    from synth_results import make_result

    from strata.analysis.analyse import analyse
    from strata.report import html
    from strata.report.model import build

    rs = [
        make_result(fs="ext4", runtime="docker", path=p, kind="filebench", workload="varmail", value=v, rep=i)
        for p, v in (("volume", 3.6), ("bind", 3.8))
        for i in range(2)
    ]
    page = html.render(build(analyse(rs), "t"), {}).decode()
    paper = page.split('id="paper"')[1]
    assert "study 004: what differs here and why" in paper and "study 003: what differs" not in paper
    text = dict(studies.by_study("004").differs)["durations"]
    assert text.split(";")[0] in paper


def test_an_experiment_without_its_counterpart_or_why_not_is_refused(tmp_path):
    bad = tmp_path / "studies.yaml"
    bad.write_text(
        '- {study: "003", reference: r, measures: m, differs: [{what: device, text: t}],'
        " experiments: [{where: Figure 3a, shows: s, example: x.yaml}]}\n"
    )
    with pytest.raises(ValueError, match="Figure 3a: names the report's section that reproduces it, or why"):
        studies.load.__wrapped__(bad)


def test_the_figures_table_says_what_each_example_does_otherwise():
    """Issue 42: the deviations the issue names are in docs/studies.md's generated table of figures."""
    table = studies.experiments()
    assert "1, 2, 4, 6 and 8 containers where the study runs 1 to 8" in table
    assert "where the study offers five rates (40K to 200K tps)" in table
    assert "which takes 200K as the peak of every load and replication factor" in table
    assert "volume-near-host-fs compares each volume with the host file system" in table
    assert "| 003 | Figure 8c |" in table and "xu2017-placement.yaml" in table


def test_where_the_images_are_is_a_deviation_of_the_volume_runs():
    """Issue 54: study 003 ran its data volumes with the images on the boot drive (section 5.3), strata's
    daemons keep their data-root on the file system under test, and no deviation said so. It is one of the
    study's differences (docs/studies.md, `strata studies`, the report), quoting the study's own sentence, and
    the figures of the volume runs say it."""
    from strata.analysis.studies import quotes
    from strata.analysis.studies.overview import overview

    text = dict(studies.by_study("003").differs)["images"]
    said = text.split('"')[1]
    assert quotes.source_of(said, "003") == quotes.by_id("003-images-boot-drive")
    assert "boot drive" in said and "data-root" in text and "file system under test" in text
    assert text in PAGE.read_text() and text in overview(["003"])
    table = studies.experiments()
    for fig in ("3k", "3l"):
        (row,) = [r for r in table.splitlines() if r.startswith(f"| 003 | Figure {fig} |")]
        assert "where the study keeps the images on the boot drive" in row
