"""Every bench under bench/ runs in its tiny mode (`--tiny`: seconds instead of minutes, one round) to its
printed result, so that an import, an API change or a renamed field breaks a test here, not a figure in
the README months later. The result is checked field by field: each figure the bench prints is there, with
its unit, and plausible for a working bench; never against its target, which the benches judge when run
by hand (docs/overhead.md and the pages it links say which and where). Most of these runs repeat paths an
integration test of the default tier covers: they are in the full tier (tests/conftest.py says which)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.coverage import covers
from tests.integration import ledger

# ycsb_cluster_span's tiny run took 5 min with the machine loaded (test hosts, Cassandra across them): the
# bench's own limit below stops it first, so that its output is in the failure
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Modules the benches import, not benches themselves.
HELPERS = {
    "abba.py",
    "benchbed.py",
    "cassandra_container.py",
    "kubebed.py",
    "old_rule.py",
    "synth_results.py",
    "tiny.py",
    "wml/compare.py",
}

# bench: (extra arguments after --tiny, what its printed result says). Each pattern must match the output,
# with its unit; each named number in it must lie in its range. A tiny run's figures are noise, so the ranges
# are those of a working bench, not of a target: a ratio of 0 or 50, no I/O, a missing unit or a field gone
# from the output is a broken bench. Numbers may carry thousands separators (1,336 ops/s).
Checks = list[tuple[str, dict[str, tuple[float, float]]]]
RATIO = (0.05, 20.0)  # a ratio of two measurements of one machine, whatever the noise of 1 s trials
IOPS = (10.0, 1e7)
BENCHES: dict[str, tuple[list[str], Checks]] = {
    "auto_repetitions.py": (
        [],
        [
            (r"fixed: \d+ repetitions x \d+ s, 1 run\(s\): (?P<fixed_min>[\d.]+) min, (?P<fixed>\d+) trials",
             {"fixed_min": (0.01, 60), "fixed": (2, 10000)}),
            (r"auto: margin 5%, \d+\.\.\d+ repetitions, 1 run\(s\): (?P<auto_min>[\d.]+) min, (?P<auto>\d+) trials",
             {"auto_min": (0.01, 60), "auto": (2, 10000)}),
            (r"machine time auto / fixed: (?P<ratio>[\d.]+)", {"ratio": RATIO}),
            (r"pair 0: decisions agree: (yes|no: .+)", {}),
        ],
    ),
    "barrier_release.py": (
        [],
        [
            (r"before: poll 5 ms: host busy (?P<old>[\d.]+) while held, starts spread [\d.]+ ms", {"old": (0.0, 1.0)}),
            (r"now: poll \d+ ms, lead \d+ ms: host busy (?P<new>[\d.]+) while held, starts spread [\d.]+ ms",
             {"new": (0.0, 1.0)}),
            (r"busy now / before: (?P<ratio>[\d.]+|nan); spread now / before: ([\d.]+|nan)", {}),
        ],
    ),
    "chaos.py": (
        [],
        [
            (r"faults injected (?P<faults>\d+); trials lost \d+ \(target 0; stored twice \d+\); miscategorised \d+",
             {"faults": (1, 1000)}),
            (r"leftovers (?P<left>\d+) \(target 0\)", {"left": (0, 0)}),  # whatever the faults: cleanup is whole
            (r"fault +injected +in a trial +between +miscategorised", {}),
        ],
    ),
    "decisions_sim.py": (
        [],
        [(r"P\(any wrong answer per group\) <= 5%: met in (?P<met>\d+) of (?P<scenarios>\d+) scenarios",
          {"scenarios": (1, 1000)}),
         (r"auto's margin / the blocked oracle's <= 1.3 in the median group: met in \d+ of \d+ scenarios", {}),
         (r"G=4 real cv 10% +old auto ", {}),
         (r"G=4 lfc noisy best cv 10% +targets: .*; least favourable, every design <= [\d.]+%: (met|NOT met)", {}),
         (r"least favourable configurations at 4 stacks: met in \d+ of 1", {})],
    ),
    "device_writes.py": (
        [],
        [
            (r"stack +workload +load +flushes/owed +merged/write +WA +flags", {}),
            (r"flush: stacks that keep their syncs saw at least (?P<kept>[\d.]+) of the flushes owed, barrier=0 at "
             r"most (?P<dropped>[\d.]+) \(flagged below 0.5\)", {"kept": (0.1, 1e4), "dropped": (0.0, 1e4)}),
            (r"absorbed: plain file systems merged at most (?P<plain>-?[\d.]+) a random write, data=journal at least "
             r"(?P<journal>[\d.]+) \(flagged above 0.5\)", {"plain": (-100.0, 100.0), "journal": (0.0, 100.0)}),
        ],
    ),
    "hdr_decoder.py": (
        [],
        [
            (r"READ +15 +2,547 +(yes|NO)", {}),
            (r"synthetic, recorded by strata +- +(?P<values>[\d,]+) +yes", {"values": (3000, 3000)}),
            (r"READ +yes +(yes|NO) +(?P<diff>[\d.e-]+)", {"diff": (0.0, 1.0)}),
            (r"decode \+ merge alone, every bucket's count the same on every input: yes", {}),
            (r"decode \+ merge \+ read of 6 lines \(3,000 values\), median of 2 alternated rounds: strata "
             r"(?P<ours>[\d.]+) ms, package (?P<theirs>[\d.]+) ms, package / strata (?P<ratio>[\d.]+)",
             {"ours": (0.01, 60000), "theirs": (0.01, 60000), "ratio": (0.001, 1000)}),
            (r"verdict: the hdrhistogram package (serves|does not serve) as well", {}),
        ],
    ),
    "kubernetes_agent.py": (
        [],
        [
            (r"round 1: sampled (?P<sampled>[\d,]+) IOPS, idle (?P<idle>[\d,]+) IOPS, ratio",
             {"sampled": IOPS, "idle": IOPS}),
            (r"agent sampling / idle, geometric mean of paired ratios: (?P<ratio>[\d.]+) .* over 1 rounds",
             {"ratio": RATIO}),
        ],
    ),
    "kubernetes_placement.py": (
        [],
        [
            (r"round 1: spread: (?P<spread>[\d,]+) IOPS \(nodes: a [\d,]+, b [\d,]+\)", {"spread": IOPS}),
            (r"4 \+ 4 on two nodes / 8 on one, geometric mean of paired ratios: (?P<ratio>[\d.]+) .* over 1 rounds",
             {"ratio": RATIO}),
        ],
    ),
    "kubernetes_overhead.py": (
        [],
        [
            (r"low round 1: native (?P<native>[\d,]+) IOPS, pod on a local PV (?P<pod>[\d,]+), ratio",
             {"native": IOPS, "pod": IOPS}),
            (r"low: pod / native, median of paired ratios: (?P<ratio>[\d.]+) over 1 rounds", {"ratio": RATIO}),
        ],
    ),
    "oracle_margin.py": (
        [],
        [
            (r"run +group +n +method +level +old +new +new/old +pooled/old +oracle +new/oracle +oracle n for 20%", {}),
            (r"on loop +(?P<n>\d+) +(?:blocked, per stack|\S+) +(?P<level>[\d.]+) +(?P<old>\d+)% +(?P<new>\d+)% +\S+ +"
             r"(?P<pooled>[\d.]+) +(?P<oracle>\d+)% ",
             {"n": (3, 3), "level": (0.001, 0.05), "old": (0, 10000), "new": (0, 10000), "pooled": (0, 100),
              "oracle": (0, 10000)}),
            (r"groups: 1, every rule at one look; medians with bootstrap 95% intervals:", {}),
            (r"median new / old: (?P<r>[\d.]+) \[[\d.]+, [\d.]+\]", {"r": (0.0, 100.0)}),
            (r"median new / oracle: (?P<o>[\d.]+) \[[\d.]+, [\d.]+\]", {"o": (0.0, 100.0)}),
        ],
    ),
    "pretest_frontier.py": (
        [],
        [
            (r"level +lfc equal +lfc noisy best +lfc noisy other +quick: margin/oracle, own var", {}),
            (r"10% +(?P<eq>[\d.]+)% +(?P<nb>[\d.]+)% +(?P<no>[\d.]+)% +(?P<m>[\d.]+), (?P<own>[\d.]+)%",
             {"eq": (0, 100), "nb": (0, 100), "no": (0, 100), "m": (0.01, 100), "own": (0, 100)}),
            (r"pretest_frontier: 20 groups per scenario, fixed 3, one look", {}),
        ],
    ),
    "order_cost.py": (
        [],
        [
            (r"run 0 spec: \d+ s, set-up (?P<setup>\d+) s, (?P<stacks>\d+) stacks built in 2 rounds",
             {"setup": (0, 3600), "stacks": (2, 20)}),
            (r"machine time random / spec: (?P<ratio>[\d.]+)", {"ratio": RATIO}),
            (r"set-up time random / spec: (?P<setup>[\d.]+)", {"setup": (0.0, 100.0)}),
        ],
    ),
    "overhead.py": (
        [],
        [
            (r"round 1: by hand (?P<hand>\d+)  strata native (?P<native>\d+)  container volume (?P<volume>\d+) IOPS",
             {"hand": IOPS, "native": IOPS, "volume": IOPS}),
            (r"strata native / by hand: +(?P<native>[\d.]+) median of paired ratios", {"native": RATIO}),
            (r"container volume / native: +(?P<volume>[\d.]+) median of paired ratios", {"volume": RATIO}),
        ],
    ),
    "pgbench_overhead.py": (
        [],
        [
            (r"pair 1 tpcb-like \(by hand first\): by hand (?P<hand>[\d,]+) tx/s, "
             r"strata native (?P<strata>[\d,]+) tx/s",
             {"hand": (1.0, 1e7), "strata": (1.0, 1e7)}),
            (r"pair 1 select-only \(by hand first\): by hand (?P<hand>[\d,]+) tx/s, "
             r"strata native (?P<strata>[\d,]+) tx/s",
             {"hand": (1.0, 1e7), "strata": (1.0, 1e7)}),
            (r"tpcb-like: strata / by hand (?P<ratio>[\d.]+) \[no interval: one pair\], geometric mean of 1 paired",
             {"ratio": RATIO}),
            (r"select-only: strata / by hand (?P<ratio>[\d.]+) \[no interval: one pair\], geometric mean of 1 paired",
             {"ratio": RATIO}),
        ],
    ),
    "sysbench_overhead.py": (
        [],
        [
            (r"pair 1 oltp_point_select \(by hand first\): by hand (?P<hand>[\d,]+) tx/s, strata native "
             r"(?P<strata>[\d,]+) tx/s, ratio (?P<ratio>[\d.]+)",
             {"hand": (1.0, 1e7), "strata": (1.0, 1e7), "ratio": RATIO}),
            (r"oltp_point_select: strata / by hand (?P<ratio>[\d.]+) \[(?P<low>[\d.]+), (?P<high>[\d.]+)\], "
             r"geometric mean of 2 paired ratios with its 95% interval",
             {"ratio": RATIO, "low": (0.0, 20.0), "high": (0.05, 1e6)}),
        ],
    ),
    "podman_vs_docker.py": (
        [],
        [
            (r"round 1: docker (?P<docker>[\d,]+) IOPS, podman (?P<podman>[\d,]+) IOPS",
             {"docker": IOPS, "podman": IOPS}),
            (r"podman / docker, median of paired ratios: (?P<ratio>[\d.]+) over 1 rounds", {"ratio": RATIO}),
        ],
    ),
    "remote_hosts.py": (
        [],
        [
            (r"host-b / local: median of 1 paired ratios (?P<ratio>[\d.]+) .*; medians (?P<b>\d+) against "
             r"(?P<local>\d+) IOPS", {"ratio": RATIO, "b": IOPS, "local": IOPS}),
        ],
    ),
    "remote_overhead.py": (
        [],
        [
            (r"remote / local, median of 1 paired rounds \(\d+ s each, 4 KiB random reads\)", {}),
            (r"QD1 \(1 job x QD1\) +(?P<local>\d+) +(?P<remote>\d+) +(?P<ratio>[\d.]+) +(?P<local_us>\d+)us "
             r"+(?P<remote_us>\d+)us", {"local": IOPS, "remote": IOPS, "ratio": RATIO, "local_us": (1, 1e6),
                                       "remote_us": (1, 1e6)}),
        ],
    ),
    "report_bench.py": (
        [],
        [
            (r"run 1: 200 trials, (?P<cells>\d+) configurations, (?P<figures>\d+) figures", {"cells": (10, 200),
             "figures": (10, 200)}),
            (r"report on 200 trials: best (?P<s>[\d.]+) s", {"s": (0.05, 600)}),
        ],
    ),
    "spec_fuzz.py": ([], [(r"300 mutants in (?P<s>[\d.]+) s: 0 crashes", {"s": (0.01, 600)})]),
    "swarm_overhead.py": (
        [],
        [
            (r"overhead: swarm / local, median of 1 paired ratios = (?P<ratio>[\d.]+)", {"ratio": RATIO}),
            (r"1 per host: barrier release skew across hosts (?P<release>[\d.]+) ms; hosts' first I/O skew "
             r"(?P<first>[\d.]+) ms", {"release": (0, 5000), "first": (0, 5000)}),
        ],
    ),
    "vm_overhead.py": (
        [],
        [
            (r"strata VM path: median (?P<strata>[\d.]+) IOPS", {"strata": (1, 1e7)}),
            (r"median paired ratio (?P<ratio>[\d.]+) \(target >= 0.98\)", {"ratio": RATIO}),
        ],
    ),
    "wml/run.sh": (
        [],
        [
            (r"hog_ns_per_iteration engine (?P<engine>[\d.]+) filebench_c (?P<c>[\d.]+) ratio (?P<ratio>[\d.]+)",
             {"engine": (0.01, 1e9), "c": (0.01, 1e9), "ratio": RATIO}),
        ],
    ),
    "ycsb_client.py": ([], [(r"workload A: 2 clients / 1 client = (?P<ratio>[\d.]+)", {"ratio": RATIO})]),
    "ycsb_cluster_span.py": (
        [],
        [
            (r"span-clients-apart: median (?P<ops>[\d.]+) ops/s, ratio to one-host (?P<ratio>[\d.]+); median read "
             r"p99 (?P<p99_ms>[\d.]+) ms", {"ops": (1, 1e7), "ratio": RATIO, "p99_ms": (0.001, 60000)}),
        ],
    ),
    "ycsb_native_container.py": ([], [(r"workload A: container / native = (?P<ratio>[\d.]+)", {"ratio": RATIO})]),
    # the spread trial's own figures, one host's and the other's: its placement advice is left to the analysis,
    # which draws none when a busy machine made the two hosts' I/O windows overlap too little (sync suspect)
    "ycsb_placement.py": (
        [],
        [(r"spread rep 0: +(?P<spread>[\d.,]+) ops/s \(hosts: a [\d.,]+, b [\d.,]+\)", {"spread": (1, 1e7)})],
    ),
}  # fmt: skip


# A hang guard, not a speed target: scripts/prepare builds the images, jars and guests before the tests, and
# the slowest tiny run takes about 5 min on a loaded machine.
TIMEOUT_S = 1400


def _benches() -> set[str]:
    found = {p.relative_to(BENCH).as_posix() for p in BENCH.rglob("*") if p.suffix in (".py", ".sh")}
    return found - HELPERS


@covers()
def test_every_bench_has_a_tiny_run_here():
    assert _benches() == set(BENCHES), "a bench without its tiny run in BENCHES (or one that is gone)"


@pytest.mark.parametrize("bench", [pytest.param(b, marks=covers(f"bench:{b}")) for b in sorted(BENCHES)])
def test_bench_runs_to_its_result_in_tiny_mode(bench, tmp_path):
    extra, checks = BENCHES[bench]
    _runs_to_its_result(bench, extra, checks, tmp_path)


@covers("bench:sysbench_overhead.py")
def test_an_abba_bench_measures_the_spread_by_hand_alone_in_tiny_mode(tmp_path):
    """`--hand-only`, the spread a design rests on (bench/abba.py): the side by hand only, the client counts
    alternated within each round, no strata trial."""
    checks = [
        (r"round 1 oltp_point_select at 2 clients: by hand (?P<tps>[\d,]+) tx/s", {"tps": (1.0, 1e7)}),
        (r"round 2 oltp_point_select at 1 clients: by hand (?P<tps>[\d,]+) tx/s", {"tps": (1.0, 1e7)}),
        (
            r"oltp_point_select at 2 clients by hand: (?P<tps>[\d,]+) tx/s, geometric mean of 2 fresh servers; sd "
            r"of log tps (?P<sd>[\d.]+)",
            {"tps": (1.0, 1e7), "sd": (0.0, 3.0)},
        ),
        (r"by hand only: 2 fresh servers at each client count, alternated", {}),
    ]
    out = _runs_to_its_result("sysbench_overhead.py", ["--hand-only", "2,1"], checks, tmp_path)
    assert "strata native" not in out and "pair 1" not in out, f"a strata trial ran:\n{out[-2000:]}"


def _runs_to_its_result(bench: str, extra: list[str], checks: Checks, tmp_path: Path) -> str:
    """Run `bench --tiny` with `extra` arguments; its output, once each of `checks` matched within its ranges."""
    script = BENCH / bench
    argv = ["bash", str(script), "--tiny"] if bench.endswith(".sh") else [sys.executable, str(script), "--tiny"]
    if bench == "report_bench.py":  # its synthetic trials beside tmp_path: not trials this test ran (@covers)
        extra = ["--dir", str(tmp_path.parent / f"{tmp_path.name}-synth")]
    env = {**os.environ, "STRATA_STATE_DIR": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    cp = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    out = cp.stdout + cp.stderr
    ledger.bench(bench, cp.returncode)
    assert cp.returncode == 0, f"{bench} exited {cp.returncode}:\n{out[-4000:]}"
    assert "tiny mode" in cp.stdout, f"{bench} did not say its figures mean nothing:\n{out[-2000:]}"
    for pattern, ranges in checks:
        m = re.search(pattern, cp.stdout)
        assert m, f"{bench} did not print {pattern!r}:\n{out[-4000:]}"
        for name, (low, high) in ranges.items():
            value = float(m.group(name).replace(",", ""))
            assert low <= value <= high, f"{bench}: {name} = {value}, outside [{low}, {high}]: {m.group(0)}"
    return out
