"""The pgbench workload without PostgreSQL: its spec, every number bounded with the key that holds it,
its default names, a user's script file, the smoke scale, its servers' script and ports, its clients'
command lines phase by phase, the loads it refuses, and the runtimes it cannot run on."""

import subprocess
from pathlib import Path

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
from strata.workloads.pgbench import postgres
from strata.workloads.pgbench.params import PgbenchParams
from strata.workloads.server import lifecycle, loopback

PGBENCH = REGISTRY["pgbench"]
GiB, MiB = 1 << 30, 1 << 20
CONTAINER = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync")


def spec(tmp_path, workload=None, runtimes=("docker",), loads=None, **over):
    doc = {
        "name": "pg",
        "workdir": str(tmp_path / "work"),
        "devices": [{"type": "loop", "size": "4GiB"}],
        "filesystems": ["xfs"],
        "runtimes": list(runtimes),
        "paths": ["volume"] if "docker" in runtimes else ["bind"],
        "workloads": [{"pgbench": workload or {}}],
    }
    if loads is not None:
        doc["loads"] = loads
    doc.update(over)
    return parse_spec(doc, base_dir=tmp_path)


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("STRATA_LOOPBACK", raising=False)


# ---- the spec -------------------------------------------------------------------------------


def test_defaults_and_names():
    p = PgbenchParams()
    assert (p.script, p.scale, p.clients, p.threads, p.runtime, p.rate) == ("tpcb-like", 10, 1, "auto", 60, None)
    # two timed checkpoints in the run, half an interval from either end (params.py)
    assert (p.warmup, p.checkpoint_timeout, p.max_wal_size, p.protocol, p.vacuum) == (15, 30, GiB, "simple", True)
    assert (p.synchronous_commit, p.fsync, p.shared_buffers, p.wal_level, p.full_page_writes) == (
        "on",
        True,
        128 * MiB,
        "replica",
        True,
    )
    assert p.name == "pgbench-tpcb-like-s10-c1" and p.writes
    # threads: auto, a thread per 4 clients (pgbench's docs: a thread manages 2 to 10), never more than clients
    assert [PgbenchParams(clients=c).effective_threads for c in (1, 4, 5, 8, 32)] == [1, 1, 2, 2, 8]
    assert (
        PgbenchParams(clients=2, threads=8).effective_threads == 2 and PgbenchParams(threads="AUTO").threads == "auto"
    )
    q = PgbenchParams(
        script="select-only", clients=8, threads=2, rate=500, fsync=False, shared_buffers="1GiB", wal_level="minimal"
    )
    assert q.name == "pgbench-select-only-s10-c8-j2-r500-fsync_off-sb_1024MiB-wal_minimal" and not q.writes
    assert PgbenchParams(synchronous_commit="off", full_page_writes=False, warmup="1m").name.endswith(
        "-w60-sc_off-fpw_off"
    )


def test_clients_threads_and_rates_are_sweeps_and_none_is_flat_out(tmp_path):
    exp, wls = spec(tmp_path, {"clients": [1, 8, 32], "threads": 2, "rate": [100, "none"]})
    assert [(w.clients, w.rate) for w in wls] == [(1, 100), (1, None), (8, 100), (8, None), (32, 100), (32, None)]
    assert [w.effective_threads for w in wls[::2]] == [1, 2, 2]  # at most one thread a client


@pytest.mark.parametrize(
    "key,value,says",
    [
        ("scale", 0, "greater than or equal to 1"),
        ("scale", 10**9, "less than or equal to 100000"),
        ("clients", 5000, "less than or equal to 1000"),
        ("threads", 0, "from 1 to 1000, or auto"),
        ("threads", "many", "from 1 to 1000, or auto"),
        ("runtime", "2d", "less than or equal to 86400"),
        ("runtime", "1e999", "not a duration"),
        ("warmup", -1, "between 0 and"),
        ("rate", 0, "greater than or equal to 1"),
        ("rate", 10**12, "less than or equal to 10000000"),
        ("max_tries", 0, "greater than or equal to 1"),
        ("shared_buffers", "64k", "greater than or equal to 131072"),
        ("shared_buffers", "2TiB", "less than or equal to"),
        ("shared_buffers", "lots", "not a size"),
        ("start_timeout", 1, "greater than or equal to 10"),
        ("synchronous_commit", "always", "'on', 'off', 'local', 'remote_write' or 'remote_apply'"),
        ("wal_level", "archive", "'minimal', 'replica' or 'logical'"),
        ("script", "tpcc", "unknown pgbench script 'tpcc'"),
    ],
)
def test_every_number_and_word_is_bounded_and_named_by_its_key(tmp_path, key, value, says):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {key: value})
    (path, problem, fix) = next(err for err in e.value.errors if err[0].endswith(f".{key}"))
    assert path == f"workloads[0].pgbench.{key}" and says in problem, (path, problem)
    assert fix


def test_every_error_at_once(tmp_path):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {"scale": 0, "clients": 0, "bogus": 1})
    assert {p for p, _, _ in e.value.errors} >= {
        "workloads[0].pgbench.scale",
        "workloads[0].pgbench.clients",
        "workloads[0].pgbench.bogus",
    }


def test_a_users_script_file_is_found_beside_the_spec_and_read_for_writes(tmp_path):
    (tmp_path / "reads.sql").write_text("-- update nothing here\n\\set aid random(1, 100000 * :scale)\nSELECT 1;\n")
    (tmp_path / "writes.sql").write_text("INSERT INTO pgbench_history VALUES (1, 1, 1, 0, now());\n")
    _, (reads,) = spec(tmp_path, {"script": "file:reads.sql"})
    _, (writes,) = spec(tmp_path, {"script": "file:writes.sql"})
    assert reads.file == str((tmp_path / "reads.sql").resolve()) and not reads.writes  # a comment is no write
    assert writes.writes and writes.name == "pgbench-file-writes.sql-s10-c1"
    argv = PGBENCH._argv("run", writes, 0)
    assert argv[argv.index("-f") + 1] == writes.file and argv[argv.index("-s") + 1] == "10"
    with pytest.raises(SpecErrors, match="no pgbench script at"):
        spec(tmp_path, {"script": "file:missing.sql"})


def test_smoke_scale_keeps_the_sweeps_ends_and_cuts_the_data_and_the_time(tmp_path):
    raw = {"type": "pgbench", "scale": 100, "runtime": 300, "warmup": 30, "clients": [1, 8, 32], "rate": [10, 20, 30]}
    small = PGBENCH.smoke(raw)
    assert small == {**raw, "scale": 1, "runtime": 5, "warmup": 0, "clients": [1, 32], "rate": [10, 30]}
    doc = {"name": "s", "workdir": str(tmp_path), "devices": ["loop"], "filesystems": ["xfs"], "runtimes": ["native"]}
    assert smoke({**doc, "paths": ["bind"], "workloads": [{"pgbench": raw}]})["workloads"][0]["pgbench"] == small


# ---- the servers ---------------------------------------------------------------------------


def test_a_servers_script_runs_initdb_and_postgres_as_postgres_on_the_path_under_test():
    p = PgbenchParams(fsync=False, shared_buffers="256MiB", wal_level="minimal", clients=20)
    argv = PGBENCH.command(p, Load(), CONTAINER, 3)
    text = argv[2]
    assert argv[:2] == ["sh", "-c"] and "mkdir -p /data/pg-3" in text and "chown postgres:postgres /data/pg-3" in text
    assert "setpriv --reuid=postgres --regid=postgres --init-groups /usr/lib/postgresql/15/bin/initdb" in text
    assert "-c port=16387 -c listen_addresses=127.0.0.1 -c unix_socket_directories=" in text
    for setting in ("fsync=off", "shared_buffers=262144kB", "wal_level=minimal", "max_wal_senders=0"):
        assert f"-c {setting}" in text
    assert "max_connections=30" in text and ">/strata-out/postgres.log" in text
    assert "kill -QUIT $pid" in text and "/strata-sync/stop" in text
    native = Target("dir", "/mnt/strata-data", "/res/inst-0", host_tools=True, sync_dir="/res/sync")
    assert "/mnt/strata-data/pg-0" in PGBENCH.command(PgbenchParams(), Load(), native, 0)[2]
    assert "max_wal_senders" not in PGBENCH.command(PgbenchParams(), Load(), native, 0)[2]


def test_the_servers_script_is_valid_shell():
    text = PGBENCH.command(PgbenchParams(), Load(), CONTAINER, 0)[2]
    assert subprocess.run(["sh", "-n", "-c", text], capture_output=True).returncode == 0


def test_each_run_has_a_block_of_ports_on_127_0_0_1(monkeypatch):
    assert [loopback.port(k) for k in (0, 63)] == [16384, 16447]
    monkeypatch.setenv("STRATA_LOOPBACK", "255")
    assert loopback.port(63) == 32767  # below Linux's ephemeral ports
    with pytest.raises(ValueError):
        loopback.port(64)
    monkeypatch.setenv("STRATA_LOOPBACK", "300")
    assert "STRATA_LOOPBACK" in (PGBENCH.available({}) or "")


def test_ready_means_the_log_says_so_and_the_port_answers(monkeypatch):
    assert not postgres.answers("LOG:  starting PostgreSQL 15.18", 0)
    monkeypatch.setattr(lifecycle.socket, "create_connection", lambda *a, **k: _Closing())
    assert postgres.answers(f"LOG:  {postgres.READY_LINE}\n", 0)


class _Closing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_counters_are_read_or_say_why_not():
    said = "19 9 38975 4 3 12 340 7 1 27012.5 3 4100 12 88 0 9000 39517543\n"
    assert postgres.parse_counters(said) == dict(
        zip(postgres.COUNTERS, (19, 9, 38975, 4, 3, 12, 340, 7, 1, 27012.5, 3.0, 4100, 12, 88, 0, 9000, 39517543))
    )
    assert "unexpected" in postgres.parse_counters("ERROR")["error"]
    assert "unexpected" in postgres.parse_counters(said.replace("27012.5", "-1"))["error"]
    assert "unexpected" in postgres.parse_counters(said.replace(" 340 ", " 3.5 "))["error"]  # a count is whole


# ---- the clients -----------------------------------------------------------------------------


def test_each_phase_runs_one_pgbench_per_server(tmp_path):
    p = PgbenchParams(clients=8, threads=2, rate=400, warmup=5, runtime=30, max_tries=3, scale=20)
    assert PGBENCH.phases(p) == ("load", "warmup") and PGBENCH.phases(PgbenchParams(warmup=0)) == ("load",)
    load = PGBENCH.clients("load", p, Load(containers=2), tmp_path, {})
    assert [c.out_dir.name for c in load] == ["server-0", "server-1"]
    assert load[1].argv[1:] == ["-h", "127.0.0.1", "-p", "16385", "-U", "postgres", "-i", "-q", "-s", "20", "postgres"]
    (run,) = PGBENCH.clients("run", p, Load(), tmp_path, {})
    a = run.argv
    assert a[0] == "/usr/lib/postgresql/15/bin/pgbench" and a[-1] == "postgres"
    for opt, value in (("-c", "8"), ("-j", "2"), ("-b", "tpcb-like"), ("--rate", "400"), ("--max-tries", "3")):
        assert a[a.index(opt) + 1] == value
    assert a[a.index("-T") + 1] == "30" and "--progress" in a and "--log" in a and a[a.index("-M") + 1] == "simple"
    (warm,) = PGBENCH.clients("warmup", p, Load(), tmp_path, {})
    assert warm.argv[warm.argv.index("-T") + 1] == "5" and "--log" not in warm.argv
    # pgbench's VACUUM runs once, before the first transactions after the load: the warm-up's, else the run's
    assert "-n" not in warm.argv and "-n" in a
    (alone,) = PGBENCH.clients("run", p.model_copy(update={"warmup": 0}), Load(), tmp_path, {})
    assert "-n" not in alone.argv
    (asked,) = PGBENCH.clients("warmup", p.model_copy(update={"vacuum": False}), Load(), tmp_path, {})
    assert "-n" in asked.argv


# ---- loads and runtimes ------------------------------------------------------------------------


def test_a_memory_limit_below_the_shared_buffers_is_a_plan_error_naming_the_load(tmp_path):
    exp, wls = spec(tmp_path, {"shared_buffers": "256MiB"}, loads=[{"limits": {"memory": "200MiB"}}])
    with pytest.raises(SpecErrors) as e:
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})
    assert "loads[0].limits.memory" in str(e.value) and "at least 320 MiB" in str(e.value)
    exp, wls = spec(tmp_path, {}, loads=[{"containers": 2, "limits": {"preset": "MEM", "share": 64}}])
    with pytest.raises(SpecErrors, match="preset MEM"):
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})  # 128 MiB each: below 192 MiB


def test_more_servers_than_the_runs_ports_is_refused():
    problems = PGBENCH.problems(PgbenchParams(), Load(containers=65))
    assert problems and problems[0][0] == "containers" and "at most 64" in problems[0][2]
    assert PGBENCH.problems(PgbenchParams(), Load(containers=64, limits=Limits(memory=GiB))) == []


def test_a_vm_is_impossible_with_the_reason(tmp_path):
    exp, wls = spec(tmp_path, runtimes=("vm",), paths=["bind"])
    trials, skipped = expand(exp, wls)
    assert trials == [] and skipped[0].reason == PGBENCH.vm_reason
    assert PGBENCH.impossible(PgbenchParams(), RUNTIMES["docker"]) is None


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


def test_the_image_and_the_agents_image_hold_postgresql_15():
    assert PGBENCH.image(PgbenchParams()).packages == ("postgresql-15",)
    assert PGBENCH.agent_image().packages == ("postgresql-15",) and PGBENCH.network(PgbenchParams()) == "host"


def test_a_data_set_that_does_not_fit_its_device_is_a_plan_error(tmp_path):
    exp, wls = spec(tmp_path, {"scale": 1000}, devices=[{"type": "loop", "size": "2GiB"}])
    with pytest.raises(SpecErrors, match="do not fit"):
        resolve(exp, wls, {"cpus": 2, "memory_bytes": 8 * GiB})


def test_the_spec_reference_documents_every_key():
    text = (Path(__file__).parents[2] / "docs" / "spec-reference.md").read_text()
    section = text.split("## workloads: `pgbench`", 1)[1]
    for key in PgbenchParams.model_fields:
        assert f"| `{key}` |" in section, key
