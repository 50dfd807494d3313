import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput, Target
from strata.core.params import Load
from strata.workloads.fio import FIO, FioParams, aggregate, iops_series, load_fio_json
from strata.workloads.fio_output import io_window as FIO_WINDOW
from strata.workloads.latency import merge_bins, percentile, summarize

from .fuzzing import mutate_members

DATA = Path(__file__).parents[1] / "data" / "fio" / "3.33"


def _doc(name):
    return json.loads((DATA / name).read_text())


def test_single_instance_matches_fio_numbers():
    doc = _doc("randread-loop-jsonplus.json")
    parsed = aggregate([doc])
    r = parsed.metrics["read"]
    job = doc["jobs"][0]["read"]
    assert r["iops"] == pytest.approx(job["iops"])
    assert r["io_bytes"] == job["io_bytes"] == parsed.moved_bytes["read"]
    assert parsed.moved_bytes["write"] == 0
    # percentiles from bins agree with fio's own percentiles (same buckets)
    for key, fio_key in (("p50", "50.000000"), ("p99", "99.000000")):
        fio_p = float(job["clat_ns"]["percentile"][fio_key])
        assert r["clat_ns"][key] == pytest.approx(fio_p, rel=0.02)
    assert r["clat_ns"]["mean"] == pytest.approx(job["clat_ns"]["mean"])
    assert r["slat_ns"]["max"] == job["slat_ns"]["max"]


def test_two_instances_sum_throughput_and_merge_histograms():
    a, b = _doc("randrw-instance0.json"), _doc("randrw-instance1.json")
    m = aggregate([a, b]).metrics
    for d in ("read", "write"):
        ja, jb = a["jobs"][0][d], b["jobs"][0][d]
        assert m[d]["iops"] == pytest.approx(ja["iops"] + jb["iops"])
        assert m[d]["bw_bytes"] == ja["bw_bytes"] + jb["bw_bytes"]
        merged = merge_bins([ja["lat_ns"]["bins"], jb["lat_ns"]["bins"]])
        assert m[d]["lat_ns"]["p99"] == percentile(merged, 99.0)
        assert m[d]["lat_ns"]["n"] == ja["lat_ns"]["N"] + jb["lat_ns"]["N"]
        lo, hi = sorted(
            [float(ja["lat_ns"]["percentile"]["99.000000"]), float(jb["lat_ns"]["percentile"]["99.000000"])]
        )
        assert lo * 0.98 <= m[d]["lat_ns"]["p99"] <= hi * 1.02
    assert len(m["instances"]) == 2
    assert m["primary"]["iops"] == pytest.approx(m["read"]["iops"] + m["write"]["iops"])


def test_merged_percentile_is_not_the_average_of_percentiles():
    fast = {"N": 100, "mean": 10, "min": 10, "max": 10, "bins": {"10": 100}}
    slow = {"N": 100, "mean": 1000, "min": 1000, "max": 1000, "bins": {"1000": 100}}
    s = summarize([fast, slow])
    assert s["p50"] == 10 and s["p99"] == 1000 and s["mean"] == 505
    assert percentile(Counter({5: 1}), 99.9) == 5
    assert summarize([])["p99"] is None


def test_failed_fio_is_a_trial_failure_with_category(tmp_path):
    (tmp_path / "fio.json").write_text((DATA / "enospc.json").read_text())
    out = InstanceOutput(0, tmp_path, 1, (DATA / "enospc.stderr").read_text())
    with pytest.raises(TrialFailure) as e:
        load_fio_json(out)
    assert e.value.category == "disk_full" and "No space left" in e.value.stderr


def test_missing_output_is_a_failure(tmp_path):
    with pytest.raises(TrialFailure) as e:
        load_fio_json(InstanceOutput(0, tmp_path, 1, "fio: unrecognized option '--bogus'"))
    assert e.value.category in ("bad_input", "tool_error")


def test_command_for_directory_and_device():
    spec = FioParams(preset="rr", size="64M", runtime=3, ramp_time=1)
    argv = FIO.command(spec, Load(numjobs=4, iodepth=16), Target("dir", "/data", "/strata-out"), 0)
    assert "--filename=/data/strata-fio.dat" in argv and "--iodepth=16" in argv and "--numjobs=4" in argv
    assert "--output-format=json+" in argv and "--direct=1" in argv and "--ioengine=libaio" in argv
    argv = FIO.command(spec, Load(), Target("device", "/dev/loop9", "/o"), 0)
    assert "--filename=/dev/loop9" in argv
    steady = FIO.command(FioParams(preset="rr", until="steady"), Load(), Target("dir", "/d", "/o"), 0)
    assert any(a.startswith("--steadystate=") for a in steady)


def test_job_file_only_gets_its_target(tmp_path):
    job = tmp_path / "x.fio"
    job.write_text("[global]\ndirect=1\n[a]\nrw=randread\nsize=8m\n")
    spec = FIO.parse_params({"type": "fio", "file": str(job)}, tmp_path)
    argv = FIO.command(spec, Load(numjobs=8), Target("dir", "/data", "/o"), 0)
    assert argv[-1] == "/o/job.fio" and "--directory=/data" in argv
    assert not any(a.startswith(("--rw=", "--numjobs=")) for a in argv)
    assert FIO.direct_io(spec)
    FIO.stage(spec, tmp_path)
    assert (tmp_path / "job.fio").read_text() == job.read_text()


def test_fio_holds_itself_at_the_barrier_after_its_setup(tmp_path):
    """The real fio with the barrier's script (2 jobs): `ready` only when both jobs are set up, no I/O
    before `go`, the measured I/O right after it, and no file in fio's working directory."""
    import shutil
    import subprocess
    import time

    if not shutil.which("fio"):
        pytest.fail("fio is not installed: scripts/install installs it")
    out, sync, data, cwd = (tmp_path / d for d in ("out", "sync", "data", "cwd"))
    for d in (out, sync, data, cwd):
        d.mkdir()
    spec = FioParams(preset="rr", size="8M", runtime=1, ramp_time=0, direct=0)
    assert FIO.barrier(spec) == "tool"
    (out / "ready-jobs").write_text("job\njob\n")  # an earlier attempt's count
    FIO.stage(spec, out)
    argv = FIO.command(spec, Load(numjobs=2), Target("dir", str(data), str(out), sync_dir=str(sync)), 0)
    assert not (out / "ready-jobs").exists()
    subprocess.run(FIO.prepare(spec, Load(numjobs=2), Target("dir", str(data), str(out)), 0), check=True, cwd=cwd)
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (out / "ready").exists():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr and p.stderr.read()
            time.sleep(0.01)
        assert (out / "ready-jobs").read_text() == "job\njob\n"
        time.sleep(1.0)
        assert p.poll() is None  # held
        go = time.time()
        (sync / "go").touch()
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()
    start, end = FIO_WINDOW(json.loads((out / "fio.json").read_text()))
    assert go - 0.05 < start < go + 2.0 and end > start  # no I/O before `go` (the upper bound: a busy machine)
    assert list(cwd.iterdir()) == []


def test_a_job_file_and_a_run_without_barrier_get_no_prerun(tmp_path):
    job = tmp_path / "x.fio"
    job.write_text("[a]\nrw=randread\nsize=8m\n")
    spec = FIO.parse_params({"type": "fio", "file": str(job)}, tmp_path)
    assert FIO.barrier(spec) == "wrapper"
    held = Target("dir", "/d", "/o", sync_dir="/s")
    assert not any(a.startswith("--exec_prerun") for a in FIO.command(spec, Load(), held, 0))
    local = FIO.command(FioParams(preset="rr"), Load(), Target("dir", "/d", "/o"), 0)
    assert not any(a.startswith("--exec_prerun") for a in local)
    (prerun,) = [a for a in FIO.command(FioParams(preset="rr"), Load(numjobs=3), held, 0) if "prerun" in a]
    assert prerun == "--exec_prerun=sh /o/fio-barrier.sh /s/go /o/ready 3 #"


def test_iops_series_from_fio_log(tmp_path):
    (tmp_path / "fio_iops.log").write_text("1000, 500, 0, 4096, 0\n1000, 300, 1, 4096, 0\n2000, 600, 0, 4096, 0\n")
    assert iops_series(tmp_path) == {1: 800.0, 2: 600.0}


def test_fio_declares_its_syncs_and_o_direct_writes_from_its_own_json():
    """fsync=1 under group_reporting: one entry for 2 jobs, libaio syncs once its queue drained (2 streams);
    fio counts the syncs apart from the writes."""
    from strata.workloads.fio_output import aggregate
    from strata.workloads.fio_writes import direct_writes, syncs

    doc = _doc("randwrite-fsync-jsonplus.json")
    job = doc["jobs"][0]
    s = syncs([doc])
    assert (s.count, s.streams, s.what, s.by_writes) == (job["sync"]["total_ios"], 2, "fsync", False)
    w = direct_writes([doc])
    assert (w.count, w.bytes, w.random) == (job["write"]["total_ios"], job["write"]["io_bytes"], True)
    two = syncs([doc, doc])
    assert two.count == 2 * s.count and two.streams == 4  # two instances
    parsed = aggregate([doc])
    assert parsed.syncs == s and parsed.direct_writes == w


def test_a_job_files_synced_writes_and_clones():
    """A job file with [global] direct=1 and sync=dsync, io_uring at iodepth 8, numjobs=2 without
    group_reporting: two entries of one job each; every write is a sync (O_DSYNC), 8 at a time a job."""
    from strata.workloads.fio_writes import direct_writes, option, syncs

    doc = _doc("dsync-jobfile.json")
    assert option(doc, doc["jobs"][0], "sync") == "dsync" and option(doc, doc["jobs"][0], "numjobs") == "2"
    s = syncs([doc])
    writes = sum(j["write"]["total_ios"] for j in doc["jobs"])
    assert (s.count, s.streams, s.what, s.by_writes) == (writes, 16, "O_DSYNC writes", True)
    w = direct_writes([doc])
    assert w.count == writes and not w.random


def test_no_syncs_and_reads_only():
    from strata.workloads.fio_writes import direct_writes, syncs

    read = _doc("randread-loop-jsonplus.json")
    assert syncs([read]).count == 0 and direct_writes([read]) is None
    rw = _doc("randrw-instance0.json")
    assert direct_writes([rw]).random and syncs([rw]).count == 0
    buffered = json.loads(json.dumps(rw))
    buffered["jobs"][0]["job options"]["direct"] = "0"
    assert direct_writes([buffered]) is None  # some writes went through the page cache: not judged


def test_the_measured_window_of_jobs_reported_as_a_group():
    """Regression (issue 44): under group_reporting fio sums `job_runtime` over the entry's jobs (2 jobs of
    2 s: 4000 ms), which put a 32-job trial's window 3 minutes before its start; each job ran 2 s."""
    from strata.workloads.fio_output import io_window, job_runtime_ms

    doc = _doc("randrw-instance0.json")
    assert doc["jobs"][0]["job_runtime"] == 4000 and doc["jobs"][0]["job options"]["numjobs"] == "2"
    assert job_runtime_ms(doc) == 2000
    start, end = io_window(doc)
    assert end - start == 2.0 and end == doc["timestamp_ms"] / 1000
    clones = _doc("dsync-jobfile.json")  # numjobs=2 without group_reporting: one entry a job, not summed
    assert job_runtime_ms(clones) == max(j["job_runtime"] for j in clones["jobs"])


def test_a_killed_parse_check_is_not_read_as_a_rejected_job(monkeypatch):
    import subprocess

    from strata.workloads import fio as fio_mod

    monkeypatch.setattr(fio_mod.shutil, "which", lambda name: "/usr/bin/fio")
    done = subprocess.CompletedProcess(["fio"], -9, "", "")
    monkeypatch.setattr(fio_mod.subprocess, "run", lambda *a, **kw: done)
    (said,) = FIO.validate(FioParams(preset="rr"))
    assert "killed by signal 9" in said and "rejects" not in said
    done.returncode, done.stderr = 1, "fio: bad option --foo"
    assert FIO.validate(FioParams(preset="rr")) == ["fio rejects the job: fio: bad option --foo"]


def test_fdatasyncs_are_counted_and_their_latency_is_stored_and_merged():
    """Issue 58: fio 3.33 leaves fdatasync= calls out of sync.total_ios (0 here for 1,823 of them): their latency's own
    count is the flush check's; the syncs' latency is stored (metrics.sync.lat_ns), merged across instances from
    the bins like the others, exported and shown."""
    from strata.cli.show import values
    from strata.core.metrics import export_columns
    from strata.workloads.fio import METRICS
    from strata.workloads.fio_writes import syncs

    doc = _doc("etcd-fdatasync-jsonplus.json")
    job = doc["jobs"][0]
    assert job["sync"]["total_ios"] == 0 and job["sync"]["lat_ns"]["N"] == 1823  # the captured fio's own count
    s = syncs([doc])
    assert s.count == 1823 and s.what == "fdatasync" and not s.by_writes
    one, two = aggregate([doc]).metrics["sync"], aggregate([doc, doc]).metrics["sync"]
    assert one["total_ios"] == 1823 and two["total_ios"] == 2 * 1823
    fio_p99 = float(job["sync"]["lat_ns"]["percentile"]["99.000000"])
    assert one["lat_ns"]["p99"] == pytest.approx(fio_p99, rel=0.02) and two["lat_ns"]["p99"] == one["lat_ns"]["p99"]
    assert two["lat_ns"]["n"] == 2 * 1823
    m = METRICS.field("latency", "sync_lat")
    r = {"metrics": aggregate([doc]).metrics}
    assert m.value(r, "read", "p99") == one["lat_ns"]["p99"]
    cols = [c for c, f, d, _ in export_columns([METRICS]) if f is m]
    assert "sync_lat_p99_ns" in cols and not any(c.startswith(("read_sync", "write_sync")) for c in cols)
    assert values(r, METRICS)["sync p99 us"] == pytest.approx(one["lat_ns"]["p99"] / 1000)
    assert "sync" not in aggregate([_doc("randread-loop-jsonplus.json")]).metrics  # no sync asked: none stored


# ---- fuzz: fio's JSON as read (docs/style.md, item 12) --------------------------------------------------


# Values a corrupted member may hold instead of fio's: another type, a negative or a huge number (beyond a float too)
def _mutate_text(rng: random.Random, text: str) -> str:
    """Cut short, a stretch deleted or written twice, a character changed."""
    for _ in range(rng.randint(1, 3)):
        i, n = rng.randrange(len(text) or 1), rng.randint(1, 200)
        op = rng.randrange(4)
        if op == 0:
            text = text[:i]
        elif op == 1:
            text = text[:i] + text[i + n :]
        elif op == 2:
            text = text[:i] + text[i : i + n] + text[i:]
        else:
            text = text[:i] + rng.choice('0123456789.,:{}[]" -eEx') + text[i + 1 :]
    return text


def _fio_outputs(tmp_path: Path, texts: list[str]) -> list[InstanceOutput]:
    outs = []
    for k, text in enumerate(texts):
        d = tmp_path / f"inst-{k}"
        d.mkdir(parents=True)
        (d / "fio.json").write_text(text)
        outs.append(InstanceOutput(index=k, out_dir=d, returncode=0, stderr=""))
    return outs


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return _is_real(v) and math.isfinite(v)


def test_fuzz_fios_json_is_read_or_a_parse_failure_never_a_traceback(tmp_path):
    """Seeded mutants of every captured fio JSON, of one or two instances: each is a result whose headline is a
    finite number and whose bytes are whole (not negative where fio's were not), or a TrialFailure."""
    rng = random.Random(61_05_01)
    texts = {f.name: f.read_text() for f in sorted(DATA.glob("*.json"))}
    answers = Counter()
    for n in range(400):
        given = []
        for _ in range(rng.choice([1, 1, 2])):
            text = texts[rng.choice(sorted(texts))]
            given.append(
                json.dumps(mutate_members(rng, json.loads(text))) if rng.random() < 0.6 else _mutate_text(rng, text)
            )
        outs = _fio_outputs(tmp_path / f"c{n}", given)
        try:
            parsed = FIO.parse(FioParams(preset="rr"), outs)
        except TrialFailure as e:
            # no JSON at all is fio's own failure (it wrote nothing), anything else that cannot be read a parse one
            assert e.category == "parse" or not all("{" in t for t in given), (n, e.category, e)
            assert len(str(e)) < 1000, n
            answers[e.category] += 1
            continue
        answers["read"] += 1
        m = parsed.metrics
        assert _is_number(m["primary"]["value"]) and m["primary"]["unit"] in ("IOPS", "MB/s"), (n, m["primary"])
        assert len(m["instances"]) == len(outs) and set(parsed.moved_bytes) == {"read", "write"}
        docs = [json.loads(t[t.find("{") :]) for t in given]
        for ddir, moved in parsed.moved_bytes.items():
            assert isinstance(moved, int), (n, ddir, moved)
            if all(j[ddir]["io_bytes"] >= 0 for d in docs for j in d["jobs"]):
                assert moved >= 0, (n, ddir, moved)
            lat = m[ddir]["lat_ns"]  # numbers as fio wrote them (a figure of 1.5e308 ns may give an infinite mean)
            assert all(lat[k] is None or _is_real(lat[k]) for k in ("mean", "p50", "p99", "max")), (n, lat)
    assert answers["read"] > 50 and answers["parse"] > 100, answers


def _bad(doc: dict, where: str, value) -> dict:
    """`doc` with the member at `where` (keys joined by /, `-` deletes it) set to `value`."""
    *up, key = [int(k) if k.isdigit() else k for k in where.split("/")]
    parent = doc
    for k in up:
        parent = parent[k]
    if value == "-":
        del parent[key]
    else:
        parent[key] = value
    return doc


SHAPES = [  # (where, value, what escaped before the fix as a traceback)
    ("jobs", [], "IndexError: no job to read the headline's rw of"),
    ("jobs", "-", "ValueError: fio's JSON has no jobs"),
    ("jobs", 3, "ShapeError: 'jobs' should be an array"),
    ("jobs/0/job options", 3, "ShapeError: 'job options' should be an object"),
    ("jobs/0/read/clat_ns/bins", {"1000": "x"}, "ValueError: invalid literal for int()"),
    ("jobs/0/read/clat_ns/bins", {"1000": None}, "ShapeError: a bin's count should be a number"),
    ("jobs/0/read/clat_ns/N", True, "ShapeError: 'N' should be a number, not bool"),
    ("jobs/0/read/clat_ns/N", 10**400, "OverflowError: int too large to convert to float"),
    ("jobs/0/read/iops", 10**400, "OverflowError: int too large to convert to float"),
    ("jobs/0/steadystate", {}, "KeyError: 'ss'"),
]


@pytest.mark.parametrize("where,value,was", SHAPES, ids=[was for _, _, was in SHAPES])
def test_fio_json_of_another_shape_is_a_parse_failure(tmp_path, where, value, was):
    """What the fuzz found, each a parse failure with the JSON's tail (`was`: the traceback before)."""
    doc = _bad(_doc("randread-loop-jsonplus.json"), where, value)
    with pytest.raises(TrialFailure) as e:
        FIO.parse(FioParams(preset="rr"), _fio_outputs(tmp_path, [json.dumps(doc)]))
    assert e.value.category == "parse" and str(e.value).startswith("fio's JSON is not what fio writes: ")
    assert "fio.json: ..." in e.value.stderr


def test_fio_figures_beyond_a_float_are_a_parse_failure_not_an_infinite_headline(tmp_path):
    """Two instances of 1.5e308 IOPS each summed to an infinite headline, stored as a result."""
    doc = json.dumps(_bad(_doc("randread-loop-jsonplus.json"), "jobs/0/read/iops", 1.5e308))
    with pytest.raises(TrialFailure, match="its figures give the headline inf") as e:
        FIO.parse(FioParams(preset="rr"), _fio_outputs(tmp_path, [doc, doc]))
    assert e.value.category == "parse"
