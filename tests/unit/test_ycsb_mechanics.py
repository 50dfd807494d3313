"""The ycsb workload's mechanics without Cassandra: config, argv, parsing, histogram merging.

Captured real outputs (YCSB 0.17.0 with our binding against Cassandra 5.0.8) are in
tests/data/ycsb/0.17.0/; YCSB prints its own figures from the same histograms it logs, so the
decoder must reproduce them exactly.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from strata.core.errors import StrataError, TrialFailure
from strata.stack.runtimes.docker import image as dimage
from strata.workloads import hdr
from strata.workloads.ycsb import cassandra, client, image, jars, node, parse

DATA = Path(__file__).parents[1] / "data" / "ycsb" / "0.17.0"
RUN_A = DATA / "run-a-dataintegrity"
GiB, MiB = 1 << 30, 1 << 20
JARS = ["cassandra-all-5.0.8.jar", "jamm-0.4.0.jar", "guava-32.0.1-jre.jar"]


def configs(n=1, cluster=0, memory=None):
    return cassandra.cluster_configs(
        cluster,
        n,
        data_dir=lambda i: f"/d/{i}",
        conf_dir=lambda i: f"/c/{i}",
        lib_dir="/lib",
        memory_limit_bytes=memory,
    )


# ---- cassandra.py ------------------------------------------------------------------


def test_heap_follows_cassandra_env_formula():
    assert cassandra.heap_bytes(None) == 1 * GiB
    assert cassandra.heap_bytes(1 * GiB) == 512 * MiB  # min(1/2, 1G) wins
    assert cassandra.heap_bytes(2 * GiB) == 1 * GiB
    assert cassandra.heap_bytes(6 * GiB) == 1536 * MiB  # the study's 6 GB containers: 1/4
    assert cassandra.heap_bytes(64 * GiB) == 8 * GiB  # capped
    with pytest.raises(StrataError, match="at least 1024 MiB"):
        cassandra.heap_bytes(768 * MiB)


def test_addresses_are_loopback_per_cluster_and_node():
    assert cassandra.node_address(0, 0) == "127.0.1.1"
    assert cassandra.node_address(2, 1) == "127.0.3.2"
    three = configs(3, cluster=1)
    assert [c.address for c in three] == ["127.0.2.1", "127.0.2.2", "127.0.2.3"]
    assert all(c.seeds == ("127.0.2.1",) for c in three)
    assert {c.cluster_name for c in three} == {"strata-c1"}
    with pytest.raises(ValueError):
        cassandra.node_address(0, 254)


def test_strata_loopback_moves_the_plan_and_a_bad_value_is_refused_before_any_trial(monkeypatch, tmp_path):
    """Two experiments with Cassandra on one host at once (or the test suite's parallel workers) each take a
    127.X.0.0/16 block of their own."""
    from strata.workloads.ycsb import plugin
    from strata.workloads.ycsb.plugin import YCSB

    monkeypatch.setattr(plugin.shutil, "which", lambda tool: f"/usr/bin/{tool}")  # java and mvn "installed"
    monkeypatch.setattr(plugin.jars, "cassandra_home", lambda: tmp_path)
    assert YCSB.available({}) is None

    monkeypatch.setenv("STRATA_LOOPBACK", "12")
    assert cassandra.node_address(0, 0) == "127.12.1.1" and configs(2, cluster=1)[1].address == "127.12.2.2"
    for bad in ("256", "-1", "x", "1e3"):
        monkeypatch.setenv("STRATA_LOOPBACK", bad)
        with pytest.raises(StrataError, match="STRATA_LOOPBACK"):
            cassandra.node_address(0, 0)
        assert "STRATA_LOOPBACK" in (YCSB.available({}) or "")


def test_cassandra_yaml_puts_everything_under_the_data_dir_and_listens_on_its_address():
    cfg = configs(2)[1]
    conf = yaml.safe_load(cassandra.node_files(cfg)["cassandra.yaml"])
    assert conf["listen_address"] == conf["rpc_address"] == "127.0.1.2"
    assert conf["seed_provider"][0]["parameters"][0]["seeds"] == "127.0.1.1:7000"
    assert conf["data_file_directories"] == ["/d/1/data"]
    for key in ("commitlog_directory", "saved_caches_directory", "hints_directory", "cdc_raw_directory"):
        assert conf[key].startswith("/d/1/"), key
    assert conf["authenticator"] == "AllowAllAuthenticator"
    assert conf["cluster_name"] == "strata-c0" and conf["num_tokens"] == 16
    assert conf["concurrent_compactors"] == 1


def test_extra_yaml_overrides():
    cfg = cassandra.NodeConfig(
        0, 1, "127.0.1.1", ("127.0.1.1",), "x", "/d", "/c", "/l", extra_yaml={"concurrent_reads": 64}
    )
    assert yaml.safe_load(cassandra.node_files(cfg)["cassandra.yaml"])["concurrent_reads"] == 64


def test_node_argv():
    argv = cassandra.node_argv(configs(memory=6 * GiB)[0], JARS, java="/usr/bin/java")
    assert argv[0] == "/usr/bin/java" and argv[-1] == "org.apache.cassandra.service.CassandraDaemon"
    assert "-Xms1536m" in argv and "-Xmx1536m" in argv
    assert "-javaagent:/lib/jamm-0.4.0.jar" in argv
    assert "-Dcassandra.config=file:///c/0/cassandra.yaml" in argv
    assert "-Dlogback.configurationFile=file:///c/0/logback.xml" in argv
    assert "-Dcassandra.storagedir=/d/0" in argv and "-Dcassandra.skip_wait_for_gossip_to_settle=0" in argv
    assert "-Dcassandra.consistent.rangemovement=false" in argv
    assert "-Dcassandra.ring_delay_ms=1000" in argv and "-Dcassandra-foreground=yes" in argv
    assert argv[argv.index("-cp") + 1] == "/c/0:/lib/*"
    pairs = {argv[i + 1] for i, a in enumerate(argv) if a == "--add-opens"}
    assert {"java.base/java.lang=ALL-UNNAMED", "java.base/sun.nio.ch=ALL-UNNAMED"} <= pairs
    assert "-XX:+UseG1GC" in argv
    assert not any(a.startswith(("-Dcassandra.jmx", "-Dcom.sun.management.jmxremote")) for a in argv)  # JMX off


def test_node_argv_without_jamm_is_an_error():
    with pytest.raises(StrataError, match="jamm"):
        cassandra.node_argv(configs()[0], ["cassandra-all-5.0.8.jar"])


def test_wait_ready_needs_the_log_line_and_the_port(monkeypatch):
    ports = iter([False, True])
    monkeypatch.setattr(cassandra, "cql_port_open", lambda addr, port=9042, timeout_s=1.0: next(ports))
    log = "INFO ... Starting listening for CQL clients on /127.0.1.1:9042 (unencrypted)...\n"
    assert cassandra.wait_ready("127.0.1.1", lambda: log, lambda: True, timeout_s=10) >= 0


def test_wait_ready_timeout_ends_with_the_log_tail(monkeypatch):
    monkeypatch.setattr(cassandra, "cql_port_open", lambda *a, **k: False)
    log = "x" * 10000 + "\nERROR the reason at the end\n"
    with pytest.raises(TrialFailure) as e:
        cassandra.wait_ready("127.0.1.1", lambda: log, lambda: True, timeout_s=0.3)
    assert e.value.category == "timeout"
    assert "the reason at the end" in str(e.value) and len(e.value.stderr) == cassandra.LOG_TAIL_CHARS


def test_wait_ready_on_a_node_that_exited(monkeypatch):
    monkeypatch.setattr(cassandra, "cql_port_open", lambda *a, **k: False)
    with pytest.raises(TrialFailure) as e:
        cassandra.wait_ready("127.0.1.1", lambda: "Exception (ConfigurationException) bad option", lambda: False)
    assert e.value.category == "tool_error" and "bad option" in str(e.value)


# ---- client.py ---------------------------------------------------------------------


def test_standard_workloads_are_ycsbs():
    props = {}
    for letter in "abcdef":
        text = client.workload_file(letter).read_text()
        assert "Copyright (c) 2010 Yahoo! Inc." in text
        props[letter] = dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#"))
    assert props["a"]["readproportion"] == "0.5" and props["a"]["updateproportion"] == "0.5"
    assert props["a"]["requestdistribution"] == "zipfian"
    assert props["d"]["readproportion"] == "0.95" and props["d"]["insertproportion"] == "0.05"
    assert props["d"]["requestdistribution"] == "latest"
    assert props["e"]["scanproportion"] == "0.95"
    assert props["f"]["readmodifywriteproportion"] == "0.5"


def test_own_workload_file_and_bad_names(tmp_path):
    f = tmp_path / "mine.properties"
    f.write_text("readproportion=1\n")
    assert client.workload_file(str(f)) == f
    with pytest.raises(StrataError, match="no YCSB workload 'g'"):
        client.workload_file("g")


def test_client_argv(tmp_path):
    run = client.ClientRun(
        "run",
        client.workload_file("a"),
        ("127.0.1.1", "127.0.1.2"),
        tmp_path,
        records=5000,
        runtime_s=30,
        threads=16,
        target_ops_s=2000,
        replication_factor=2,
        create_schema=False,
        data_integrity=True,
        extra={"requestdistribution": "uniform"},
    )
    argv = client.client_argv(run, Path("/cache/lib"))
    assert argv[:2] == ["java", "-Xmx512m"] and argv[argv.index("-cp") + 1] == "/cache/lib/*"
    assert argv[argv.index("site.ycsb.Client") + 1] == "-t"
    assert argv[argv.index("-db") + 1] == "strata.ycsb.CassandraDB"
    assert argv[argv.index("-target") + 1] == "2000" and "-s" in argv
    p = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-p")
    assert p["hosts"] == "127.0.1.1,127.0.1.2" and p["recordcount"] == "5000"
    assert p["operationcount"] == "2147483647" and p["maxexecutiontime"] == "30" and p["threadcount"] == "16"
    assert p["measurementtype"] == "hdrhistogram" and p["hdrhistogram.fileoutput"] == "true"
    assert p["hdrhistogram.output.path"] == f"{tmp_path}/hdr/" and p["status.interval"] == "1"
    assert p["cassandra.replicationfactor"] == "2" and p["cassandra.createschema"] == "false"
    assert p["dataintegrity"] == "true" and p["requestdistribution"] == "uniform"
    with pytest.raises(ValueError, match="at least 1"):
        client.ClientRun("run", client.workload_file("a"), ("h",), tmp_path, operations=0)
    load = client.client_argv(client.ClientRun("load", client.workload_file("d"), ("h",), tmp_path), Path("/l"))
    assert "-load" in load and "recordcount=" not in " ".join(load) and "-target" not in load


def test_ring_check_argv():
    argv = client.ring_check_argv(["127.0.1.1", "127.0.1.2"], Path("/l"))
    assert argv[-3:] == ["strata.ycsb.RingCheck", "127.0.1.1,127.0.1.2", "9042"]


def test_client_failure_names_the_fatal_reason():
    err = (DATA / "killed-node-stderr.txt").read_text()  # the node was killed mid-run
    f = client.client_failure("run", 3, err)
    assert isinstance(f, TrialFailure) and "no Cassandra node is up" in str(f) and f.category == "tool_error"
    assert "exited with 1" in str(client.client_failure("load", 1, "Exception in thread main"))


def test_wait_client_measures_cpu_and_fails_on_exit_code(tmp_path):
    run = client.ClientRun("run", client.workload_file("a"), ("h",), tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "sum(range(3_000_000))"])
    deadline = time.monotonic() + 60
    while not client.exited(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.exited(proc)  # watched without reaping: the CPU time is still there
    res = client.wait_client(proc, run, time.monotonic(), timeout_s=60)
    assert res.returncode == 0 and res.cpu_s > 0 and 0 < res.cpu_share(cores=1)
    (tmp_path / "stderr.txt").write_text("[strata-cassandra] FATAL: cannot connect to Cassandra\n")
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(TrialFailure, match="cannot connect"):
        client.wait_client(proc, run, time.monotonic(), timeout_s=60)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    with pytest.raises(TrialFailure) as e:
        client.wait_client(proc, run, time.monotonic(), timeout_s=0.5)
    assert e.value.category == "timeout" and proc.poll() is not None


# ---- hdr.py and parse.py on captured outputs -------------------------------------------


def test_decoded_histograms_give_ycsbs_own_figures_exactly():
    summary = parse.parse_summary((RUN_A / "stdout.txt").read_text())
    for op in ("READ", "UPDATE", "VERIFY", "CLEANUP"):
        _, intervals = hdr.read_log(RUN_A / "hdr" / f"{op}.hdr")
        h = hdr.merge(i.histogram for i in intervals)
        said = summary.reported[op]
        assert h.total == summary.operations[op]
        assert h.mean() == said["AverageLatency(us)"]
        assert (h.min(), h.max()) == (said["MinLatency(us)"], said["MaxLatency(us)"])
        for pct, key in ((50, "50th"), (95, "95th"), (99, "99th"), (99.9, "99.9")):
            assert h.value_at_percentile(pct) == said[f"{key}PercentileLatency(us)"], (op, pct)


def test_log_intervals_are_per_second():
    start, intervals = hdr.read_log(RUN_A / "hdr" / "READ.hdr")
    assert start == pytest.approx(1795424765.423)
    assert sum(i.histogram.total for i in intervals) == 2547
    lengths = sorted(i.length_s for i in intervals)
    assert len(intervals) >= 10 and 0.95 < lengths[len(lengths) // 2] < 1.05  # one a second (status.interval=1)


def test_merge_of_two_histograms_is_the_histogram_of_all_values():
    a, b, both = hdr.Histogram(), hdr.Histogram(), hdr.Histogram()
    values_a = [1, 7, 150, 2047, 2048, 2049, 5000, 123456, 10**7]
    values_b = [3, 150, 150, 4095, 4096, 999_999, 2**40]
    for v in values_a:
        a.record(v)
        both.record(v)
    for v in values_b:
        b.record(v)
        both.record(v)
    merged = hdr.merge([a, b])
    assert merged.counts == both.counts and merged.total == len(values_a) + len(values_b)
    for pct in (0.0, 10, 50, 90, 99, 99.9, 100):
        assert merged.value_at_percentile(pct) == both.value_at_percentile(pct)
    # values below 2048 are exact with 3 significant digits; above, within 1/1000
    assert merged.value_at_percentile(50) == 2049 and merged.min() == 1
    assert merged.max() >= 2**40 and merged.max() <= 2**40 * 1.001
    # averaging the two p50s would say something else than the merged p50
    assert (a.value_at_percentile(50) + b.value_at_percentile(50)) / 2 != merged.value_at_percentile(50)


def test_merge_refuses_different_grids():
    with pytest.raises(hdr.HdrError):
        hdr.Histogram(digits=3).add(hdr.Histogram(digits=2))


def test_grid_round_trips():
    h = hdr.Histogram()
    for v in (0, 1, 2047, 2048, 4097, 10**6, 10**9):
        i = h.index_of(v)
        assert h.lowest_equivalent(v) == h.value_from_index(i) <= v <= h.highest_equivalent(v)


def test_summary_and_status_of_a_real_run():
    s = parse.parse_summary((RUN_A / "stdout.txt").read_text())
    assert s.throughput_ops_s == pytest.approx(274.967, abs=1e-3) and s.runtime_ms == 18184
    assert s.returns["VERIFY"] == {"OK": 2547} and s.operations["UPDATE"] == 2453
    points = parse.parse_status((RUN_A / "stderr.txt").read_text())
    assert points[0].elapsed_s == 0 and points[-1].operations == 5000
    series = parse.throughput_series(points)
    assert series[0] == 78.31 and series[-1] == 207.0 and len(series) == 12  # no start-up, no closing


def test_aggregate_of_two_clients_merges_histograms():
    out = parse.ClientOutput((RUN_A / "stdout.txt").read_text(), (RUN_A / "stderr.txt").read_text(), RUN_A / "hdr")
    one, two = parse.aggregate([out]), parse.aggregate([out, out])
    assert two["throughput_ops_s"] == pytest.approx(2 * one["throughput_ops_s"])
    assert two["series_ops_s"] == [2 * x for x in one["series_ops_s"]]
    assert two["operations"] == {op: 2 * n for op, n in one["operations"].items()}
    assert "CLEANUP" not in two["latency"] and two["errors"] == 0
    assert two["latency"]["READ"]["n"] == 2 * 2547
    for key in ("mean_us", "p50_us", "p95_us", "p99_us", "p99_9_us", "max_us"):
        assert two["latency"]["READ"][key] == one["latency"]["READ"][key]  # the same values twice
    assert one["latency"]["READ"]["p99_us"] == 97727 and one["start_skew_s"] == 0.0


def test_aggregate_counts_errors_and_integrity_failures():
    stdout = (
        "[OVERALL], Throughput(ops/sec), 10.0\n[READ], Operations, 10\n[READ], Return=OK, 8\n"
        "[READ], Return=ERROR, 2\n[VERIFY], Return=UNEXPECTED_STATE, 1\n"
    )
    agg = parse.aggregate([parse.ClientOutput(stdout, "", Path("/nonexistent"))])
    assert agg["errors"] == 3 and agg["returns"]["VERIFY"] == {"UNEXPECTED_STATE": 1}


# ---- jars.py, image.py, node.py ------------------------------------------------------


def test_binding_key_follows_the_sources(tmp_path):
    src = tmp_path / "b"
    (src / "src" / "main" / "java").mkdir(parents=True)
    (src / "pom.xml").write_text("<project/>")
    (src / "src" / "main" / "java" / "X.java").write_text("class X {}")
    k1 = jars.binding_key(src)
    (src / "target").mkdir()
    (src / "target" / "junk.jar").write_text("x")
    assert jars.binding_key(src) == k1
    (src / "src" / "main" / "java" / "X.java").write_text("class X { int y; }")
    assert jars.binding_key(src) != k1
    with pytest.raises(StrataError, match="binding's sources"):
        jars.binding_key(tmp_path / "missing")


def test_the_shipped_binding_source_is_found():
    assert (jars.binding_source() / "src" / "main" / "java" / "strata" / "ycsb" / "CassandraDB.java").is_file()


def test_cache_dir_moves_with_env(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    assert jars.cassandra_home("5.0.8") == tmp_path / "cassandra-5.0.8"
    assert jars.maven_repo() == tmp_path / "maven" / "repository"
    assert jars.ycsb_home().parent == tmp_path / "ycsb-0.17.0"


def test_missing_maven_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)
    with pytest.raises(StrataError, match="Maven"):
        jars._check_tools()
    assert "jdk" in jars._maven_fix("[ERROR] No compiler is provided in this environment")
    assert "Maven Central" in jars._maven_fix("[ERROR] Could not transfer artifact")
    out = (
        "\x1b[0m\x1b[0m[ERROR] Plugin x could not be resolved: Cannot access central -> [Help 1]\n[ERROR] \n"
        "[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n"
    )
    assert jars._maven_reason(out) == "[ERROR] Plugin x could not be resolved: Cannot access central -> [Help 1]"


def test_image_key_follows_the_jars(tmp_path):
    home = tmp_path / "cassandra-5.0.8"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "a.jar").write_bytes(b"one")
    jars._write_manifest(home, "test")
    k1 = dimage.image_key(image.image_spec(home))
    assert jars.jar_names(home) == ["a.jar"]
    (home / "lib" / "a.jar").write_bytes(b"two-longer")
    jars._write_manifest(home, "test")
    spec = image.image_spec(home)
    assert dimage.image_key(spec) != k1 and dimage.image_tag(spec).startswith("strata-cassandra:")
    text = dimage.dockerfile(spec)
    assert "openjdk-17-jre-headless" in text and "COPY tree0/ /opt/cassandra/lib/" in text


def test_container_node_paths_and_docker_args(tmp_path):
    """The benches' node in a container (bench/cassandra_container.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import cassandra_container as cc

    cfg = cc.container_config(configs(memory=2 * GiB)[0])
    assert (cfg.data_dir, cfg.conf_dir, cfg.lib_dir) == (
        "/var/lib/cassandra",
        "/etc/strata-cassandra",
        "/opt/cassandra/lib",
    )
    args = cc.docker_run_args("n", tmp_path / "d", tmp_path / "c", tmp_path / "l", cfg.memory_limit_bytes)
    assert args[args.index("--network") + 1] == "host" and args[args.index("--log-driver") + 1] == "none"
    assert f"type=bind,src={tmp_path / 'c'},dst=/etc/strata-cassandra,readonly" in args
    assert args[args.index("--memory") + 1] == str(2 * GiB) == args[args.index("--memory-swap") + 1]
    assert "--memory" not in cc.docker_run_args("n", tmp_path, tmp_path, tmp_path, None)


def test_jvm_undo_finds_our_jvm_by_its_command_line(tmp_path):
    """The undo of `cassandra-jvm` stops the process that names our conf dir and the main class."""
    marker = f"-Dcassandra.config=file://{tmp_path}/cassandra.yaml"
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker, cassandra.MAIN_CLASS])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])  # not a Cassandra
    try:
        time.sleep(0.2)
        node._undo_jvm({"marker": marker, "pid": ours.pid})
        assert ours.wait(timeout=10) != 0
        assert other.poll() is None
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()


def test_the_settings_list_read_from_the_jars_is_kept_outside_the_trees_the_agent_image_holds(tmp_path, monkeypatch):
    """The agent image is keyed by what the jars' trees hold (jars.agent_trees): a list written into one of them
    at a trial's first settings check, after `strata prepare` built the image, made every later test ask for the
    image again (a fresh machine's full tier: 37 serial tests failed at setup)."""
    from strata.workloads.ycsb import conf

    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    cass, binding = jars.cassandra_home(), jars.ycsb_home()  # the binding's sources are in the package
    kept = conf.names_cache(cass, binding)
    assert kept.is_relative_to(tmp_path)
    assert (
        not kept.is_relative_to(cass) and not kept.is_relative_to(binding) and not kept.is_relative_to(binding.parent)
    )
    other = conf.names_cache(cass, binding.parent / "cassandra-binding-0123456789ab")
    assert other != kept  # one list per Cassandra version and binding
