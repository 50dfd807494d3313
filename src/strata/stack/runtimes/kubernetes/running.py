"""instances.Running over the pods of one trial: created, held at the barrier, released, waited for.

The pods run docker's wrapper (cmdline.WRAPPER) with the out and sync dirs as hostPath volumes, so the
barrier, the start and end stamps and the outputs are files on this machine, read as a container's
are. The pod's phase and its container's state say how it ended: OOMKilled is `oom`; evicted,
deleted or unable to start is `instance_died` (pods.pod_end). Each pod writes its /proc/self/cgroup
into its out dir before the barrier: under cgroup v1 those are the host's paths of its container's
cgroups, which the collectors sample as they sample a container's.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from strata.core import release
from strata.core.errors import StrataError, TrialFailure
from strata.core.instances import InstanceOutput, InstanceRequest, Watch
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text, whole
from strata.core.params import Limits
from strata.stack.journal import Journal
from strata.stack.kube.api import Api, ApiError
from strata.stack.procfs import cgroups_of
from strata.stack.runtimes.docker.cmdline import PREPARE_FAILED
from strata.stack.runtimes.docker.containers import read_time, tail

from . import pods
from .agent import AgentError
from .cluster import Cluster, intent
from .remote import Remote

POLL_S = 0.5
GONE_TIMEOUT_S = 120


@dataclass
class Pod:
    name: str
    request: InstanceRequest
    deleted: bool = False
    seq: int | None = None  # its journal entry


@dataclass
class OnNode:
    """A trial's files on a node strata reaches through its agent: the trial's directory under the run's root
    there, its sync directory, and each instance's out directory (by index), as the agent names them."""

    remote: Remote
    trial: str  # relative to the run's root on the node
    outs: dict[int, str]

    @property
    def sync(self) -> str:
        return f"{self.trial}/sync"

    def sync_path(self) -> str:
        return self.remote.node_path(self.sync)

    def out_path(self, index: int) -> str:
        return self.remote.node_path(self.outs[index])


class PodSession(Protocol):
    """What the pods of a trial need of their session (session.py): the cluster and namespace they run in, the
    journal, its watch of the test bed, and the trials it runs."""

    cluster: Cluster
    namespace: str
    journal: Journal
    running: list[KubeRunning]

    def watch(self) -> tuple[str, str] | None: ...
    @property
    def agent_gone(self) -> bool: ...  # strata's agent on the node ended: the session reaches it no more


class KubeRunning:
    def __init__(self, session: PodSession, sync_dir: Path, limits: Limits, on_node: OnNode | None = None) -> None:
        self.session = session
        self.sync_dir = sync_dir
        self.limits = limits
        self.on_node = on_node  # a node strata reaches through its agent: the files are there
        self._seen_ready: dict[str, bool] = {}  # the agent's last answer: each waiting pod's `ready` file
        self.pods: list[Pod] = []
        self.cgroups: list[dict[str, str]] = []
        # called once every pod is ready (a claim bound by its first pod: its facts)
        self.on_ready: Callable[[], None] | None = None

    @property
    def api(self) -> Api:
        return self.session.cluster.api

    def _path(self, p: Pod) -> str:
        return f"/api/v1/namespaces/{self.session.namespace}/pods/{p.name}"

    def _get(self, p: Pod) -> JsonObject | None:
        try:
            return self.api.get(self._path(p))
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def create(self, manifests: list[tuple[Pod, JsonObject]]) -> None:
        if self.on_node is not None:  # each instance's staged out dir, and the sync dir, on the node
            agent = self.on_node.remote.agent
            agent.mkdirs([self.on_node.sync])
            for p, _ in manifests:
                agent.put_dir(p.request.out_dir, self.on_node.outs[p.request.index])
        for p, m in manifests:
            p.seq = intent(self.session.cluster, self.session.journal, self._path(p))
            self.pods.append(p)
            self.api.post(f"/api/v1/namespaces/{self.session.namespace}/pods", m)

    # -- instances.Running ------------------------------------------------------------------------

    def ready(self, timeout_s: float) -> None:
        """Every pod scheduled, started and past its prepare step (its `ready` file), or why not."""
        deadline = time.monotonic() + timeout_s
        waiting = list(self.pods)
        while waiting:
            waiting = [p for p in waiting if not self._ready(p, waiting)]
            for p in waiting:
                pod = self._get(p)
                end = pods.pod_end(pod)
                code = _exit_code(pod)
                if end is not None or code is not None:
                    self.stop()
                    if end is not None:
                        raise TrialFailure(*end, _describe(pod))
                    what = "its prepare step failed" if code == PREPARE_FAILED else f"it exited {code} before the start"
                    raise TrialFailure(
                        "prepare", f"instance {p.request.index}: {what}", tail(p.request.out_dir / "stderr")
                    )
            self._check_session()
            if waiting and time.monotonic() > deadline:
                detail = "\n".join(_describe(self._get(p)) for p in waiting[:3])
                self.stop()
                raise TrialFailure(
                    "timeout", f"{len(waiting)} pod(s) were not ready {timeout_s:.0f} s after they were created", detail
                )
            if waiting:
                time.sleep(0.1)
        self.cgroups = [self._cgroups(p) for p in self.pods]
        if self.on_ready is not None:
            self.on_ready()

    def go(self) -> float:
        if self.on_node is not None:  # in the node's clock: the pods compare their start with it there
            return self.on_node.remote.agent.go(self.on_node.sync, release.LEAD_S)
        return release.release(self.sync_dir)

    def read(self, path: str) -> str:
        """A /proc or /sys file of the node the pods run on, for the collectors (core/instances.py ReadsNode)."""
        if self.on_node is not None:
            return self.on_node.remote.agent.read(path)
        return Path(path).read_text()

    def signal(self, name: str) -> None:
        """A file of the workload's in the sync dir (a server's turn to start, its stop), where the pods see it
        (core/instances.py FilesElsewhere)."""
        (self.sync_dir / name).touch()
        if self.on_node is not None:
            with tempfile.TemporaryDirectory() as d:
                (Path(d) / name).touch()
                self.on_node.remote.agent.put_dir(Path(d), self.on_node.sync)

    def output(self, index: int, name: str) -> str:
        """A file of instance `index`'s out dir while its pod runs (a server's log): on the node, through its agent,
        up to the agent's 1 MiB a file."""
        p = next((p for p in self.pods if p.request.index == index), None)
        if p is None:
            raise OSError(f"no instance {index}")
        if self.on_node is not None:
            try:
                return self.on_node.remote.agent.cat(f"{self.on_node.outs[index]}/{name}")
            except AgentError as e:  # not there yet, or past 1 MiB
                raise OSError(str(e)) from None
        return (p.request.out_dir / name).read_text(errors="replace")

    def uids(self) -> list[str]:
        """Each pod's uid, in the instances' order (the agent finds a pod's volumes by it)."""
        return [text(obj(self._get(p) or {}, "metadata"), "uid") for p in self.pods]

    def wait(self, timeout_s: float, watch: Watch | None = None) -> list[InstanceOutput]:
        deadline = time.monotonic() + timeout_s
        codes: dict[str, int] = {}
        while len(codes) < len(self.pods):
            for p in self.pods:
                if p.name in codes:
                    continue
                pod = self._get(p)
                end = pods.pod_end(pod)
                if end is not None:
                    self.stop()
                    raise TrialFailure(*end, tail(p.request.out_dir / "stderr"))
                code = _exit_code(pod)
                if code is not None:
                    codes[p.name] = code
            problem = self._problem(watch)
            if problem is not None:
                self.stop()
                raise problem
            if len(codes) < len(self.pods):
                if time.monotonic() > deadline:
                    self.stop()
                    raise TrialFailure(
                        "timeout",
                        f"{len(self.pods) - len(codes)} pod(s) still ran {timeout_s:.0f} s after their expected end",
                    )
                time.sleep(POLL_S)
        self._fetch()
        outputs = [self._output(p, codes[p.name]) for p in self.pods]
        self.stop()
        return outputs

    def check(self, watch: Watch | None = None) -> None:
        problem = self._problem(watch)
        if problem is not None:
            raise problem
        for p in self.pods:
            pod = self._get(p)
            end = pods.pod_end(pod)
            if end is not None:
                raise TrialFailure(*end, tail(p.request.out_dir / "stderr"))
            code = _exit_code(pod)
            if code is not None:
                raise TrialFailure(
                    "instance_died",
                    f"instance {p.request.index} (pod {p.name}) ended with code {code} while it should have run",
                    tail(p.request.out_dir / "stderr"),
                )

    def _ready(self, p: Pod, waiting: list[Pod]) -> bool:
        """Whether the pod passed its prepare step (its `ready` file), asked of the node's agent for all the
        waiting pods at once."""
        if self.on_node is None:
            return (p.request.out_dir / "ready").exists()
        if p is waiting[0]:
            rels = [f"{self.on_node.outs[w.request.index]}/ready" for w in waiting]
            self._seen_ready = self.on_node.remote.agent.exists(rels)
        return self._seen_ready.get(f"{self.on_node.outs[p.request.index]}/ready", False)

    def _cgroups(self, p: Pod) -> dict[str, str]:
        if self.on_node is None:
            return _cgroups(p.request.out_dir)
        with contextlib.suppress(AgentError, StrataError, ValueError):
            return cgroups_of(self.on_node.remote.agent.cat(f"{self.on_node.outs[p.request.index]}/proc-cgroup"))
        return {}

    def _fetch(self) -> None:
        """The instances' outputs from the node into their out dirs here, where the workload parses them."""
        if self.on_node is None:
            return
        for p in self.pods:
            self.on_node.remote.agent.get_dir(self.on_node.outs[p.request.index], p.request.out_dir)

    def stop(self) -> None:
        """Delete every pod of this trial and wait until they are gone (their mounts with them)."""
        live = [p for p in self.pods if not p.deleted]
        for p in live:
            with contextlib.suppress(ApiError, OSError):
                self.api.delete(self._path(p) + "?gracePeriodSeconds=0")
        deadline = time.monotonic() + GONE_TIMEOUT_S
        for p in live:
            while time.monotonic() < deadline:
                try:
                    if self.api.gone(self._path(p)):
                        if p.seq is not None:
                            self.session.journal.release(p.seq)
                        break
                except (ApiError, OSError):
                    break  # the cluster is going away: its undo (journaled) removes the pod
                time.sleep(0.2)
            p.deleted = True
        if self.on_node is not None and live:  # the trial's files on the node (its outputs were fetched)
            with contextlib.suppress(AgentError, OSError):
                self.on_node.remote.agent.remove(self.on_node.trial)
        with contextlib.suppress(ValueError):
            self.session.running.remove(self)

    # -- helpers ----------------------------------------------------------------------------------

    def _check_session(self) -> None:
        failure = self.session.watch()
        if failure is not None:
            with contextlib.suppress(Exception):
                self.stop()
            raise self._failure(failure)

    def _problem(self, watch: Watch | None) -> TrialFailure | None:
        failure = self.session.watch() or (watch() if watch else None)
        return self._failure(failure) if failure else None

    def _failure(self, failure: tuple[str, str]) -> TrialFailure:
        """The trial's failure; with the session's agent gone, its runtime built again for the next trial (a new
        agent placed on the node)."""
        return TrialFailure(*failure, layer="runtime" if self.session.agent_gone else None)

    def _output(self, p: Pod, code: int) -> InstanceOutput:
        out = p.request.out_dir
        return InstanceOutput(
            p.request.index, out, code, tail(out / "stderr"), read_time(out / "start"), read_time(out / "end")
        )


def _exit_code(pod: JsonObject | None) -> int | None:
    """The instance container's exit code once it ended on its own; None while it runs."""
    for cs in map(as_obj, arr(obj(pod or {}, "status"), "containerStatuses")):
        ended = obj(cs, "state").get("terminated")
        if ended is not None:
            return whole(as_obj(ended, "terminated"), "exitCode", 0)
    return None


def _describe(pod: JsonObject | None) -> str:
    if pod is None:
        return "the pod is gone"
    st = obj(pod, "status")
    conds = "; ".join(
        f"{c.get('type')}={c.get('status')} {c.get('message', '')}".strip() for c in map(as_obj, arr(st, "conditions"))
    )
    states = "; ".join(str(cs.get("state")) for cs in map(as_obj, arr(st, "containerStatuses")))
    name = text(obj(pod, "metadata"), "name")
    return f"pod {name}: phase {st.get('phase')} {st.get('reason', '')} {conds} {states}"[:1500]


def _cgroups(out_dir: Path) -> dict[str, str]:
    """controller -> the pod's container cgroup dir on this host, from the /proc/self/cgroup it wrote."""
    f = out_dir / "proc-cgroup"
    with contextlib.suppress(OSError, ValueError, StrataError):
        return cgroups_of(f.read_text())
    return {}
