"""What a trial used, from what the collectors already store with it: the CPU of the servers under test,
the CPU of a remote device's storage target, the device's bandwidth.

- The servers' CPU: the host's busy share in the measured window (collectors/host.py: 100 - idle), less
  the share a server workload's clients took when they ran on the same host (where a result stores it is its
  workload's declaration, `MetricSchema.client_cpu`): study 001 measures its servers with sar, its clients on
  machines of their own.
- The storage target's CPU: the target process of a remote device (collectors/process.py,
  `remote_procs.target.cpu_percent`, % of one CPU) as a share of the host's CPUs, as study 003 gives the
  target machine's utilization (section 7). A kernel target (nvmet) has no process: not measured.
- The device's bandwidth: the bytes diskstats saw the device move over the measured window.

A database's mean latency over all its operations is not here: its workload declares how it is computed
from a stored result (`MetricSchema.mix`, read by `Cell.mean_over_operations`).

Each function reads one stored result and returns None when the result does not hold the figure.
"""

from __future__ import annotations

from collections.abc import Callable

from strata.analysis.cells.cells import schema_of
from strata.analysis.decisions.stats import Summary, summarize
from strata.results.result import Result


def host_busy_percent(r: Result) -> float | None:
    idle = r.collected.cpu_idle_percent
    return None if idle is None else 100.0 - idle


def clients_percent(r: Result) -> float:
    """A server workload's clients' share of the host's CPUs in the measured run, in percent (0 when none ran
    here, or its workload runs no clients of its own)."""
    share = schema_of(r.workload_type).clients_cpu_share(r)
    return 100.0 * share if share is not None else 0.0


def server_cpu_percent(r: Result) -> float | None:
    """The host's busy share less what the load generator took: the CPU of the stack under test."""
    busy = host_busy_percent(r)
    return None if busy is None else max(0.0, busy - clients_percent(r))


def target_cpu_percent(r: Result) -> float | None:
    """A remote device's storage target process, as a share of the host's CPUs (percent)."""
    cpu_percent, cpus = r.collected.target_cpu_percent, r.host_facts.cpus
    if cpu_percent is None or not cpus:
        return None
    return cpu_percent / cpus


def disk_mb_s(r: Result) -> float | None:
    return r.collected.device_mb_s


def per_kops(value: float | None, r: Result) -> float | None:
    """A per-trial figure per 1,000 operations per second of the trial's headline (CPU per unit of work)."""
    ops = r.primary.value
    return None if value is None or not ops else value / (ops / 1000.0)


def of_cell(results: list[Result], figure: Callable[[Result], float | None]) -> Summary:
    """A figure over a cell's repetitions (those that hold it), with its 95% interval."""
    return summarize([v for v in (figure(r) for r in results) if v is not None])
