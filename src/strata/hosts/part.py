"""One part of a trial on one host: the local trial code, behind a barrier that spans hosts.

An agent runs its host's share of a trial's instances with `trial.run_trial`,
the code of a local run (StackCache, the layers' plugins, the workload's
`measure`, the collectors, the validity judgement of this host's evidence).
Two things are wrapped, nothing else:

- the runtime session's `start` returns instances whose barrier is the
  manager's: `ready()` prepares them here, says "ready" and waits for the
  manager's go, which carries a wall-clock start time in this host's clock;
  `go()` sleeps until then and releases them (so every host starts together,
  to within the clocks' offsets, which the manager measures and records);
- the session's `watch` also reports an abort from the manager (another host
  was lost): the instances here stop at once, as when a local layer dies.

A server workload (`ServerWorkload`: ycsb) starts, loads and warms
up its servers before it measures, which takes each host its own time; its
instances are released here at once and the barrier is where its `measure`
calls `rendezvous(running)` (workloads/base.py), so that the measured phases of
every host run together, not merely the servers' starts. Such a workload meets
the others once more when it has measured (`rendezvous(running, "measured")`):
a host whose servers another host's clients use (the nodes of a cluster that
spans hosts) keeps them up, and keeps collecting, until every part measured
and the manager releases them all.

States a part goes through: starting -> ready -> running -> [measured ->] done
(a part that fails before its barrier goes straight to done, with its failed
result).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput, InstanceRequest, Rendezvous, Running
from strata.core.jsondoc import JsonObject, JsonValue, as_obj, num, obj, text, whole
from strata.core.params import Load
from strata.results.result import Result
from strata.stack.nostack import NoDevice, NoMount, NoSession, no_stack
from strata.workloads.base import ServerWorkload

if TYPE_CHECKING:
    from strata.experiment.expand import Trial
    from strata.stack.blockdev import DeviceHandle
    from strata.stack.filesystems.base import Mounted
    from strata.stack.paths import PathHandle
    from strata.stack.provision import StackCache
    from strata.stack.runtimes.base import RuntimeSession

STATES = ("starting", "ready", "running", "measured", "done")
CHECK_S = 0.5  # how often a part waiting to be released looks at its own instances
# A go more than this far in the future is a manager's mistake, not a start time.
MAX_GO_DELAY_S = 60.0


class OutputDoc(TypedDict):
    """One instance's output as an agent reports it with its part's result (agent.py part_result)."""

    index: int
    out_dir: str  # relative to the part's artifacts
    returncode: int
    stderr: str
    start_time_s: float | None
    end_time_s: float | None
    facts: JsonObject


def output_doc(v: JsonValue) -> OutputDoc:
    """One member of a part result's `outputs`, read back on the manager (a missing stderr or facts is empty)."""
    o = as_obj(v, "an instance's output")
    return {
        "index": whole(o, "index") or 0,
        "out_dir": text(o, "out_dir"),
        "returncode": whole(o, "returncode") or 0,
        "stderr": text(o, "stderr"),
        "start_time_s": num(o, "start_time_s"),
        "end_time_s": num(o, "end_time_s"),
        "facts": obj(o, "facts"),
    }


@dataclass(frozen=True)
class PartRequest:
    """What the manager sends an agent to start a part (executor.py -> agent.py start_part)."""

    part: str
    run: str
    experiment: str
    trial: JsonObject  # the part's Trial.resolved()
    files: JsonObject  # the files its workload's parameters name on the manager: {path: base64}
    first_index: int = 0
    go_timeout_s: float | None = None  # the agent's default unless given (tests shorten it)

    def to_json(self) -> JsonObject:
        doc: JsonObject = {
            "part": self.part,
            "run": self.run,
            "experiment": self.experiment,
            "trial": self.trial,
            "files": self.files,
            "first_index": self.first_index,
        }
        if self.go_timeout_s is not None:
            doc["go_timeout_s"] = self.go_timeout_s
        return doc

    @classmethod
    def from_json(cls, doc: JsonObject) -> PartRequest:
        return cls(
            text(doc, "part"),
            text(doc, "run"),
            text(doc, "experiment"),
            obj(doc, "trial"),
            obj(doc, "files"),
            whole(doc, "first_index") or 0,
            num(doc, "go_timeout_s"),
        )


class Part:
    """A part's state, shared by the thread that runs it and the requests that follow it."""

    def __init__(self, part_id: str, host: str, go_timeout_s: float):
        self.id, self.host, self.go_timeout_s = part_id, host, go_timeout_s
        self.state = "starting"
        self.start_at: float | None = None  # this host's clock
        self.released = False  # after "measured": every part measured, the servers may stop
        self.aborted: str | None = None
        self.result: Result | None = None
        self.outputs: list[InstanceOutput] = []
        self.times: dict[str, float] = {"created": time.time()}
        self._cond = threading.Condition()

    def set_state(self, state: str) -> None:
        with self._cond:
            self.state = state
            self.times[state] = time.time()
            self._cond.notify_all()

    def wait_state(self, want: str, timeout_s: float) -> str:
        """Block until the part reached `want` (or is done), at most `timeout_s`; the state then."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while STATES.index(self.state) < STATES.index(want) and self.state != "done":
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self.state

    def go(self, start_at: float) -> None:
        with self._cond:
            self.start_at = start_at
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self.released = True
            self._cond.notify_all()

    def wait_release(self, check: Callable[[], None] | None = None) -> None:
        """Until the manager releases the measured parts (every one measured); `check` raises the trial's
        failure meanwhile (a local server died), an abort raises host_lost."""
        deadline = time.monotonic() + self.go_timeout_s
        with self._cond:
            while not self.released and self.aborted is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TrialFailure(
                        "host_lost",
                        f"host {self.host}: the manager did not release the part within {self.go_timeout_s:.0f} s",
                    )
                if check is not None:
                    self._cond.release()
                    try:
                        check()
                    finally:
                        self._cond.acquire()
                self._cond.wait(min(left, CHECK_S))
            if self.aborted:
                raise TrialFailure("host_lost", self.aborted)

    def abort(self, reason: str) -> None:
        with self._cond:
            self.aborted = self.aborted or reason
            self._cond.notify_all()

    def wait_go(self) -> float:
        """The start time the manager sent; raises the trial's failure on an abort or no go in time."""
        deadline = time.monotonic() + self.go_timeout_s
        with self._cond:
            while self.start_at is None and self.aborted is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TrialFailure(
                        "host_lost", f"host {self.host}: the manager sent no go within {self.go_timeout_s:.0f} s"
                    )
                self._cond.wait(left)
            if self.aborted:
                raise TrialFailure("host_lost", self.aborted)
            assert self.start_at is not None  # the loop ended on a go or an abort
            return self.start_at

    def status(self) -> JsonObject:
        doc: JsonObject = {"part": self.id, "state": self.state, "times": dict[str, JsonValue](self.times)}
        if self.result is not None:
            doc["status"] = self.result.status
            failed = self.result.flags.failed
            doc["failed"] = failed.to_json() if failed else None
        return doc


class BarrierRunning(Rendezvous):
    """The local instances, released at the manager's start time instead of at once (or, for a workload
    whose barrier is at its measured phase, at once, and that phase waits for the manager instead)."""

    def __init__(self, inner: Running, part: Part, at_measure: bool = False) -> None:
        self.inner, self.part, self.at_measure = inner, part, at_measure

    def __getattr__(self, name: str) -> Any:  # cgroups, and whatever else a runtime's instances offer
        return getattr(self.inner, name)

    def ready(self, timeout_s: float) -> None:
        self.inner.ready(timeout_s)
        if not self.at_measure:
            self._meet()

    def go(self) -> float:
        if not self.at_measure:
            self._start()
        return self.inner.go()

    def rendezvous(self, point: str = "measure", check: Callable[[], None] | None = None) -> None:
        """The workload is about to measure (or has measured): here is the barrier, when the workload put it here."""
        if not self.at_measure:
            return
        if point == "measured":
            self.part.set_state("measured")
            self.part.wait_release(check)
            return
        self._meet()
        self._start()

    def _meet(self) -> None:
        self.part.set_state("ready")
        self.part.wait_go()

    def _start(self) -> None:
        start_at = self.part.start_at
        assert start_at is not None, "_meet waited for the go"
        delay = min(MAX_GO_DELAY_S, start_at - time.time())
        if delay > 0:
            time.sleep(delay)
        self.part.set_state("running")

    def report(self, outputs: list[InstanceOutput]) -> None:
        """What the workload's measure returned: the instances' outputs (and, on a host that runs only a
        server workload's clients, theirs), sent to the manager with the part's result."""
        self.part.outputs = outputs

    def stop(self) -> None:
        self.inner.stop()


class BarrierSession:
    """The runtime session, whose instances wait for the manager and whose watch hears its aborts."""

    def __init__(self, inner: RuntimeSession | NoSession, part: Part, at_measure: bool = False) -> None:
        self.inner, self.part, self.at_measure = inner, part, at_measure

    def __getattr__(self, name: str) -> Any:  # name, facts, path, target, and a plugin's extras
        return getattr(self.inner, name)

    def start(self, requests: list[InstanceRequest], handle: PathHandle, load: Load, sync_dir: Path) -> BarrierRunning:
        return BarrierRunning(self.inner.start(requests, handle, load, sync_dir), self.part, self.at_measure)

    def watch(self) -> tuple[str, str] | None:
        if self.part.aborted:
            return ("host_lost", self.part.aborted)
        return self.inner.watch()


class BarrierStacks:
    """The agent's StackCache, handing out sessions wrapped for one part."""

    def __init__(self, stacks: StackCache, part: Part) -> None:
        self.stacks, self.part = stacks, part

    def get(self, trial: Trial) -> tuple[DeviceHandle | NoDevice, Mounted | NoMount, BarrierSession]:
        wl = trial.workload_plugin
        built = wl.instances(trial.workload, trial.load) > 0  # a host that runs only clients builds nothing
        device, mounted, session = self.stacks.get(trial) if built else no_stack()
        at_measure = isinstance(wl, ServerWorkload)  # its parts meet in its measure, after its servers started
        return device, mounted, BarrierSession(session, self.part, at_measure)

    def died(self, trial: Trial, layer: str) -> None:
        if trial.workload_plugin.instances(trial.workload, trial.load) > 0:
            self.stacks.died(trial, layer)
