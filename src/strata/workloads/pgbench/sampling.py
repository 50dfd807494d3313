"""The sampled per-transaction log: which share of the transactions pgbench logs (`--sampling-rate`), how the
log is checked against pgbench's summary then, and how precise the latency percentiles of a sample are.

pgbench's line per transaction costs pgbench's own CPU: measured on the 2-core machine (docs/overhead.md), the
full log cost about 12% of select-only's 24,000-36,000 tx/s, nothing measurable at tpcb-like's 500-2,800 tx/s,
and a tenth of it (3,000 lines a second) nothing measurable either. `log_sampling: auto` (the default) logs
about `LOGGED_PER_S` transactions a second of every server on a host together: the rate is that over the
throughput of the warm-up's second half (its `--progress 1` lines), or of the offered rate under `rate` without
a warm-up, and 1.0 (the whole log) below it or with neither. One rate for all the servers of a host, so that their
logs merge as one uniform sample; hosts that chose different rates merge weighted (`merge`).

pgbench draws each transaction into the log with the chance `rate` (its doLog), failed and skipped ones alike:
the number logged is binomial, so the check that a log is whole (parse.read_run) allows `TOLERANCE_SD` of its
standard deviations around the summary's count times the rate (a log cut short by more than that still fails).
Throughput and the counts of transactions stay pgbench's summary's; the latency and lag percentiles are the
sample's, each kept only where at least `MIN_BEYOND` sampled transactions lie beyond it (with fewer, the
percentile of a sample says little of the run's); with the whole log they are the run's own.
"""

from __future__ import annotations

import math
from typing import Iterable

from strata.core.jsondoc import JsonObject
from strata.workloads import hdr
from strata.workloads.latency import PERCENTILES

LOGGED_PER_S = 2000  # transactions logged a second per host under `auto`: well below what measured free (3,000)
MIN_RATE = 0.0001  # pgbench takes any rate in (0, 1]; below one in 10,000 a sample of a minute holds almost nothing
TOLERANCE_SD = 6.0  # a whole sampled log strays beyond it once in 500 million runs
MIN_BEYOND = 20  # samples beyond a sample's percentile to keep it (20: its p99.9 is the run's p99.85-p99.94, 95%)


def word(rate: float) -> str:
    """The rate as pgbench gets it (`--sampling-rate`), and as it is stored: 2 significant digits."""
    return f"{rate:.2g}"


def rounded(rate: float) -> float:
    return max(MIN_RATE, min(1.0, float(word(rate))))


def choose(asked: float | str, warmup_tps: float | None, offered_tps: float | None) -> JsonObject:
    """The rate of a host's measured run: the spec's number as it is, or `auto`'s from the warm-up's throughput
    of every server of the host (else the offered rate), with what it was chosen from."""
    if not isinstance(asked, str):
        return {"sampling_rate": rounded(asked), "chosen": "spec"}
    out: JsonObject = {"chosen": "auto", "logged_per_s": LOGGED_PER_S}
    if warmup_tps:
        tps, out["from"] = warmup_tps, "warm-up"
    elif offered_tps:
        tps, out["from"] = offered_tps, "offered rate"
    else:
        tps, out["from"] = None, "none (no warm-up, no offered rate): the whole log"
    out["throughput_tps"] = round(tps, 1) if tps else None
    out["sampling_rate"] = rounded(LOGGED_PER_S / tps) if tps and tps > LOGGED_PER_S else 1.0
    return out


def warmup_tps(progress: list[list[float]], summaries: list[float | None]) -> float | None:
    """The warm-up's throughput of every server together: each server's mean of the second half of its
    per-second progress (the first half warms the caches), else its summary's tps; None when one says nothing."""
    total = 0.0
    for series, summary in zip(progress, summaries):
        half = series[len(series) // 2 :]
        tps = sum(half) / len(half) if half else summary
        if tps is None:
            return None
        total += tps
    return total


def whole(logged: int, summed: int, rate: float) -> bool:
    """Does a log of `logged` transactions hold the sample of `summed` that pgbench drew at `rate`?"""
    if rate >= 1.0:
        return logged == summed
    expected = summed * rate
    return abs(logged - expected) <= TOLERANCE_SD * math.sqrt(summed * rate * (1 - rate)) + 1


def merge(histograms: Iterable[tuple[hdr.Histogram, float]]) -> tuple[hdr.Histogram | None, bool]:
    """Histograms of samples drawn at their rates, as one: added as they are when the rates are equal; else each
    bucket's count weighted by the largest rate over its own (rounded to whole counts), and True."""
    pairs = list(histograms)
    rates = {r for _, r in pairs}
    if len(rates) <= 1:
        return hdr.merge(h for h, _ in pairs), False
    top, out = max(rates), hdr.Histogram()
    for h, r in pairs:
        for index, count in h.counts.items():
            out.counts[index] += round(count * top / r)
    return out, True


def beyond(h: hdr.Histogram | None) -> dict[str, int]:
    """The samples beyond each percentile (in buckets above the one that holds it)."""
    if h is None or h.total == 0:
        return {k: 0 for k in PERCENTILES}
    out = {}
    for key, pct in PERCENTILES.items():
        at = h.index_of(h.value_at_percentile(pct))
        out[key] = sum(c for i, c in h.counts.items() if i > at)
    return out


def withhold(summary: JsonObject, counts: dict[str, int], sampled: bool) -> list[str]:
    """A sample's percentiles with fewer than MIN_BEYOND samples beyond them, set to None in `summary`; their
    names. The whole log's percentiles are the run's own: all kept."""
    if not sampled:
        return []
    out = [k for k in PERCENTILES if summary.get(k) is not None and counts.get(k, 0) < MIN_BEYOND]
    for k in out:
        summary[k] = None
    return out
