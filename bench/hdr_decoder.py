#!/usr/bin/env python3
"""strata's own HdrHistogram decoder (workloads/hdr.py) against the `hdrhistogram` package (PyPI, `hdrh`),
on the same log lines: does the package serve as well, so that strata could decode and merge with it?

The inputs, the same for both:
- YCSB 0.17.0's own logs as captured (tests/data/ycsb/0.17.0/run-a-dataintegrity/hdr/*.hdr), each file's
  intervals merged;
- synthetic clients: seeded log-normal latencies (us, median 500, sigma 1.2, a tail to seconds) recorded by
  the package into interval histograms on YCSB's grid (1 us to 3,600 s, 3 digits), written as YCSB's
  HistogramLogWriter writes them (V2 compressed, base64), every client's intervals merged.

Each side decodes every line, merges them, and reads the total count, min, max, mean and the values at
the 50th, 90th, 95th, 99th, 99.9th and 99.99th percentiles. Strata's `Histogram.record` of the synthetic
values is read too, so that its bucket grid is checked against the package's, not only its decoder. The
reference for YCSB's logs is what YCSB itself printed at the end of that run (Java's HdrHistogram 2.1.12 on
the same intervals: its stdout.txt beside the logs): operations, average, min, max and its percentiles.

Speed: the same work (decode, merge, read) timed for each side in alternation, ROUNDS times, the order
swapped every round (ABBA); the median per side and the ratio package / strata. Timings on this VM are noisy:
read the ratio, not the seconds.

The rules, written before the first full run: the package "serves as well" when (1) every figure above is
equal on every input and to YCSB's own (the mean within 1e-9 relative: a float sum in another order), (2) its
median time is at most 1.2x strata's, (3) it installs without a compiler (a wheel for this Python: a fact of
the install, said in docs/ycsb-mechanics.md, not measured here). Prints the figures and the verdict; exits 0
either way.
Usage: .venv/bin/python bench/hdr_decoder.py [--clients 8] [--intervals 60] [--per-interval 2000]
       [--rounds 11] [--seed 1] [--tiny]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))

import tiny  # noqa: E402
from hdrh.histogram import HdrHistogram  # noqa: E402

from strata.workloads import hdr  # noqa: E402

YCSB_LOGS = Path(__file__).resolve().parents[1] / "tests/data/ycsb/0.17.0/run-a-dataintegrity/hdr"
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
HIGHEST_US = 3_600_000_000  # YCSB's hdrhistogram.max default (an hour in us)
SLOWER_AT_MOST = 1.2
Figures = tuple[int, int, int, float, tuple[int, ...]]  # count, min, max, mean, values at PERCENTILES


def merged_by_strata(lines: list[str]) -> hdr.Histogram:
    h = hdr.merge(hdr.decode(line) for line in lines)
    assert h is not None
    return h


def merged_by_package(lines: list[str]) -> HdrHistogram:
    total = HdrHistogram(1, HIGHEST_US, 3)
    for line in lines:
        total.decode_and_add(line)
    return total


def strata_figures(h: hdr.Histogram) -> Figures:
    return h.total, h.min(), h.max(), h.mean(), tuple(h.value_at_percentile(p) for p in PERCENTILES)


def by_strata(lines: list[str]) -> Figures:
    return strata_figures(merged_by_strata(lines))


def by_package(lines: list[str]) -> Figures:
    total = merged_by_package(lines)
    return (
        total.get_total_count(),
        total.get_min_value(),
        total.get_max_value(),
        total.get_mean_value(),
        tuple(total.get_value_at_percentile(p) for p in PERCENTILES),
    )


def same_counts(lines: list[str]) -> bool:
    """Both decoders' merged histograms hold the same count in every bucket (checked at each bucket's value)."""
    ours, theirs = merged_by_strata(lines), merged_by_package(lines)
    nonzero = {i: c for i, c in ours.counts.items() if c}
    return (
        all(theirs.get_count_at_value(ours.value_from_index(i)) == c for i, c in nonzero.items())
        and sum(nonzero.values()) == theirs.get_total_count()
    )


def ycsb_printed(op: str) -> Figures:
    """What YCSB printed for one operation type: count, min, max, average and its percentiles, in the
    places of PERCENTILES (-1 where YCSB prints none: 90 and 99.99)."""
    fields = {}
    for line in (YCSB_LOGS.parent / "stdout.txt").read_text().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 3 and parts[0] == f"[{op}]":
            fields[parts[1]] = float(parts[2])
    names = {50.0: "50th", 95.0: "95th", 99.0: "99th", 99.9: "99.9"}
    pct = tuple(int(fields[f"{names[p]}PercentileLatency(us)"]) if p in names else -1 for p in PERCENTILES)
    return (
        int(fields["Operations"]),
        int(fields["MinLatency(us)"]),
        int(fields["MaxLatency(us)"]),
        fields["AverageLatency(us)"],
        pct,
    )


def as_printed(f: Figures) -> Figures:
    """A decoder's figures where YCSB prints them (-1 where it prints none)."""
    return (*f[:4], tuple(v if p in (50.0, 95.0, 99.0, 99.9) else -1 for p, v in zip(PERCENTILES, f[4])))


def ycsb_lines(path: Path) -> list[str]:
    """The histogram field of every interval line of one of YCSB's logs."""
    out = []
    for line in path.read_text().splitlines():
        m = hdr.LINE.match(line.strip())
        if m:
            out.append(m.group(4))
    return out


def synthetic(args: argparse.Namespace) -> tuple[list[str], list[int]]:
    """Every synthetic client's interval histograms, encoded as YCSB writes them, and every value recorded."""
    rng = random.Random(args.seed)
    lines, values = [], []
    for _ in range(args.clients * args.intervals):
        h = HdrHistogram(1, HIGHEST_US, 3)
        for _ in range(args.per_interval):
            v = max(1, min(HIGHEST_US, int(rng.lognormvariate(6.2, 1.2))))
            h.record_value(v)
            values.append(v)
        lines.append(h.encode().decode())
    return lines, values


def recorded_by_strata(values: list[int]) -> Figures:
    h = hdr.Histogram()
    for v in values:
        h.record(v)
    return strata_figures(h)


def agree(a: Figures, b: Figures) -> tuple[bool, float]:
    """(every figure equal, the mean within 1e-9 relative; the largest relative difference of any figure)."""
    pairs = [(float(x), float(y)) for x, y in zip((*a[:4], *a[4]), (*b[:4], *b[4]))]
    worst = max((abs(x - y) / max(abs(x), abs(y)) if x != y else 0.0) for x, y in pairs)
    exact = a[:3] == b[:3] and a[4] == b[4] and abs(a[3] - b[3]) <= 1e-9 * max(abs(a[3]), 1.0)
    return exact, worst


def timed(fn: Callable[[list[str]], object], lines: list[str]) -> float:
    t0 = time.perf_counter()
    fn(lines)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--intervals", type=int, default=60, help="interval histograms per client (YCSB: one a second)")
    ap.add_argument("--per-interval", type=int, default=2_000, help="latencies recorded in each interval")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--seed", type=int, default=1)
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, clients=2, intervals=3, per_interval=500, rounds=2)
    for name, lo, hi in (("clients", 1, 64), ("intervals", 1, 3600), ("per_interval", 1, 1_000_000), ("rounds", 1, 99)):
        if not lo <= getattr(args, name) <= hi:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(args, name)}: give {lo} to {hi}")

    lines, values = synthetic(args)
    inputs = {p.stem: ycsb_lines(p) for p in sorted(YCSB_LOGS.glob("*.hdr"))}
    inputs[f"synthetic {args.clients} clients x {args.intervals} intervals"] = lines
    all_exact = True
    print("input                                    lines      count  agree  largest relative difference")
    for name, ls in inputs.items():
        exact, worst = agree(by_strata(ls), by_package(ls))
        all_exact &= exact
        print(f"{name:<40} {len(ls):>5} {by_package(ls)[0]:>10,}  {'yes' if exact else 'NO':<5}  {worst:.3g}")
    exact, worst = agree(recorded_by_strata(values), by_package(lines))
    all_exact &= exact
    print(
        f"{'synthetic, recorded by strata':<40} {'-':>5} {len(values):>10,}  {'yes' if exact else 'NO':<5}  {worst:.3g}"
    )
    print("YCSB's logs against what YCSB printed   strata agrees  package agrees  package's largest difference")
    for op in sorted(p.stem for p in YCSB_LOGS.glob("*.hdr")):
        ls, printed = inputs[op], ycsb_printed(op)
        ours, theirs = agree(as_printed(by_strata(ls)), printed), agree(as_printed(by_package(ls)), printed)
        all_exact &= ours[0] and theirs[0]
        print(f"{op:<40} {'yes' if ours[0] else 'NO':<13} {'yes' if theirs[0] else 'NO':<15} {theirs[1]:.3g}")

    counts = all(same_counts(ls) for ls in inputs.values())
    print(f"decode + merge alone, every bucket's count the same on every input: {'yes' if counts else 'NO'}")
    ratio = 0.0
    for what, strata_fn, package_fn in (
        ("decode + merge + read", by_strata, by_package),
        ("decode + merge alone", merged_by_strata, merged_by_package),
    ):
        times: dict[str, list[float]] = {"strata": [], "package": []}
        for r in range(args.rounds):
            order: list[tuple[str, Callable[[list[str]], object]]] = [("strata", strata_fn), ("package", package_fn)]
            for side, fn in order if r % 2 == 0 else order[::-1]:
                times[side].append(timed(fn, lines))
        med = {side: statistics.median(ts) for side, ts in times.items()}
        ratio = ratio or med["package"] / med["strata"]  # the verdict's: the whole job
        print(
            f"{what} of {len(lines)} lines ({len(values):,} values), median of {args.rounds} alternated rounds: "
            f"strata {med['strata'] * 1000:.1f} ms, package {med['package'] * 1000:.1f} ms, "
            f"package / strata {med['package'] / med['strata']:.2f}"
        )
    fast = ratio <= SLOWER_AT_MOST
    verdict = "serves as well" if all_exact and fast else "does not serve as well"
    why = [] if all_exact else ["figures differ"]
    why += [] if fast else [f"slower than {SLOWER_AT_MOST}x"]
    print(f"verdict: the hdrhistogram package {verdict}" + (f" ({', '.join(why)})" if why else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
