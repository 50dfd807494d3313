"""Whether strata still has a node: its kubelet's Lease, and strata's agent there.

A kubelet that stops (the process killed, the node gone, its network cut) leaves its pods' containers running
and their status as it was: nothing in the pod says so. Its Lease in `kube-node-lease` (renewed every 10 s by
default) stops being renewed. strata reads the Lease's `renewTime` and judges it by this machine's clock only
(when it last saw the value change), so a node's clock offset does not matter; a Lease that has not changed
for `lost_after_s` is a node lost (`NodeLease`).

strata reaches a node that is not its own machine only through its agent's pod there (agent.py): that pod
ended (its process killed, the pod deleted or evicted; it is never restarted) is the node lost to strata too,
at once (`AgentPod`).
"""

from __future__ import annotations

import math
import time
from typing import Callable

from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.stack.kube.api import ApiError

CHECK_S = 2.0  # at most one read of the Lease this often


class NodeLease:
    """The node's Lease, read as the trial is watched; `lost()` says why the node is lost, or None."""

    def __init__(self, get: Callable[[str], JsonObject], node: str, lost_after_s: float) -> None:
        self.get, self.node, self.lost_after_s = get, node, lost_after_s
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
        self.seen: str | None = None
        self.changed_at = time.monotonic()
        self.checked_at = -math.inf
        self.readable = True  # a cluster without Leases (or without the right to read them): not judged

    def lost(self) -> str | None:
        now = time.monotonic()
        if not self.readable or now - self.checked_at < CHECK_S:
            return self._judge(now)
        previous, self.checked_at = self.checked_at, now
        try:
            renewed = text(obj(self.get(self.path), "spec"), "renewTime")
        except ApiError as e:
            if e.status in (403, 404):
                self.readable = False
                return None
            return self._judge(now)  # the API server's trouble, not the node's: judged on what was seen
        except OSError:
            return self._judge(now)
        # a first read, or one after a gap (between trials nothing watches): the Lease as it is now is the baseline
        if renewed != self.seen or now - previous > self.lost_after_s:
            self.seen, self.changed_at = renewed, now
        return self._judge(now)

    def _judge(self, now: float) -> str | None:
        if not self.readable or self.seen is None:
            return None
        stale = now - self.changed_at
        if stale <= self.lost_after_s:
            return None
        return (
            f"node {self.node}: its kubelet has not renewed its Lease for {stale:.0f} s (last renewed {self.seen}): "
            "the kubelet stopped, or the node is gone"
        )


class AgentPod:
    """strata's agent pod on the node, read as the trial is watched; `lost()` says why it is gone, or None."""

    def __init__(self, get: Callable[[str], JsonObject], path: str, node: str) -> None:
        self.get, self.path, self.node = get, path, node
        self.checked_at = -math.inf
        self.why: str | None = None

    def lost(self) -> str | None:
        now = time.monotonic()
        if self.why is not None or now - self.checked_at < CHECK_S:
            return self.why
        self.checked_at = now
        name = self.path.rsplit("/", 1)[1]
        try:
            pod = self.get(self.path)
        except ApiError as e:
            if e.status == 404:
                self.why = f"node {self.node}: strata's agent there (pod {name}) was deleted"
            return self.why  # 403 and the API server's trouble: not judged
        except OSError:
            return None
        status = obj(pod, "status")
        phase = text(status, "phase")
        if phase in ("Failed", "Succeeded") or obj(pod, "metadata").get("deletionTimestamp"):
            # its exit code and reason, when the kubelet says
            ended = [obj(obj(as_obj(c), "state"), "terminated") for c in arr(status, "containerStatuses")]
            how = ", ".join(f"{text(t, 'reason') or 'exited'} {t.get('exitCode')}" for t in ended if t)
            self.why = (
                f"node {self.node}: strata's agent there (pod {name}) ended"
                + f" ({how or (phase if phase in ('Failed', 'Succeeded') else 'being deleted')})"
                + ": strata reaches the node only through it"
            )
        return self.why
