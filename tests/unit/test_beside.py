"""The studies' numbers beside a user's: each side against its own best or baseline, the shape in words."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.studies.paper import load  # noqa: E402
from strata.analysis.studies.side_by_side import beside, paper_ratio  # noqa: E402
from strata.report import csv, html, terminal  # noqa: E402
from strata.report.model import build  # noqa: E402

TABLE3 = [v for v in load() if v.study == "004" and v.where == "Table 3"]


def _varmail(value_of) -> list[dict]:
    """Results of 004's Table 3 configurations, each per-container MB/s given by value_of(paper value)."""
    rs = []
    for v in TABLE3:
        m = v.match
        fs, n = m["filesystem"], m["containers"]
        driver = "btrfs" if fs == "btrfs" else "overlay2"
        for rep in range(2):
            per = value_of(v.value) * (1 + 0.01 * rep)
            rs.append(
                make_result(
                    fs=fs, runtime="docker", driver=driver, path=m["path"], kind="filebench", workload="varmail",
                    containers=n, value=per * n, rep=rep,
                )
            )  # fmt: skip
    return rs


def test_004_table_3_in_the_same_order_agrees_wholly():
    assert len(TABLE3) == 18
    groups = [b for b in analyse(_varmail(lambda x: 10 * x)).beside if b.where == "Table 3"]
    assert len(groups) == 1
    b = groups[0]
    assert len(b.measured) == 18 and b.rank_agreement == pytest.approx(1.0)
    best = max(b.pairs, key=lambda p: p.value.value)
    assert b.relative(best, yours=False) == 1.0 and b.relative(best, yours=True) == pytest.approx(1.0, abs=0.01)
    assert "best in the paper and here" in b.shape() and "worst in both" in b.shape()


def test_the_reverse_order_says_where_it_disagrees():
    b = next(b for b in analyse(_varmail(lambda x: 100 / x)).beside if b.where == "Table 3")
    assert b.rank_agreement == pytest.approx(-1.0, abs=0.01)  # two of the paper's cells are equal
    s = b.shape()
    assert s.startswith("study 004 Table 3 (varmail): best: ") and " in the paper, " in s and "(1st of 18 here)" in s


HIGH = {"numjobs": 32, "iodepth": 32}


def test_a_ratio_to_the_raw_device_beside_the_users_own():
    v = next(v for v in load() if v.where == "Figure 3a" and "raw" in (v.baseline or ""))
    assert paper_ratio(v) == pytest.approx(0.75)  # "25% below the raw block device"
    rs = [make_result(fs="raw", value=1000, rep=i, workload="rr", load="high", **HIGH) for i in range(2)]
    rs += [make_result(fs="ext4", value=900, rep=i, workload="rr", load="high", **HIGH) for i in range(2)]
    stated = [b for b in beside(analyse(rs).cells, [v])]
    assert len(stated) == 1 and stated[0].kind == "stated"
    assert stated[0].pairs[0].yours == pytest.approx(0.9, abs=0.01)
    assert "0.75x raw block device in the paper, 0.90x here" in stated[0].shape()


def test_a_load_meets_a_value_by_its_jobs_and_depth_not_by_its_name():
    """Regression: study 003's high load (32 jobs x QD32) met any load strata named `high`."""
    v = next(v for v in load() if v.where == "Figure 3a" and "raw" in (v.baseline or ""))
    pairs = [("raw", 1000, i) for i in range(2)] + [("ext4", 900, i) for i in range(2)]
    named = [make_result(fs=fs, value=x, rep=i, workload="rr", load="high") for fs, x, i in pairs]
    assert beside(analyse(named).cells, [v]) == []
    other = [make_result(fs=fs, value=x, rep=i, workload="rr", load="h", **HIGH) for fs, x, i in pairs]
    assert len(beside(analyse(other).cells, [v])) == 1


def test_a_change_against_another_configuration_is_read_between_the_two():
    v = next(v for v in load() if v.where == "Figure 3f")  # dioread_nolock: +25% over ext4
    rs = [make_result(fs="ext4", value=1000, rep=i, workload="rr", **HIGH) for i in range(2)]
    rs += [
        make_result(fs="ext4", value=1200, rep=i, workload="rr", mount_options=("dioread_nolock",), **HIGH)
        for i in range(2)
    ]
    (b,) = beside(analyse(rs).cells, [v])
    assert b.pairs[0].yours == pytest.approx(1.2, abs=0.01) and b.pairs[0].unit_here == "x"
    assert "1.25x ext4 without dioread_nolock in the paper, 1.20x here" in b.shape()


def test_each_side_keeps_its_own_unit():
    """Study 004's Table 5 is KB/s (read from its magnitude); Filebench here reports MB/s."""
    t5 = [v for v in load() if v.study == "004" and v.where == "Table 5"]
    rs = [
        make_result(fs="ext4", runtime="docker", path=p, kind="filebench", workload="randomfileaccess", value=v, rep=i)
        for p, v in (("volume", 3.0), ("bind", 2.0))
        for i in range(2)
    ]
    (b,) = beside(analyse(rs).cells, t5)
    m = {p.value.match["path"]: p for p in b.measured}
    assert m["volume"].value.unit == "KB/s" and m["volume"].unit_here == "MB/s"
    assert m["volume"].yours == pytest.approx(3.0, rel=0.02)
    # in its group, the words every configuration shares (docker) are left out
    assert b.label(m["volume"]) == "ext4 volume 1 container" and m["volume"].label == "ext4 volume docker 1 container"


# ---- study 001: Cassandra at shares of the peak ---------------------------------------------------


def _ycsb(runtime, profile, rf, rep, ops_s, lat_us, busy, share=None, target=None, peak=None, clients=0.1):
    """A stored result of a three-node Cassandra cluster under a study 001 load."""
    r = make_result(runtime=runtime, driver="overlay2", path="volume" if runtime == "docker" else "bind", rep=rep)
    wl = {"type": "ycsb", "workload": "a", "profile": profile, "records": 10000, "threads": 16, "clusters": 1,
          "target": target, "cluster": {"nodes": 3, "replication_factor": rf, "consistency": "QUORUM"}}  # fmt: skip
    if share is not None:
        wl["target_share"] = share
    rate = f"-t{share * 100:g}pct" if share else f"-t{target}" if target else ""
    wl["name"] = f"ycsb-a-{profile}{rate}-1x3n-rf{rf}"
    r["trial"]["workload"] = wl
    r["labels"]["workload"] = wl["name"]
    lat = {"n": 1000, "mean": lat_us * 1000, "p99": lat_us * 3000}
    r["metrics"] = {
        "kind": "ycsb",
        "primary": {"value": ops_s, "unit": "ops/s", "metric": "throughput_ops_s", "series": None},
        "throughput_ops_s": ops_s,
        "latency": {"READ": {"n": 750, "mean_us": lat_us}, "UPDATE": {"n": 250, "mean_us": lat_us}},
        "read": {"iops": ops_s * 0.75, "lat_ns": lat},
        "write": {"iops": ops_s * 0.25, "lat_ns": lat},
        "clients": {"run": {"client_cpu_share": clients}},
        **({"offered": {"share": share, "peak_ops_s": peak, "target_ops_s": round(share * peak)}} if share else {}),
    }
    r["collectors"] = {"host": {"cpu_idle_percent": 100 - busy}}
    r["trial_id"] = f"{wl['name']}-{runtime}-{rep}"
    return r


T2 = [v for v in load() if v.study == "001" and v.where == "Table 2"]


def test_001_table_2_meets_a_share_of_the_peak_with_both_rates_said():
    rs = [
        _ycsb(rt, "mixed", 3, i, 600, lat, busy, share=0.4, peak=1500)
        for rt, lat, busy in (("docker", 2000, 50), ("native", 1800, 45))
        for i in range(2)
    ]
    groups = {b.subject: b for b in beside(analyse(rs).cells, T2)}
    cpu, lat = groups["CPU utilization"], groups["mean latency"]
    assert len(cpu.measured) == 2 and len(lat.measured) == 2
    d = next(p for p in cpu.measured if p.value.match["runtime"] == "docker:*")
    assert (
        d.value.value == 74 and d.yours == pytest.approx(40.0) and d.unit_here == "%"
    )  # 50% busy less the clients' 10%
    assert "600 ops/s offered to each database: 40% of the 1,500 ops/s peak measured just before" in d.here
    assert lat.measured[0].unit_here == "ms" and sorted(p.yours for p in lat.measured) == pytest.approx([1.8, 2.0])
    assert "nonvirtualized" not in cpu.shape() and "native" in cpu.shape()


def test_an_absolute_rate_meets_a_share_against_the_flat_out_run_of_the_same_cluster():
    flat = [_ycsb("docker", "mixed", 3, i, 1000, 5.0, 90) for i in range(2)]  # flat out: 1,000 ops/s
    near = [_ycsb("docker", "mixed", 3, i, 400, 2.0, 40, target=420) for i in range(2)]  # 0.42 of the peak
    far = [_ycsb("docker", "mixed", 3, i, 150, 1.0, 20, target=150) for i in range(2)]  # 0.15
    groups = {b.subject: b for b in beside(analyse(flat + near + far).cells, T2)}
    d = next(p for p in groups["CPU utilization"].measured if p.value.match["replication_factor"] == 3)
    assert [c.workload["target"] for c in d.cells] == [420]
    assert "42% of the 1,000 ops/s peak of the flat-out run" in d.here
    assert groups["CPU utilization"].measured == [d]  # the rates of 10% and 30% of the peak were not offered
    maxima = [b for b in beside(analyse(flat).cells, [v for v in load() if v.where == "Figure 2"])]
    assert not maxima  # RF 3: Figure 2's maxima are RF 1


def test_the_report_shows_them_apart_from_its_measurements():
    rep = build(analyse(_varmail(lambda x: 10 * x)), "t")
    page = html.render(rep, {}).decode()
    assert 'id="paper"' in page and "never a paper's number as if it were measured here" in page
    beside = terminal.render(rep).split("the studies beside these results")[1]
    assert "order agreement (Spearman)" in beside  # the sentence whole, never cut before its figure
    rows = csv.render(rep)["paper.csv"].decode().splitlines()
    assert rows[0].startswith("study,where,subject,configuration,paper,unit") and len(rows) == 19
    assert not any("004" in f.title for f in rep.figures), "a paper's number is never drawn as a measurement"


def test_the_terminal_keeps_a_long_comparison_whole(monkeypatch):
    from strata.analysis.studies.side_by_side import Beside

    long = "study 004 Table 2 (webserver): " + "best: a long configuration name here; " * 8 + "agreement +0.92"
    monkeypatch.setattr(Beside, "shape", lambda self: long)
    rep = build(analyse(_varmail(lambda x: 10 * x)), "t")
    beside = terminal.render(rep).split("the studies beside these results")[1]
    assert " ".join(beside.split()).find("agreement +0.92") > 0 and "..." not in beside.split("\n\n")[0]


def test_a_maximum_is_the_peak_never_a_throttled_rate():
    """Figure 2's 200K tps at RF 1 is a maximum: met by a relative target's peak or a flat-out run, never by
    the throughput of a run at a share of it."""
    fig2 = [v for v in load() if v.study == "001" and v.where == "Figure 2" and v.match.get("runtime") == "native"]
    rs = [_ycsb("native", "mixed", 1, i, 600, 1000, 40, share=0.4, peak=1500) for i in range(2)]
    (b,) = beside(analyse(rs).cells, fig2)
    (p,) = b.measured
    assert p.yours == pytest.approx(1500) and p.unit_here == "ops/s"
    assert "200,000 ops/s in the paper, 1,500 ops/s here" in b.shape()


def test_a_bound_in_parentheses_is_not_the_direction():
    """Regression: "(less than)" read as a fall: 2% added by the network became 0.98x."""
    v = next(v for v in load() if "latency the network adds" in v.what)
    assert paper_ratio(v) == pytest.approx(1.02)
