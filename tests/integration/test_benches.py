"""Every bench under bench/ runs in its tiny mode (`--tiny`: seconds instead of minutes, one round) to its
printed result, so that an import, an API change or a renamed field breaks a test here, not a figure in
the README months later. Only that the bench runs to its result is checked, never the figure itself:
figures stay in the benches, run by hand (docs/overhead.md and the pages it links say which and where)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Modules the benches import, not benches themselves.
HELPERS = {"benchbed.py", "cassandra_container.py", "synth_results.py", "tiny.py", "wml/compare.py"}

# bench: (extra arguments after --tiny, what its printed result line looks like)
BENCHES = {
    "auto_repetitions.py": ([], r"machine time auto / fixed: [\d.]+"),
    "decisions_sim.py": ([], r"P\(any wrong answer per group\) <= 5%: met in \d+ of \d+ scenarios"),
    "kubernetes_overhead.py": ([], r"low: pod / native, median of paired ratios: [\d.]+ over 1 rounds"),
    "overhead.py": ([], r"container volume / native: +[\d.]+ median of paired ratios"),
    "podman_vs_docker.py": ([], r"podman / docker, median of paired ratios: [\d.]+ over 1 rounds"),
    "remote_hosts.py": ([], r"host-b / local: median of 1 paired ratios [\d.]+"),
    "remote_overhead.py": ([], r"remote / local, median of 1 paired rounds"),
    "report_bench.py": ([], r"report on 200 trials: best [\d.]+ s"),
    "spec_fuzz.py": ([], r"300 mutants in [\d.]+ s: 0 crashes"),
    "swarm_overhead.py": ([], r"1 per host: barrier release skew across hosts \d.* ms; hosts' first I/O skew \d"),
    "vm_overhead.py": ([], r"median paired ratio [\d.]+ \(target >= 0.98\)"),
    "wml/run.sh": ([], r"hog_ns_per_iteration engine [\d.]+ filebench_c [\d.]+ ratio [\d.]+"),
    "ycsb_client.py": ([], r"workload A: 2 clients / 1 client = [\d.]+"),
    "ycsb_cluster_span.py": ([], r"span-clients-apart: median [\d.]+ ops/s, ratio to one-host [\d.]+"),
    "ycsb_native_container.py": ([], r"workload A: container / native = [\d.]+"),
    # the advice writes thousands with a comma (1,336 ops/s)
    "ycsb_placement.py": ([], r"placed \(measured\): 2 on one host .*; 1\+1 on 2 hosts \(spread\) [\d.,]+ ops/s"),
}


# A hang guard, not a speed target: on a fresh machine the first bench to need an image, Cassandra's jars
# or a VM guest builds it (minutes); once built, the slowest tiny run takes about 3.5 min.
TIMEOUT_S = 2400


def _benches() -> set[str]:
    found = {p.relative_to(BENCH).as_posix() for p in BENCH.rglob("*") if p.suffix in (".py", ".sh")}
    return found - HELPERS


def test_every_bench_has_a_tiny_run_here():
    assert _benches() == set(BENCHES), "a bench without its tiny run in BENCHES (or one that is gone)"


@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_bench_runs_to_its_result_in_tiny_mode(bench, tmp_path):
    extra, result = BENCHES[bench]
    script = BENCH / bench
    argv = ["bash", str(script), "--tiny"] if bench.endswith(".sh") else [sys.executable, str(script), "--tiny"]
    if bench == "report_bench.py":
        extra = ["--dir", str(tmp_path / "synth")]
    env = {**os.environ, "STRATA_STATE_DIR": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    cp = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 0, f"{bench} exited {cp.returncode}:\n{out[-4000:]}"
    assert "tiny mode" in cp.stdout, f"{bench} did not say its figures mean nothing:\n{out[-2000:]}"
    assert re.search(result, cp.stdout), f"{bench} did not print its result ({result}):\n{out[-4000:]}"
