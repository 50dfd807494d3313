"""The flags' one codec (strata/results/flags/codec.py): every stored form reads into typed values and writes
back as it was stored, and nothing else in strata reads or writes a result's flags."""

import contextlib
import json
import re
from pathlib import Path

import pytest

from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.results import validity
from strata.results.flags import DECLARED, Emulated, Failure, Flag, Flags, Judgement, Steady, record
from strata.results.schema import migrate
from strata.results.store import load_results
from strata.results.validity import snia
from strata.run.progress import Progress
from strata.run.runner import run_experiment

from .fakes import fake_registries

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "results"
STORED = ["small", "fs-compare", "sweeps", "bs-sweep", "pgbench-ee1f538"]


def _docs(path):
    """The stored results under `path` as their JSON, migrated: what the flags' codec reads."""
    return [migrate(json.loads(Path(r.file).read_text())) for r in load_results(path)]


def canonical(doc) -> str:
    return json.dumps(doc, sort_keys=True, indent=1)  # as store.py writes it


def round_trips(flags: dict) -> None:
    assert canonical(Flags.from_json(flags).to_json()) == canonical(flags)
    for name, doc in flags.items():
        if doc is not None:
            assert DECLARED[Flag(name)].read(doc).to_json() == doc, name


@pytest.mark.parametrize("name", STORED)
def test_stored_results_round_trip(name):
    """cache, above_raw (split out of v1's cache by the migration), sync and a null failed, as captured."""
    results = _docs(DATA / name)
    seen = set()
    for r in results:
        round_trips(r["flags"])
        seen |= set(r["flags"])
    assert {"cache", "sync", "failed"} <= seen


def test_a_stored_flag_is_decoded_when_first_asked_for():
    """The report asks every result for one flag at a time: reading decodes that one, and writing back
    gives the stored flags whole, in their order, whichever were asked for."""
    r = _docs(DATA / "small")[0]
    flags = Flags.of(r)
    assert set(flags.stored) == {Flag(k) for k, v in r["flags"].items() if v is not None}
    assert flags.cache is not None and flags.cache.flag == Flag.CACHE
    assert Flag.CACHE not in flags.stored and Flag.SYNC in flags.stored
    written = flags.to_json()
    assert canonical(written) == canonical(r["flags"])
    assert list(written) == [f.value for f in Flag if f.value in r["flags"]]  # the stored order: the enum's
    assert flags.stored == {}


def test_captured_steady_round_trips():
    """A real fio trial on this VM too short to judge (2 s), as the runner stored it."""
    doc = {
        "judged": False,
        "mean": None,
        "range_pct": None,
        "reason": "only 2 per-second sample(s), 5 needed: run at least 7 s (runtime) to judge steady state",
        "series": {"mean": 15141.0, "sd": 456.7909806465097, "seconds": 2},
        "slope_pct": None,
        "steady": False,
        "window_s": 2,
    }
    s = Steady.from_json(doc)
    assert not s.judged and not s.warns and s.series["seconds"] == 2
    assert s.to_json() == doc


def _before(series: list, tool: dict | None = None) -> dict:
    """The steady flag as the runner built it before it was typed."""
    values = validity.full_seconds(series)
    flag = {**snia.detect(values, validity.STEADY_WINDOW_S), "series": validity.series_stats(values)}
    return {**flag, "tool": tool} if tool else flag


def test_steady_is_stored_as_before():
    """validity.steady writes the SNIA verdict, the series' statistics and the tool's verdict, as before: on a
    real fio series (too short to judge) and on a long one, with fio's own verdict; since 2026-11 also the
    basis of the verdict and the trend over the whole window (the drift), which older results lack."""
    r = next(r for r in load_results(DATA / "small") if r.status == "ok")
    real = json.loads((DATA / "small" / r.artifacts / "workload-series.json").read_text())["fio_iops"]
    long = [[t, 1000 + 10 * (t % 3)] for t in range(12)]
    tool = {"attained": True, "criterion": "iops_slope:0.5%"}
    for series, t in ((real, None), (long, None), (long, tool)):
        doc = validity.steady(series, t).to_json()
        added = {k: doc.pop(k) for k in ("basis", "drift", "drift_pct", "drift_t") if k in doc}
        assert doc == _before(series, t)
        assert added["basis"] == "snia"
        assert series is real or set(added) == {"basis", "drift", "drift_pct", "drift_t"}  # real: 2 s, no trend
        round_trips({"steady": _before(series, t)})
        round_trips({"steady": {**_before(series, t), **added}})
    assert validity.steady(long).steady and not validity.steady(real).judged
    assert validity.steady([]) is None


def test_emulated_is_stored_as_before():
    assert validity.emulated({"accel": "kvm", "emulated": False}) is None
    e = validity.emulated({"accel": "tcg", "emulated": True, "emulated_reason": "no /dev/kvm"})
    assert e.to_json() == {"suspect": True, "reason": "no /dev/kvm"}
    merged = validity.emulated_across_hosts({"a": None, "b": e, "c": Emulated("TCG")})
    assert merged.to_json() == {"suspect": True, "reason": "host b: no /dev/kvm; host c: TCG"}
    assert validity.emulated_across_hosts({"a": None}) is None
    round_trips({"emulated": merged.to_json()})


def test_failed_is_stored_as_before():
    f = validity.failed("oom", "killed", "x" * 9000 + "end")
    assert f.to_json() == {"category": "oom", "message": "killed", "stderr": ("x" * 9000 + "end")[-8000:]}
    assert Flags.from_json({"failed": f.to_json()}).failed.category == "oom"
    assert Flags.from_json({"failed": None}).failed is None and Flags.from_json({"failed": None}).to_json() == {
        "failed": None
    }


def _spec(tmp_path):
    return parse_spec(
        {
            "name": "unit",
            "workdir": str(tmp_path / "work"),
            "devices": ["loop"],
            "filesystems": ["raw", "xfs"],
            "runtimes": ["native"],
            "paths": ["device", "bind"],
            "workloads": [{"null": {"fail": True, "name": "bad"}}, {"null": {"name": "good"}}],
            "loads": ["low"],
        }
    )


def test_what_the_runner_stores_round_trips(tmp_path, monkeypatch):
    """Every flag of ok, failed and emulated trials, as the runner writes them."""
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    exp, wls = _spec(tmp_path)
    trials, skipped = expand(exp, wls)
    registries = fake_registries(tmp_path)
    native = registries.runtimes["native"]
    provision = native.provision

    def emulated(*a, **kw):  # a runtime that says it emulated the CPU, as the vm runtime under TCG does
        with provision(*a, **kw) as s:
            s.facts.update(emulated=True, emulated_reason="TCG")
            yield s

    native.provision = contextlib.contextmanager(emulated)
    progress = Progress(len(trials), [0.1] * len(trials), quiet=True)
    run_experiment(exp, wls, trials, skipped, tmp_path / "out", host={}, registries=registries, progress=progress)
    results = load_results(tmp_path / "out")
    for r in results:
        on_disk = json.loads(Path(r.file).read_text())["flags"]
        round_trips(on_disk)
        f = r.flags
        assert (f.failed is not None) == (r.status == "failed")
        if r.status == "ok":  # judged: a failed trial has no measurement to judge
            assert f.emulated.reason == "TCG" and f.warns(Flag.EMULATED)
    failed = [r.flags.failed for r in results if r.status == "failed"]
    assert failed and all(f.category == "tool_error" for f in failed)


PCTS = ("mean", "range_pct", "slope_pct")


def test_every_flag_has_a_reader_and_round_trips():
    """The codec iterates the flags' declarations: a new flag is its line in `DECLARED` (and a type in
    results/flags/ if none fits), its judgement in validity/, and this test."""
    assert list(DECLARED) == list(Flag) and all(d.flag == f and d.key == f.value for f, d in DECLARED.items())
    assert set(validity.JUDGES) <= set(DECLARED)  # a flag judged when a trial ends is declared
    judgement = {"suspect": True, "reason": "r", "evidence": {"e": 1}, "skew_s": 2.0}
    doc = {
        f.value: {
            Judgement: judgement,
            Steady: {"steady": True, "judged": True, "reason": "r", "window_s": 5, **dict.fromkeys(PCTS, 1.0)},
            Emulated: {"suspect": True, "reason": "TCG"},
            Failure: {"category": "oom", "message": "m", "stderr": ""},
        }[type(DECLARED[f].read({}))]
        for f in Flag
    }
    round_trips(doc)
    flags = Flags.from_json(doc)
    assert all(flags.warns(f) == (f != Flag.STEADY) for f in Flag)


def test_reading_is_lenient_and_keeps_what_it_does_not_know():
    """Hand-made and older forms read with defaults; unknown keys are written back."""
    f = Flags.from_json({"sync": {"suspect": True, "skew_s": 3.0}, "emulated": {"suspect": True, "accel": "tcg"}})
    assert f.sync.suspect and f.sync.extra["skew_s"] == 3.0 and f.cache is None and f.failed is None
    assert f.emulated.to_json() == {"suspect": True, "reason": "", "accel": "tcg"}
    assert Steady.from_json({"steady": False, "reason": "x"}).warns  # judged unless it says it was not
    assert Failure.from_json({"category": "oom", "message": "m", "note": 1}).to_json()["note"] == 1
    assert Flags.of({}).to_json() == {} and not Flags.of({"flags": None}).warns(Flag.CACHE)
    buffered = Flags.from_json({"cache": {"suspect": True, "expected": True, "reason": "tmpfs", "evidence": {}}})
    assert buffered.cache.suspect and not buffered.warns(Flag.CACHE)


def test_record_replaces_one_flag():
    result = {"flags": {"failed": None, "cache": {"suspect": False, "reason": "", "evidence": {}}}}
    record(result, validity.failed("internal", "bug"))
    assert result["flags"]["failed"]["category"] == "internal" and "cache" in result["flags"]
    fresh: dict = {}
    record(fresh, Judgement(Flag.ABOVE_RAW, True, "2x raw"))
    assert fresh == {"flags": {"above_raw": {"suspect": True, "reason": "2x raw", "evidence": {}}}}


# Where a result's flags may be read or written as dicts: the codec, and the migrations that bring an older
# stored form up to the one the codec reads.
FLAG_DICTS = re.compile(r"""\[\s*["']flags["']\s*\]|\.get\(\s*["']flags["']""")
MAY_TOUCH = {"results/flags/codec.py", "results/schema.py", "workloads/fio.py"}


def test_flags_are_read_and_written_only_through_the_codec():
    src = ROOT / "src" / "strata"
    touching = {str(p.relative_to(src)) for p in src.rglob("*.py") if FLAG_DICTS.search(p.read_text(encoding="utf-8"))}
    assert touching <= MAY_TOUCH, touching - MAY_TOUCH


# ---- judgements across hosts -------------------------------------------------------------------


def test_the_cache_across_hosts_is_suspect_when_any_host_is():
    MiB = 1 << 20
    a = validity.cache({"read": 100 * MiB}, {"loop0": {"read_bytes": 100 * MiB}}, True, "bind")
    b = validity.cache({"read": 100 * MiB}, {"loop0": {"read_bytes": 2 * MiB}}, True, "bind")
    both = validity.cache_across_hosts({"a": a, "b": b})
    assert both.warns and both.reason.startswith("host b: ") and "host a" not in both.reason
    assert both.evidence["hosts"] == {"a": a.to_json(), "b": b.to_json()}
    assert both.evidence["read_workload_bytes"] == 200 * MiB and both.evidence["read_disk_share"] == 0.02
    assert set(both.evidence["per_disk"]) == {"a:loop0", "b:loop0"}
    assert not validity.cache_across_hosts({"a": a, "b": a}).suspect
    buffered = validity.cache({"read": MiB}, {}, False, "bind")
    assert validity.cache_across_hosts({"a": buffered, "b": buffered}).expected
    mixed = validity.cache_across_hosts({"a": buffered, "b": None})  # a host without a cache flag
    assert not mixed.expected and mixed.evidence["hosts"]["b"] == {}


def test_a_flag_judged_anew_wins_over_the_stored_one():
    """With lazy decoding, a value written over a flag not yet decoded must not be replaced by the stored one."""
    r = _docs(DATA / "small")[0]
    flags = Flags.of(r)
    assert Flag.SYNC in flags.stored
    flags.set(Flag.SYNC, None)
    assert flags.get(Flag.SYNC) is None and flags.to_json()["sync"] is None


@pytest.mark.parametrize("name", STORED)
def test_warns_of_one_flag_agrees_with_the_whole_decoding(name):
    """flags.warns decodes only the flag asked for (the analysis asks it of every result); it must say what
    Flags.of(result).warns says, for every flag of every stored result, and for a flag a result lacks."""
    from strata.results import flags as codec

    for r in _docs(DATA / name):
        for f in Flag:
            assert codec.warns(r, f) == Flags.of(r).warns(f), (f, r["flags"].get(f.value))
    assert codec.warns({}, Flag.CACHE) is False and codec.warns({"flags": {"cache": None}}, Flag.CACHE) is False
