"""The experiment's hosts as nodes of a Kubernetes cluster: one strata agent per node, on this machine.

A host may be a node of the kubernetes runtime's cluster (`hosts: {a: {kubernetes: NODE}}`). strata reaches such
a node only through the API server (docs/kubernetes.md): the kubernetes runtime runs a trial's pods there, and
strata's node agent holds their files, releases their barrier and reads the node's disks. A trial across nodes
is then what a trial across Swarm hosts is (executor.py): a part per node, behind one barrier, merged into one
result with each node's metrics and checks. The agent that runs a node's part is strata's host agent
(agent.py), as on a Swarm node, but on this machine: one process per node, listening on 127.0.0.1 only, which
runs its parts with the kubernetes runtime pinned to its node (the executor sets the part's `node:`).

Each agent has a state dir and a workdir of its own under the run's (its journal, its stacks): two agents never
share one. Each is journaled before it starts; its undo stops it (SIGTERM: it aborts its part and tears its
stacks down, the pods, claims and namespace with them), kills it if it has not stopped in time, then undoes what
its journal still holds and removes its directories.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.stack.journal import Journal, Undos, state_dir
from strata.stack.procfs import signal_and_wait

from .client import AgentClient, AgentRefused, AgentUnreachable
from .executor import HostAgent

if TYPE_CHECKING:
    from strata.experiment.model import Experiment
    from strata.stack.runtimes.kubernetes.params import KubernetesParams

HEALTH_TIMEOUT_S = 60.0  # a local process: its imports and the first facts (tool versions)
STOP_S = 180.0  # an agent stopped aborts its part and deletes its pods, claims and namespace before it exits
AGENT_MODULE = "strata.hosts.main"


def is_kubernetes(exp: Experiment) -> bool:
    """The experiment's hosts are Kubernetes nodes (experiment/hosts.py checks that all are, or none)."""
    return any(spec.kubernetes is not None for spec in exp.hosts.values())


def runtime_params(exp: Experiment) -> KubernetesParams:
    """The cluster the nodes belong to: the experiment's kubernetes runtime (one cluster: the first's)."""
    from strata.stack.runtimes.kubernetes.params import KubernetesParams

    for r in exp.runtimes:
        if isinstance(r, KubernetesParams) and r.kubeconfig is not None:
            return r
    raise StrataError(
        "the experiment's hosts are Kubernetes nodes, but no runtime is kubernetes with a kubeconfig",
        "give the kubernetes runtime the cluster's `kubeconfig:`",
    )


def resolve_nodes(exp: Experiment) -> dict[str, JsonObject]:
    """Each host's node: {hostname, address, kubernetes: True}, each Ready and schedulable for the run's pods,
    no node twice."""
    from strata.stack.runtimes.kubernetes.cluster import connect
    from strata.stack.runtimes.kubernetes.remote import choose_node

    params = runtime_params(exp)
    cluster = connect(params.kubeconfig or "", params.context)
    tolerations = params.toleration_docs()
    found: dict[str, JsonObject] = {}
    for name, spec in exp.hosts.items():
        try:
            node = choose_node(cluster, spec.kubernetes, tolerations)
        except StrataError as e:
            raise StrataError(f"host {name}: {e.problem}", e.fix) from None
        doc = cluster.api.get(f"/api/v1/nodes/{node}")
        internal = [
            text(a, "address")
            for a in map(as_obj, arr(obj(doc, "status"), "addresses"))
            if a.get("type") == "InternalIP"
        ]
        found[name] = {"hostname": node, "address": internal[0] if internal else "", "kubernetes": True}
    names = [text(n, "hostname") for n in found.values()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise StrataError(
            f"two hosts of the experiment are one node: {', '.join(twice)}",
            "name each node once (a label selector names the first node it selects)",
        )
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agent_argv(host: str, port: int, state: Path, work: Path) -> list[str]:
    """The agent of one node, on this machine: `strata.hosts.main serve` on 127.0.0.1."""
    return [
        sys.executable, "-m", AGENT_MODULE, "serve", "--host", host, "--address", "127.0.0.1",
        "--port", str(port), "--state-dir", str(state), "--workdir", str(work),
    ]  # fmt: skip


def _agents_of(state: str) -> list[int]:
    """The pids of the local agents whose state dir is `state` (their command line names it)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if AGENT_MODULE.encode() in argv and state.encode() in argv:
            pids.append(int(p.name))
    return pids


def _undo_agent(data: JsonObject) -> None:
    """Stop a node's local agent (it tears its stacks down), kill it after STOP_S, then undo what its journal
    still holds and remove its directories."""
    from strata.run.undo import undo_actions
    from strata.stack.journal import cleanup as journal_cleanup

    state = text(data, "state")
    stuck = signal_and_wait(_agents_of(state), signal.SIGTERM, STOP_S)
    signal_and_wait(stuck, signal.SIGKILL, 30)
    if Path(state).is_dir():
        lines: list[str] = []
        journal_cleanup(Path(state) / "agent", log=lines.append, undo=undo_actions())
        left = list((Path(state) / "agent" / "journal").glob("*.jsonl"))
        if left:
            raise RuntimeError(f"the agent's journal {left[0]} still holds resources: {'; '.join(lines)[-400:]}")
    for d in (state, text(data, "workdir")):
        _remove(Path(d))


def _remove(d: Path) -> None:
    """A directory of the agent's, unless something is still mounted under it (its journal failed to undo)."""
    mounted = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines() if len(ln.split()) > 1]
    under = [m for m in mounted if m == str(d) or m.startswith(f"{d}/")]
    if under:
        raise RuntimeError(f"{under[0]} is still mounted under {d}: left for `strata cleanup` to undo first")
    shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def node_agents(
    exp: Experiment, journal: Journal, log: Callable[[str], None] = print
) -> Iterator[dict[str, HostAgent]]:
    """One local agent per host (a Kubernetes node), answering; stopped, and what each left undone, on exit."""
    nodes = resolve_nodes(exp)
    token = secrets.token_hex(16)
    run = secrets.token_hex(3)
    root = state_dir() / "kube-agents"
    started: list[tuple[int, JsonObject, subprocess.Popen[bytes]]] = []
    try:
        for name, spec in exp.hosts.items():
            state = root / f"{run}-{name}"
            work = spec.workdir_of(name, exp.workdir)
            data: JsonObject = {"state": str(state), "workdir": str(work), "host": name}
            seq = journal.intent("kube-agent", **data)
            state.mkdir(parents=True, exist_ok=True)
            work.mkdir(parents=True, exist_ok=True)
            port = _free_port()
            env = {**os.environ, "STRATA_AGENT_TOKEN": token, "STRATA_STATE_DIR": str(state)}
            with open(state / "agent.log", "ab") as out:
                proc = subprocess.Popen(
                    agent_argv(name, port, state, work), env=env, stdout=out, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            started.append((seq, data, proc))
            data["url"] = f"http://127.0.0.1:{port}"
        found = {}
        for (_, data, proc), name in zip(started, exp.hosts):
            client = AgentClient(text(data, "url"), token, name)
            found[name] = _answering(name, nodes[name], client, proc, Path(text(data, "state")))
            log(f"kubernetes: host {name} on node {nodes[name]['hostname']}: agent {found[name].agent_id}")
        yield found
    finally:
        for seq, data, _ in reversed(started):
            try:
                _undo_agent(data)
            finally:
                journal.release(seq)


def _answering(
    name: str, node: JsonObject, client: AgentClient, proc: subprocess.Popen[bytes], state: Path
) -> HostAgent:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            health = client.health()
            return HostAgent(name, node, client, text(health, "agent"), client.facts())
        except (AgentUnreachable, AgentRefused) as e:
            last = str(e)
            time.sleep(0.3)
    tail = (state / "agent.log").read_text(errors="replace")[-1500:] if (state / "agent.log").exists() else ""
    raise StrataError(
        f"host {name}: the agent for node {node['hostname']} did not answer at {client.url} "
        f"({'it exited ' + str(proc.returncode) if proc.poll() is not None else last}): {tail}",
        "read its log above; `strata doctor` checks this machine",
    )


# The undo action of the kind the manager journals (`strata cleanup` declares it beside the plugins').
UNDO: Undos = {"kube-agent": _undo_agent}
