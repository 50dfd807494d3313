"""What `strata doctor --hosts` and `strata cleanup --hosts` do on every host of an experiment.

Both deploy the agents of the experiment's hosts (deploy.py), ask each one,
and remove the agents again: the doctor's checks (the same `checks` a local
`strata doctor` prints, run by each agent on its host), the agent's reach and
its clock (synchronized or not, offset from this host's clock); cleanup undoes
what dead agents and dead local runs left in each host's journals.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Callable

from strata.core.errors import StrataError
from strata.core.jsondoc import arr, num, obj
from strata.run.doctor import check_doc
from strata.stack.journal import Journal

from .client import AgentRefused, AgentUnreachable
from .deploy import agents
from .kubenodes import is_kubernetes

if TYPE_CHECKING:
    from strata.experiment.model import Experiment

    from .executor import HostAgent


def _each(exp: Experiment, fn: Callable[[str, HostAgent], bool], log: Callable[[str], None] = print) -> int:
    """`fn(name, agent) -> bool` (healthy) on every host's agent; the number of hosts that failed."""
    if is_kubernetes(exp):  # their agents run on this machine, whose checks and journals are the local ones
        raise StrataError(
            "the experiment's hosts are Kubernetes nodes: strata's agents for them run on this machine, and the "
            "kubernetes runtime checks each node (its agent, its disks) when a run places pods on it",
            "`strata doctor` checks this machine and `strata cleanup` undoes what a run left on the nodes",
        )
    journal = Journal(f"swarm-{secrets.token_hex(4)}")
    bad = 0
    try:
        with agents(exp, journal, log=log) as found:
            for name, a in found.items():
                try:
                    bad += 0 if fn(name, a) else 1
                except (AgentUnreachable, AgentRefused) as e:
                    log(f"host {name}: the agent stopped answering: {e}")
                    bad += 1
    finally:
        journal.close()
    return bad


def doctor(
    exp: Experiment, probe: bool, log: Callable[[str], None] = print, record: list[dict[str, object]] | None = None
) -> int:
    """Each host's checks, logged; with `record`, also one document per host appended to it (doctor --json)."""

    def one(name: str, a: HostAgent) -> bool:
        f = a.facts
        off = a.client.offset()
        clock = obj(f, "clock")
        kernel = obj(clock, "kernel")
        rows = a.client.doctor(probe)
        if record is not None:
            record.append(
                {
                    "host": name,
                    "node": {"hostname": a.node.get("hostname"), "address": a.node.get("address")},
                    "agent": a.agent_id,
                    "facts": {k: f.get(k) for k in ("os", "kernel", "cpus", "memory_bytes")},
                    "clock": {
                        "offset_s": off.offset_s,
                        "uncertainty_s": off.uncertainty_s,
                        "synchronized": kernel.get("synchronized"),
                    },
                    "checks": [check_doc(layer, plugin, reason) for layer, plugin, reason in rows],
                }
            )
        log(
            f"host {name}: node {a.node.get('hostname')} ({a.node.get('address')}), agent {a.agent_id}: "
            f"{f.get('os')}, kernel {f.get('kernel')}, {f.get('cpus')} CPUs, "
            f"{int(num(f, 'memory_bytes') or 0) >> 30} GiB"
        )
        log(
            f"  {'clock':<10} {'offset':<22} {off.offset_s * 1e3:+.3f} ms (+/- {off.uncertainty_s * 1e3:.3f} ms); "
            f"kernel synchronized: {kernel.get('synchronized')}"
            + (f", chrony offset {obj(clock, 'chrony').get('system_offset_s')} s" if "chrony" in clock else "")
        )
        for layer, plugin, reason in rows:
            log(f"  {layer:<10} {plugin:<22} {'ok' if reason is None else 'NO'}" + (f"  {reason}" if reason else ""))
        return True

    return _each(exp, one, log)


def cleanup(exp: Experiment, log: Callable[[str], None] = print) -> int:
    def one(name: str, a: HostAgent) -> bool:
        doc = a.client.cleanup()
        for line in arr(doc, "log"):
            log(f"host {name}: {line}")
        log(f"host {name}: {doc.get('undone', 0)} resource(s) undone")
        return True

    return _each(exp, one, log)
