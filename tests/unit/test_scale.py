"""The smoke scale: every stack, path, workload kind, load kind and limit preset of a spec kept, every trial
made cheap, sweeps cut to their ends, the results marked, and never mixed with a full-scale result set."""

import json
from pathlib import Path

import pytest

from strata.core.errors import StrataError
from strata.experiment.expand import expand
from strata.experiment.load import load_spec, parse_spec
from strata.experiment.scale import check_scale, smoke
from strata.workloads.ycsb.plugin import SMOKE_RUNTIME_S

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _labels(trials) -> set:
    return {(t.device.name, t.filesystem.name, t.runtime.name, t.path, t.workload.type) for t in trials}


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_keeps_its_stacks_paths_and_workload_kinds_at_smoke_scale(example):
    full, fw = load_spec(EXAMPLES / example)
    small, sw = load_spec(EXAMPLES / example, "smoke")
    assert small.scale == "smoke" and small.repetitions == 1
    ft, st = expand(full, fw)[0], expand(small, sw)[0]
    assert _labels(st) == _labels(ft)  # every device, file system, runtime, path and workload kind
    assert {t.load.limits.preset for t in st} == {t.load.limits.preset for t in ft}
    assert len(st) <= len(ft)
    most = {"ycsb": SMOKE_RUNTIME_S}  # a Cassandra client's run holds its connection to the cluster
    assert all(t.workload.runtime <= most.get(t.workload.type, 5) for t in st if getattr(t.workload, "runtime", None))
    assert all(d.size_bytes <= 4 << 30 for d in small.devices if getattr(d, "size_bytes", None))
    assert {small.design(w.name)["scale"] for w in sw} == {"smoke"}
    assert "scale" not in full.design(fw[0].name)  # full-scale results are stored as before


def test_sweeps_are_cut_to_their_ends():
    doc = {
        "name": "s",
        "devices": [{"type": "loop", "size": "16GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["docker"],
        "paths": ["volume"],
        "repetitions": "auto",
        "budget": "2h",
        "workloads": [
            {"fio": {"preset": ["rr", "rw"], "bs": ["4k", "16k", "64k", "1m"], "size": "8GiB", "runtime": 120}},
            {"ycsb": {"workload": "a", "records": 50000, "target": [200, 400, 800, None], "clusters": [1, 2, 4]}},
        ],
        "loads": [
            {"name": "one", "containers": 1},
            {"name": "two", "containers": 2},
            {"name": "four", "containers": 4},
            {"name": "lim", "containers": [1, 2, 4, 8], "limits": ["CPU", "MEM", "BW"]},
        ],
    }
    s = smoke(doc)
    assert doc["workloads"][0]["fio"]["bs"] == ["4k", "16k", "64k", "1m"], "the spec itself is not changed"
    fio, ycsb = s["workloads"][0]["fio"], s["workloads"][1]["ycsb"]
    assert fio["bs"] == ["4k", "1m"] and fio["preset"] == ["rr", "rw"] and fio["size"] == 32 << 20
    assert fio["runtime"] == 1 and fio["ramp_time"] == 0
    assert ycsb["target"] == [200, 800, None] and ycsb["clusters"] == [1, 4] and ycsb["records"] == 200
    assert [ld["name"] for ld in s["loads"]] == ["one", "four", "lim"]
    assert s["loads"][2]["containers"] == [1, 8] and s["loads"][2]["limits"] == ["CPU", "MEM", "BW"]
    assert s["devices"][0]["size"] == 4 << 30 and s["repetitions"] == 1 and "budget" not in s
    exp, _ = parse_spec(s)
    assert exp.scale == "smoke"


def test_the_shipped_personalities_filesets_are_cut_and_a_users_file_is_left_alone():
    from strata.workloads.filebench import SMOKE_NFILES, Filebench

    fb = Filebench()
    assert fb.smoke({"personality": "fileserver", "runtime": 60}) == {
        "personality": "fileserver",
        "runtime": 1,
        "set": {"nfiles": SMOKE_NFILES},
    }
    assert fb.smoke({"personality": ["varmail"], "set": {"$nfiles": 50000, "nthreads": 4}})["set"] == {
        "$nfiles": SMOKE_NFILES,
        "nthreads": 4,
    }
    assert fb.smoke({"personality": "varmail", "set": {"nfiles": "20"}})["set"] == {"nfiles": 20}
    assert fb.smoke({"personality": "varmail", "set": {"nfiles": "cvar(x)"}})["set"] == {"nfiles": "cvar(x)"}
    assert "set" not in fb.smoke({"file": "my.f", "runtime": 60})  # strata cannot know it has an $nfiles
    assert fb.smoke({"personality": "webserver", "set": "junk"})["set"] == "junk"  # for the validator


@pytest.mark.parametrize("junk", [None, [], "text", {"workloads": "x", "loads": 3, "devices": [7]}])
def test_whatever_it_does_not_recognise_is_left_for_the_validator(junk):
    out = smoke(junk)
    if isinstance(junk, dict):
        assert out["workloads"] == "x" and out["loads"] == 3 and out["devices"] == [7]
    else:
        assert out == junk


def test_smoke_and_full_results_never_share_a_directory(tmp_path):
    trials = tmp_path / "trials"
    trials.mkdir()
    (trials / "a.json").write_text(json.dumps({"design": {"repetitions": 3, "margin": 0.05}}))
    check_scale(tmp_path, "full")
    with pytest.raises(StrataError, match="full-scale results and this run is smoke-scale"):
        check_scale(tmp_path, "smoke")
    (trials / "a.json").write_text(json.dumps({"design": {"repetitions": 1, "scale": "smoke"}}))
    check_scale(tmp_path, "smoke")
    with pytest.raises(StrataError):
        check_scale(tmp_path, "full")
    check_scale(tmp_path / "empty", "smoke")


def test_a_smoke_report_says_so_on_every_page():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from synth_results import make_result

    from strata.analysis.analyse import analyse
    from strata.report import html, terminal
    from strata.report.model import build

    smoke_design = {"repetitions": 1, "margin": 0.05, "scale": "smoke"}
    rs = [make_result(fs=fs, value=v, design=smoke_design) for fs, v in (("raw", 1000), ("xfs", 900))]
    rep = build(analyse(rs), "t")
    assert rep.figures and all(f.title.startswith("[SMOKE SCALE") for f in rep.figures)
    assert "SMOKE SCALE: 2 of these trials" in html.render(rep, {}).decode()
    assert terminal.render(rep).startswith("!! SMOKE SCALE")
    full = build(analyse([make_result(fs="raw"), make_result(fs="xfs")]), "t")
    assert not any("SMOKE" in f.title for f in full.figures)


@pytest.fixture(scope="module")
def host() -> dict:
    from strata.core.host import host_facts

    return host_facts()


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_validates_at_smoke_scale(example, host, capsys):
    """`strata validate --scale smoke` of every example, as its library calls: the plan resolves against this
    host with no error, and prints (what cannot run here is `unsupported`, with its reason, not an error)."""
    from strata.cli.validate import print_plan
    from strata.experiment.plan import resolve

    exp, workloads = load_spec(EXAMPLES / example, "smoke")
    plan = resolve(exp, workloads, host)
    assert plan.trials and all(reason for reason in plan.unsupported.values())
    print_plan(exp, plan)
    assert f"experiment {exp.name}: {len(plan.trials)} trials" in capsys.readouterr().out
