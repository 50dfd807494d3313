"""The validator never crashes (issue 14): the reproducers of the report, each an exit-2 answer with the
key path, and a seeded mutation run over every example (bench/spec_fuzz.py runs larger ones)."""

import copy
import sys
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.core.errors import SpecErrors
from strata.experiment.load import load_spec, parse_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import spec_fuzz  # noqa: E402

BASE = {"name": "t", "devices": ["loop"], "filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"]}
REPRODUCERS = [  # (document, the key path its error names)
    ({**BASE, "workloads": [{"fio": "rr"}]}, "workloads[0].fio"),
    ({**BASE, "workloads": [{"fio": {"file": 5}}]}, "workloads[0].fio"),
    ({**BASE, "workloads": [{"fio": {"name": 5, "preset": "rr", "bs": ["4k", "8k"]}}]}, None),
    ({**BASE, "workloads": [{"type": {"a": 1}}]}, "workloads[0]"),
    ({**BASE, "workloads": ["rr"], "loads": [{"preset": ["low"]}]}, "loads[0].preset"),
    ({**BASE, "workloads": [{"fio": {"preset": "rr", "size": "9" * 400}}]}, "workloads[0].fio.size"),
    ({**BASE, "workloads": [{"fio": {"preset": "rr", "runtime": "1e999"}}]}, "workloads[0].fio.runtime"),
    ({**BASE, "workloads": [{"pgbench": {"script": "file:/dev/zero"}}]}, "workloads[0].pgbench"),
    ({**BASE, "workloads": [{"pgbench": {"shared_buffers": "9" * 400}}]}, "workloads[0].pgbench.shared_buffers"),
    ({**BASE, "workloads": [{"pgbench": {"rate": [5, "1e999"], "clients": [1, 2**63]}}]}, None),
    ({**BASE, "workloads": [{"pgbench": {"settings": [["fsync", "off"]]}}]}, "workloads[0].pgbench.settings"),
    ({**BASE, "workloads": [{"pgbench": {"settings": {"a" * 5000: 1}}}]}, "workloads[0].pgbench.settings"),
    ({**BASE, "workloads": [{"pgbench": {"settings": {"x": "9" * 10**6}}}]}, "workloads[0].pgbench.settings"),
    ({**BASE, "workloads": [{"pgbench": {"wal_path": [None, {"a": 1}]}}]}, "workloads[0].pgbench.wal_path"),
    ({**BASE, "workloads": [{"pgbench": {"script": "select-only@" + "9" * 400}}]}, "workloads[0].pgbench.script"),
    (
        {**BASE, "workloads": [{"pgbench": {"script": ",".join(["tpcb-like@1"] * 10**4)}}]},
        "workloads[0].pgbench.script",
    ),
    ({**BASE, "workloads": [{"pgbench": {"latency_limit": "1e999", "checkpoint_timeout": "1e999"}}]}, None),
    (
        {**BASE, "devices": [{"type": "loop", "precondition": {"fill": "1e999", "steady": {"round": "9" * 400}}}]},
        "devices[0].precondition.fill",
    ),
    ({**BASE, "devices": [{"type": "zram", "precondition": {"steady": {"max_rounds": 2**70}}}]}, None),
    (
        {
            **BASE,
            "workloads": [{"fio": {"preset": "rr", "bs": [f"{k}k" for k in range(4, 1004)]}}],
            "loads": [{"numjobs": list(range(1, 101)), "iodepth": 1}],
            "repetitions": 10,
        },
        "",
    ),
]


@pytest.mark.parametrize("doc,where", REPRODUCERS, ids=range(len(REPRODUCERS)))
def test_reproducers_get_an_answer_with_the_key_path(doc, where):
    try:
        parse_spec(doc)
    except SpecErrors as e:
        assert where is None or any(p == where for p, _, _ in e.errors), e.errors
        return
    assert where is None, "accepted a document that names no valid workload"


def test_binary_garbage_a_directory_and_deep_nesting_exit_2(tmp_path, capsys):
    garbage = tmp_path / "g.yaml"
    garbage.write_bytes(bytes(range(256)) * 4)
    deep = tmp_path / "deep.yaml"
    deep.write_text("workloads: " + "[" * 5000 + "]" * 5000 + "\n")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    )
    for path in (garbage, tmp_path, deep, bomb):
        with pytest.raises(SpecErrors):
            load_spec(path)
        assert main(["validate", str(path)]) == 2
        assert "Traceback" not in capsys.readouterr().err


def test_seeded_mutants_of_every_example(tmp_path):
    garbage = copy.deepcopy(spec_fuzz.GARBAGE)
    failures = spec_fuzz.run(1500, seed=20261123, tmp=tmp_path)
    assert not failures, f"{len(failures)} crashes, e.g. seed {failures[0][0]} of {failures[0][1]}:\n{failures[0][2]}"
    # regression: a mutation inside a garbage value placed by reference grew GARBAGE itself, so that a long
    # run's later mutants held lists of a million items (1 GiB and seconds each)
    assert repr(spec_fuzz.GARBAGE) == repr(garbage)


def test_a_large_plan_needs_yes(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "name: big\nworkdir: " + str(tmp_path / "w") + "\ndevices: [loop]\nfilesystems: [xfs]\n"
        "runtimes: [native]\npaths: [bind]\nrepetitions: 20\n"
        "workloads: [{'null': {iops: [" + ", ".join(str(i) for i in range(1, 601)) + "]}}]\n"
    )
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    assert main(["run", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr()
    assert "12,000 trials" in err.err and "--yes" in err.err and "estimated time" in err.out
    assert not (tmp_path / "out").exists()
