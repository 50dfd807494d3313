"""`strata report` and `strata compare` on stored results, and the summary `strata run` prints."""

from pathlib import Path

from strata.cli.main import main
from strata.report.terminal import summary_text

DATA = Path(__file__).resolve().parents[1] / "data" / "results"


def test_report_writes_html_figures_csv(tmp_path, capsys):
    assert main(["report", str(DATA / "small"), "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "strata report: 16 trial(s)" in out and "report.html" in out
    assert (tmp_path / "report.html").stat().st_size > 10000
    svgs = sorted(p.stem for p in (tmp_path / "figures").glob("*.svg"))
    assert svgs and not list((tmp_path / "figures").glob("*.png"))  # PNG only with --png
    assert "figures as SVG in" in out
    assert {p.stem for p in (tmp_path / "csv").glob("*.csv")} >= set(svgs) | {
        "findings",
        "advice",
        "warnings",
        "containers",
    }
    assert (tmp_path / "summary.txt").read_text().startswith("strata report")


def test_report_png_option_writes_every_figure_twice(tmp_path, capsys):
    assert main(["report", str(DATA / "small"), "-o", str(tmp_path), "--png", "--jobs", "1"]) == 0
    assert "figures as SVG and PNG in" in capsys.readouterr().out
    svgs = sorted(p.stem for p in (tmp_path / "figures").glob("*.svg"))
    assert svgs == sorted(p.stem for p in (tmp_path / "figures").glob("*.png")) and svgs
    assert f'href="figures/{svgs[0]}.png"' in (tmp_path / "report.html").read_text()
    # a later report without --png replaces the figures: no PNG of an older report stays beside it
    assert main(["report", str(DATA / "small"), "-o", str(tmp_path), "--jobs", "1"]) == 0
    assert not list((tmp_path / "figures").glob("*.png"))


def test_report_series_option(tmp_path, capsys):
    tid = "046e91f04f2089c7"
    assert main(["report", str(DATA / "small"), "-o", str(tmp_path), "--series", tid, "--jobs", "1"]) == 0
    assert (tmp_path / "figures" / f"series-{tid}.svg").exists()


def test_report_of_missing_directory_is_a_user_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "fix:" in capsys.readouterr().err


def test_compare_two_result_sets(tmp_path, capsys):
    assert main(["compare", str(DATA / "small"), str(DATA / "fs-compare"), "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "configuration(s) in both" in out and "change [95% CI]" in out
    assert f"compare: {tmp_path / 'compare.html'}" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.csv", "compare.html", "compare.svg", "compare.txt"]
    assert main(["compare", str(DATA / "small"), str(DATA / "fs-compare"), "-o", str(tmp_path), "--png"]) == 0
    assert (tmp_path / "compare.png").read_bytes().startswith(b"\x89PNG")


def test_compare_without_output_prints_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Without -o nothing is written, in the current directory or anywhere under it (it once wrote
    ./strata-compare/ there)."""
    monkeypatch.chdir(tmp_path)
    assert main(["compare", str(DATA / "small"), str(DATA / "fs-compare")]) == 0
    out = capsys.readouterr().out
    assert "configuration(s) in both" in out and "change [95% CI]" in out and "compare.html" not in out
    assert list(tmp_path.iterdir()) == []


def test_compare_png_needs_a_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", str(DATA / "small"), str(DATA / "fs-compare"), "--png"]) == 2
    assert "add -o DIR" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    assert main(["compare", str(DATA / "small"), str(DATA / "fs-compare"), "-o", "f"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_summary_text_for_strata_run():
    text = summary_text(DATA / "fs-compare")
    assert text.startswith("strata report: 72 trial(s)")
    assert "warnings" in text and "advice:" in text and "strata report" in text.splitlines()[-1]


def test_summary_text_never_fails_a_run(tmp_path):
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "bad.json").write_text("{not json")
    text = summary_text(tmp_path)
    assert "report summary failed" in text and "strata report" in text


def test_list_findings(capsys):
    from strata.analysis.findings.findings import FINDINGS

    assert main(["report", "--list-findings"]) == 0
    out = capsys.readouterr().out
    assert out.count("  source: ") == len(FINDINGS) and "dioread_nolock" in out
    assert main(["report"]) == 2
