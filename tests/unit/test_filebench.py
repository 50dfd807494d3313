import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from strata.core.errors import SpecErrors, TrialFailure
from strata.core.instances import InstanceOutput, Target
from strata.core.params import Load
from strata.experiment.load import parse_spec
from strata.workloads.filebench import FILEBENCH, OUTPUT, PERSONALITIES, PERSONALITIES_DIR, FilebenchParams, read_end

from .fuzzing import mutate_members

DATA = Path(__file__).parents[1] / "data" / "strata-wml" / "0.1.0"
BASE = {"name": "t", "devices": ["loop"], "filesystems": ["ext4"], "runtimes": ["docker"], "paths": ["volume"]}


def _outputs(tmp_path, names, rc=0):
    outs = []
    for i, n in enumerate(names):
        d = tmp_path / f"inst-{i}"
        d.mkdir()
        (d / OUTPUT).write_text((DATA / n).read_text())
        outs.append(InstanceOutput(i, d, rc, ""))
    return outs


def test_every_personality_ships():
    for p in PERSONALITIES:
        src = FilebenchParams(personality=p).source
        assert src.is_file() and src.is_relative_to(PERSONALITIES_DIR) and src.stem == p


def test_spec_shorthand_and_sweep():
    _, wls = parse_spec(
        {**BASE, "workloads": [{"filebench": {"personality": ["webserver", "varmail"], "set": {"nthreads": 4}}}]}
    )
    assert [w.name for w in wls] == ["webserver", "varmail"] and wls[0].set == {"nthreads": 4}


def test_spec_errors():
    with pytest.raises(SpecErrors, match="exactly one of personality"):
        parse_spec({**BASE, "workloads": [{"filebench": {}}]})
    with pytest.raises(SpecErrors, match=r"\$dir is set by strata"):
        parse_spec({**BASE, "workloads": [{"filebench": {"personality": "webserver", "set": {"$dir": "/x"}}}]})
    with pytest.raises(SpecErrors):
        parse_spec({**BASE, "workloads": [{"filebench": {"personality": "mailserver"}}]})


def test_command_sets_dir_and_overrides():
    spec = FILEBENCH.parse_params(
        {"type": "filebench", "personality": "webserver", "set": {"nthreads": 4}, "runtime": 7}, Path(".")
    )
    argv = FILEBENCH.command(spec, Load(), Target("dir", "/data", "/strata-out", host_tools=False), 0)
    script = argv[-1]
    assert argv[:2] == ["sh", "-c"] and script.startswith(
        "exec strata-wml run /strata-out/workload.f --json --runtime 7"
    )
    assert "'$dir=/data'" in script and "'$nthreads=4'" in script and script.endswith("> /strata-out/engine.jsonl")


def test_two_instances_sum_and_merge(tmp_path):
    spec = FILEBENCH.parse_params({"type": "filebench", "personality": "varmail"}, Path("."))
    parsed = FILEBENCH.parse(spec, _outputs(tmp_path, ["varmail-instance0.jsonl", "varmail-instance1.jsonl"]))
    ends = [
        json.loads(line)["data"]
        for n in ("varmail-instance0.jsonl", "varmail-instance1.jsonl")
        for line in (DATA / n).read_text().splitlines()
        if json.loads(line)["type"] == "end"
    ]
    m = parsed.metrics
    assert m["primary"]["ops_per_s"] == pytest.approx(sum(e["summary"]["ops_per_s"] for e in ends))
    assert m["primary"]["mb_per_s_per_instance"] == pytest.approx(sum(e["summary"]["mb_per_s"] for e in ends) / 2)
    assert [f["name"] for f in m["flowops"]] == [f["name"] for f in ends[0]["flowops"]]
    for i, f in enumerate(m["flowops"]):
        assert f["ops"] == sum(e["flowops"][i]["ops"] for e in ends)
        if f["ops"]:
            lo = min(e["flowops"][i]["latency_us"]["p99"] for e in ends)
            hi = max(e["flowops"][i]["latency_us"]["p99"] for e in ends)
            assert lo * 0.97 <= f["latency_us"]["p99"] <= hi * 1.03
    assert parsed.moved_bytes["read"] == sum(e["summary"]["read_bytes"] for e in ends)
    assert not FILEBENCH.direct_io(spec)
    # its fsync flowops are the syncs it asked for; an engine output older than `threads` gives no streams:
    # then as many as syncs, so only a device that saw no flush is flagged
    fsyncs = sum(f["ops"] for f in m["flowops"] if f["type"] == "fsync")
    assert parsed.syncs is not None and parsed.syncs.count == fsyncs > 0 and parsed.syncs.streams == fsyncs
    assert parsed.direct_writes is None  # buffered


def test_the_engines_threads_bound_the_fsyncs_at_once(tmp_path):
    """varmail: 16 threads, each with two fsync flowops (counted once a flowop: 32, a looser bound)."""
    spec = FILEBENCH.parse_params({"type": "filebench", "personality": "varmail"}, Path("."))
    parsed = FILEBENCH.parse(spec, _outputs(tmp_path, ["varmail-threads.jsonl"]))
    end = next(json.loads(x)["data"] for x in (DATA / "varmail-threads.jsonl").read_text().splitlines()[-1:])
    assert all(f["threads"] == 16 for f in end["flowops"])
    assert parsed.syncs.count == sum(f["ops"] for f in end["flowops"] if f["type"] == "fsync")
    assert parsed.syncs.streams == 32 and parsed.syncs.what == "fsync"


def test_engine_error_and_missing_end_are_failures(tmp_path):
    d = tmp_path / "a"
    d.mkdir()
    (d / OUTPUT).write_text(
        json.dumps(
            {
                "type": "error",
                "data": {"kind": "syntax", "message": "x.f:3:5: expected '='", "file": "x.f", "line": 3, "col": 5},
            }
        )
        + "\n"
    )
    with pytest.raises(TrialFailure) as e:
        read_end(InstanceOutput(0, d, 2, ""))
    assert e.value.category == "bad_input" and "x.f:3:5" in str(e.value) and "syntax" in str(e.value)
    (d / OUTPUT).write_text("")
    with pytest.raises(TrialFailure, match="without results"):
        read_end(InstanceOutput(0, d, 1, "killed"))


def test_full_file_system_is_disk_full_with_the_fix(tmp_path):
    d = tmp_path / "a"
    d.mkdir()
    end = {
        "stopped_early": True,
        "summary": {"ops": 1},
        "reason": "filereaderthread-0: flowop appendlog-1 failed: append failed: No space left on device (os error 28)",
    }
    (d / OUTPUT).write_text(json.dumps({"type": "end", "data": end}) + "\n")
    with pytest.raises(TrialFailure) as e:
        read_end(InstanceOutput(0, d, 1, ""))
    assert e.value.category == "disk_full" and "larger device" in str(e.value)
    end["reason"] = "filereaderthread-0: flowop readfile1 failed: no file to read"
    (d / OUTPUT).write_text(json.dumps({"type": "end", "data": end}) + "\n")
    with pytest.raises(TrialFailure) as e:
        read_end(InstanceOutput(0, d, 1, ""))
    assert e.value.category == "stopped_early"


def test_validate_reports_an_engine_error_against_the_users_file(tmp_path, capsys):
    """Issue 14: a .f the engine rejects fails `strata validate`, naming the user's own file and line."""
    from strata.cli.main import main
    from strata.workloads.engine import engine_binary

    assert engine_binary(), "the engine is not built: scripts/install builds it"
    bad = tmp_path / "mine.f"
    bad.write_text((PERSONALITIES_DIR / "varmail.f").read_text().replace("flowop deletefile", "flowop bogusop", 1))
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"name: v\nworkdir: {tmp_path / 'w'}\ndevices: [loop]\nfilesystems: [ext4]\nruntimes: [native]\n"
        f"paths: [bind]\nworkloads: [{{filebench: {{file: {bad}, runtime: 5}}}}]\n"
    )
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "bogusop" in text)
    assert f"{bad}:{line}:" in err and "bogusop" in err and "Traceback" not in err


# ---- fuzz: the engine's output as read (docs/style.md, item 12) ---------------------------------------------

# what a failed trial of the engine's own is (an error record, no end, a protocol of another version, a run that
# stopped early), beside output strata cannot read (`parse`)
ENGINE_FAILURES = {"parse", "tool_error", "bad_input", "stopped_early", "disk_full"}


def _mutate_records(rng: random.Random, text: str) -> bytes:
    """Records of the protocol's form, a member dropped or given another type, one to three times."""
    records = mutate_members(rng, [json.loads(line) for line in text.splitlines()], below=1)
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _mutate_lines(rng: random.Random, text: str) -> bytes:
    """Cut short, a stretch deleted or written twice, a character or a line changed, a byte that is no UTF-8."""
    data = text.encode()
    for _ in range(rng.randint(1, 3)):
        i, n = rng.randrange(len(data) or 1), rng.randint(1, 200)
        op = rng.randrange(5)
        if op == 0:
            data = data[:i]
        elif op == 1:
            data = data[:i] + data[i + n :]
        elif op == 2:
            data = data[:i] + data[i : i + n] + data[i:]
        elif op == 3:
            data = (
                data[:i]
                + rng.choice([b"0", b"9", b".", b",", b":", b"{", b"]", b'"', b"-", b"e", b"\n"])
                + data[i + 1 :]
            )
        else:
            data = data[:i] + rng.choice([b"\xff", b"\n\n", b'{"type":"interval"}\n', b"[]\n"]) + data[i:]
    return data


def _engine_outputs(tmp_path: Path, outputs: list[bytes], rc: int = 0) -> list[InstanceOutput]:
    outs = []
    for i, data in enumerate(outputs):
        d = tmp_path / f"inst-{i}"
        d.mkdir(parents=True)
        (d / OUTPUT).write_bytes(data)
        outs.append(InstanceOutput(i, d, rc, ""))
    return outs


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def test_fuzz_the_engines_output_is_read_or_a_failed_trial_never_a_traceback(tmp_path):
    """Seeded mutants of the captured engine outputs, of one or two instances: a result whose headline is a finite
    number, its bytes whole and each flowop's figures there, or a TrialFailure (the engine's own failures keep
    their categories; anything else is a parse failure)."""
    rng = random.Random(61_05_04)
    texts = {f.name: f.read_text() for f in sorted(DATA.glob("*.jsonl"))}
    spec = FilebenchParams(personality="varmail")
    answers = Counter()
    for n in range(400):
        given = [
            (_mutate_records if rng.random() < 0.6 else _mutate_lines)(rng, texts[rng.choice(sorted(texts))])
            for _ in range(rng.choice([1, 1, 2]))
        ]
        outs = _engine_outputs(tmp_path / f"c{n}", given, rc=rng.choice([0, 0, 0, 1]))
        try:
            parsed = FILEBENCH.parse(spec, outs)
        except TrialFailure as e:
            assert e.category in ENGINE_FAILURES and len(str(e)) < 1000, (n, e.category, e)
            answers[e.category] += 1
            continue
        answers["read"] += 1
        m = parsed.metrics
        assert _finite(m["primary"]["value"]) and m["primary"]["unit"] == "MB/s", (n, m["primary"])
        assert all(isinstance(v, int) for v in parsed.moved_bytes.values()), (n, parsed.moved_bytes)
        assert len(m["instances"]) == len(parsed.windows) == len(outs), n
        for f in m["flowops"]:
            assert {"name", "type", "ops", "ops_per_s", "mb_per_s", "latency_us"} <= set(f), (n, f)
            assert all(v is None or isinstance(v, (int, float)) for v in f["latency_us"].values()), (n, f)
    assert answers["read"] > 50 and answers["parse"] > 100, answers


def _end_edited(edit) -> bytes:
    """varmail-instance0.jsonl with its end record's data edited in place."""
    begin, end = [json.loads(line) for line in (DATA / "varmail-instance0.jsonl").read_text().splitlines()]
    edit(end)
    return (json.dumps(begin) + "\n" + json.dumps(end) + "\n").encode()


def _set(path: str, value):
    def edit(record: dict) -> None:
        *up, key = [int(k) if k.isdigit() else k for k in path.split("/")]
        parent = record
        for k in up:
            parent = parent[k]
        if value == "-":
            del parent[key]
        else:
            parent[key] = value

    return edit


SHAPES = {  # case: (the instances' outputs, what escaped before the fix as a traceback)
    "a record without its type": ([_end_edited(_set("type", "-"))], "KeyError: 'type'"),
    "an end without stopped_early": ([_end_edited(_set("data/stopped_early", "-"))], "KeyError: 'stopped_early'"),
    "an end whose data is a list": ([_end_edited(_set("data", []))], "ShapeError: 'data' should be an object"),
    "a bucket that is no integer": (
        [_end_edited(_set("data/flowops/0/histogram/bucket_ns_upper/0", 1.5))],
        "ShapeError: a bucket should be an integer",
    ),
    "a flowop without its ops": (
        [_end_edited(_set("data/flowops/0/ops", "-"))],
        "ShapeError: 'ops' should be a number",
    ),
    "an instance with fewer flowops": (
        [_end_edited(lambda r: None), _end_edited(lambda r: r["data"]["flowops"].pop())],
        "IndexError: list index out of range",
    ),
    "a rate beyond a float": ([_end_edited(_set("data/summary/mb_per_s", 10**400))], "OverflowError"),
    "a byte that is no UTF-8": ([b"\xff" + (DATA / "varmail-instance0.jsonl").read_bytes()], "UnicodeDecodeError"),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_engine_records_strata_cannot_read_are_a_parse_failure(tmp_path, case):
    """What the fuzz found (SHAPES' second column: what escaped before), each a parse failure naming it."""
    given, _ = SHAPES[case]
    with pytest.raises(TrialFailure) as e:
        FILEBENCH.parse(FilebenchParams(personality="varmail"), _engine_outputs(tmp_path, given))
    assert e.value.category == "parse" and len(str(e.value)) < 1000 and "engine" in str(e.value)


def test_engine_figures_beyond_a_float_are_a_parse_failure_not_an_infinite_headline(tmp_path):
    """Two instances of 1.5e308 MB/s each summed to an infinite headline, stored as a result."""
    huge = _end_edited(_set("data/summary/mb_per_s", 1.5e308))
    with pytest.raises(TrialFailure, match="give the headline inf") as e:
        FILEBENCH.parse(FilebenchParams(personality="varmail"), _engine_outputs(tmp_path, [huge, huge]))
    assert e.value.category == "parse"
