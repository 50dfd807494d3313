"""pgbench's keys of issue 43, without PostgreSQL: the settings map (bounded, checked against the server's own
list, those strata sets refused), the checkpoints' keys, the WAL on a path of its own, weighted scripts,
the protocol, the latency limit, the init options and the VACUUM before the run; each error with its key
and its fix. The server's list is a fake here (`postgres --describe-config` is read in the integration
tests)."""

import random
from collections import Counter
from pathlib import Path

import pytest

from strata.core import access
from strata.core.errors import SpecErrors
from strata.core.instances import Target
from strata.core.params import Load
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.experiment.plan import resolve
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY
from strata.workloads.pgbench import postgres
from strata.workloads.pgbench.params import BUILTIN, PgbenchParams, entries
from strata.workloads.server import settings
from strata.workloads.server.settings import Catalog, Known

PGBENCH = REGISTRY["pgbench"]
GiB, MiB = 1 << 30, 1 << 20
HOST = {"cpus": 2, "memory_bytes": 8 * GiB}
CATALOG = Catalog(
    "`postgres --describe-config` (PostgreSQL 15, a fake)",
    {
        "wal_compression": Known("wal_compression", "enum"),
        "huge_pages": Known("huge_pages", "enum"),
        "backend_flush_after": Known("backend_flush_after", "int"),
        "checkpoint_completion_target": Known("checkpoint_completion_target", "real"),
        "wal_log_hints": Known("wal_log_hints", "bool"),
        "wal_sync_method": Known("wal_sync_method", "enum"),
    },
)
CONTAINER = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync")


@pytest.fixture(autouse=True)
def fake_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("STRATA_LOOPBACK", raising=False)
    monkeypatch.setattr(postgres, "catalog", lambda: CATALOG)


def spec(tmp_path, workload=None, runtimes=("docker",), paths=("volume",), **over):
    doc = {
        "name": "pg",
        "workdir": "/var/tmp/strata-unit-pg",
        "devices": [{"type": "loop", "size": "4GiB"}],
        "filesystems": ["xfs"],
        "runtimes": list(runtimes),
        "paths": list(paths),
        "workloads": [{"pgbench": workload or {}}],
    }
    doc.update(over)
    return parse_spec(doc, base_dir=tmp_path)


def errors_of(tmp_path, workload, **over):
    with pytest.raises(SpecErrors) as e:
        exp, wls = spec(tmp_path, workload, **over)
        resolve(exp, wls, HOST)
    return e.value.errors


# ---- the settings map ---------------------------------------------------------------------------


def test_any_setting_goes_to_the_servers_command_line_after_the_keys(tmp_path):
    _, (w,) = spec(tmp_path, {"settings": {"wal_compression": "lz4", "huge_pages": False, "backend_flush_after": 0}})
    assert w.settings == {"wal_compression": "lz4", "huge_pages": "off", "backend_flush_after": "0"}  # YAML's off
    text = PGBENCH.command(w, Load(), CONTAINER, 0)[2]
    for setting in ("wal_compression=lz4", "huge_pages=off", "backend_flush_after=0", "checkpoint_timeout=30s"):
        assert f"-c {setting}" in text
    assert w.name == "pgbench-tpcb-like-s10-c1-wal_compression_lz4-huge_pages_off-backend_flush_after_0"
    assert PGBENCH.validate(w) == []


def test_an_unknown_setting_is_a_plan_error_naming_it_the_closest_names_and_the_list(tmp_path):
    (err,) = [e for e in errors_of(tmp_path, {"settings": {"wal_compresion": "on"}}) if "settings" in e[1]]
    where, problem, fix = err
    assert where.startswith("workloads (pgbench") and "`settings.wal_compresion`" in problem
    assert "did you mean wal_compression?" in problem and "postgres --describe-config" in problem and fix
    # an extension's own setting is the server's to take
    exp, wls = spec(tmp_path, {"settings": {"auto_explain.log_min_duration": "10ms"}})
    resolve(exp, wls, HOST)


@pytest.mark.parametrize(
    "name,value,says",
    [
        ("port", 5432, "strata gives each server a port"),
        ("fsync", "off", "set it with the workload's key `fsync`"),
        ("max_wal_size", "4GB", "set it with the workload's key `max_wal_size`"),
        ("logging_collector", "on", "strata reads the server's log on its stderr"),
        ("wal_log_hints", "maybe", "a boolean of PostgreSQL server: on or off"),
        ("backend_flush_after", "lots", "a number of PostgreSQL server"),
    ],
)
def test_settings_strata_sets_or_of_the_wrong_type_are_refused_with_the_way(tmp_path, name, value, says):
    problems = [p for _, p, _ in errors_of(tmp_path, {"settings": {name: value}})]
    assert any(f"`settings.{name}`" in p and says in p for p in problems), problems


def test_the_settings_of_a_number_with_a_unit_pass():
    s = {"backend_flush_after": "256kB", "checkpoint_completion_target": "0.5", "wal_log_hints": "yes"}
    assert settings.problems(s, CATALOG, postgres.MANAGED, "PostgreSQL") == []
    assert settings.problems({"nope": "1"}, None, postgres.MANAGED, "PostgreSQL") == []  # no list: the server judges


@pytest.mark.parametrize(
    "value,says",
    [
        ("wal_compression=lz4", "a mapping of a setting's name to its value"),
        ({"wal compression": "lz4"}, "is not a setting's name"),
        ({"wal_compression": ["lz4", "off"]}, "one value per setting"),
        ({"wal_compression": {"a": 1}}, "one value per setting"),
        ({"wal_compression": "lz4\n-c fsync=off"}, "one line of at most 1000 characters"),
        ({f"s{i}": 1 for i in range(201)}, "at most 200"),
    ],
)
def test_the_map_is_bounded_and_one_line_a_value(tmp_path, value, says):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {"settings": value})
    (path, problem, fix) = next(err for err in e.value.errors if err[0].endswith(".settings"))
    assert path == "workloads[0].pgbench.settings" and says in problem and fix


# ---- checkpoints -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key,value,says",
    [
        ("checkpoint_timeout", 10, "greater than or equal to 30"),
        ("checkpoint_timeout", "2d", "less than or equal to 86400"),
        ("max_wal_size", "16MiB", "greater than or equal to 33554432"),
        ("max_wal_size", "2TiB", "less than or equal to"),
        ("latency_limit", 0, "greater than 0"),
        ("fillfactor", 5, "greater than or equal to 10"),
        ("partitions", -1, "greater than or equal to 0"),
        ("protocol", "binary", "'simple', 'extended' or 'prepared'"),
        ("init_steps", "dtx", "pgbench -I takes up to 20 of"),
        ("wal_path", "device", "is not a path for a server's log"),
        ("wal_path", "nvme", "is not a path for a server's log"),
        ("script", "tpcb-like@0, select-only@1", "the weight of tpcb-like is 0"),
        ("script", "tpcb-like@9, tpcc@1", "unknown pgbench script 'tpcc@1'"),
    ],
)
def test_each_new_key_is_bounded_and_named_by_its_key(tmp_path, key, value, says):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {key: value})
    found = [(p, problem) for p, problem, _ in e.value.errors if says in problem]
    assert found and found[0][0] in (f"workloads[0].pgbench.{key}", "workloads[0].pgbench"), e.value.errors


def test_the_checkpoint_keys_reach_the_server_and_the_wal_its_data_bytes(tmp_path):
    _, (w,) = spec(tmp_path, {"checkpoint_timeout": "5m", "max_wal_size": "4GiB"})
    text = PGBENCH.command(w, Load(), CONTAINER, 0)[2]
    assert "-c checkpoint_timeout=300s" in text and "-c max_wal_size=4096MB" in text
    assert w.name.endswith("-cpt_300s-maxwal_4096MiB")
    assert PGBENCH.data_bytes(w, Load()) - PGBENCH.data_bytes(PgbenchParams(), Load()) == 3 * GiB


# ---- the WAL on a path of its own ---------------------------------------------------------------------


def test_the_wal_on_its_own_path_goes_where_the_runtime_mounts_it(tmp_path):
    _, (w,) = spec(tmp_path, {"wal_path": "bind"})
    assert PGBENCH.log_path(w) == "bind" and PGBENCH.log_path(PgbenchParams()) is None
    target = Target("dir", "/data", "/strata-out", host_tools=False, sync_dir="/strata-sync", log_path="/log")
    text = PGBENCH.command(w, Load(), target, 2)[2]
    assert "mkdir -p /data/pg-2 /log/pg-2" in text and "chown postgres:postgres /data/pg-2 /log/pg-2" in text
    assert "--waldir /log/pg-2" in text and "readlink -f /data/pg-2/pg_wal" in text
    assert "--waldir" not in PGBENCH.command(PgbenchParams(), Load(), CONTAINER, 0)[2]
    assert w.name.endswith("-walonbind")


def test_a_runtime_without_that_path_for_the_wal_is_skipped_with_the_reason(tmp_path):
    exp, wls = spec(
        tmp_path,
        {"wal_path": ["volume", "bind", "tmpfs", "layer", "hostpath"]},
        runtimes=("native", "docker:overlay2", "kubernetes"),
        paths=("bind", "hostpath"),
    )
    trials, skipped = expand(exp, wls)
    ran = {(t.runtime.type, t.workload.wal_path) for t in trials}
    assert ran == {
        ("native", "bind"),
        *(("docker", p) for p in ("volume", "bind", "tmpfs", "layer")),
        ("kubernetes", "hostpath"),
    }
    reasons = {s.reason for s in skipped}
    assert "the native runtime gives the WAL no volume path of its own (only bind)" in reasons
    assert any(
        "kubernetes runtime gives the WAL no volume path of its own (only hostpath, local)" in r for r in reasons
    )
    assert PGBENCH.impossible(PgbenchParams(wal_path="volume"), RUNTIMES["podman"]) is None


# ---- scripts and the run's options ------------------------------------------------------------------


def test_weighted_scripts_run_as_pgbench_weighs_them(tmp_path):
    (tmp_path / "mine.sql").write_text("UPDATE pgbench_accounts SET abalance = 0 WHERE aid = 1;\n")
    _, (w,) = spec(tmp_path, {"script": "select-only@9, file:mine.sql"})
    assert entries("select-only@9, file:mine.sql") == [("select-only", 9), ("file:mine.sql", 1)]
    assert w.files == [str((tmp_path / "mine.sql").resolve())] and w.file == w.files[0] and w.writes
    argv = PGBENCH._argv("run", w, 0)
    assert argv[argv.index("-b") + 1] == "select-only@9" and argv[argv.index("-f") + 1] == w.files[0] + "@1"
    assert w.name.startswith("pgbench-select-only@9+file-mine.sql@1-s10")
    _, (r,) = spec(tmp_path, {"script": "select-only@1, select-only@3"})
    assert not r.writes and r.builtin is None


def test_the_protocol_the_latency_limit_and_the_init_options_reach_pgbench(tmp_path):
    _, (w,) = spec(
        tmp_path,
        {
            "protocol": "prepared",
            "latency_limit": 50,
            "rate": 100,
            "init_steps": "dtGvp",
            "foreign_keys": True,
            "fillfactor": 90,
            "partitions": 4,
            "partition_method": "hash",
            "unlogged_tables": True,
        },
    )
    run = PGBENCH._argv("run", w, 0)
    assert run[run.index("-M") + 1] == "prepared" and run[run.index("--latency-limit") + 1] == "50"
    load = PGBENCH._argv("load", w, 0)
    i = load.index("-i")
    assert load[i : i + 4] == ["-i", "-q", "-s", "10"] and load[load.index("-I") + 1] == "dtGvp"
    assert "--foreign-keys" in load and load[load.index("-F") + 1] == "90" and "--unlogged-tables" in load
    assert load[load.index("--partitions") + 1] == "4" and load[load.index("--partition-method") + 1] == "hash"
    assert w.name == "pgbench-tpcb-like-s10-c1-r100-Mprepared-ll50-IdtGvp-fkon-F90-parts4hash-unloggedon"
    # the resolved trial as stored (every key) validates again, as an agent across hosts validates it
    assert PgbenchParams.model_validate(w.model_dump()) == w
    assert PgbenchParams.model_validate(PgbenchParams().model_dump()) == PgbenchParams()


def test_no_vacuum_before_the_run_only_when_asked(tmp_path):
    _, (w,) = spec(tmp_path, {"vacuum": False, "warmup": 0})
    assert "-n" in PGBENCH._argv("run", w, 0) and w.name.endswith("-w0-novacuum")


# ---- a workdir the postgres user cannot reach ----------------------------------------------------------


def test_a_directory_that_keeps_the_user_out_is_found_from_the_top(tmp_path, monkeypatch):
    monkeypatch.setattr(access, "umask", lambda: 0o022)
    private = tmp_path / "private"
    (private / "wd").mkdir(parents=True)
    private.chmod(0o700)
    blocked = access.blocking(private / "wd" / "not-yet", "nobody")
    assert blocked is not None and blocked.path in (private, *private.parents) and "mode 07" in blocked.why
    assert blocked.path == next(p for p in [*reversed(private.parents), private] if not p.stat().st_mode & 0o001)
    private.chmod(0o755)
    open_to_all = Path("/")
    assert access.blocking(open_to_all, "nobody") is None and access.blocking(private, "root") is None
    assert access.blocking(private, "no-such-user-here") is None
    monkeypatch.setattr(access, "umask", lambda: 0o077)
    said = access.blocking(Path("/"), "nobody")
    assert said is not None and said.umask and "umask 0077" in said.why


def test_a_native_workdir_the_postgres_user_cannot_reach_is_refused_before_any_trial(tmp_path, monkeypatch):
    """mktemp -d makes a 0700 directory: initdb would fail in every native trial (issue 43)."""
    monkeypatch.setattr(access, "umask", lambda: 0o022)
    private = tmp_path / "tmp.Xy"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    where = str(private / "wd")
    errors = errors_of(tmp_path, {}, runtimes=("native", "docker"), paths=("bind",), workdir=where)
    (err,) = [e for e in errors if e[0] == "workdir"]
    assert (
        "the postgres user, which the pgbench workload's servers run as on the native runtime, cannot enter" in err[1]
    )
    assert "mode 0700, owner root" in err[1] or "mode 07" in err[1]
    assert "strata does not loosen your directories" in err[2] and "/var/tmp/strata" in err[2]
    exp, wls = spec(tmp_path, {}, runtimes=("docker",), paths=("bind",), workdir=where)
    resolve(exp, wls, HOST)  # in containers the server sees its own paths


def test_every_script_file_of_a_weighted_mix_travels_with_a_part_across_hosts(tmp_path):
    """The agent of another host gets each file the resolved trial names, in a list too (hosts/agent.py)."""
    from strata.hosts.agent import shipped_files, unship

    for name in ("a.sql", "b.sql"):
        (tmp_path / name).write_text("SELECT 1;\n")
    _, (w,) = spec(tmp_path, {"script": "file:a.sql@3, file:b.sql@1"})
    files = shipped_files(w)
    assert sorted(files) == sorted(w.files) and w.file in files
    moved = unship({"workload": w.model_dump()}, files, tmp_path / "agent")["workload"]
    assert all(
        Path(f).is_relative_to(tmp_path / "agent") and Path(f).read_text() == "SELECT 1;\n" for f in moved["files"]
    )
    assert PgbenchParams.model_validate(moved).files == moved["files"] != w.files


# ---- fuzz: a user's `script:` and its files (docs/style.md, item 12) -------------------------------------------

FOUND = ["file:a.sql", "file:sub/b.sql", "file:é.sql", " file:a.sql\n"]  # written beside the spec (mostly)
ODD_PATHS = [
    "file:a,b.sql",
    "file:big.sql",
    "file:../x.sql",
    "file:no such.sql",
    "file:dir",
    "file:" + "d" * 300,
    "file:" + "x/" * 2000 + "y.sql",
    "file:a\x00b.sql",
    "file:\u202e.sql",
]
SCRIPT_NAMES = [*BUILTIN, *FOUND, *ODD_PATHS, "file:", "tpcb", "TPCB-LIKE", "🙂", ""]
WEIGHTS = ["", "@1", "@9", "@1000", "@0", "@1001", "@9999", "@99999999999999999999", "@-1", "@1.5", "@", "@@2", "@٣"]
SCRIPT_FILES = {
    "a.sql": b"SELECT 1;\n",
    "sub/b.sql": b"UPDATE pgbench_accounts SET abalance = 0 WHERE aid = 1;\n",
    "é.sql": "-- update nothing\n\\set aid random(1, 100000 * :scale)\nSELECT 1;\n".encode(),
    "a,b.sql": b"\xff\xfe\x00 INSERT",  # a comma splits `file:a,b.sql` in two: never found
}


def _script(rng: random.Random) -> str:
    """Half of them scripts of pgbench's syntax (built-in or file:, some paths odd, weights in range), the others
    anything: odd names and weights, stray characters, many entries, a script repeated a few hundred times."""
    if rng.random() < 0.5:
        names = [rng.choice(rng.choice([BUILTIN, FOUND, FOUND, ODD_PATHS])) for _ in range(rng.randint(1, 4))]
        return ", ".join(name + rng.choice(WEIGHTS[:4]) for name in names)
    entries_ = [rng.choice(SCRIPT_NAMES) + rng.choice(WEIGHTS) for _ in range(rng.choice([1, 2, 3, 5, 17, 40]))]
    text = rng.choice([",", ", ", ",,", " , "]).join(entries_)
    if rng.random() < 0.2:
        i = rng.randrange(len(text) + 1)
        text = text[:i] + rng.choice([",", "@", ":", "é", "\x00", " ", "99999"]) + text[i:]
    return text * (rng.randint(2, 300) if rng.random() < 0.05 else 1)


def _says_the_problem(e: Exception) -> bool:
    return len(str(e)) < 1000 and any(w in str(e) for w in ("script", "scale"))


def test_fuzz_a_users_scripts_are_read_or_refused_in_a_few_words(tmp_path):
    """Random `script:` strings and script files: each is entries pgbench takes (1 to 16, weights 1 to 1000,
    files found and read) or a ValueError (pydantic's ValidationError is one) whose short message names `script`
    (or `scale`, also given odd values), never a traceback."""
    from strata.workloads.pgbench.params import MAX_SCRIPTS, MAX_WEIGHT

    rng = random.Random(61_05_05)
    base = tmp_path / "spec"
    (base / "sub").mkdir(parents=True)
    (base / "dir").mkdir()
    (base / "big.sql").write_bytes(b"-" * ((1 << 20) + 1))  # beyond fields.MAX_SCRIPT_BYTES
    answers = Counter()
    for n in range(400):
        for name, text in SCRIPT_FILES.items():
            (base / name).unlink(missing_ok=True)
            if rng.random() < 0.8:
                (base / name).write_bytes(text)
        script = _script(rng)
        try:
            said = entries(script)
        except ValueError as e:
            assert _says_the_problem(e), (n, script[:80], str(e)[:300])
            answers["entries refused"] += 1
        else:
            assert 1 <= len(said) <= MAX_SCRIPTS, (n, script[:80])
            for what, weight in said:
                assert isinstance(what, str) and (what in BUILTIN or what.startswith("file:")), (n, what)
                assert weight is None or (type(weight) is int and 1 <= weight <= MAX_WEIGHT), (n, weight)
            assert len(said) == 1 or all(w is not None for _, w in said), (n, said)
        raw = {"script": script, **({"scale": rng.choice([1, 0, 10**20, "x"])} if rng.random() < 0.2 else {})}
        try:
            p = PGBENCH.parse_params(raw, base)
        except ValueError as e:
            assert _says_the_problem(e), (n, script[:80], str(e)[:300])
            answers["refused"] += 1
            continue
        answers["taken"] += 1
        runs = p.runs()
        assert [f for f, _, _ in runs] == ["-f" if w.startswith("file:") else "-b" for w, _ in entries(p.script)]
        for flag, what, weight in runs:
            assert flag == "-b" and what in BUILTIN or flag == "-f" and Path(what).is_file(), (n, flag, what)
            assert weight is None or 1 <= weight <= MAX_WEIGHT
        assert isinstance(p.writes, bool) and p.name.startswith("pgbench-") and len(p.files) <= MAX_SCRIPTS
        if p.files:  # the same script without the files found beside a spec: refused, naming them
            with pytest.raises(ValueError, match="names a pgbench script that was not found"):
                PgbenchParams(script=p.script)
        else:
            assert PgbenchParams(script=p.script).runs() == runs
    assert answers["taken"] > 40 and answers["refused"] > 100, answers


@pytest.mark.parametrize(
    "script,was",
    [
        ("file:" + "d" * 300, "OSError: [Errno 36] File name too long"),
        ("file:" + "x/" * 2000 + "y.sql@1001", "a message of 4,064 characters (the whole path)"),
        ("file:" + "x/" * 2000 + "y.sql", "a message of 8,064 characters (the path and the script, whole)"),
    ],
    ids=["a name too long", "a long path's weight", "a long path not found"],
)
def test_a_script_path_of_any_length_is_refused_in_a_few_words(tmp_path, script, was):
    """What the fuzz found (`was`: the traceback or the message before)."""
    with pytest.raises(ValueError) as e:
        PGBENCH.parse_params({"script": script}, tmp_path)
    assert len(str(e.value)) < 1000 and "script" in str(e.value) and "..." in str(e.value)
