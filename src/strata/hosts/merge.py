"""One result from a trial's parts: the aggregate over every host, and each host's own.

The instances of every host are one list, numbered across hosts in the
placement's order (host a's 0..3, then host b's 4..7), and the workload parses
them together exactly as it parses N containers on one host: throughput
summed, latency percentiles from the merged histograms. Each part's own
result (parsed on its host) is kept per host in `metrics.hosts`, with its
collectors and stack facts.

Validity across hosts (each judged by validity/, from one `TrialEvidence` with each part's flags):
- cache: each host's disks against that host's instances' bytes (judged on the
  host); the trial is suspect if any host is, with every host's evidence;
- sync: the union of every instance's I/O window, each moved into the
  manager's clock by its host's measured offset (clock.py), with the offsets
  and their uncertainty recorded; an instance in a pod on a Kubernetes node
  stamped its window in that node's clock, moved as well by the node's offset
  from its part's host (`pods_offset_s`, measured through strata's agent there);
- steady: the aggregate per-second series;
- emulated: when any host's part ran under CPU emulation;
- flush, absorbed: each host's disks against its own instances' syncs and writes
  (judged on the host); suspect when any host is. `writes` keeps each host's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from strata.core.instances import InstanceOutput
from strata.core.jsondoc import num, obj
from strata.results import validity, writes
from strata.results.flags import Sync
from strata.results.result import Result
from strata.workloads.base import Parsed

from .clock import Offset
from .part import OutputDoc

if TYPE_CHECKING:
    from strata.experiment.expand import Trial

Window = tuple[float, float] | None  # an instance's measured I/O, wall clock (workloads/base.py Parsed.windows)


@dataclass
class PartOutcome:
    """What came back from one host: its part's stored result and its instances' outputs."""

    host: str
    first_index: int
    result: Result
    outputs: list[OutputDoc]  # as the agent reports them (agent.py part_result)
    art: Path  # the part's artifacts on this machine
    offset: Offset
    times: dict[str, float] = field(default_factory=dict)

    @property
    def pods_offset_s(self) -> float:
        """The clock the part's instances stamped their times in, minus its host's: a Kubernetes node's that strata
        reached through its agent, measured as the part's runtime started (`stack_facts.runtime.agent`); else 0."""
        return num(obj(obj(self.result.stack_facts, "runtime"), "agent"), "clock_offset_s") or 0.0


def instance_outputs(parts: list[PartOutcome]) -> tuple[list[InstanceOutput], list[str]]:
    """Every instance of the trial, numbered across hosts, with times in the manager's clock; and the
    host of each."""
    outputs: list[InstanceOutput] = []
    hosts: list[str] = []
    for p in parts:
        shift = p.offset.offset_s + p.pods_offset_s
        for o in sorted(p.outputs, key=lambda o: o["index"]):
            outputs.append(
                InstanceOutput(
                    p.first_index + int(o["index"]),
                    p.art / o["out_dir"],
                    int(o["returncode"]),
                    o.get("stderr") or "",
                    start - shift if (start := o.get("start_time_s")) is not None else None,
                    end - shift if (end := o.get("end_time_s")) is not None else None,
                    {**(o.get("facts") or {}), "host": p.host},
                )
            )
            hosts.append(p.host)
    return outputs, hosts


def window_hosts(parsed: Parsed, hosts: list[str], parts: list[PartOutcome]) -> list[str]:
    """The host of each window: its instance's, or (a server workload's clients) the host whose artifacts
    hold the window's output."""
    if parsed.window_dirs is None:
        return hosts
    return [next((p.host for p in parts if d.is_relative_to(p.art)), "?") for d in parsed.window_dirs]


def shifted_windows(
    windows: list[Window], hosts: list[str], parts: list[PartOutcome], in_instances: bool = True
) -> list[Window]:
    """Every window in the manager's clock (`hosts`: each window's), moved by its host's measured offset, and the
    instances' windows (`in_instances`; not a server workload's clients', which run on the part's host) by their
    pods' node's too."""
    offset = {p.host: p.offset.offset_s + (p.pods_offset_s if in_instances else 0.0) for p in parts}
    return [(w[0] - offset.get(h, 0.0), w[1] - offset.get(h, 0.0)) if w else None for w, h in zip(windows, hosts)]


def sync_hosts(sync: Sync, shifted: list[Window], hosts: list[str], parts: list[PartOutcome]) -> None:
    """Beside the sync judgement, what it rests on across hosts: each host's offset and first I/O, the skew
    between hosts, and that of the barrier's release."""
    starts: dict[str, float] = {}
    for w, h in zip(shifted, hosts):
        if w:
            starts[h] = min(w[0], starts.get(h, w[0]))
    first = min(starts.values()) if starts else 0.0
    sync.extra["hosts"] = {
        p.host: {
            **p.offset.to_json(),
            **({"pods_offset_s": p.pods_offset_s} if p.pods_offset_s else {}),
            "first_io_s": round(starts[p.host] - first, 6) if p.host in starts else None,
        }
        for p in parts
    }
    sync.extra["host_skew_s"] = (max(starts.values()) - first) if starts else None
    # when each host's barrier released its instances (manager's clock): the barrier's own skew, apart
    # from the tools' start-up after it
    released = [p.times["running"] - p.offset.offset_s for p in parts if (p.times or {}).get("running")]
    sync.extra["release_skew_s"] = (max(released) - min(released)) if len(released) == len(parts) else None


def merge(trial: Trial, parts: list[PartOutcome], art: Path, result: Result) -> None:
    """Fill `result` (a trial's base result) from its parts; raises the workload's TrialFailure when the
    outputs together cannot be read."""
    wl, params = trial.workload_plugin, trial.workload
    outputs, hosts = instance_outputs(parts)
    parsed = wl.parse(params, outputs)
    if parsed.series:
        (art / "workload-series.json").write_text(json.dumps(parsed.series))
    metrics = dict(parsed.metrics)
    metrics["hosts"] = {p.host: p.result.metrics for p in parts}
    result.metrics = metrics
    result.collectors = {"hosts": {p.host: p.result.collectors for p in parts}}
    result.stack_facts = {"hosts": {p.host: p.result.stack_facts for p in parts}}
    result.writes = writes.across_hosts({p.host: p.result.writes for p in parts})
    hosts_of = window_hosts(parsed, hosts, parts)
    shifted = shifted_windows(parsed.windows, hosts_of, parts, in_instances=parsed.window_dirs is None)
    evidence = validity.TrialEvidence.of(
        parsed,
        wl.runtime_s(params),
        [o.start_time_s for o in outputs],
        result.collectors,
        windows=shifted,
        metrics=metrics,
        parts={p.host: p.result.flags for p in parts},
    )
    flags, warnings = validity.judge_trial(evidence)
    if (sync := flags.sync) is not None:
        sync_hosts(sync, shifted, hosts_of, parts)
    result.flags.update(flags)
    result.warnings += [w.to_json() for w in warnings]
    result.status = "ok"
