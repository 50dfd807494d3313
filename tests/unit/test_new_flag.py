"""A new flag is its declaration (strata/results/flags/declared.py: `DECLARED`), its judgement
(strata/results/validity/: `JUDGES` for a flag judged when a trial ends) and its test. This test adds a toy
flag in those two places only, runs trials through the fakes, and sees the codec, the stored warnings, the
export, `strata show`, the cells, the report's terminal table, its warnings and its bar figure take it, with
no other change.

(A real flag is also a member of the `Flag` enum, whose name the declaration holds; here a one-member enum
of the test's own stands for it.)"""

import json
from enum import Enum
from functools import partial
from pathlib import Path

import pytest

from strata.analysis.analyse import analyse
from strata.analysis.cells.cells import build_cells
from strata.cli.show import table_text
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.report.figures import render
from strata.report.model import build
from strata.report.terminal import analysis_text
from strata.results import flags, validity
from strata.results.export import flatten, to_csv
from strata.results.flags import Column, Declared, Flags, Judgement, suspected, warned
from strata.results.result import Result
from strata.results.store import load_results
from strata.run.progress import Progress
from strata.run.runner import run_experiment

from .fakes import fake_registries


class Toy(str, Enum):
    NOISY = "noisy"


# 1. its definition: how it is read back, its word and meaning, its mark in `strata show`, its export
# column, and the group its results are drawn apart in
NOISY = Declared(
    Toy.NOISY,
    partial(Judgement.from_json, Toy.NOISY),
    word="NOISY",
    meaning="a neighbour shared the disk",
    mark=warned,
    export=(Column("noisy_suspect", "bool", suspected),),
    apart="noisy",
    fix="measure on a disk of its own",
)


# 2. its judgement, from the trial's evidence
def judge_noisy(ev: validity.TrialEvidence) -> Judgement:
    shared = ev.moved is not None and ev.moved.path == "bind"
    return Judgement(Toy.NOISY, shared, "a neighbour shared the disk" if shared else "")


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setitem(flags.DECLARED, Toy.NOISY, NOISY)
    monkeypatch.setitem(validity.JUDGES, Toy.NOISY, judge_noisy)
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    exp, wls = parse_spec(
        {
            "name": "toy",
            "workdir": str(tmp_path / "work"),
            "devices": ["loop"],
            "filesystems": ["raw", "xfs"],
            "runtimes": ["native"],
            "paths": ["device", "bind"],
            "workloads": [{"null": {"name": "good"}}],
            "loads": ["low"],
            "repetitions": 2,
        }
    )
    trials, skipped = expand(exp, wls)
    progress = Progress(len(trials), [0.1] * len(trials), quiet=True)
    reg = fake_registries(tmp_path)
    run_experiment(exp, wls, trials, skipped, tmp_path / "out", host={}, registries=reg, progress=progress)
    out = load_results(tmp_path / "out")
    assert {r.labels["path"] for r in out} == {"device", "bind"} and all(r.status == "ok" for r in out)
    return out


def _noisy(r: Result) -> bool:
    return r.labels["path"] == "bind"


def test_the_toy_flag_is_judged_stored_and_read_back(results):
    for r in results:
        stored = json.loads(Path(r.file).read_text())
        assert "noisy" in stored["flags"]
        assert Flags.from_json(stored["flags"]).to_json() == stored["flags"]  # the codec round-trips it
        assert r.flags.warns(Toy.NOISY) == flags.warns(stored, Toy.NOISY) == _noisy(r)
        warning = {"flag": "noisy", "message": "a neighbour shared the disk"}
        assert (warning in r.warnings) == _noisy(r)


def test_the_export_and_show_render_it_from_its_declaration(results):
    assert [flatten(r)["noisy_suspect"] for r in results] == [_noisy(r) for r in results]
    assert "noisy_suspect" in to_csv(results).decode().splitlines()[0].split(",")
    text = table_text(results)
    rows = [line for line in text.splitlines() if line.startswith("loop/")]
    assert len(rows) == 4 and all(("NOISY" in line) == ("/bind " in line) for line in rows), text
    assert "NOISY = a neighbour shared the disk, not device performance" in text


def test_the_cells_and_the_report_draw_its_results_apart(results):
    cells = {c.path: c for c in build_cells(results)}
    assert cells["bind"].values == [] and len(cells["bind"].apart[Toy.NOISY].values) == 2
    assert len(cells["device"].values) == 2 and cells["device"].apart_values == []
    a = analyse(results)
    text = analysis_text(a)
    assert "NOISY x2" in text
    assert "NOISY = a neighbour shared the disk; none is device performance" in text
    (warning,) = [line for line in text.splitlines() if "flagged NOISY" in line]
    assert warning.startswith("  ! 2 trial(s) flagged NOISY: a neighbour shared the disk (loop/xfs/native/bind ")
    assert warning.endswith("What to do: measure on a disk of its own")
    (fig,) = [f for f in build(a, "toy").figures if any(b["apart"] == "noisy" for b in f.data.get("bars", []))]
    (bar,) = [b for b in fig.data["bars"] if b["apart"] == "noisy"]
    assert bar["note"] == "noisy: a neighbour shared the disk; not device performance"
    svg, _ = render(fig)  # drawn in a style of its own, with its legend entry
    assert b"noisy (not device)" in svg and fig.table.rows
