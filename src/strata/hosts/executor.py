"""Run a placed trial on the experiment's hosts: the runner's executor hook (runner.LocalTrials is the default).

For each trial: every host it places instances on must answer; each host's
clock offset is measured; the workload's image reaches every host that runs
containers; each host's part starts (its share of the instances, the same
stack, workload and load); the barrier releases them together (barrier.py);
the parts' results and artifacts come back under `trials/<id>/hosts/<host>/`;
merge.py makes the one result. A failure on one host is the trial's failure,
named after the host; a host lost ends the trial as `host_lost` within a
bounded time and the run goes on (a later trial finds the host again if its
agent came back).
"""

from __future__ import annotations

import dataclasses
import secrets
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from strata.core.errors import StrataError, TrialFailure, Unsupported
from strata.core.jsondoc import JsonObject, arr, obj, text
from strata.results import validity
from strata.results.flags import Failure
from strata.results.result import Result
from strata.run.trial import TIMEOUT_SLACK_S, base_result, failed_result, now_iso
from strata.stack.runtimes.docker.image import build_image_tarball
from strata.workloads.base import part_of

from . import barrier as bar
from . import storage
from .agent import shipped_files
from .client import AgentClient, AgentRefused, AgentUnreachable
from .clock import Offset
from .merge import PartOutcome, merge
from .part import PartRequest, output_doc

if TYPE_CHECKING:
    from strata.core.params import Layer, Load
    from strata.experiment.expand import Trial
    from strata.results.store import ResultStore

# A trial's record of each host it ran on (Result.hosts): node, instances, agent, clock, facts, part, go_at, role.
Hosts = dict[str, JsonObject]

# What a part's failure may be the effect of another's: a client that met a dead node on another host
# (tool_error, timeout) is not the cause when that host's part says its node died.
EFFECTS = ("tool_error", "timeout", "parse", "not_ready")
READY_TIMEOUT_S = 3600.0  # building a stack (an image load, mkfs of a large device) and preparing instances
SETTLE_S = 60.0  # after an abort, how long the other hosts get to stop and report


@dataclass
class HostAgent:
    """A host of the experiment and its agent, as deployed."""

    name: str
    node: JsonObject  # id, hostname, address (swarm.Node.to_json)
    client: AgentClient
    agent_id: str
    facts: JsonObject = field(default_factory=dict)  # the agent's answer to GET facts
    restarts: int = 0

    def describe(self) -> str:
        return f"host {self.name} (node {self.node.get('hostname', '?')}, {self.client.url})"


class HostTrials:
    def __init__(self, hosts: dict[str, HostAgent], lost_after_s: float = bar.LOST_AFTER_S, poll_s: float = bar.POLL_S):
        self.hosts, self.lost_after_s, self.poll_s = hosts, lost_after_s, poll_s
        self.runs: set[str] = set()

    @property
    def facts(self) -> JsonObject:
        return {h.name: {"node": h.node, "facts": h.facts, "restarts": h.restarts} for h in self.hosts.values()}

    def run(self, trial: Trial, store: ResultStore, run_id: str, experiment: str, host: JsonObject) -> Result:
        if trial.placement is None:
            raise StrataError(f"trial {trial.label} has no placement", "an experiment with hosts places every trial")
        self.runs.add(run_id)
        result = base_result(trial, run_id, experiment, host)
        result.labels["placement"] = trial.placement.name
        hosts: Hosts = {h: {"node": self.hosts[h].node, "instances": n} for h, n in trial.placement.instances}
        result.hosts = hosts
        result.started_at = now_iso()
        t0 = time.time()
        try:
            self._run(trial, store, run_id, experiment, result, hosts)
        except Unsupported as e:
            failed_result(result, "unsupported", str(e), status="unsupported")
        except TrialFailure as e:
            failed_result(result, e.category, str(e), e.stderr)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # a bug: kept in the result, the run goes on
            failed_result(result, "internal", f"{type(e).__name__}: {e}", traceback.format_exc())
        result.finished_at = now_iso()
        result.duration_s = time.time() - t0
        return result

    def _run(
        self, trial: Trial, store: ResultStore, run_id: str, experiment: str, result: Result, hosts: Hosts
    ) -> None:
        """The trial's parts on their hosts, merged into `result` (`hosts`: its record of each host)."""
        placement = trial.placement
        assert placement is not None, "run() turned a trial without a placement away"
        placed = placement.parts()
        agents = [self._alive(h) for h, _, _ in placed]
        offsets = {a.name: a.client.offset() for a in agents}
        for a in agents:
            hosts[a.name].update(
                agent=a.agent_id,
                clock={**offsets[a.name].to_json(), **obj(a.facts, "clock")},
                facts={k: v for k, v in a.facts.items() if k != "clock"},  # every node's host facts
            )
        # a host without instances needs no image, nor does a Kubernetes node (its pods pull from `images:`)
        self._ship_image(trial, [a for a, (_, n, _) in zip(agents, placed) if n > 0 and not a.node.get("kubernetes")])
        served = self._serve(trial, run_id, hosts)
        wl = trial.workload_plugin
        addresses = {a.name: text(a.node, "address") for a in agents}
        parts: list[bar.RemotePart] = []
        docs: dict[str, JsonObject] = {}
        for (h, n, first), a in zip(placed, agents):
            pid = f"{trial.id}-{h}-{secrets.token_hex(3)}"
            part_trial = part_trial_of(trial, a, *part_of(wl, trial.workload, trial.load, h, n, addresses), served)
            files: JsonObject = dict(shipped_files(trial.workload))
            docs[h] = PartRequest(pid, run_id, experiment, part_trial.resolved(), files, first).to_json()
            parts.append(bar.RemotePart(h, a.client, pid, a.agent_id, offsets[h].offset_s))
        b = bar.Barrier(parts, self.lost_after_s, self.poll_s)
        estimate_s = wl.estimate_s(trial.workload)
        margin_s = max(bar.GO_MARGIN_S, 8 * max(o.uncertainty_s for o in offsets.values()))  # 4 round trips
        try:
            self._through_barrier(b, docs, estimate_s, margin_s, hosts, served)
            art = store.artifacts_dir(trial.id)
            outcomes = self._fetch(parts, placed, offsets, art, hosts)
            failed = [o for o in outcomes if o.result.status != "ok"]
            if failed:
                raise cause(failed)
        except TrialFailure as e:
            raise self._storage_lost(served, e)
        merge(trial, outcomes, art, result)
        if served:
            hosts.setdefault(served.host, {}).update(served.to_json())
            cache = result.flags.cache
            if cache is not None:
                below = validity.cache_below(cache, served.moved(), served.host)
                result.flags.set(below.flag, below)
        self._drop(parts)

    def _serve(self, trial: Trial, run_id: str, hosts: Hosts) -> storage.Storage | None:
        """The trial's store served from its storage host (another host of the experiment), if it has one."""
        host = storage.storage_host(trial)
        if host is None:
            return None
        a = self._alive(host)
        served = storage.serve(trial, host, a.client, run_id)
        hosts.setdefault(host, {"node": a.node, "instances": 0})["role"] = "storage"
        return served

    def _storage_lost(self, served: storage.Storage | None, failure: TrialFailure) -> TrialFailure:
        """The part's failure, with the storage host's side of it: host_lost naming the storage host when
        it stopped answering, else what its target says."""
        if served is None:
            return failure
        host = self.hosts[served.host]
        try:
            agent = host.client.health().get("agent")
        except (AgentUnreachable, AgentRefused) as e:
            return TrialFailure("host_lost", f"{host.describe()}, the storage host, was lost: {e}")
        if served.agent_id and agent != served.agent_id:
            return TrialFailure("host_lost", f"{host.describe()}, the storage host, lost its agent and its target")
        if failure.category == "host_lost":
            return failure
        message = f"{failure}; on the storage host {served.host}: {served.target_state()}"
        return TrialFailure(failure.category, message, failure.stderr)

    def _alive(self, name: str) -> HostAgent:
        """The host's agent, answering now (a restarted one is taken as it is: its stacks are new)."""
        a = self.hosts[name]
        try:
            health = a.client.health()
        except (AgentUnreachable, AgentRefused) as e:
            raise TrialFailure("host_lost", f"{a.describe()} is not reachable: {e}")
        agent_id = health.get("agent")
        if agent_id != a.agent_id:
            a.agent_id, a.restarts = str(agent_id), a.restarts + 1
        return a

    def _ship_image(self, trial: Trial, agents: list[HostAgent]) -> None:
        """The workload's image in every host's image cache, when the runtime runs containers (from the image
        every container runtime loads: stack/runtimes/docker/image.py)."""
        if trial.runtime_plugin.isolation != "container":
            return
        tarball = build_image_tarball(trial.workload_plugin.image(trial.workload))
        for a in agents:
            try:
                if not a.client.has_image(tarball.name):
                    a.client.put_image(tarball)
            except (AgentUnreachable, AgentRefused) as e:
                raise TrialFailure("host_lost", f"{a.describe()}: the image {tarball.name} did not arrive: {e}")

    def _through_barrier(
        self,
        b: bar.Barrier,
        docs: dict[str, JsonObject],
        estimate_s: float,
        margin_s: float,
        hosts: Hosts,
        served: storage.Storage | None = None,
    ) -> None:
        try:
            b.start(docs)
            b.wait("ready", READY_TIMEOUT_S)
            if served:
                served.sample("ready")
            go_at = b.go(margin_s)
            for p in b.parts:  # what each host was told, in its own clock
                hosts[p.host]["go_at"] = go_at + p.offset_s
            b.wait("measured", 2 * estimate_s + TIMEOUT_SLACK_S + 60)
            b.release()
            b.wait("done", estimate_s + TIMEOUT_SLACK_S + 60)
            if served:
                served.sample("done")
        except bar.HostLost as e:
            self._stop(b, f"host {e.host} was lost: {e.reason}", {e.host}, hosts)
            raise TrialFailure("host_lost", f"{self.hosts[e.host].describe()} was lost during the trial: {e.reason}")
        except bar.PartEnded as e:
            self._stop(b, f"the part on host {e.host} failed", set(), hosts)
            failed = Failure.from_json(obj(e.status, "failed"))
            message = f"host {e.host}: {failed.message or 'its part ended before the start'}"
            if e.status.get("status") == "unsupported":
                raise Unsupported(message)
            raise TrialFailure(failed.category or "internal", message, failed.stderr)
        except bar.PartTimeout as e:
            self._stop(b, str(e), set(), hosts)
            raise TrialFailure("timeout", str(e))
        except TrialFailure as e:  # the storage host did not answer its sample
            self._stop(b, str(e), set(), hosts)
            raise

    def _stop(self, b: bar.Barrier, reason: str, lost: set[str], hosts: Hosts) -> None:
        """Abort every part, let the others stop, and keep what each said about itself."""
        b.abort(reason)
        b.settle(SETTLE_S, lost)
        for p in b.parts:
            entry = hosts[p.host]
            entry["part"] = {"state": "lost" if p.host in lost else p.state, **_brief(p.status)}
        self._drop([p for p in b.parts if p.host not in lost and p.state == "done"])

    def _fetch(
        self,
        parts: list[bar.RemotePart],
        placed: list[tuple[str, int, int]],
        offsets: dict[str, Offset],
        art: Path,
        hosts: Hosts,
    ) -> list[PartOutcome]:
        first = {h: f for h, _, f in placed}

        def one(p: bar.RemotePart) -> PartOutcome:
            try:
                doc = p.client.result(p.part_id)
                into = art / "hosts" / p.host
                p.client.artifacts(p.part_id, into)
            except (AgentUnreachable, AgentRefused) as e:
                raise TrialFailure("host_lost", f"{self.hosts[p.host].describe()}: its part's result was lost: {e}")
            part = Result.from_json(obj(doc, "result"))
            times = {k: float(v) for k, v in obj(doc, "times").items() if isinstance(v, (int, float))}
            hosts[p.host]["part"] = {
                "status": part.status,
                "started_at": part.started_at,
                "finished_at": part.finished_at,
                "duration_s": part.duration_s,
                "times": doc.get("times"),  # as the agent sent them
                "warnings": [{"flag": w["flag"], "message": w["message"]} for w in part.warnings],
                **({"failed": failed.to_json()} if (failed := part.flags.failed) else {}),
            }
            outputs = [output_doc(o) for o in arr(doc, "outputs")]
            return PartOutcome(p.host, first[p.host], part, outputs, into, offsets[p.host], times)

        with ThreadPoolExecutor(max_workers=len(parts)) as pool:
            return list(pool.map(one, parts))

    def _drop(self, parts: list[bar.RemotePart]) -> None:
        for p in parts:
            try:
                p.client.drop(p.part_id)
            except (AgentUnreachable, AgentRefused):
                pass

    def close(self) -> None:
        """Tear down the stacks every agent built for this run (an agent that is gone has nothing left to
        tear down here: its host's next agent, or `strata cleanup --hosts`, undoes its journal)."""
        for a in self.hosts.values():
            for run_id in self.runs:
                try:
                    a.client.close_run(run_id)
                except (AgentUnreachable, AgentRefused):
                    pass


def part_trial_of(
    trial: Trial, a: HostAgent, params: Layer, load: Load, served: storage.Storage | None = None
) -> Trial:
    """The trial one host's part runs: its share of the workload and load, no placement, its device served from
    the storage host, and on a Kubernetes node its pods pinned to that node (the agent is on this machine:
    kubenodes.py)."""
    part = dataclasses.replace(trial, workload=params, load=load, placement=None)
    if a.node.get("kubernetes"):
        part = dataclasses.replace(part, runtime=trial.runtime.model_copy(update={"node": text(a.node, "hostname")}))
    if served:
        part = dataclasses.replace(part, device=storage.part_device(trial, served))
    return part


def _brief(status: JsonObject) -> JsonObject:
    return {k: status[k] for k in ("status", "failed", "times") if k in status}


def cause(failed: list[PartOutcome]) -> Exception:
    """The trial's failure from its failed parts: a cause (a node that died) before its effects elsewhere
    (the clients that met it), else the first in the placement's order."""
    return _part_failure(min(failed, key=lambda o: _category(o) in EFFECTS))


def _category(o: PartOutcome) -> str | None:
    failed = o.result.flags.failed
    return failed.category if failed else None


def _part_failure(o: PartOutcome) -> Exception:
    failed = o.result.flags.failed or Failure()
    message = f"host {o.host}: {failed.message or o.result.status}"
    if o.result.status == "unsupported":
        return Unsupported(message)
    return TrialFailure(failed.category or "internal", message, failed.stderr)
