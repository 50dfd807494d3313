"""What an advice group compares (analysis/advice/compared.py), on synthetic pgbench results: the headline in the
direction its declaration gives; under an offered rate the latency the spec names (p99 by default), lower
being better; and the report's warning when compared trials saw different numbers of checkpoints."""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.advice import compared  # noqa: E402
from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.cells.cells import build_cells  # noqa: E402
from strata.workloads import REGISTRY  # noqa: E402
from strata.workloads.base import headline  # noqa: E402


def pg(fs, rep, tps, p99_ms, rate=None, checkpoints=2, design=None):
    r = make_result(fs=fs, rep=rep, value=tps, design=design, workload="pg")
    r["trial"]["workload"] = {"type": "pgbench", "name": "pg", "script": "tpcb-like", "scale": 10, "rate": rate}
    lat = {"n": 1000, "mean": p99_ms * 0.3e6, "p50": p99_ms * 0.2e6, "p95": p99_ms * 0.6e6, "p99": p99_ms * 1e6}
    r["metrics"] = {
        "primary": headline(tps, "tx/s", "tps", tps=tps),
        "tps": tps,
        "read": {"tps": 0.0},
        "write": {"tps": tps, "lat_ns": lat | {"p99_9": p99_ms * 2e6}},
        "checkpoints": {"count": checkpoints},
    }
    return r


def group(rate=None, design=None, xfs=(1000, 1010, 990), ext4=(1200, 1190, 1210), p99=(5.0, 9.0), cps=(2, 2)):
    return [pg("xfs", i, v, p99[0] + i * 0.01, rate, cps[0], design) for i, v in enumerate(xfs)] + [
        pg("ext4", i, v, p99[1] + i * 0.01, rate, cps[1], design) for i, v in enumerate(ext4)
    ]


def test_flat_out_the_group_compares_the_headline_higher_being_better():
    (b,) = analyse(group()).best
    assert b.best.fs_type == "ext4" and b.on.headline and b.unit == "tx/s" and b.status == "best"
    assert "(on " not in b.text() and "is best: 20.0% ahead" in b.text()


def test_under_an_offered_rate_it_compares_p99_latency_lower_being_better():
    rs = group(rate=1000, xfs=(1000, 1000, 1000), ext4=(999, 1000, 1001))  # both keep up with the rate
    (b,) = analyse(rs).best
    assert b.best.fs_type == "xfs" and b.on.metric == "p99 latency" and not b.on.higher_is_better
    assert b.unit == "ms" and abs(b.value - 5.01) < 1e-9 and b.status == "best"
    text = b.text()
    assert "(on p99 latency, lower is better, under the offered rate)" in text and "(5.01 ms, n=3)" in text
    assert "is best: 79.8% ahead of the next, loop/ext4" in text  # ext4's p99 is 79.8% longer


def test_the_spec_names_another_latency_statistic():
    design = {"repetitions": 3, "margin": 0.05, "latency_stat": "p50"}
    (b,) = analyse(group(rate=1000, design=design)).best
    assert b.on.metric == "p50 latency" and abs(b.value - 5.01 * 0.2) < 1e-9
    cells = build_cells(group(rate=1000, design=design))
    assert compared.latency_stat(cells) == "p50" and compared.latency_stat(build_cells(group(rate=1000))) == "p99"


def test_the_direction_is_the_headlines_declared_one(monkeypatch):
    """Metric.better: a headline where lower is better leads with its lowest mean."""
    wl = REGISTRY["pgbench"]
    fields = tuple(dataclasses.replace(f, better="lower") if f.headline else f for f in wl.metrics.fields)
    monkeypatch.setattr(wl, "metrics", dataclasses.replace(wl.metrics, fields=fields))
    (b,) = analyse(group()).best
    assert b.best.fs_type == "xfs" and not b.on.higher_is_better and b.on.headline


def test_compared_trials_that_saw_different_numbers_of_checkpoints_are_warned_about():
    warned = [w for w in analyse(group(cps=(2, 3))).warnings if w.kind == "events"]
    (w,) = warned
    assert "saw different numbers of checkpoints" in w.message and "checkpoint_timeout" in w.fix
    assert w.items == ["loop/ext4/native/bind pg j1xqd1: 3", "loop/xfs/native/bind pg j1xqd1: 2"]
    assert not [w for w in analyse(group()).warnings if w.kind == "events"]


def test_results_stored_before_issue_43_still_load_and_their_rate_is_compared_on_latency():
    """Trials strata stored at ee1f538 (no checkpoints, memory or server facts): loaded, reported, and the group
    under an offered rate now compared on its p99, which those trials already stored."""
    from strata.report.terminal import analysis_text
    from strata.results.store import load_results

    rs = load_results(Path(__file__).parents[1] / "data" / "results" / "pgbench-ee1f538")
    assert len(rs) == 4 and all(r.status == "ok" and "checkpoints" not in r.metrics for r in rs)
    a = analyse(rs)
    by = {b.workload: b for b in a.best}
    rated, flat = by["pgbench-select-only-s1-c2-j2-r200"], by["pgbench-tpcb-like-s1-c2-j2"]
    assert rated.on.metric == "p99 latency" and rated.unit == "ms" and flat.on.headline and flat.unit == "tx/s"
    assert not [w for w in a.warnings if w.kind == "events"]  # no counts stored: nothing to compare
    assert "(on p99 latency, lower is better, under the offered rate)" in analysis_text(a)


def test_the_report_draws_latency_cpu_and_disk_against_clients_and_tables_each_percentile():
    from strata.report.model import build

    rs = []
    for clients, tps in ((1, 500.0), (8, 2000.0)):
        for r in group(xfs=(tps, tps, tps), ext4=(tps * 1.1,) * 3):
            r["trial"]["workload"]["clients"] = clients
            r["trial"]["workload"]["name"] = r["labels"]["workload"] = f"pg-c{clients}"
            rs.append(r)
    report = build(analyse(rs))
    (detail,) = [f for f in report.figures if f.kind == "detail"]
    assert "against clients" in detail.title and detail.table.columns[1] == "clients"
    latency = [f for f in report.figures if f.kind == "latency"]
    stats = {row[3] for f in latency for row in f.table.rows}
    assert stats == {"mean", "p50", "p95", "p99", "p99_9"}


def sb(fs, rep, tps, p99_ms, rate=None):
    r = make_result(fs=fs, rep=rep, value=tps, workload="sb")
    r["trial"]["workload"] = {"type": "sysbench", "name": "sb", "script": "oltp_read_write", "rate": rate}
    lat = {"n": 1000, "mean": p99_ms * 0.3e6, "p99": p99_ms * 1e6}
    r["metrics"] = {
        "primary": headline(tps, "tx/s", "tps", tps=tps),
        "tps": tps,
        "read": {"tps": 0.0},
        "write": {"tps": tps, "lat_ns": lat},
    }
    return r


def test_sysbench_under_an_offered_rate_compares_p99_latency_as_pgbench_does():
    """Issue 56: sysbench declares its rate, so stacks that keep up with it are told apart by their p99."""
    rs = [sb("xfs", i, 2000 + i, 4.0 + i * 0.01, rate=2000) for i in range(3)]
    rs += [sb("ext4", i, 2000 - i, 7.0 + i * 0.01, rate=2000) for i in range(3)]
    (b,) = analyse(rs).best
    assert b.best.fs_type == "xfs" and b.on.metric == "p99 latency" and not b.on.higher_is_better
    assert "(on p99 latency, lower is better, under the offered rate)" in b.text()
    flat = [sb("xfs", i, 2000 + i, 4.0) for i in range(3)] + [sb("ext4", i, 2400 + i, 7.0) for i in range(3)]
    (b,) = analyse(flat).best
    assert b.on.headline and b.best.fs_type == "ext4"


def test_a_latency_timed_from_the_intended_start_is_said_in_the_advice_line():
    """Issue 56: ycsb under a target times each operation from its intended start; the advice line says so."""
    rs = [sb("xfs", i, 2000, 4.0 + i * 0.01, rate=2000) for i in range(3)]
    rs += [sb("ext4", i, 2000, 7.0 + i * 0.01, rate=2000) for i in range(3)]
    (b,) = analyse(rs).best
    assert "timed from" not in b.text()
    for r in rs:
        r["metrics"]["latency_timed_from"] = "intended"
    (b,) = analyse(rs).best
    assert "under the offered rate, timed from each operation's intended start)" in b.text()
