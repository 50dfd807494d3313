"""The sysbench workload without MariaDB: its spec, every number bounded with the key that holds it, its
default names, a user's Lua script, the settings map checked against mariadbd's own list (captured), the
smoke scale, its servers' option file and script and ports, its clients' command lines phase by phase, the
server's own error line, the loads it refuses, and the runtimes it cannot run on (a VM; a redo log path a
runtime does not give)."""

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from strata.core.errors import SpecErrors
from strata.core.instances import Target
from strata.core.params import Limits, Load
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.experiment.plan import resolve
from strata.experiment.scale import smoke
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY
from strata.workloads.server import lifecycle, logpath, loopback, settings
from strata.workloads.sysbench import mariadb
from strata.workloads.sysbench.params import SysbenchParams

SYSBENCH = REGISTRY["sysbench"]
GiB, MiB = 1 << 30, 1 << 20
CONTAINER = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync")
MARIADB_DATA = Path(__file__).parents[1] / "data" / "mariadb" / "10.11"


def spec(tmp_path, workload=None, runtimes=("docker",), loads=None, **over):
    doc = {
        "name": "sb",
        "workdir": str(tmp_path / "work"),
        "devices": [{"type": "loop", "size": "4GiB"}],
        "filesystems": ["xfs"],
        "runtimes": list(runtimes),
        "paths": ["volume"] if "docker" in runtimes else ["bind"],
        "workloads": [{"sysbench": workload or {}}],
    }
    if loads is not None:
        doc["loads"] = loads
    doc.update(over)
    return parse_spec(doc, base_dir=tmp_path)


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("STRATA_LOOPBACK", raising=False)


@pytest.fixture
def catalog(monkeypatch):
    """mariadbd's own list of its settings, as captured from MariaDB 10.11.19."""
    known = mariadb.parse_catalog((MARIADB_DATA / "verbose-help.txt").read_text())
    cat = settings.Catalog("`mariadbd --verbose --help` (captured)", known)
    monkeypatch.setattr(mariadb, "catalog", lambda: cat)
    return cat


# ---- the spec -------------------------------------------------------------------------------


def test_defaults_and_names():
    p = SysbenchParams()
    assert (p.script, p.tables, p.table_size, p.clients, p.runtime, p.warmup, p.rate) == (
        "oltp_read_write",
        4,
        100_000,
        1,
        60,
        15,  # pgbench's warm-up
        None,
    )
    assert p.innodb() == {
        "innodb_buffer_pool_size": str(128 * MiB),
        "innodb_flush_log_at_trx_commit": "1",
        "innodb_flush_method": "O_DIRECT",
        "innodb_log_file_size": str(96 * MiB),
        "innodb_doublewrite": "ON",
    }
    assert p.name == "sysbench-oltp_read_write-4x100000-c1" and p.writes and p.redo_log is None
    q = SysbenchParams(
        script="oltp_point_select",
        clients=8,
        rate=500,
        warmup="10s",
        innodb_buffer_pool_size="1GiB",
        innodb_flush_log_at_trx_commit=2,
        innodb_doublewrite=False,
        settings={"innodb_io_capacity": 2000, "innodb_adaptive_flushing": False},
    )
    assert q.name == (
        "sysbench-oltp_point_select-4x100000-c8-r500-w10-bp_1024MiB-trx_2-dblwr_off"
        "-innodb_io_capacity_2000-innodb_adaptive_flushing_OFF"
    )
    assert not q.writes and q.settings == {"innodb_io_capacity": "2000", "innodb_adaptive_flushing": "OFF"}
    assert SysbenchParams(innodb_flush_method="fsync", innodb_log_file_size="1GiB").name.endswith(
        "-flush_fsync-log_1024MiB"
    )


def test_clients_and_rates_are_sweeps_and_none_is_flat_out(tmp_path):
    exp, wls = spec(tmp_path, {"clients": [1, 8, 32], "rate": [100, "none"]})
    assert [(w.clients, w.rate) for w in wls] == [(1, 100), (1, None), (8, 100), (8, None), (32, 100), (32, None)]


@pytest.mark.parametrize(
    "key,value,says",
    [
        ("tables", 0, "greater than or equal to 1"),
        ("tables", 10**6, "less than or equal to 10000"),
        ("table_size", 0, "greater than or equal to 1"),
        ("table_size", 10**12, "less than or equal to 1000000000"),
        ("clients", 5000, "less than or equal to 1000"),
        ("runtime", "2d", "less than or equal to 86400"),
        ("runtime", "1e999", "not a duration"),
        ("warmup", -1, "between 0 and"),
        ("rate", 0, "greater than or equal to 1"),
        ("rate", 10**12, "less than or equal to 10000000"),
        ("innodb_buffer_pool_size", "1MiB", "greater than or equal to 8388608"),
        ("innodb_buffer_pool_size", "2TiB", "less than or equal to"),
        ("innodb_buffer_pool_size", "lots", "not a size"),
        ("innodb_log_file_size", "1MiB", "greater than or equal to 4194304"),
        ("innodb_flush_log_at_trx_commit", 4, "0, 1, 2 or 3"),
        ("rand_type", "zipfian", "zipfian needs sysbench 1.1"),
        ("rand_type", "normal", "special', 'uniform', 'gaussian' or 'pareto'"),
        ("rand_spec_pct", 0, "greater than or equal to 1"),
        ("rand_pareto_h", 1, "less than 1"),
        ("innodb_flush_method", "O_SYNC", "'fsync', 'O_DSYNC'"),
        ("innodb_doublewrite", "sometimes", "valid boolean"),
        ("start_timeout", 1, "greater than or equal to 10"),
        ("script", "tpcc", "unknown sysbench script 'tpcc'"),
        ("redo_log", "device", "not a path for a server's log"),
        ("settings", [1, 2], "is a mapping of a setting's name to its value"),
        ("settings", {"bad name": 1}, "is not a setting's name"),
        ("settings", {"innodb_io_capacity": [1, 2]}, "one value per setting"),
        ("settings", {"x": "a\nb"}, "one line of 1 to 1000 characters"),
        ("settings", {f"s{i}": 1 for i in range(201)}, "at most 200"),
    ],
)
def test_every_number_and_word_is_bounded_and_named_by_its_key(tmp_path, key, value, says):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {key: value})
    (path, problem, fix) = next(err for err in e.value.errors if err[0].endswith(f".{key}"))
    assert path == f"workloads[0].sysbench.{key}" and says in problem, (path, problem)
    assert fix


def test_every_error_at_once(tmp_path):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {"tables": 0, "clients": 0, "bogus": 1})
    assert {p for p, _, _ in e.value.errors} >= {
        "workloads[0].sysbench.tables",
        "workloads[0].sysbench.clients",
        "workloads[0].sysbench.bogus",
    }


def test_a_users_lua_script_is_found_beside_the_spec_and_read_for_writes(tmp_path):
    (tmp_path / "reads.lua").write_text(
        'require("oltp_common")\n-- update nothing\nfunction event()\n  con:query("SELECT 1")\nend\n'
    )
    (tmp_path / "writes.lua").write_text(
        'require("oltp_common")\nfunction event()\n  con:query("UPDATE sbtest1 SET k=1")\nend\n'
    )
    _, (reads,) = spec(tmp_path, {"script": "file:reads.lua"})
    _, (writes,) = spec(tmp_path, {"script": "file:writes.lua"})
    assert reads.file == str((tmp_path / "reads.lua").resolve()) and not reads.writes  # a comment is no write
    assert writes.writes and writes.name == "sysbench-file-writes-4x100000-c1"
    (run,) = SYSBENCH.clients("run", writes, Load(), tmp_path, {})
    assert run.argv[-2:] == [writes.file, "run"]
    with pytest.raises(SpecErrors, match="no Lua script at"):
        spec(tmp_path, {"script": "file:missing.lua"})


def test_smoke_scale_keeps_the_sweeps_ends_and_cuts_the_data_and_the_time(tmp_path):
    raw = {"type": "sysbench", "tables": 16, "table_size": 10**6, "runtime": 300, "warmup": 30}
    raw |= {"clients": [1, 8, 32], "rate": [10, 20, 30]}
    small = SYSBENCH.smoke(raw)
    assert small == {
        **raw,
        "tables": 2,
        "table_size": 1000,
        "runtime": 5,
        "warmup": 0,
        "clients": [1, 32],
        "rate": [10, 30],
    }
    doc = {"name": "s", "workdir": str(tmp_path), "devices": ["loop"], "filesystems": ["xfs"], "runtimes": ["native"]}
    assert smoke({**doc, "paths": ["bind"], "workloads": [{"sysbench": raw}]})["workloads"][0]["sysbench"] == small


# ---- the settings map -----------------------------------------------------------------------


def test_the_settings_map_is_checked_against_mariadbds_own_list(catalog):
    assert len(catalog.known) > 600 and catalog.known["innodb_doublewrite"].kind == "bool"
    assert catalog.known["innodb_io_capacity"].kind == "int" and catalog.known["innodb_flush_method"].kind == "string"
    ok = SysbenchParams(settings={"innodb_io_capacity": "4k", "innodb_adaptive_flushing": False, "sync_binlog": 0})
    assert SYSBENCH.validate(ok) == []
    bad = SysbenchParams(
        settings={
            "innodb_io_capacty": 2000,
            "innodb_adaptive_flushing": "sometimes",
            "innodb_io_capacity_max": "lots",
            "port": 3306,
            "innodb_buffer_pool_size": "1G",
            "innodb_log_group_home_dir": "/x",
        }
    )
    problems = SYSBENCH.validate(bad)
    assert len(problems) == 6, problems
    assert "did you mean innodb_io_capacity" in problems[0] and "`mariadbd --verbose --help`" in problems[0]
    assert "is a boolean of MariaDB" in problems[1] and "is a number of MariaDB" in problems[2]
    assert "loopback block" in problems[3] and "workload's own key `innodb_buffer_pool_size`" in problems[4]
    assert "set `redo_log`" in problems[5]


def test_validate_reports_the_settings_maps_problems_before_anything_is_built(tmp_path, catalog):
    exp, wls = spec(tmp_path, {"settings": {"innodb_flush_neighbours": 0}})
    with pytest.raises(SpecErrors, match="did you mean innodb_flush_neighbors"):
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})


def test_without_mariadbds_list_only_what_strata_sets_is_refused(monkeypatch):
    monkeypatch.setattr(mariadb, "catalog", lambda: None)
    assert SYSBENCH.validate(SysbenchParams(settings={"anything_at_all": 1})) == []
    assert "loopback block" in SYSBENCH.validate(SysbenchParams(settings={"PORT": 1}))[0]


# ---- the servers ---------------------------------------------------------------------------


def test_a_servers_option_file_and_script(tmp_path):
    p = SysbenchParams(clients=20, innodb_doublewrite=False, settings={"innodb_io_capacity": 2000})
    argv = SYSBENCH.command(p, Load(), CONTAINER, 3)
    text = argv[2]
    assert (
        argv[:2] == ["sh", "-c"] and "mkdir -p /data/mariadb-3" in text and "chown mysql:mysql /data/mariadb-3" in text
    )
    cnf = mariadb.config(p, "/data/mariadb-3", "/data/mariadb-3", 3)
    assert f"cat >/strata-out/my.cnf <<'STRATA_EOF'\n{cnf.rstrip()}\nSTRATA_EOF" in text
    for line in ("user=mysql", "bind_address=127.0.0.2", "port=16387", "socket=mariadbd.sock", "max_connections=30"):
        assert line in cnf.splitlines()
    assert "innodb_doublewrite=OFF" in cnf and "innodb_io_capacity=2000" in cnf and "datadir=/data/mariadb-3" in cnf
    assert "/usr/bin/mariadb-install-db --defaults-file=/strata-out/my.cnf" in text and "--extra-file=" in text
    assert "CREATE DATABASE sbtest;" in text and "setpriv --reuid=mysql" in text
    assert "/usr/sbin/mariadbd --defaults-file=/strata-out/my.cnf >/strata-out/mariadbd.log" in text
    assert "kill -KILL $pid" in text and "/strata-sync/stop" in text
    assert subprocess.run(["sh", "-n", "-c", text], capture_output=True).returncode == 0


def test_the_redo_log_goes_where_the_runtime_gives_it_a_path_of_its_own():
    p = SysbenchParams(redo_log="volume")
    with_log = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync")
    object.__setattr__(with_log, "log_path", "/log")  # a runtime that gives a server's log a path sets it
    text = SYSBENCH.command(p, Load(), with_log, 0)[2]
    assert "innodb_log_group_home_dir=/log/mariadb-0" in text and "mkdir -p /data/mariadb-0 /log/mariadb-0" in text
    assert "innodb_log_group_home_dir=/data/mariadb-0" in SYSBENCH.command(p, Load(), CONTAINER, 0)[2]


def test_a_private_directory_is_named_with_the_fix_before_the_server_starts(tmp_path):
    """The script's own check, run with `test` standing in for the mysql user's view: the directory it cannot
    enter is named."""
    text = SYSBENCH.command(SysbenchParams(), Load(), CONTAINER, 0)[2]
    assert "cannot reach $d: it cannot enter ${stop:-a directory above it}" in text and "chmod o+x" in text


def test_each_run_has_a_block_of_ports_on_127_0_0_2(monkeypatch):
    assert [loopback.port(k) for k in (0, 63)] == [16384, 16447] and mariadb.ADDRESS == "127.0.0.2"
    monkeypatch.setenv("STRATA_LOOPBACK", "255")
    assert loopback.port(63) == 32767  # below Linux's ephemeral ports
    with pytest.raises(ValueError):
        loopback.port(64)
    monkeypatch.setenv("STRATA_LOOPBACK", "300")
    assert "STRATA_LOOPBACK" in (SYSBENCH.available({}) or "")


def test_ready_means_the_log_says_so_and_the_port_answers(monkeypatch):
    assert not mariadb.answers("[Note] InnoDB: Completed initialization of buffer pool", 0)
    monkeypatch.setattr(lifecycle.socket, "create_connection", lambda *a, **k: _Closing())
    assert mariadb.answers("[Note] mariadbd: ready for connections.\n", 0)


class _Closing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize(
    "log,says",
    [
        ("bad-enum.log", "Error while setting value 'bogus' to 'innodb-flush-method'"),
        ("unknown-variable.log", "unknown variable 'innodb-io-capacityy=5'"),
        ("page-size-changed.log", "uses page size 16384, but the innodb_page_size start-up parameter is 4096"),
    ],
)
def test_a_server_that_will_not_start_says_why_in_its_first_error_line(log, says):
    said = mariadb.first_error((MARIADB_DATA / log).read_text())
    assert says in said and "Aborting" not in said


def test_the_scripts_own_words_are_an_error_line():
    words = "error: the mysql user cannot reach /root/x/mariadb-0: it cannot enter /root; let mysql through\n"
    assert mariadb.first_error("the MariaDB server exited with code 1\n" + words).startswith("error: the mysql user")


def test_counters_are_read_or_say_why_not():
    rows = {s: str(i) for i, s in enumerate(mariadb.STATUS)} | {"data_set_bytes": "5603328", "page_bytes": "16384"}
    c = mariadb.parse_counters(rows)
    assert c["innodb_data_read"] == 0 and c["innodb_os_log_written"] == 4 and c["data_set_bytes"] == 5603328
    assert "page_bytes" in mariadb.parse_counters({**rows, "page_bytes": "NULL"})["error"]


# ---- the clients -----------------------------------------------------------------------------


def test_each_phase_runs_one_sysbench_per_server(tmp_path):
    p = SysbenchParams(clients=8, rate=400, warmup=5, runtime=30, tables=3, table_size=5000)
    assert SYSBENCH.phases(p) == ("load", "warmup") and SYSBENCH.phases(SysbenchParams(warmup=0)) == ("load",)
    load = SYSBENCH.clients("load", p, Load(containers=2), tmp_path, {})
    assert [c.out_dir.name for c in load] == ["server-0", "server-1"]
    assert load[1].argv[:4] == ["sh", "-c", 'exec sysbench "$@" >&2', "sysbench"]
    assert load[1].argv[4:] == [
        "--db-driver=mysql",
        "--mysql-host=127.0.0.2",
        "--mysql-port=16385",
        "--mysql-user=root",
        "--mysql-db=sbtest",
        "--tables=3",
        "--table-size=5000",
        "--threads=3",  # a table a thread at the most
        "oltp_read_write",
        "prepare",
    ]
    (run,) = SYSBENCH.clients("run", p, Load(), tmp_path, {})
    a = run.argv
    for opt in ("--threads=8", "--rate=400", "--time=30", "--report-interval=1", "--histogram=on"):
        assert opt in a
    assert a[-2:] == ["oltp_read_write", "run"]
    (warm,) = SYSBENCH.clients("warmup", p, Load(), tmp_path, {})
    assert "--time=5" in warm.argv and "--histogram=on" not in warm.argv
    # the draws: sysbench's own default said, on the warm-up and the run alike, never on the load
    assert {"--rand-type=special", "--rand-spec-pct=1", "--rand-spec-res=75"} <= set(a) & set(warm.argv)
    assert not any(x.startswith("--rand") for x in load[0].argv)


@pytest.mark.parametrize(
    "given, options, named",
    [
        ({"rand_type": "uniform"}, ["--rand-type=uniform"], "-rand_uniform"),
        (
            {"rand_type": "pareto", "rand_pareto_h": 0.1},
            ["--rand-type=pareto", "--rand-pareto-h=0.1"],
            "-rand_pareto_0.1",
        ),
        (
            {"rand_spec_res": 50},
            ["--rand-type=special", "--rand-spec-pct=1", "--rand-spec-res=50"],
            "-rand_special_50-1",
        ),
        ({}, ["--rand-type=special", "--rand-spec-pct=1", "--rand-spec-res=75"], None),
    ],
)
def test_the_draws_are_sysbenchs_options_and_a_non_default_is_in_the_name(given, options, named):
    p = SysbenchParams(**given)
    assert p.rand() == options
    assert (named in p.name) if named else "-rand" not in p.name


# ---- loads and runtimes ------------------------------------------------------------------------


def test_a_memory_limit_below_the_buffer_pool_is_a_plan_error_naming_the_load(tmp_path):
    exp, wls = spec(tmp_path, {"innodb_buffer_pool_size": "256MiB"}, loads=[{"limits": {"memory": "300MiB"}}])
    with pytest.raises(SpecErrors) as e:
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})
    assert "loads[0].limits.memory" in str(e.value) and "at least 384 MiB" in str(e.value)


def test_more_servers_than_the_runs_ports_is_refused():
    problems = SYSBENCH.problems(SysbenchParams(), Load(containers=65))
    assert problems and problems[0][0] == "containers" and "at most 64" in problems[0][2]
    assert SYSBENCH.problems(SysbenchParams(), Load(containers=64, limits=Limits(memory=GiB))) == []


def test_a_vm_is_impossible_with_the_reason(tmp_path):
    exp, wls = spec(tmp_path, runtimes=("vm",), paths=["bind"])
    trials, skipped = expand(exp, wls)
    assert trials == [] and skipped[0].reason == SYSBENCH.vm_reason
    assert SYSBENCH.impossible(SysbenchParams(), RUNTIMES["docker"]) is None


def test_a_redo_log_path_a_runtime_does_not_give_is_impossible_with_the_reason(tmp_path):
    exp, wls = spec(tmp_path, {"redo_log": ["none", "volume"]}, runtimes=("native",))  # natively: bind only
    trials, skipped = expand(exp, wls)
    assert [t.workload.redo_log for t in trials] == [None]
    assert "gives the redo log no volume path of its own (only bind)" in skipped[0].reason
    giving = SimpleNamespace(name="docker", isolation="container", log_paths=("volume", "bind"))
    assert SYSBENCH.impossible(SysbenchParams(redo_log="volume"), giving) is None
    assert "only volume, bind" in SYSBENCH.impossible(SysbenchParams(redo_log="tmpfs"), giving)
    assert logpath.name("None") is None and SYSBENCH.log_path(SysbenchParams(redo_log="bind")) == "bind"


def test_it_runs_natively_in_containers_and_in_pods(tmp_path):
    exp, wls = spec(
        tmp_path,
        runtimes=("native", "docker:overlay2", "podman", "kubernetes"),
        paths=["bind", "volume", "layer", "hostpath"],
    )
    trials, _ = expand(exp, wls)
    assert {(t.runtime.type, t.path) for t in trials} >= {
        ("native", "bind"),
        ("docker", "volume"),
        ("docker", "layer"),
        ("docker", "bind"),
        ("podman", "volume"),
        ("kubernetes", "hostpath"),
    }


def test_the_image_and_the_agents_image_hold_mariadb_and_sysbench():
    assert SYSBENCH.image(SysbenchParams()).packages == ("mariadb-server",)
    assert SYSBENCH.agent_image().packages == ("mariadb-server", "mariadb-client", "sysbench")
    assert SYSBENCH.network(SysbenchParams()) == "host"


def test_a_data_set_that_does_not_fit_its_device_is_a_plan_error(tmp_path):
    exp, wls = spec(tmp_path, {"tables": 100, "table_size": 10**6}, devices=[{"type": "loop", "size": "2GiB"}])
    with pytest.raises(SpecErrors, match="do not fit"):
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})


def test_the_spec_reference_documents_every_key():
    text = (Path(__file__).parents[2] / "docs" / "spec-reference.md").read_text()
    section = text.split("## workloads: `sysbench`", 1)[1]
    for key in SysbenchParams.model_fields:
        assert f"| `{key}` |" in section, key
