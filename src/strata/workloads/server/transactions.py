"""The result fields of a server workload whose unit of work is a transaction (pgbench's, sysbench's): the ones
whose meaning, unit and place are the same for each, declared once so that they stay alike (strata/core/metrics.py).

Each such workload stores the transactions per second of every server together as its headline (`tps`, also per
data direction), the rate its clients offered each server (`rate`), the script they ran (`script`), the latency
of a transaction (`lat`), and its clients' CPU share where the template's records put it (`CLIENT_CPU`).
"""

from __future__ import annotations

from strata.core.metrics import Axis, Metric, Show

SCRIPT = Metric("script", "parameter", type="str", context=True)
RATE = Metric("rate", "parameter", "tx/s", type="int", export=False, axis=Axis("offered rate (tx/s)", detail=True))
TPS = Metric("tps", "total", "tx/s", "higher", headline=True, show=Show("TPS", digits=0))
TPS_BY_DIRECTION = Metric("tps", "per_direction", "tx/s", "higher", export=False)


def latency(stats: tuple[str, ...], show: Show) -> Metric:
    """A transaction's latency (ns), its `stats` the export's columns."""
    return Metric("lat", "latency", "ns", "lower", label="transaction", stats=stats, show=show)
