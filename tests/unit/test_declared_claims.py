"""The studies' claims reach the workloads through their declarations (strata/core/metrics.py), never by a
workload's name or a tool's field names (issue 33): a database is a workload that declares an offered rate
(`MetricSchema.offered`), the mean over all its operations is computed as its `mix` says, the paper's
latency metrics are the latencies the workloads declare, and the part before the device is
`submission_latency`. A workload registered here only, with other names for all of it, is judged alike."""

import copy
import dataclasses
import sys
from pathlib import Path
from typing import Literal

import pytest

from strata.analysis.findings.findings import HELD, NOT_HELD, NOT_MEASURED
from strata.analysis.studies import paper
from strata.analysis.studies.paper import latency_metric
from strata.analysis.studies.paper_match import facts_of
from strata.core.metrics import Metric, MetricSchema, OfferedRate, OperationMix
from strata.core.params import Strict
from strata.results.stored import TrialDoc
from strata.workloads import REGISTRY
from strata.workloads.base import ToolWorkload
from strata.workloads.ycsb import metrics as ycsb_metrics
from strata.workloads.ycsb.params import YcsbParams

from .test_analysis_findings import CASES, by_id
from .test_ycsb_workload import _captured_trial

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

DATABASE_CLAIMS = (
    "cpu-rises-with-clusters",
    "latency-rises-with-clusters",
    "native-cpu-lowest",
    "writes-rise-reads-fall",
)


class MemtierParams(Strict):
    type: Literal["memtier"] = "memtier"
    name: str = ""
    profile: str = "mixed"
    shards: int = 1
    rate: int | None = None
    rate_share: float | None = None


class Memtier(ToolWorkload[MemtierParams]):
    """A database load generator that names everything otherwise than YCSB: its rate, its share of the
    peak, its databases, where it stores the peak, its per-operation summaries (in ms) and its latency."""

    name = "memtier"
    params = MemtierParams
    metrics = MetricSchema(
        fields=(
            Metric("ops", "total", "ops/s", "higher", headline=True),
            Metric("rt", "latency", "ns", "lower", label="response", stats=("mean", "p99")),
            Metric("queue", "latency", "ns", "lower", label="queueing", stats=("mean",)),
        ),
        breakdown=("queue", "rt"),
        offered=OfferedRate(
            "rate", "rate_share", "shards", peak=("metrics", "peaks", "top"), offered=("metrics", "peaks", "given")
        ),
        mix=OperationMix(("metrics", "by_op"), count="count", mean="avg_ms", ns=1e6),
    )

    def estimate_s(self, params):
        return 1.0

    def command(self, params, load, target, instance):
        return ["true"]

    def parse(self, params, outputs):
        raise NotImplementedError


@pytest.fixture
def memtier(monkeypatch):
    monkeypatch.setitem(REGISTRY, "memtier", Memtier())


def as_memtier(results: list[dict]) -> list[dict]:
    """YCSB results (test_analysis_findings.ycsb) as the same measurements of memtier."""
    out = copy.deepcopy(results)
    for r in out:
        wl = r["trial"]["workload"]
        name = wl["name"].replace("ycsb", "memtier")
        r["trial"]["workload"] = {"type": "memtier", "name": name, "profile": wl["profile"], "shards": wl["clusters"],
                                  "rate": wl["target"], "rate_share": wl.get("target_share")}  # fmt: skip
        r["labels"]["workload"] = name
        m = r["metrics"]
        m["by_op"] = {op: {"count": s["n"], "avg_ms": s["mean_us"] / 1000} for op, s in m.pop("latency").items()}
        for d in ("read", "write"):
            m[d]["rt_ns"] = m[d].pop("lat_ns")
    return out


@pytest.mark.parametrize("fid", DATABASE_CLAIMS)
def test_a_workload_that_declares_an_offered_rate_is_a_database_to_the_studies(memtier, fid):
    held, not_held = CASES[fid]
    assert by_id(as_memtier(held))[fid].status == HELD
    assert by_id(as_memtier(not_held))[fid].status == NOT_HELD


@pytest.mark.parametrize("fid", DATABASE_CLAIMS)
def test_without_the_declaration_ycsb_is_no_database_to_the_studies(monkeypatch, fid):
    ycsb = REGISTRY["ycsb"]
    monkeypatch.setattr(ycsb, "metrics", dataclasses.replace(ycsb.metrics, offered=None, mix=None))
    assert by_id(CASES[fid][0])[fid].status == NOT_MEASURED


def test_the_databases_declare_an_offered_rate_and_only_ycsb_a_mix_of_operations():
    assert {n for n, w in REGISTRY.items() if w.metrics.offered is not None} == {"ycsb", "pgbench", "sysbench"}
    assert {n for n, w in REGISTRY.items() if w.metrics.mix is not None} == {"ycsb"}
    for name, w in REGISTRY.items():
        s, fields = w.metrics, w.params.model_fields
        if s.offered is not None:  # pgbench and sysbench offer an absolute rate only, to one database per server
            assert {s.offered.rate, s.offered.share, s.offered.databases} - {None} <= set(fields), name
        for part in (s.device_latency, s.submission_latency):
            assert part is None or part in s.breakdown[:-1], f"{name}: {part} is no part of its breakdown"


def test_the_mean_over_operations_weighs_each_type_by_its_count(tmp_path):
    mix = OperationMix(("metrics", "by_op"), count="count", mean="avg_ms", ns=1e6)
    r = {"metrics": {"by_op": {"get": {"count": 3, "avg_ms": 1.0}, "set": {"count": 1, "avg_ms": 5.0}, "x": {}}}}
    assert mix.mean_ns(r) == pytest.approx(2e6)
    assert mix.mean_ns({"metrics": {}}) is None and mix.mean_ns({"metrics": {"by_op": []}}) is None
    parsed = ycsb_metrics.parse_trial(YcsbParams(), _captured_trial(tmp_path, ["db0-c0"]))
    ops = [s for s in parsed.metrics["latency"].values() if s.get("n") and s.get("mean_us")]
    assert len(ops) >= 2  # a read and an update: a mix
    by_hand = sum(s["n"] * s["mean_us"] for s in ops) / sum(s["n"] for s in ops) * 1000.0
    assert REGISTRY["ycsb"].metrics.mix.mean_ns({"metrics": parsed.metrics}) == by_hand


def test_a_configurations_facts_read_the_offered_rate_as_declared(memtier):
    def facts(workload):
        r = make_result()
        r["trial"]["workload"] = workload
        return facts_of(r["labels"], TrialDoc.of(r["trial"]))

    f = facts({"type": "memtier", "shards": 2, "rate": None, "rate_share": 0.4})
    assert (f["clusters"], f["offered"], f["peak_measured"]) == (2, 0.4, True)
    f = facts({"type": "memtier", "shards": 1, "rate": 500})
    assert (f["clusters"], f["offered"], f["peak_measured"]) == (1, None, False)
    f = facts({"type": "ycsb", "clusters": 3, "target": None})
    assert (f["clusters"], f["offered"], f["peak_measured"]) == (3, 1.0, True)
    f = facts({"type": "pgbench", "clients": 4, "rate": 100})  # an absolute rate: no peak measured, no share
    assert (f["clusters"], f["offered"], f["peak_measured"]) == (None, None, False)


def test_the_papers_latency_metrics_are_the_declared_latencies(memtier):
    said = {m: (x.name, x.stat, x.subject) if (x := latency_metric(m)) else None for m in (
        "lat_mean", "lat_p99", "clat_mean", "slat_share", "rt_p99", "queue_mean", "queue_share",
        "lat_share", "clat_p50", "speed", "cpu_util",
    )}  # fmt: skip
    assert said == {
        "lat_mean": ("lat", "mean", "mean latency"),
        "lat_p99": ("lat", "p99", "p99 latency"),
        "clat_mean": ("clat", "mean", "completion latency"),
        "slat_share": ("slat", "share", "slat's share of the latency"),
        "rt_p99": ("rt", "p99", "p99 latency"),
        "queue_mean": ("queue", "mean", "queueing latency"),
        "queue_share": ("queue", "share", "queue's share of the latency"),
        "lat_share": None,  # a whole has no share of itself
        "clat_p50": None,  # a statistic the latency does not declare
        "speed": None,
        "cpu_util": None,
    }


def test_a_paper_value_may_name_a_latency_only_a_registered_workload_declares(monkeypatch):
    entry = {"study": "003", "where": "x", "what": "y", "read": "text", "unit": "us", "value": 1.0,
             "match": {"metric": "queue_mean"}}  # fmt: skip
    with pytest.raises(ValueError, match="metric 'queue_mean' is not one of"):
        paper.parse(entry)
    monkeypatch.setitem(REGISTRY, "memtier", Memtier())
    assert paper.parse(entry).match["metric"] == "queue_mean"


def test_the_slat_claims_read_the_declared_part_before_the_device(monkeypatch):
    """study 003's slat claims read fio's `submission_latency`; a workload that declares none is not judged."""
    fio = REGISTRY["fio"]
    assert fio.metrics.submission_latency is not None and fio.metrics.device_latency is not None
    low = [make_result(rep=i, value=1000.0 * j) for i, j in enumerate((1.0, 1.01, 0.99))]
    high = [make_result(rep=i, value=9000.0 * j, numjobs=32, iodepth=32) for i, j in enumerate((1.0, 1.01, 0.99))]
    o = by_id(low + high)["clat-dominates"]
    assert o.status == HELD and "slat 5.00% of the total" in o.detail
    monkeypatch.setattr(fio, "metrics", dataclasses.replace(fio.metrics, submission_latency=None))
    assert by_id(low + high)["clat-dominates"].status == NOT_MEASURED
