"""The barrier that spans hosts, on the manager's side: every part ready, one go, every part done.

1. Each host's part starts (its agent builds the stack, once per run, and
   prepares its instances: fio lays out its files) and waits at its barrier.
2. The manager waits until every part says ready. A part that ends before
   (a failure) ends the trial: the others are aborted.
3. It picks a start time `GO_MARGIN_S` ahead (more if a round trip is slow)
   and sends each host that time in the host's own clock (clock.py).
4. It follows every part until it measured (a part whose workload does not
   wait there is done), releases them all together (a host's servers that
   another host's clients use stop only then), and follows them until done.

Throughout, every agent must answer. One that stays silent for
`LOST_AFTER_S` (dead, its node gone, its network cut), or answers as another
agent (Swarm restarted it: its part is gone), ends the trial as `host_lost`
naming the host; the others are aborted and stop at once. A loss is seen at
most `LOST_AFTER_S` + `POLL_S` + the HTTP timeout after the last answer.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable

from strata.core.jsondoc import JsonObject, text

from .client import AgentClient, AgentRefused, AgentUnreachable
from .part import STATES

LOST_AFTER_S = 10.0
POLL_S = 2.0
RETRY_S = 0.5
GO_MARGIN_S = 1.0  # for the go to reach every host and each host's collectors to start


class HostLost(Exception):
    def __init__(self, host: str, reason: str):
        self.host, self.reason = host, reason
        super().__init__(f"host {host} was lost: {reason}")


class PartEnded(Exception):
    """A part ended (failed, or unsupported) before the barrier let it start."""

    def __init__(self, host: str, status: JsonObject):
        self.host, self.status = host, status
        super().__init__(f"the part on host {host} ended {status.get('status')} before the start")


class PartTimeout(Exception):
    def __init__(self, host: str, want: str, timeout_s: float):
        self.host = host
        super().__init__(f"the part on host {host} was not {want} within {timeout_s:.0f} s")


@dataclass
class RemotePart:
    host: str
    client: AgentClient
    part_id: str
    agent_id: str
    offset_s: float = 0.0  # the host's clock minus the manager's
    state: str = "new"
    status: JsonObject = field(default_factory=dict)  # the part's last answer (part.Part.status)


def _reached(state: str, want: str) -> bool:
    return state in STATES and STATES.index(state) >= STATES.index(want)


class Barrier:
    def __init__(self, parts: list[RemotePart], lost_after_s: float = LOST_AFTER_S, poll_s: float = POLL_S):
        self.parts, self.lost_after_s, self.poll_s = parts, lost_after_s, poll_s

    def start(self, docs: dict[str, JsonObject]) -> None:
        """Start every part (docs by host: a part.PartRequest's JSON each); a host that cannot take its part is lost."""

        def one(p: RemotePart) -> None:
            try:
                p.status = p.client.start_part(docs[p.host])
                p.state = text(p.status, "state", "starting")
            except AgentUnreachable as e:
                raise HostLost(p.host, f"its agent did not take the part: {e}")

        self._each(one, self.parts)

    def wait(self, want: str, timeout_s: float) -> None:
        """Until every part reached `want` (a part done counts, unless it failed before it was ready); raises
        HostLost, PartEnded, PartTimeout at the first of them."""
        deadline = time.monotonic() + timeout_s
        stop = threading.Event()
        pending = [p for p in self.parts if not _reached(p.state, want)]
        if not pending:
            return
        pool = ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="strata-barrier")
        try:
            futures = [pool.submit(self._follow, p, want, deadline, timeout_s, stop) for p in pending]
            for f in as_completed(futures):
                f.result()
        finally:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)  # a follower in a request ends with it

    def _follow(self, p: RemotePart, want: str, deadline: float, timeout_s: float, stop: threading.Event) -> None:
        last_ok = time.monotonic()
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                raise PartTimeout(p.host, want, timeout_s)
            try:
                st = p.client.part(p.part_id, want, round(min(self.poll_s, left), 3))
            except AgentUnreachable as e:
                silent_s = time.monotonic() - last_ok
                if silent_s >= self.lost_after_s:
                    raise HostLost(p.host, f"its agent did not answer for {silent_s:.0f} s ({e})")
                stop.wait(RETRY_S)
                continue
            except AgentRefused as e:
                if e.status in (404, 410):
                    raise HostLost(p.host, f"its agent no longer knows the part: it was restarted ({e})")
                raise
            last_ok = time.monotonic()
            if st.get("agent") != p.agent_id:
                raise HostLost(p.host, f"its agent was restarted (agent {p.agent_id}, now {st.get('agent')})")
            p.state, p.status = text(st, "state"), st
            if p.state == "done" and want == "ready" and st.get("status") != "ok":
                raise PartEnded(p.host, st)
            if _reached(p.state, want):
                return

    def go(self, margin_s: float = GO_MARGIN_S) -> float:
        """Release every part at one wall-clock time (the manager's clock; each host gets it in its own)."""
        start_at = time.time() + margin_s

        def one(p: RemotePart) -> None:
            t0 = time.monotonic()
            while True:
                try:
                    p.client.go(p.part_id, start_at + p.offset_s)
                    return
                except AgentUnreachable as e:
                    if time.monotonic() - t0 >= self.lost_after_s:
                        raise HostLost(p.host, f"its agent did not take the go: {e}")
                    time.sleep(RETRY_S)

        self._each(one, [p for p in self.parts if p.state != "done"])
        return start_at

    def release(self) -> None:
        """Every part measured: let the ones waiting there stop their servers."""

        def one(p: RemotePart) -> None:
            try:
                p.client.release(p.part_id)
            except AgentUnreachable as e:
                raise HostLost(p.host, f"its agent did not take the release: {e}")

        self._each(one, [p for p in self.parts if p.state == "measured"])

    def abort(self, reason: str) -> None:
        """Stop every part that still runs (best effort: a lost host does not hear it)."""

        def one(p: RemotePart) -> None:
            try:
                p.client.abort(p.part_id, reason)
            except (AgentUnreachable, AgentRefused):
                pass

        self._each(one, [p for p in self.parts if p.state != "done"])

    def settle(self, timeout_s: float, lost: set[str]) -> None:
        """After an abort: until every part of a host not lost is done, or `timeout_s`."""
        survivors = [p for p in self.parts if p.host not in lost and p.state != "done"]
        try:
            Barrier(survivors, self.lost_after_s, self.poll_s).wait("done", timeout_s)
        except (HostLost, PartEnded, PartTimeout, AgentRefused):
            pass

    @staticmethod
    def _each(fn: Callable[[RemotePart], None], parts: list[RemotePart]) -> None:
        """`fn` on every part at once; the first exception is raised once all are back."""
        if not parts:
            return
        with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="strata-barrier") as pool:
            futures = [pool.submit(fn, p) for p in parts]
        errors = [e for f in futures if (e := f.exception())]
        if errors:
            raise errors[0]
