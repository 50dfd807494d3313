"""Regression tests of issue 42: the five claims strata read otherwise than their studies state them, each
judged here on the studies' own numbers as paper.yaml holds them, through the finding's own check; and the
reason a Cassandra node cannot run in strata's VM, tied to the code that makes it so."""

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.findings import findings  # noqa: E402
from strata.analysis.findings.findings import FINDINGS, HELD, NOT_HELD, NOT_MEASURED  # noqa: E402
from strata.analysis.studies import paper, published  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VALUES = paper.load()
BY_ID = {f.id: f for f in FINDINGS}


def verdict(results, fid):
    return next(o for f, o in analyse(results, judge_steady=False).findings if f.id == fid)


def twice(**kw):
    """Two repetitions of one configuration with the same number: the study's exact value."""
    return [make_result(rep=i, **kw) for i in range(2)]


def table(study, where):
    return [v for v in VALUES if v.study == study and v.where == where]


# ---- 1: vm-cpu-overhead reads "up to 29% higher" in percentage points (study 001, Table 2) ----


def _table2_cpu():
    """(RF, load) -> {runtime: CPU %} of study 001's Table 2, from paper.yaml."""
    out = {}
    for v in table("001", "Table 2"):
        if v.match["metric"] == "cpu_util":
            key = (v.match["replication_factor"], v.match["profile"])
            out.setdefault(key, {})[str(v.match["runtime"])] = v.value
    return out


def test_vm_cpu_overhead_is_in_percentage_points_and_table_2_holds_it():
    rows = _table2_cpu()
    assert len(rows) == 9
    points = [r["vm"] - r["native"] for r in rows.values()]
    ratios = [r["vm"] / r["native"] for r in rows.values()]
    bound = next(v for v in table("001", "Figure 2") if v.match.get("metric") == "cpu_util" and v.versus)
    assert bound.unit == "points" and max(points) == bound.value == 29  # RF 1 mixed: 75% against 46%
    assert min(ratios) > 1.29  # 1.31x to 2.00x: the ratio strata read before fails every row
    results = []
    for i, ((rf, load), cpu) in enumerate(rows.items()):  # each row a configuration of its own (a block size)
        for runtime in ("native", "vm"):
            for r in twice(runtime=runtime, workload=f"rf{rf}-{load}", bs=4096 * (i + 1), value=1000.0):
                r["collectors"] = {"host": {"cpu_idle_percent": 100 - cpu[runtime]}}
                results.append(r)
    o = verdict(results, "vm-cpu-overhead")
    assert o.status == HELD, o.detail
    assert "+29.0 points" in o.detail and len(o.numbers) == 9
    assert published.judged(BY_ID["vm-cpu-overhead"]).status == HELD


# ---- 2: remote-near-local only at the high load where study 003 says the match holds ----


def _remote(lat_us, numjobs, iodepth, device):
    """fio results at a latency: IOPS are the I/Os in flight over it, as fio's closed loop runs."""
    iops = numjobs * iodepth / (lat_us / 1e6)
    kind = {"device": "nvmf", "device_type": "remote"} if device == "remote" else {}
    return twice(value=iops, lat_us=lat_us, numjobs=numjobs, iodepth=iodepth, **kind)


def test_remote_near_local_is_judged_at_high_load_only():
    low = next(v for v in table("003", "Figure 4a") if "total latency higher than direct-attached" in v.what)
    high = next(v for v in table("003", "Figure 4b") if "latency the network adds" in v.what)
    slow, fast = 1 + low.value / 100, 1 + high.value / 100  # +54.0% at 1 job x QD1; less than 2% at 16 jobs
    assert 1 / slow < 0.88  # the 0.65x at one I/O in flight that the old criterion judged against
    at_low = _remote(100, 1, 1, "local") + _remote(100 * slow, 1, 1, "remote")
    assert verdict(at_low, "remote-near-local").status == NOT_MEASURED
    at_high = _remote(2000, 16, 32, "local") + _remote(2000 * fast, 16, 32, "remote")
    o = verdict(at_low + at_high, "remote-near-local")
    assert o.status == HELD and "j16xqd32" in o.detail and "j1xqd1" not in o.detail, o.detail
    gaps = [v for v in table("003", "Figure 6a") if v.versus == {"attached": "local"} and v.unit == "percent"]
    assert sorted(v.value for v in gaps) == [6, 12]  # Cassandra's 6% to 12%: 0.94x and 0.88x, both held
    assert published.judged(BY_ID["remote-near-local"]).status == HELD


# ---- 3: volume against bind mount as study 004 states it: bind slightly better, per count ----


def _fb_table(where, workload):
    out = []
    for v in table("004", where):
        m = v.match
        n = m["containers"]
        per = v.value / 1000 if v.unit == "KB/s" else v.value
        driver = "btrfs" if m["filesystem"] == "btrfs" else "overlay2"
        for r in twice(fs=m["filesystem"], runtime="docker", driver=driver, path=m["path"], kind="filebench",
                       workload=workload, value=per * n, containers=n):  # fmt: skip
            out.append(r)
    return out


def test_bind_slightly_better_holds_on_tables_4_and_5_where_10_percent_failed():
    results = _fb_table("Table 4", "fileserver") + _fb_table("Table 5", "randomfileaccess")
    o = verdict(results, "bind-slightly-better")
    assert o.status == HELD and len(o.numbers) == 6, o.detail
    beyond = 0  # the old criterion: each volume within 10% of its bind mount, over Tables 2 to 5
    for where in ("Table 2", "Table 3", "Table 4", "Table 5"):
        cells = {(v.match["filesystem"], v.match["containers"], v.match["path"]): v.value for v in table("004", where)}
        for (fs, n, path), vol in cells.items():
            if path == "volume" and abs(vol / cells[(fs, n, "bind")] - 1) > 0.10:
                beyond += 1
    assert beyond == 4  # Table 3 ext4 x2 (+21%), Table 4 xfs x2, btrfs x2, xfs x3
    assert "volume-bind-similar" not in BY_ID


# ---- 4: per-container-share is strata's own reading, and says where study 004's tables contradict it ----


def test_per_container_share_names_the_tables_counter_examples():
    f = BY_ID["per-container-share"]
    assert f.own_reading and f.quote is None
    o = published.judged(f)
    against = [n for n in o.numbers if n.endswith("(against)")]
    assert o.status == NOT_HELD and len(o.numbers) == 48 and len(against) == 13
    t3 = {(v.match["filesystem"], v.match["path"], v.match["containers"]): v.value for v in table("004", "Table 3")}
    aggregate = 2 * t3[("ext4", "volume", 2)] / t3[("ext4", "volume", 1)]  # 2.95 each against 3.6 alone
    said = published.said(f)
    assert f"{aggregate:.2f}x" == "1.64x" and "1.64x one container's total" in said
    assert said.startswith("strata's own reading of study 004's Tables 2 to 5") and "13 of 48 against" in said


# ---- 5: findings.py's header no longer says the criteria are looser than the studies' numbers ----


def test_the_findings_header_says_what_holds():
    doc = findings.__doc__ or ""
    assert "looser than the studies' own numbers on purpose" not in doc
    assert "the same check runs on the studies' own numbers" in " ".join(doc.split())
    loose = [f.id for f in FINDINGS if published.judged(f).status == NOT_HELD and not f.own_reading]
    assert not loose


# ---- the VM reason: the code's, not a missing Java ----

VM_FACTS = ("-nic none", "127.0.0.0/8", "template", "TCG")


def test_the_vm_reason_is_what_the_code_does():
    from strata.stack.runtimes import REGISTRY as RUNTIMES
    from strata.stack.vm.qemu import VmSpec, qemu_argv
    from strata.workloads import REGISTRY as WORKLOADS
    from strata.workloads.server.template import ServerTemplate
    from strata.workloads.ycsb.plugin import VM_REASON

    argv = qemu_argv(VmSpec("tcg", 1, 1 << 30, "k", "i", "r", "c", "p", ""))
    assert argv[argv.index("-nic") + 1] == "none"  # the VM has no network
    ycsb = WORKLOADS["ycsb"]
    assert isinstance(ycsb, ServerTemplate) and ycsb.network(ycsb.params()) == "host"  # clients on 127.0.0.0/8
    assert ycsb.impossible(ycsb.params(), RUNTIMES["vm"]) == VM_REASON  # the template refuses every VM
    assert "-nic none" in VM_REASON and "TCG" in VM_REASON and "Java" not in VM_REASON


def test_the_vm_reason_is_said_alike_everywhere():
    texts = {
        "paper.yaml": "\n".join(v.not_reproduced for v in VALUES if "strata's VM" in v.not_reproduced),
        "studies.yaml": (ROOT / "src/strata/analysis/studies/studies.yaml").read_text(),
        "docs/studies.md": (ROOT / "docs/studies.md").read_text(),
        "shirinbab-cassandra.yaml": (ROOT / "examples/shirinbab-cassandra.yaml").read_text(),
    }
    assert sum(1 for v in VALUES if "strata's VM" in v.not_reproduced) == 25
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert all(fact in flat for fact in VM_FACTS), name
        assert not re.search(r"(has|holds) no Java", flat), name


def test_a_bound_the_study_gives_is_held_at_the_bound():
    """'less than 1%' and 'up to 29' are bounds: the result set takes them as values, and an exact value
    on its criterion's bound holds (no float noise past it)."""
    share = next(v for v in table("003", "Figure 4b") if "slat's share" in v.what)
    o = published.judged(BY_ID["slat-negligible-high-load"])
    assert o.status == HELD and f"{share.value:.2f}%" in o.detail
    assert math.isclose(share.value, 1.0)
