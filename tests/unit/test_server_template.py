"""The server-workload template (workloads/server/) on its own: a third server workload, written here
in a few lines (an `echo` server: a shell loop as its server, python processes as its clients), runs
through the whole pipeline with the fake stack (real processes, no root): started, ready, loaded,
measured inside the collectors' window with its counters on both sides, stopped through the stop
file; a server that dies, one that never answers and a client that fails each end the trial with
their category and the words that say why, a server or its setup that fails at start with its own last
error line first; its log on a path of its own (logpath.py), the memory its servers can use and what
they say of themselves in the record."""

import json
import shlex
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput, Target
from strata.core.metrics import Metric, MetricSchema
from strata.core.params import Load, Strict
from strata.experiment.expand import expand
from strata.experiment.load import parse_spec
from strata.results.store import load_results
from strata.run.progress import Progress
from strata.run.runner import run_experiment
from strata.stack.runtimes import REGISTRY as REGISTRY_RUNTIMES
from strata.workloads import REGISTRY
from strata.workloads.base import MeasureContext, Parsed, ServerWorkload, headline
from strata.workloads.server import lifecycle
from strata.workloads.server.clients import Client
from strata.workloads.server.facts import Log, Server
from strata.workloads.server.script import server_script, write_files
from strata.workloads.server.template import ServerTemplate

from .fakes import fake_registries


class EchoParams(Strict):
    type: Literal["echo"] = "echo"
    name: str = "echo"
    runtime: int = Field(default=1, ge=1, le=60)
    warmup: int = 0  # the template's ServerParams: no warm-up
    start_timeout: int = 30
    die_after_s: float | None = None  # the server ends by itself (a crash)
    never_ready: bool = False
    client_exit: int = 0  # the measured run's clients exit with this
    setup_error: str | None = None  # its setup fails with this on stderr (as initdb's "error:")
    fatal: str | None = None  # the server writes this to its log and ends at start
    log: str | None = None  # its log on a path of its own


class Echo(ServerTemplate[EchoParams]):
    """The whole of a server workload on the template: its commands, its probe, its parser, its fields."""

    name = "echo"
    params = EchoParams
    metrics = MetricSchema((Metric("ops", "total", "ops/s", "higher", headline=True),))
    clients_dir = "echo"
    client_what = "the echo client"
    server = Server("echo server", log=Log("log", "server's log"))
    vm_reason = "no echo server in a VM"

    def command(self, params: EchoParams, load: Load, target: Target, instance: int) -> list[str]:
        life = f"sleep {params.die_after_s}; exit 3" if params.die_after_s else "exec sleep 600"
        say = "echo starting" if params.never_ready else "echo listening"
        if params.fatal:
            say, life = f"echo {shlex.quote(params.fatal)}; echo shutting down", "exit 1"
        files = write_files({f"{target.path}/echo-{instance}.conf": "port 1\n"})
        run = f"sh -c {shlex.quote(f'echo log at {target.log_path or target.path}; {say}; {life}')}"
        setup = [f"mkdir -p {shlex.quote(target.path)}", *files]
        if target.log_path:
            setup.append(f"mkdir -p {shlex.quote(target.log_path)} && touch {shlex.quote(target.log_path)}/log-0")
        if params.setup_error:
            setup += [f"echo {shlex.quote(params.setup_error)} >&2", "echo 'see its log' >&2", "exit 1"]
        script = server_script(
            setup=setup,
            command=run,
            out_dir=target.out_dir,
            sync_dir=target.sync_dir,
            what="echo server",
        )
        return ["sh", "-c", script, "echo-server"]

    def estimate_s(self, params: EchoParams) -> float:
        return 5 + params.runtime

    def ready(self, params: EchoParams, load: Load, ctx: MeasureContext, instance: int) -> bool:
        return "listening" in lifecycle.server_log(ctx, instance, self.server.log_name)

    def start_timeout_s(self, params: EchoParams) -> float:
        return 2.0 if params.never_ready else 30.0

    def clients(self, phase: str, params: EchoParams, load: Load, out: Path, record: dict) -> list[Client]:
        code = params.client_exit if phase == "run" else 0
        say = f"print({100 * (1 + len(record['phases']))}); import sys; sys.stderr.write('echo: refused\\n')"
        argv = [sys.executable, "-c", f"{say}; raise SystemExit({code})"]
        return [Client(argv, out / f"c{k}") for k in range(self.instances(params, load))]

    def observe(self, point: str, params: EchoParams, load: Load, ctx: MeasureContext, record: dict) -> None:
        record.setdefault("observed", {})[point] = "seen"

    def parse(self, params: EchoParams, outputs: list[InstanceOutput]) -> Parsed:
        art = outputs[0].out_dir.parent
        record = json.loads((art / "echo" / "clients.json").read_text())
        ops = sum(float((art / c / "stdout.txt").read_text()) for c in record["phases"]["run"]["clients"])
        return Parsed({"primary": headline(ops, "ops/s", "ops"), "record": record}, {"read": 0, "write": 0})


@pytest.fixture
def echo(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setitem(REGISTRY, "echo", Echo())


def _run(tmp_path, runtimes=("native",), loads=None, **params):
    doc = {
        "name": "echo",
        "workdir": str(tmp_path / "work"),
        "devices": ["loop"],
        "filesystems": ["xfs"],
        "runtimes": list(runtimes),
        "paths": ["bind"] if runtimes == ("native",) else ["volume"],
        "workloads": [{"type": "echo", **params}],
    }
    if loads:
        doc["loads"] = loads
    exp, wls = parse_spec(doc)
    trials, skipped = expand(exp, wls)
    run_experiment(
        exp,
        wls,
        trials,
        skipped,
        tmp_path / "out",
        host={},
        registries=fake_registries(tmp_path),
        progress=Progress(1, [0.1], quiet=True),
    )
    (result,) = load_results(tmp_path / "out")
    return result


def test_a_server_workload_is_its_commands_its_probe_and_its_parser(echo, tmp_path):
    r = _run(tmp_path, runtimes=("docker",), loads=[{"containers": 2}])
    assert r.status == "ok", r.flags.to_json()
    rec = r.metrics["record"]
    assert r.metrics["primary"]["value"] == 2 * 200.0  # two servers' clients, the run after the load
    assert list(rec["phases"]) == ["load", "run"] and rec["servers"] == 2 and len(rec["node_ready_s"]) == 2
    assert rec["phases"]["run"]["clients"] == ["echo/run/c0", "echo/run/c1"] and rec["observed"] == {
        "before": "seen",
        "after": "seen",
    }
    art = tmp_path / "out" / r.artifacts
    assert (art / "sync" / "stop").exists() and (art / "inst-0" / "node.launched").exists()
    assert "echo-1.conf" in (art / "command.json").read_text()


def test_an_echo_server_refuses_a_vm_and_asks_for_the_hosts_network():
    wl = Echo()
    assert wl.impossible(EchoParams(), type("VM", (), {"isolation": "vm"})()) == "no echo server in a VM"
    assert wl.network(EchoParams()) == "host" and isinstance(wl, ServerWorkload)
    assert wl.agent_image().name == "echo-host"


def test_a_server_that_dies_mid_run_ends_the_trial_with_every_servers_log(echo, tmp_path):
    r = _run(tmp_path, die_after_s=1.5, runtime=1)
    failed = r.flags.failed.to_json()
    assert r.status == "failed" and failed["category"] == "instance_died", failed
    assert "--- server 0" in failed["stderr"] and "listening" in failed["stderr"]
    assert "echo server exited with code 3 before it was asked to stop" in failed["stderr"]


def test_a_server_that_never_answers_is_not_ready_with_its_log(echo, tmp_path):
    failed = _run(tmp_path, never_ready=True).flags.failed.to_json()
    assert failed["category"] == "not_ready" and "echo server 0 was not ready within 2 s" in failed["message"]
    assert "starting" in failed["stderr"]


def test_a_client_that_fails_fails_the_trial_in_the_workloads_words(echo, tmp_path):
    failed = _run(tmp_path, client_exit=4).flags.failed.to_json()
    assert failed["category"] == "tool_error" and failed["message"] == "the echo client (run) exited with 4"
    assert "echo: refused" in failed["stderr"]


def test_a_client_beyond_its_phase_is_killed_as_a_timeout(tmp_path, monkeypatch):
    class Slow(Echo):
        def clients(self, phase, params, load, out, record):
            return [Client([sys.executable, "-c", "import time; time.sleep(60)"], out / "c0")]

        def phase_timeout_s(self, phase, params):
            return 0.5

    running = type("R", (), {"check": lambda self, watch=None: None, "cgroups": [{}]})()
    ctx = MeasureContext(running, None, 10, None, tmp_path)
    (tmp_path / "inst-0").mkdir()
    with pytest.raises(TrialFailure) as e:
        lifecycle.run_phase(Slow(), "load", EchoParams(), Load(), ctx, {"phases": {}})
    assert e.value.category == "timeout" and "the echo clients (load) ran beyond 0 s" in str(e.value)


def test_a_setup_that_fails_at_start_puts_its_own_error_line_in_the_message(echo, tmp_path):
    said = 'echoinit: error: could not access directory "/x/pg-0": Permission denied'
    failed = _run(tmp_path, setup_error=said).flags.failed.to_json()
    assert failed["category"] == "instance_died" and failed["message"].startswith(
        f"echo server 0 ended while starting: {said}"
    )
    assert "see its log" in failed["stderr"]


def test_a_server_that_fails_at_start_puts_its_logs_last_error_line_in_the_message(echo, tmp_path):
    fatal = "FATAL:  could not create any TCP/IP sockets"
    failed = _run(tmp_path, fatal=fatal).flags.failed.to_json()
    assert (
        failed["category"] == "instance_died"
        and f"ended while starting: {fatal} (instance 0 ended" in failed["message"]
    )
    assert "shutting down" in failed["stderr"]
    assert lifecycle.last_error("LOG: ok\nwal: error: full\nLOG: shut down\n") == "wal: error: full"
    assert lifecycle.last_error("LOG: all is well\n") is None


def test_its_log_goes_on_a_path_of_its_own_and_the_record_holds_the_servers_memory(echo, tmp_path):
    r = _run(tmp_path, log="bind")
    assert r.status == "ok", r.flags.to_json()
    where = r.stack_facts["log_path"]
    assert where["path"] == "bind" and where["in_instance"].endswith("/strata-log") and where["on_host"]
    art = tmp_path / "out" / r.artifacts
    assert f"log at {where['in_instance']}" in (art / "inst-0" / "node.log").read_text()
    rec = r.metrics["record"]
    assert rec["memory"]["bytes"] > 0 and rec["memory"]["of"].startswith("MemTotal") and rec["server"] == {}
    assert Echo().impossible(EchoParams(log="volume"), REGISTRY_RUNTIMES["native"]).endswith("(only bind)")


def test_servers_on_a_node_strata_reaches_through_an_agent_are_judged_by_that_nodes_memory():
    """A Kubernetes node that is not strata's machine: its MemTotal and page cache, read through the running
    (core/instances.py ReadsNode), not this machine's; a running without a node of its own reads here."""
    from strata.workloads.server import memory

    meminfo = "MemTotal:        4096 kB\nCached:          1024 kB\n"
    read = []

    class OnNode:
        def read(self, path):
            read.append(path)
            return meminfo

    running = OnNode()
    assert lifecycle.node_reader(running) == running.read
    assert memory.usable(Load(), 2, lifecycle.node_reader(running)) == {
        "bytes": 4 << 20,
        "of": "MemTotal, the host's memory",
    }
    assert lifecycle.page_cache_bytes(running) == 1 << 20 and read == ["/proc/meminfo"] * 2
    assert isinstance(lifecycle.page_cache_bytes(object()), int) and read == ["/proc/meminfo"] * 2  # read here
    assert memory.usable(Load(), 1)["bytes"] == memory.mem_total_bytes() != 4 << 20


def test_the_lifecycles_files_go_and_come_where_the_servers_run(tmp_path):
    """A running whose instances' files are elsewhere (core/instances.py FilesElsewhere: a Kubernetes node strata
    reaches through its agent): the stop and a turn to start written there too, the servers' logs read there; any
    other running: the trial's own directories."""
    import contextlib

    class Elsewhere:
        def __init__(self):
            self.signals = []

        def signal(self, name):
            self.signals.append(name)

        def output(self, index, name):
            if name != "node.log":
                raise OSError("no such file")
            return f"log of {index}"

    (tmp_path / "sync").mkdir()
    ctx = MeasureContext(Elsewhere(), contextlib.nullcontext, 10.0, None, tmp_path)
    lifecycle.signal(ctx, "start-1")
    assert (tmp_path / "sync" / "start-1").is_file() and ctx.running.signals == ["start-1"]
    assert lifecycle.server_log(ctx, 2, "node.log") == "log of 2" and lifecycle.server_log(ctx, 2, "x.log") == ""
    here = MeasureContext(object(), contextlib.nullcontext, 10.0, None, tmp_path)
    (tmp_path / "inst-2").mkdir()
    (tmp_path / "inst-2" / "node.log").write_text("local")
    lifecycle.signal(here, "stop")
    assert (tmp_path / "sync" / "stop").is_file() and lifecycle.server_log(here, 2, "node.log") == "local"


def test_the_clients_cpu_share_is_read_where_the_workload_declares_it():
    """records.phases puts each phase's clients' CPU share where `records.CLIENT_CPU` says, every server workload
    declares that place (MetricSchema.client_cpu), and the analysis takes the share off the host's busy share only
    through the declaration: a workload that runs no clients of its own (fio) has nothing taken off."""
    from strata.analysis.cells import usage
    from strata.core.metrics import dig
    from strata.results.result import Result
    from strata.workloads.server import records

    run = {"wall_s": 5.0, "clients": ["c0"], "client_cpu_s": [1.0], "client_cpu_share": 0.25}
    stored = {"metrics": {"clients": records.phases([{"phases": {"run": run}}])}}
    assert dig(stored, records.CLIENT_CPU) == 0.25
    assert {REGISTRY[w].metrics.client_cpu for w in ("ycsb", "pgbench", "sysbench")} == {records.CLIENT_CPU}
    r = {**stored, "trial": {"workload": {"type": "pgbench"}}, "collectors": {"host": {"cpu_idle_percent": 40.0}}}
    assert usage.server_cpu_percent(Result.from_stored(r)) == 35.0
    r["trial"] = {"workload": {"type": "fio"}}
    assert REGISTRY["fio"].metrics.client_cpu == () and usage.server_cpu_percent(Result.from_stored(r)) == 60.0


def test_a_step_that_fails_as_its_server_dies_is_the_servers_death(tmp_path):
    """bench/chaos.py: a postmaster killed during the CHECKPOINT after the load closed the connection before its
    container had ended; the step's failure waits for the servers to show a death (instance_died)."""
    calls = []

    def check(self, watch=None):
        calls.append(1)
        if len(calls) >= 3:  # the container ends a moment after the connection closed
            raise TrialFailure("instance_died", "instance 0 ended with code 137 while it should have run")

    running = type("R", (), {"check": check, "cgroups": [{}]})()
    ctx = MeasureContext(running, None, 10, None, tmp_path)
    (tmp_path / "inst-0").mkdir()
    with pytest.raises(TrialFailure) as e:
        Echo().fail_after(ctx, "the CHECKPOINT after the load failed on server 0: server closed the connection")
    assert e.value.category == "instance_died"
    calls.clear()
    running.check = lambda self, watch=None: None  # every server stands: the step's own words
    assert Echo().fail_after(ctx, "the CHECKPOINT failed: x").category == "tool_error"


def test_a_server_whose_port_was_taken_says_so_and_how_to_give_each_run_its_own(echo, tmp_path):
    """Two strata runs at once with one STRATA_LOOPBACK: the second server's bind fails, and its trial says why,
    not only PostgreSQL's "could not create any TCP/IP sockets" (found by bench/chaos.py beside a test's run)."""
    bind = 'LOG:  could not bind IPv4 address "127.0.0.1": Address already in use'
    fatal = f"{bind}\nFATAL:  could not create any TCP/IP sockets"
    failed = _run(tmp_path, fatal=fatal).flags.failed.to_json()
    assert failed["category"] == "instance_died" and failed["message"].endswith(lifecycle.PORT_TAKEN)
    assert "STRATA_LOOPBACK=X" in failed["message"] and bind in failed["stderr"]
    other = _run(tmp_path / "other", fatal="FATAL:  could not create any TCP/IP sockets").flags.failed.to_json()
    assert lifecycle.PORT_TAKEN not in other["message"]  # said only where the server's own words show it
