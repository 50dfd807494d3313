"""Where this run's servers listen on the host: a block of the loopback range of their own.

Every server instance strata starts listens on 127.0.0.0/8 only (the network rule). Two strata runs
on one machine (two test workers) must never give two servers one address and port:
`STRATA_LOOPBACK=X` (0 to 255) gives this run its own block, which each workload maps onto its
addresses (Cassandra: 127.X.0.0/16) or its ports (`port`: PostgreSQL's on 127.0.0.1, MariaDB's on 127.0.0.2,
a block of ports of its own on its address).
"""

from __future__ import annotations

import os

from strata.core.errors import StrataError

LOOPBACK_ENV = "STRATA_LOOPBACK"
PORT_BASE = 16384
PORTS_PER_RUN = 64  # servers of one run on one host: 16384 + 64 x 255 + 63 stays below the ephemeral range


def loopback_octet() -> int:
    """X of this run's block: 0, or `STRATA_LOOPBACK`."""
    raw = os.environ.get(LOOPBACK_ENV, "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > 255:
        raise StrataError(
            f"{LOOPBACK_ENV}={raw[:20]!r} is not a number from 0 to 255",
            f"unset {LOOPBACK_ENV}, or give X of the 127.X.0.0/16 block for this run's servers",
        )
    return int(raw)


def unusable() -> str | None:
    """Why this run's block cannot be used (`STRATA_LOOPBACK` is not one), or None: a workload's `available`."""
    try:
        loopback_octet()
    except StrataError as e:
        return e.message()
    return None


def port(instance: int) -> int:
    """Server `instance`'s port in this run's block of ports: 16384 + 64 X + instance."""
    if not 0 <= instance < PORTS_PER_RUN:
        raise ValueError(f"server {instance}: a run has {PORTS_PER_RUN} ports per host")
    return PORT_BASE + PORTS_PER_RUN * loopback_octet() + instance
