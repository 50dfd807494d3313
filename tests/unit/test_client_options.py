"""Issue 56 item 6: a client's own options, bounded, checked against the tool's --help before anything is built,
refused where strata sets them, passed to the warm-up and the run (workloads/server/options.py)."""

import random
import re

import pytest
from pydantic import ValidationError

from strata.core.params import Load
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.pgbench.plugin import PLUGIN as PGBENCH
from strata.workloads.server import options
from strata.workloads.sysbench.params import SysbenchParams
from strata.workloads.sysbench.plugin import PLUGIN as SYSBENCH

PGBENCH_HELP = """\
  -c, --client=NUM         number of concurrent database clients (default: 1)
  -C, --connect            establish new connection for each transaction
  --progress-timestamp     use Unix epoch timestamps for progress
  --random-seed=SEED       set random seed ("time", "rand", integer)
"""


def test_values_are_long_options_within_their_bounds():
    assert options.values(["--connect", " --random-seed=7 "]) == ["--connect", "--random-seed=7"]
    assert options.values("--connect") == ["--connect"] and options.values(None) == []
    for bad in (["-C"], ["connect"], ["--"], [3], ["--a=" + "x" * 201], ["--a=b\nc"], {"a": 1}):
        with pytest.raises(ValueError):
            options.values(bad)
    with pytest.raises(ValueError, match="at most 32"):
        options.values(["--connect"] * 33)


def test_values_never_raise_anything_but_a_value_error_on_random_input():
    """The parser's seeded fuzz: whatever a spec holds, a ValueError (a spec error) or a list of options."""
    rnd = random.Random(56)
    alphabet = "-=abcXYZ_09 \n\t\x00é"
    for _ in range(3000):
        item = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30)))
        v = rnd.choice([item, [item], [item, "--ok"], rnd.randint(-5, 5), None, [None], {"k": item}])
        try:
            out = options.values(v)
        except ValueError:
            continue
        assert all(options.OPTION.fullmatch(o) for o in out)


def test_the_tools_list_and_what_strata_sets_decide_each_option():
    known = options.listed(PGBENCH_HELP, "`pgbench --help`")
    assert known.names == {"client", "connect", "progress-timestamp", "random-seed"}
    managed = {"client": "`clients`"}
    said = options.problems(["--connect", "--client=4", "--progres-timestamp"], known, managed, "pgbench")
    assert said == [
        "`--client=4`: strata sets pgbench's --client itself (`clients`)",
        "`--progres-timestamp`: pgbench has no option --progres-timestamp (did you mean --progress-timestamp?) "
        "(checked against `pgbench --help`)",
    ]
    # a tool that cannot be asked here judges the options itself at run; what strata sets is still refused
    assert options.problems(["--anything", "--client=1"], None, managed, "pgbench") == [said[0].replace("4", "1")]
    assert options.union("both", known, None) is None
    assert options.union("both", known, options.Known("x", frozenset({"z"}))).names == known.names | {"z"}


def test_an_option_changes_the_trials_name():
    assert PgbenchParams(options=["--connect"]).name.endswith("-oconnect")
    assert SysbenchParams(options=["--skip_trx=on"]).name.endswith("-oskip_trx_on")
    with pytest.raises(ValidationError, match="not a long option"):
        PgbenchParams(options=["-C"])


def test_the_warm_up_and_the_run_get_the_options_the_load_does_not(tmp_path):
    p = PgbenchParams(options=["--connect"], warmup=5)
    for phase, has in (("load", False), ("warmup", True), ("run", True)):
        (client,) = PGBENCH.clients(phase, p, Load(), tmp_path, {"log": {"sampling_rate": 1.0}})
        assert ("--connect" in client.argv) is has, (phase, client.argv)
    s = SysbenchParams(options=["--skip_trx=on"], warmup=5)
    for phase, has in (("load", False), ("warmup", True), ("run", True)):
        (client,) = SYSBENCH.clients(phase, s, Load(), tmp_path, {})
        argv = client.argv
        assert ("--skip_trx=on" in argv) is has, (phase, argv)
        if has:  # before the script and its command, as sysbench reads its options
            assert argv.index("--skip_trx=on") < argv.index("oltp_read_write")


def test_pgbench_checks_against_its_own_help():
    """The host's own pgbench (scripts/install puts it there): its --help is the list."""
    assert PGBENCH.validate(PgbenchParams(options=["--progress-timestamp", "--random-seed=7"])) == []
    (said,) = PGBENCH.validate(PgbenchParams(options=["--progres-timestamp"]))
    assert "did you mean --progress-timestamp" in said and "`pgbench --help`" in said


def test_sysbench_checks_against_its_own_help_and_its_scripts():
    assert SYSBENCH.validate(SysbenchParams(options=["--percentile=99", "--skip_trx=on", "--range_size=10"])) == []
    (said,) = SYSBENCH.validate(SysbenchParams(options=["--rangesize=3"]))
    assert "did you mean --range_size" in said
    (said,) = SYSBENCH.validate(SysbenchParams(options=["--threads=3"]))
    assert "strata sets sysbench's --threads itself (`clients`)" in said


def test_ycsb_properties_are_bounded_and_those_strata_sets_are_refused():
    """YCSB prints no list of its properties to check a name against: the shape is bounded, YAML's numbers are
    read as YCSB reads them, and the properties strata sets itself (its measurements) are refused with the key."""
    from strata.workloads.ycsb.params import YcsbParams

    assert YcsbParams(properties={"readproportion": 0.5, "x.y": True}).properties == {
        "readproportion": "0.5",
        "x.y": "true",
    }
    for bad, said in (
        ({"measurementtype": "raw"}, "strata sets it itself"),
        ({"threadcount": "3"}, "(`threads`)"),
        ({"a b": "x"}, "a YCSB property is a name"),
        ({"a": "x" * 1001}, "at most 1000 characters"),
        ({f"p{i}": "1" for i in range(101)}, "at most 100 properties"),
    ):
        with pytest.raises(ValidationError, match=re.escape(said)):
            YcsbParams(properties=bad)
