"""Which configurations a study's published value speaks of, by what the study means (paper.yaml `match`).

A value names its configuration by the study's own terms, never by strata's labels for them: a load by
its jobs and queue depth (study 003's high load is 32 jobs x QD32 in section 5, 16 parallel jobs in
section 5.5), an offered rate by its share of the peak of the same cluster (study 001 offers fixed rates
of up to 200K tps, the most its clusters reached; a user's cluster has another peak, so the share is
what carries over), a database by its load profile, replication factor, nodes and clusters.

The same facts are read from a stored result (a Cell: side_by_side.py sets the values beside the user's) and
from a planned trial (the unit test that every value can meet a result of one example), so the two
never disagree on what a value selects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from strata.analysis.cells.cells import schema_of
from strata.core.jsondoc import JsonObject, JsonValue, arr, obj
from strata.core.params import INSTANCES, JOBS, LoadCounts
from strata.results.stored import TrialDoc

if TYPE_CHECKING:
    from strata.analysis.studies.paper import PaperValue

# A measured share of the peak (an absolute rate against the flat-out run of the same configuration)
# meets a study's share within this factor; a relative target (`target: 40%`) meets it exactly.
OFFERED_TOLERANCE = 1.25
# Values that need a sweep over one dimension of otherwise equal configurations, and how many points.
# A fact named for what it is: the access pattern and the I/O size of a block I/O workload (`MetricSchema.io`).
PATTERN, IO_SIZE = "pattern", "io_size"
SWEPT = {"peak": INSTANCES, "saturation": INSTANCES, "cliff_jobs": JOBS, "best_bs": IO_SIZE}
MIN_SWEEP = 3
# The facts a baseline configuration must share with the configuration (the labels aside).
NOT_COMPARED = ("load",)

# What a study's value may name of a configuration (`facts_of`: read from its labels and its stored trial),
# and what a value asks of it (PaperValue.match, .versus: studies.yaml's).
Facts = dict[str, JsonValue]


def facts_of(labels: Mapping[str, JsonValue], trial: TrialDoc) -> Facts:
    """What a study's value may name of a configuration, from its labels and its resolved trial."""
    wl, ld, limits = trial.workload.params, trial.load, trial.limits
    cluster = obj(wl, "cluster")  # a database's own parameters (ycsb's Cassandra cluster)
    schema = schema_of(trial.workload.type)
    offered, io = schema.offered, schema.io  # a database's clients offer it a rate; a block I/O's pattern and size
    return {
        "device": trial.device.name,
        "workload": labels.get("workload"),
        "filesystem": labels.get("filesystem"),
        "runtime": labels.get("runtime"),
        "path": trial.path,
        "load": labels.get("load"),
        **LoadCounts.of(ld).facts(),
        "limits": limits.get("preset") or ("none" if not any(v for k, v in limits.items() if k != "share") else None),
        "attached": "remote" if trial.device.type == "remote" else "local",
        "profile": wl.get("profile"),
        "replication_factor": cluster.get("replication_factor"),
        "nodes": cluster.get("nodes"),
        "clusters": offered.databases_of(wl) if offered is not None else None,
        "offered": offered.share_of_peak(wl) if offered is not None else None,
        "peak_measured": offered is not None and offered.peak_measured(wl),
        "hosts": _hosts(trial, cluster),
        "disks": 1,  # a trial's instances share its one device (study 003's section 6.3 adds a second disk)
        PATTERN: wl.get(io.pattern) if io is not None else None,
        IO_SIZE: wl.get(io.size) if io is not None else None,
    }


def _hosts(trial: TrialDoc, cluster: JsonObject) -> int:
    """The hosts the trial's instances run on: its placement's, a database spanning hosts', else this one."""
    placed = trial.placement.instances or {}
    spans = arr(cluster, "hosts")
    return max(1, sum(1 for n in placed.values() if n), len(spans))


def matches(have: Facts, match: Mapping[str, JsonValue]) -> bool:
    """Every key of `match` (but the metric) holds for the facts `have`: an integer exactly, a string as a
    glob, an offered share within OFFERED_TOLERANCE (exactly for a relative target)."""
    for k, want in match.items():
        if k == "metric":
            continue
        v = have.get(k)
        if k == "offered":
            if not isinstance(v, (int, float)) or not _near(float(v), as_number(want)):
                return False
        elif isinstance(want, int) and not isinstance(want, bool):
            if v != want:
                return False
        elif v is None or not fnmatchcase(str(v), str(want)):
            return False
    return True


def as_number(want: JsonValue) -> float:
    """A value's number as studies.yaml writes it (a number, or a string of one)."""
    return float(want) if isinstance(want, (int, float)) else float(str(want))


def _near(have: float, want: float) -> bool:
    return have > 0 and want > 0 and abs(math.log(have / want)) <= math.log(OFFERED_TOLERANCE) + 1e-9


def baseline_facts(have: Facts, versus: Mapping[str, JsonValue]) -> Facts:
    """The facts of the configuration a value is relative to: the same, with `versus` in place (another
    device when the attachment changes: a remote device is a device of its own)."""
    out = {k: v for k, v in have.items() if k not in NOT_COMPARED}
    out.update(versus)
    if "attached" in versus:
        out.pop("device", None)
    return out


def is_baseline(candidate: Facts, wanted: Facts) -> bool:
    """`candidate` is the configuration `wanted` describes (baseline_facts): every fact equal, the
    overridden ones as globs."""
    for k, want in wanted.items():
        v = candidate.get(k)
        if isinstance(want, str) and isinstance(v, str):
            if not fnmatchcase(v, want):
                return False
        elif v != want:
            return False
    return True


def sweep_points(facts: list[Facts], dim: str) -> int:
    """The most distinct values of `dim` among configurations equal in everything else."""
    groups: dict[str, set[object]] = {}
    for f in facts:
        rest = repr(sorted((k, repr(v)) for k, v in f.items() if k not in (dim, "load", "workload")))
        groups.setdefault(rest, set()).add(f.get(dim))
    return max((len(s) for s in groups.values()), default=0)


def produces(value: PaperValue, plan: list[Facts], min_sweep: int = MIN_SWEEP) -> bool:
    """Whether the configurations `plan` (facts of planned trials) can meet `value`: one matches it, its
    baseline configuration is planned too, a sweep value has its sweep (`min_sweep` points: a smoke plan
    keeps a sweep's ends), a maximum its flat-out run."""
    matched = [f for f in plan if matches(f, value.match)]
    if not matched:
        return False
    metric = value.match.get("metric")
    if metric in SWEPT:
        return sweep_points(matched, SWEPT[metric]) >= min_sweep
    if metric == "max_throughput":
        matched = [f for f in matched if f.get("peak_measured")]
    if value.versus:
        return any(is_baseline(g, baseline_facts(f, value.versus)) for f in matched for g in plan)
    return bool(matched)
