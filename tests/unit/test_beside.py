"""The studies' numbers beside a user's: each side against its own best or raw device, the shape in words."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.beside import beside, paper_ratio  # noqa: E402
from strata.analysis.paper import load  # noqa: E402
from strata.report import csv, html, terminal  # noqa: E402
from strata.report.model import build  # noqa: E402

TABLE3 = [v for v in load() if v.study == "004" and v.where == "Table 3"]


def _varmail(value_of) -> list[dict]:
    """Results of 004's Table 3 configurations, each per-container MB/s given by value_of(paper value)."""
    rs = []
    for v in TABLE3:
        m = v.match
        fs, n = m["filesystem"], m["containers"]
        driver = "btrfs" if fs == "btrfs" else "overlay2"
        for rep in range(2):
            per = value_of(v.value) * (1 + 0.01 * rep)
            rs.append(
                make_result(
                    fs=fs, runtime="docker", driver=driver, path=m["path"], kind="filebench", workload="varmail",
                    containers=n, value=per * n, rep=rep,
                )
            )  # fmt: skip
    return rs


def test_004_table_3_in_the_same_order_agrees_wholly():
    assert len(TABLE3) == 18
    groups = [b for b in analyse(_varmail(lambda x: 10 * x)).beside if b.where == "Table 3"]
    assert len(groups) == 1
    b = groups[0]
    assert len(b.measured) == 18 and b.rank_agreement == pytest.approx(1.0)
    best = max(b.pairs, key=lambda p: p.value.value)
    assert b.relative(best, yours=False) == 1.0 and b.relative(best, yours=True) == pytest.approx(1.0, abs=0.01)
    assert "best in the paper and here" in b.shape() and "worst in both" in b.shape()


def test_the_reverse_order_says_where_it_disagrees():
    b = next(b for b in analyse(_varmail(lambda x: 100 / x)).beside if b.where == "Table 3")
    assert b.rank_agreement == pytest.approx(-1.0, abs=0.01)  # two of the paper's cells are equal
    s = b.shape()
    assert s.startswith("study 004 Table 3 (varmail): best: ") and " in the paper, " in s and "(1st of 18 here)" in s


def test_a_ratio_to_the_raw_device_beside_the_users_own():
    v = next(v for v in load() if v.where == "Figure 3a" and "raw" in (v.baseline or ""))
    assert paper_ratio(v) == pytest.approx(0.75)  # "25% below the raw block device"
    rs = [make_result(fs="raw", value=1000, rep=i, workload="rr", load="high") for i in range(2)]
    rs += [make_result(fs="ext4", value=900, rep=i, workload="rr", load="high") for i in range(2)]
    stated = [b for b in beside(analyse(rs).cells, [v])]
    assert len(stated) == 1 and stated[0].kind == "stated"
    assert stated[0].pairs[0].yours == pytest.approx(0.9, abs=0.01)
    assert "0.75x raw block device in the paper, 0.90x here" in stated[0].shape()


def test_the_report_shows_them_apart_from_its_measurements():
    rep = build(analyse(_varmail(lambda x: 10 * x)), "t")
    page = html.render(rep, {}).decode()
    assert 'id="paper"' in page and "never a paper's number as if it were measured here" in page
    beside = terminal.render(rep).split("the studies beside these results")[1]
    assert "order agreement (Spearman)" in beside  # the sentence whole, never cut before its figure
    rows = csv.render(rep)["paper.csv"].decode().splitlines()
    assert rows[0].startswith("study,where,subject,configuration,paper,unit") and len(rows) == 19
    assert not any("004" in f.title for f in rep.figures), "a paper's number is never drawn as a measurement"


def test_the_terminal_keeps_a_long_comparison_whole(monkeypatch):
    from strata.analysis.beside import Beside

    long = "study 004 Table 2 (webserver): " + "best: a long configuration name here; " * 8 + "agreement +0.92"
    monkeypatch.setattr(Beside, "shape", lambda self: long)
    rep = build(analyse(_varmail(lambda x: 10 * x)), "t")
    beside = terminal.render(rep).split("the studies beside these results")[1]
    assert " ".join(beside.split()).find("agreement +0.92") > 0 and "..." not in beside.split("\n\n")[0]
