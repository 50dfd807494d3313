"""Snapshot tests of the report exporters (docs/style.md, item 9) on a small result set captured from real
runs (tests/data/results/small, spec in tests/data/results/specs/small.yaml).

CSV and the terminal summary are pure Python and must match byte for byte. SVG, PNG and the HTML (which
inlines the SVGs) depend on matplotlib and FreeType: the test extras pin matplotlib (pyproject.toml), whose wheel
brings its FreeType, to the versions recorded with the snapshots, and a test environment of other versions fails
with what to do, never skips.
Update after a deliberate change: STRATA_UPDATE_SNAPSHOTS=1 python3 -m pytest tests/unit/test_report_snapshot.py
"""

import gc
import hashlib
import json
import os
import re
from pathlib import Path

import matplotlib
import matplotlib.ft2font
import pytest

from strata.analysis.cells.load import load
from strata.report import build_report, generate, report_files

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
SNAP = DATA / "snapshots" / "small"
UPDATE = os.environ.get("STRATA_UPDATE_SNAPSHOTS") == "1"
VERSIONS = {"matplotlib": matplotlib.__version__, "freetype": matplotlib.ft2font.__freetype_version__}


@pytest.fixture(scope="module")
def files():
    """The report with its PNG copies (`strata report --png`): the snapshots hold both formats."""
    report = build_report(load(DATA / "small"), "strata report: report-small")
    out = generate(report, jobs=1, png=True)
    if UPDATE:
        for rel, data in out.items():
            p = SNAP / (rel + ".sha256" if rel.endswith(".png") else rel)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" if rel.endswith(".png") else data)
        (SNAP / "versions.json").write_text(json.dumps(VERSIONS, indent=1) + "\n")
    return out


def recorded_versions():
    return json.loads((SNAP / "versions.json").read_text())


def same_renderer():
    return recorded_versions() == VERSIONS


def test_same_set_of_files(files):
    recorded = {str(p.relative_to(SNAP)).removesuffix(".sha256") for p in SNAP.rglob("*") if p.is_file()}
    assert set(files) == recorded - {"versions.json"}


@pytest.mark.parametrize("kind", ["csv/", "summary.txt"])
def test_pure_python_outputs_match(files, kind):
    names = [k for k in files if k.startswith(kind)]
    assert names
    for name in names:
        assert files[name] == (SNAP / name).read_bytes(), f"{name} differs from its snapshot"


@pytest.mark.parametrize("kind", [".svg", ".png", "report.html"])
def test_rendered_outputs_match(files, kind):
    assert same_renderer(), (
        f"the snapshots were recorded with {recorded_versions()}, this environment has {VERSIONS}: install the "
        "pinned test extras (scripts/install), or, after moving the pin in pyproject.toml and checking the figures "
        "by eye, regenerate them with STRATA_UPDATE_SNAPSHOTS=1"
    )
    names = [k for k in files if k.endswith(kind)]
    assert names
    for name in names:
        if name.endswith(".png"):
            assert hashlib.sha256(files[name]).hexdigest() == (SNAP / (name + ".sha256")).read_text().strip(), name
        else:
            assert files[name] == (SNAP / name).read_bytes(), f"{name} differs from its snapshot"


def test_outputs_are_deterministic(files):
    again = generate(build_report(load(DATA / "small"), "strata report: report-small"), jobs=2, png=True)
    assert again == files


def test_default_report_is_the_snapshot_without_png(files):
    """Without --png: the same files but the PNGs, and the page links no PNG (a link to a file not written)."""
    default = generate(build_report(load(DATA / "small"), "strata report: report-small"), jobs=2)
    assert set(default) == {k for k in files if not k.endswith(".png")}
    assert {k: v for k, v in default.items() if k != "report.html"} == {
        k: v for k, v in files.items() if k in default and k != "report.html"
    }
    page = default["report.html"].decode()
    assert ".png" not in page
    assert page == re.sub(r'<a href="figures/[^"]+\.png">PNG</a> ', "", files["report.html"].decode())


def test_no_dates_paths_or_metadata(files):
    for name, data in files.items():
        assert b"/work/" not in data and b"/tmp/" not in data, name
        if name.endswith(".svg"):
            assert b"<dc:date>" not in data and b"Matplotlib v" not in data, name
        if name.endswith(".png"):
            assert data.startswith(b"\x89PNG") and b"Software" not in data and b"matplotlib" not in data, name


@pytest.mark.parametrize("jobs", [1, 2])
def test_report_files_makes_the_same_bytes_sooner(files, jobs):
    """`strata report`'s path: the figures drawn while the analysis is concluded; the same bytes, and the
    collector left as it was found (enabled, nothing frozen)."""
    phases: dict[str, float] = {}
    report, out = report_files(load(DATA / "small"), "strata report: report-small", jobs=jobs, png=True, phases=phases)
    assert out == files
    assert report.analysis.findings and report.analysis.best  # concluded
    assert list(phases) == ["describe", "conclude", "figures", "pages"]
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_loading_leaves_the_collector_on_even_when_a_file_is_bad(tmp_path):
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        load(tmp_path)
    assert gc.isenabled()
    assert load(DATA / "small") and gc.isenabled()
