"""A server workload's measured phase, the same for every server application (template.py's `measure`).

1. The runtime has created the server instances; `go` starts them, and the workload's
   `start_servers` waits until each is ready (by default in order, each with the workload's probe;
   Cassandra starts its clusters' nodes one by one). A server that ends while starting fails the
   trial as `instance_died` (or `oom`), one not up in time as `not_ready`, each with its log's tail.
2. `after_start`: what must hold before any client runs (Cassandra: every node Up and Normal).
3. The unmeasured phases (`phases`: the load, a warm-up, ...), each phase's clients at once;
   `after_phase` reads what a phase measured (the peak a relative target is a share of).
4. The measured run (`run`), inside the collectors' window, with `observe` on both sides of it (the
   server's own counters: the WAL PostgreSQL wrote).
5. `<sync>/stop`: the servers stop, and the runtime's outputs are returned for the parser.

Every phase's clients run on the host (clients.py), their wall and CPU time recorded in
`<art>/<clients_dir>/clients.json` with the servers' seconds to ready and the page cache at the
end of the run. While anything waits, `Running.check` watches the servers: a server that ends
fails the trial with every server's log tail, and a client that fails is given a moment
(`GRACE_S`) for a server's death, its cause, to show.

Across hosts the parts meet in here (`rendezvous`): every host's measured run starts together, and
a host whose servers another host's clients use (a cluster spanning hosts, whose clients run
elsewhere: `drives` is False) serves and collects until every part measured (`serve`).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Callable, Protocol, TypedDict

from strata.collectors.base import read_file
from strata.core.errors import TrialFailure
from strata.core.instances import FilesElsewhere, InstanceOutput, ReadsNode, Running
from strata.core.jsondoc import JsonObject, as_obj, whole
from strata.core.params import Load
from strata.workloads.base import MeasureContext, P, P_contra, rendezvous
from strata.workloads.server import clients, loopback, memory
from strata.workloads.server.clients import Client
from strata.workloads.server.facts import Server
from strata.workloads.server.script import LAUNCHED, STOP_FILE

POLL_S = 0.5
READY_POLL_S = 0.25
GRACE_S = 3.0  # after a client failed, how long the servers get to show that one of them died
STOP_TIMEOUT_S = 90
LOG_TAIL_CHARS = 4000


class Phase(TypedDict):
    """One phase's clients as clients.json records them (records.py reads them back)."""

    wall_s: float
    clients: list[str]  # each client's directory, under the trial's artifacts
    client_cpu_s: list[float]
    client_cpu_share: float | None  # of the host's CPUs, over the phase's wall time


class Servers(Protocol):
    """What the lifecycle reads of a workload to tell why its servers failed (template.py's members)."""

    @property
    def server(self) -> Server: ...
    def error_line(self, text: str) -> str | None: ...


class Hooks(Servers, Protocol[P_contra]):
    """The hooks of a server workload the lifecycle calls, in its order (template.py's ServerTemplate has
    each, with its default)."""

    @property
    def clients_dir(self) -> str: ...
    @property
    def client_what(self) -> str: ...
    def record(self, params: P_contra, load: Load) -> JsonObject: ...
    def start_servers(self, params: P_contra, load: Load, ctx: MeasureContext) -> list[float]: ...
    def drives(self, params: P_contra) -> bool: ...
    def after_start(self, params: P_contra, load: Load, ctx: MeasureContext) -> None: ...
    def server_facts(self, params: P_contra, load: Load, ctx: MeasureContext) -> JsonObject: ...
    def phases(self, params: P_contra) -> tuple[str, ...]: ...
    def after_phase(
        self, phase: str, params: P_contra, load: Load, ctx: MeasureContext, record: JsonObject
    ) -> None: ...
    def observe(self, point: str, params: P_contra, load: Load, ctx: MeasureContext, record: JsonObject) -> None: ...
    def clients(self, phase: str, params: P_contra, load: Load, out: Path, record: JsonObject) -> list[Client]: ...
    def phase_timeout_s(self, phase: str, params: P_contra) -> float: ...
    def client_failure(self, phase: str, returncode: int, stderr: str) -> TrialFailure: ...


def measure(wl: Hooks[P], params: P, load: Load, ctx: MeasureContext) -> list[InstanceOutput]:
    running, art = ctx.running, ctx.art
    record = wl.record(params, load)
    phases = as_obj(record["phases"], "phases")  # the record's own, filled below in order
    record["memory"] = memory.usable(load, whole(record, "servers") or 0, node_reader(running))
    running.ready(ctx.prepare_timeout_s)
    running.go()
    record["node_ready_s"] = list(wl.start_servers(params, load, ctx))
    if not wl.drives(params):
        return serve(wl, ctx, record)
    wl.after_start(params, load, ctx)
    record["server"] = wl.server_facts(params, load, ctx)
    for phase in wl.phases(params):
        phases[phase] = phase_doc(run_phase(wl, phase, params, load, ctx, record))
        wl.after_phase(phase, params, load, ctx, record)
    rendezvous(running)  # across hosts: every host's measured run starts together
    wl.observe("before", params, load, ctx, record)
    with ctx.collect():
        run = run_phase(wl, "run", params, load, ctx, record)
        phases["run"] = phase_doc(run)
        record["page_cache_bytes"] = page_cache_bytes(running)
    wl.observe("after", params, load, ctx, record)
    write_record(art / wl.clients_dir, record)
    rendezvous(running, "measured", lambda: check_servers(wl, ctx))  # the other hosts' servers may stop
    signal(ctx, STOP_FILE)
    outputs = running.wait(STOP_TIMEOUT_S, ctx.watch)
    if not outputs:  # a host that runs only the clients: they are its output
        return [
            InstanceOutput(0, art / wl.clients_dir, 0, "", None, None, {"role": "clients", "run_wall_s": run["wall_s"]})
        ]
    return outputs


def serve(wl: Hooks[P], ctx: MeasureContext, record: JsonObject) -> list[InstanceOutput]:
    """A host's part whose servers another host's clients use: its servers serve, and its collectors
    run, from the barrier until every part measured."""
    rendezvous(ctx.running)
    t0 = time.monotonic()
    with ctx.collect():
        rendezvous(ctx.running, "measured", lambda: check_servers(wl, ctx))
        record["page_cache_bytes"] = page_cache_bytes(ctx.running)
    record["served_s"] = round(time.monotonic() - t0, 3)
    write_record(ctx.art / wl.clients_dir, record)
    signal(ctx, STOP_FILE)
    return ctx.running.wait(STOP_TIMEOUT_S, ctx.watch)


def write_record(out: Path, record: JsonObject) -> None:
    """clients.json in the clients' directory (`out`)."""
    out.mkdir(exist_ok=True)
    (out / "clients.json").write_text(json.dumps(record, indent=1))


# ---- the servers ----------------------------------------------------------------------


def server_log(ctx: MeasureContext, instance: int, log_name: str) -> str:
    """The server's log so far: in its out dir here, or where its instance runs (a Kubernetes node strata
    reaches through its agent); "" while there is none."""
    try:
        if isinstance(ctx.running, FilesElsewhere):
            return ctx.running.output(instance, log_name)
        return (ctx.art / f"inst-{instance}" / log_name).read_text(errors="replace")
    except OSError:
        return ""


def signal(ctx: MeasureContext, name: str) -> None:
    """One of the lifecycle's files in the sync dir (a server's turn to start, the stop), where the servers see it."""
    (ctx.art / "sync" / name).touch()
    if isinstance(ctx.running, FilesElsewhere):
        ctx.running.signal(name)


def log_tail(text: str, chars: int = LOG_TAIL_CHARS) -> str:
    return text[-chars:]


# What a server's bind of its port says when another process holds it (PostgreSQL's "could not bind IPv4 address
# ...", MariaDB's "Bind on TCP/IP port"): strata's servers take fixed ports of the run's block (loopback.py).
IN_USE = "Address already in use"
PORT_TAKEN = (
    "its port was taken: another strata run on this machine uses the same block of ports (give each run at the "
    f"same time its own {loopback.LOOPBACK_ENV}=X, 0 to 255), or a server outside strata holds it"
)


def wait_ready(
    ctx: MeasureContext,
    instance: int,
    probe: Callable[[], bool],
    what: str,
    timeout_s: float,
    log_name: str,
    error_line: Callable[[str], str | None] | None = None,
) -> float:
    """Seconds from the instance's launch until `probe` says it is ready (it runs its server, which
    answers). Fails with the server's own last error line first in the message (`error_line` finds it in the
    instance's stderr, where its script says why its setup failed, and in the server's log; `last_error`
    by default) and both their tails beside it: the runtime's category when it ends (`instance_died`,
    `oom`), `not_ready` when it is not ready within `timeout_s`."""
    find = error_line or last_error
    t0 = time.monotonic()
    while not probe():
        try:
            ctx.running.check(ctx.watch)
        except TrialFailure as e:
            tail = log_tail(server_log(ctx, instance, log_name))
            said = find(e.stderr + "\n" + tail)
            words = f"{what} ended while starting: {said} ({e})" if said else f"{what} ended while starting: {e}"
            if IN_USE in e.stderr + tail:  # its address and port were another process's
                words += f"; {PORT_TAKEN}"
            raise TrialFailure(e.category, words, (e.stderr + "\n" + tail).strip()[-2 * LOG_TAIL_CHARS :], e.layer)
        if time.monotonic() - t0 > timeout_s:
            tail = log_tail(server_log(ctx, instance, log_name))
            said = find(tail)
            raise TrialFailure(
                "not_ready",
                f"{what} was not ready within {timeout_s:.0f} s"
                + (f": {said}" if said else "")
                + f"; its log ends:\n{tail}",
                tail,
            )
        time.sleep(READY_POLL_S)
    return since_launch(ctx.art / f"inst-{instance}", time.monotonic() - t0)


def listening(log_text: str, line: str, address: str, port: int, timeout_s: float = 1.0) -> bool:
    """A server's ready probe: its log says `line`, and its port accepts a connection."""
    if line not in log_text:
        return False
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False


# A line a server or its setup writes when it fails: PostgreSQL's `FATAL:`/`PANIC:`/`ERROR:` and initdb's
# `initdb: error:`, Cassandra's `ERROR [main]`, a JVM's exception, a shell's "Permission denied".
ERROR_LINE = re.compile(r"\b(FATAL|PANIC|ERROR)\b|\berror:|Exception\b|Permission denied|No space left", re.I)
ERROR_LINE_CHARS = 300


def last_error(text: str, pattern: re.Pattern[str] = ERROR_LINE) -> str | None:
    """The last line of `text` that says what failed (`pattern`), trimmed; None when no line says so."""
    lines = [ln.strip() for ln in text.splitlines() if pattern.search(ln)]
    return lines[-1][:ERROR_LINE_CHARS] if lines else None


def since_launch(out_dir: Path, waited_s: float) -> float:
    """Seconds from the server's launch (its script's `node.launched` stamp) to now; else the wait itself."""
    try:
        return max(waited_s, time.time() - float((out_dir / LAUNCHED).read_text().strip()))
    except (OSError, ValueError):
        return waited_s


def check_servers(wl: Servers, ctx: MeasureContext) -> None:
    """Every server still runs (and the layers live); else the trial fails with the servers' own last error
    line in its message and every server's log tail beside it."""
    try:
        ctx.running.check(ctx.watch)
    except TrialFailure as e:
        if e.category in ("instance_died", "oom"):
            tails = {k: log_tail(server_log(ctx, k, wl.server.log_name), 1500) for k in _instances(ctx)}
            logs = "\n".join(f"--- {wl.server.noun} {k}\n{t}" for k, t in tails.items())
            said = wl.error_line(e.stderr + "\n" + "\n".join(tails.values()))
            raise TrialFailure(
                e.category, f"{e}: {said}" if said else str(e), (e.stderr + "\n" + logs)[-8000:], e.layer
            )
        raise


def settle(wl: Servers, ctx: MeasureContext) -> None:
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        check_servers(wl, ctx)
        time.sleep(0.25)


def _instances(ctx: MeasureContext) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in ctx.art.glob("inst-*") if p.name.split("-")[1].isdigit())


# ---- the clients ----------------------------------------------------------------------


def run_phase(wl: Hooks[P], phase: str, params: P, load: Load, ctx: MeasureContext, record: JsonObject) -> Phase:
    """Every client of one phase at once; their wall and CPU time. A server that dies fails the trial."""
    out = ctx.art / wl.clients_dir / phase
    runs = wl.clients(phase, params, load, out, record)
    timeout = wl.phase_timeout_s(phase, params)
    t0 = time.monotonic()
    procs = [clients.start(c) for c in runs]
    results: dict[int, clients.ClientResult] = {}
    try:
        while len(results) < len(procs):
            check_servers(wl, ctx)
            for j, (p, c) in enumerate(zip(procs, runs)):
                if j not in results and clients.exited(p):
                    try:
                        results[j] = clients.wait(p, c.out_dir, phase, t0, timeout, wl.client_failure, wl.client_what)
                    except TrialFailure:
                        settle(wl, ctx)  # a server's death is the cause, not the client's failure
                        raise
            if time.monotonic() - t0 > timeout:
                raise TrialFailure("timeout", f"{wl.client_what}s ({phase}) ran beyond {timeout:.0f} s")
            time.sleep(POLL_S)
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                p.wait()
    wall = time.monotonic() - t0
    cpu = [results[j].cpu_s for j in range(len(runs))]
    return {
        "wall_s": round(wall, 3),
        "clients": [str(c.out_dir.relative_to(ctx.art)) for c in runs],
        "client_cpu_s": [round(c, 3) for c in cpu],
        "client_cpu_share": round(sum(cpu) / wall / (os.cpu_count() or 1), 4) if wall > 0 else None,
    }


def phase_doc(phase: Phase) -> JsonObject:
    """A phase as clients.json stores it."""
    return {
        "wall_s": phase["wall_s"],
        "clients": list(phase["clients"]),
        "client_cpu_s": list(phase["client_cpu_s"]),
        "client_cpu_share": phase["client_cpu_share"],
    }


def node_reader(running: Running) -> Callable[[str], str]:
    """How to read the servers' machine's /proc files: through the running on a node strata reaches through its
    agent (a Kubernetes node), else here."""
    return running.read if isinstance(running, ReadsNode) else read_file


def page_cache_bytes(running: Running) -> int | None:
    return memory.meminfo_bytes("Cached", node_reader(running))
