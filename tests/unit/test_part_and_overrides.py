"""`--only EXPR` (experiment/select.py) and `--set KEY=VALUE` (experiment/overrides.py): what they pick and
change, the errors that name the problem, and a seeded fuzz of each: any input is a result or a StrataError."""

import random
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.core.errors import StrataError
from strata.core.host import host_facts
from strata.experiment import overrides, select
from strata.experiment.load import load_spec
from strata.experiment.plan import resolve

QUICK = Path(__file__).resolve().parents[2] / "examples" / "quick.yaml"
DOCKER = {"device": "loop", "filesystem": "xfs", "runtime": "docker:overlay2", "path": "bind", "workload": "rr",
          "load": "high", "placement": ""}  # fmt: skip
NATIVE = {**DOCKER, "runtime": "native"}


@pytest.mark.parametrize(
    "expr, docker, native",
    [
        ("docker", True, False),
        ("not docker", False, True),
        ("xfs and rr and not docker", False, True),
        ("runtime=docker:*", True, False),
        ("runtime=overlay2", True, False),  # a part of the label
        ("RUNTIME=Docker", True, False),  # case does not matter
        ("fs=xfs and (load=low or load=high)", True, True),
        ("ext4 or raw", False, False),
        ("r?", True, True),  # rr
        ("not (docker or native)", False, False),
        ("not not docker", True, False),
        ("host=*", False, False),  # no placement: nothing to match
    ],
)
def test_what_a_word_matches(expr, docker, native):
    m = select.parse(expr)
    assert (m(DOCKER), m(NATIVE)) == (docker, native)


@pytest.mark.parametrize(
    "expr, says",
    [
        ("", "it is empty"),
        ("xfs and", "it ends where a word was expected"),
        ("and xfs", "'and' where a word was expected"),
        ("(xfs", "a '(' is not closed"),
        ("xfs)", "')' where and, or or the end was expected"),
        ("xfs rr", "'rr' where and, or or the end was expected"),
        ("colour=red", "no label 'colour'"),
        ("runtime=", "nothing after '='"),
        ("(" * 40 + "x" + ")" * 40, "nested deeper than 32 levels"),
        ("x " * 600, "longer than 1000 characters"),
    ],
)
def test_a_bad_expression_says_what_is_wrong(expr, says):
    with pytest.raises(StrataError) as e:
        select.parse(expr)
    assert says in e.value.message() and "fix:" in e.value.message()


def _plan(*sets: str):
    exp, wls = load_spec(QUICK, overrides=list(sets))
    return resolve(exp, wls, host_facts())


def test_the_part_keeps_the_ids_so_resume_of_the_whole_runs_the_rest():
    whole = _plan()
    part = whole.only("xfs and rr and not docker")
    assert part.part == ("xfs and rr and not docker", len(whole.trials))
    assert {t.id for t in part.trials} < {t.id for t in whole.trials}
    assert all(t.names["filesystem"] == "xfs" and t.names["runtime"] == "native" for t in part.trials)
    assert all(s.names["filesystem"] == "xfs" for s in part.skipped)


def test_a_part_that_matches_nothing_lists_the_labels(capsys):
    assert main(["validate", str(QUICK), "--only", "btrfs"]) == 2
    err = capsys.readouterr().err
    assert "matches none of the plan's" in err and "filesystem: ext4, raw, xfs" in err and "load: high, low" in err


def test_overrides_change_the_spec_and_are_validated_like_the_file(capsys):
    exp, _ = load_spec(QUICK, overrides=["devices.0.size=2GiB", "repetitions=3", "loads=[low]"])
    assert exp.devices[0].size == 2 << 30 and exp.repetitions == 3 and [x.name for x in exp.loads] == ["low"]
    exp, _ = load_spec(QUICK, "smoke", ["devices.0.size=1GiB"])  # the scale is applied after the overrides
    assert exp.scale == "smoke" and exp.devices[0].size == 1 << 30
    assert main(["validate", str(QUICK), "--set", "devices.0.size=banana"]) == 2
    err = capsys.readouterr().err
    assert "with 1 --set override(s)" in err and "devices[0].size: 'banana' is not a size" in err
    assert main(["validate", str(QUICK), "--set", "devices.0.sise=2GiB"]) == 2
    assert "devices[0].sise" in capsys.readouterr().err


@pytest.mark.parametrize(
    "item, says",
    [
        ("repetitions", "is not KEY=VALUE"),
        ("=3", "is not KEY=VALUE"),
        ("devices..size=1", "is not a dotted key"),
        ("devices.5.size=1", "index 5 is beyond the list's 1 entry"),
        ("devices.99999=1", "list index 99999 is beyond 1000"),
        ("name.x=1", "'x' cannot step into the value 'quick'"),
        ("loads=[low", "its value is not valid YAML"),
        ("a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q=1", "at most 16 parts"),
    ],
)
def test_a_bad_override_names_itself(item, says):
    with pytest.raises(StrataError) as e:
        load_spec(QUICK, overrides=[item])
    assert says in e.value.message() and f"--set {item}" in e.value.message()


def test_a_list_grows_by_its_length_and_new_keys_are_made():
    doc = overrides.apply({"a": [1]}, ["a.1=2", "b.c=3", "d.0=x"], "t")
    assert doc == {"a": [1, 2], "b": {"c": 3}, "d": ["x"]}


ALPHABET = ["and", "or", "not", "(", ")", "=", "*", "?", "[", "]", "xfs", "docker", "load", "runtime", " ", "\x00",
            "é", "'", '"', "\\", "fs", "host", "[!a]", "-"]  # fmt: skip


def test_fuzz_only_is_a_predicate_or_a_strata_error():
    rng = random.Random(59)
    for _ in range(5000):
        expr = "".join(rng.choice(ALPHABET) + rng.choice(["", " "]) for _ in range(rng.randint(0, 30)))
        try:
            m = select.parse(expr)
        except StrataError:
            continue
        assert m(DOCKER) in (True, False) and m({}) in (True, False)


def test_fuzz_set_is_a_document_or_spec_errors():
    rng = random.Random(59)
    parts = ["devices", "0", "size", "1", "99", "loads", "name", "", "x", "repetitions", "workloads", "fio"]
    values = ["1", "2GiB", "[", "{a: 1}", "- a", "!!python/object:os.system", "*a", "&a [*a]", "", "null", "é" * 50]
    base = {"name": "q", "devices": [{"type": "loop", "size": "1GiB"}], "loads": ["low"], "workloads": [{"fio": {}}]}
    for _ in range(3000):
        key = ".".join(rng.choice(parts) for _ in range(rng.randint(0, 5)))
        items = [f"{key}{rng.choice(['=', '', '=='])}{rng.choice(values)}" for _ in range(rng.randint(1, 3))]
        try:
            overrides.apply(base, items, "fuzz")
        except StrataError:
            pass
    assert base["devices"] == [{"type": "loop", "size": "1GiB"}]  # the file's own document is never changed
