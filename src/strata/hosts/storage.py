"""A remote device served from another host of the experiment (`{type: remote, host: b}`): the manager's side.

Before a trial's parts start, the storage host's agent serves the device's
store (stack/remote/serve.py: backing store, nbdkit on the node's address,
kept for the run like any stack); each part's device then names that target
(`served_at`), so the client hosts attach to it over the network between
the nodes. The trial's identity keeps `host: b`, never the address.

The storage host's disks are not the client hosts' disks, so the cache check
of the parts (each host's own disks) cannot see them. The manager samples the
target's I/O counters and the backing disks' diskstats when every part is
ready and again when all are done (`Storage.moved`), and the merged cache
flag takes those bytes as one more layer below the workload
(`validity.cache_below`): a store answered from the storage host's page
cache is suspect like any other cache.

A storage host that stops answering during a trial makes the clients' I/O
fail (the client's watcher: `remote_lost`); the manager then names the
storage host: `host_lost`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strata.core.errors import TrialFailure, Unsupported
from strata.core.jsondoc import JsonObject, JsonValue, as_obj, obj, text, whole
from strata.core.params import Layer
from strata.stack.devices import served_by

from .client import AgentClient, AgentRefused, AgentUnreachable

if TYPE_CHECKING:
    from strata.experiment.expand import Trial

SECTOR = 512  # diskstats sectors are always 512 bytes (collectors/diskstats.py)


def storage_host(trial: Trial) -> str | None:
    """The host of the experiment serving the trial's device, if any."""
    return served_by(trial.device)


@dataclass
class Storage:
    host: str
    client: AgentClient  # of the storage host
    run_id: str
    target_id: str
    served_at: str
    facts: JsonObject  # the served target's (ServedTarget.to_json)
    agent_id: str = ""  # the storage host's agent that serves it: another one (restarted) lost the target
    samples: dict[str, JsonObject] = field(default_factory=dict)  # "ready"/"done" -> the target's stats then

    def sample(self, when: str) -> None:
        try:
            self.samples[when] = self.client.target_stats(self.run_id, self.target_id)
        except (AgentUnreachable, AgentRefused) as e:
            raise TrialFailure("host_lost", f"the storage host {self.host} did not answer: {e}")
        if not self.samples[when].get("alive"):
            raise TrialFailure("remote_lost", f"the storage host {self.host}: {self.target_state()}")

    def target_state(self, stats: JsonObject | None = None) -> str:
        """What the storage host says of its target, for a failure's message."""
        try:
            stats = stats or self.client.target_stats(self.run_id, self.target_id)
        except (AgentUnreachable, AgentRefused) as e:
            return f"its agent did not answer ({e})"
        if stats.get("alive"):
            return f"the target nbdkit at {self.served_at} runs"
        ex = obj(stats, "exit")
        return f"the target nbdkit exited ({ex.get('returncode')}): {ex.get('log') or 'no message'}"

    def moved(self) -> dict[str, dict[str, int]] | None:
        """Bytes the target and each backing disk moved between the two samples, or None if not sampled."""
        a, b = self.samples.get("ready"), self.samples.get("done")
        if not a or not b:
            return None
        io_a, io_b = obj(a, "target_io"), obj(b, "target_io")
        out = {"nbdkit": {f"{d}_bytes": _int(io_b, f"{d}_bytes") - _int(io_a, f"{d}_bytes") for d in ("read", "write")}}
        for disk, after in obj(b, "disks").items():
            before = obj(a, "disks").get(disk)
            if before:
                was, now = as_obj(before, disk), as_obj(after, disk)
                out[disk] = {
                    f"{d}_bytes": (_int(now, f"{d}_sectors") - _int(was, f"{d}_sectors")) * SECTOR
                    for d in ("read", "write")
                }
        return out

    def to_json(self) -> JsonObject:
        moved = self.moved()
        doc: JsonObject = {"role": "storage", "served_at": self.served_at, "target": self.facts, "moved": None}
        if moved is not None:
            doc["moved"] = {layer: dict[str, JsonValue](counts) for layer, counts in moved.items()}
        return doc


def _int(d: JsonObject, key: str) -> int:
    """A counter of a target's stats; a missing one is 0."""
    return whole(d, key) or 0


def serve(trial: Trial, host: str, client: AgentClient, run_id: str) -> Storage:
    """The trial's store, served from `host` (started by its agent on first use in this run)."""
    try:
        doc = client.serve_target(run_id, trial.device.model_dump(mode="json"))
    except AgentUnreachable as e:
        raise TrialFailure("host_lost", f"the storage host {host} is not reachable: {e}")
    except AgentRefused as e:
        if e.status == 422:
            raise Unsupported(str(e))
        raise TrialFailure("provision", f"the storage host {host} could not serve {trial.device.name}: {e}")
    return Storage(host, client, run_id, text(doc, "id"), text(doc, "served_at"), obj(doc, "facts"), text(doc, "agent"))


def part_device(trial: Trial, storage: Storage) -> Layer:
    """The device the client hosts build: the same, attached to the served target."""
    return trial.device.model_copy(update={"served_at": storage.served_at})
