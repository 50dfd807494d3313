"""Where this run's servers listen on the host: a block of the loopback range of their own.

Every server instance strata starts listens on 127.0.0.0/8 only (the network rule). Two strata runs
on one machine (two test workers) must never give two servers one address and port:
`STRATA_LOOPBACK=X` (0 to 255) gives this run its own block, which each workload maps onto its
addresses (Cassandra: 127.X.0.0/16) or its ports (PostgreSQL: a block of ports on 127.0.0.1).
"""

from __future__ import annotations

import os

from strata.core.errors import StrataError

LOOPBACK_ENV = "STRATA_LOOPBACK"


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
