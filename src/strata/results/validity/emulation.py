"""The emulated flag: the runtime ran the instances under CPU emulation (a VM under TCG), whose numbers
are the emulation's speed, not the storage's."""

from __future__ import annotations

from strata.core.jsondoc import JsonObject, text
from strata.results.flags import Emulated


def emulated(runtime_facts: JsonObject) -> Emulated | None:
    """The runtime says it emulated the CPU (stack/vm: TCG without KVM); None when it did not."""
    if not runtime_facts.get("emulated"):
        return None
    return Emulated(text(runtime_facts, "emulated_reason"))


def emulated_across_hosts(per_host: dict[str, Emulated | None]) -> Emulated | None:
    """Emulated when any host's part was, with each such host's reason."""
    hosts = {h: e for h, e in per_host.items() if e is not None and e.suspect}
    return Emulated("; ".join(f"host {h}: {e.reason}" for h, e in hosts.items())) if hosts else None
