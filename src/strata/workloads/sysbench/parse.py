"""sysbench 1.0.20's output as strata reads it: the per-second reports, the latency histogram, the summary.

Everything sysbench says is on stdout (its `FATAL:` lines too; only an option it cannot read goes to
stderr): strata runs it with its stdout on its stderr, so that one file holds both in order. A measured run
(`--report-interval 1 --histogram on`) prints:

- a line a second, `[ 3s ] thds: 4 tps: 645.90 qps: 12943.09 (r/w/o: 9053.66/2597.62/1291.81) lat (ms,95%):
  13.70 err/s: 0.00 reconn/s: 0.00`, and under an offered rate `[ 3s ] queue length: 0, concurrency: 2`;
- the histogram of every event's latency: `  13.704 |****   9`, one line per bucket that holds an event, on
  sysbench's own grid (1,024 buckets from 0.001 to 100,000 ms, each 1.8% above the one before), printed as
  the bucket's value with three decimals. Every sysbench process uses that grid, so histograms of several
  clients and servers add bucket by bucket; a percentile of the sum is read as sysbench reads its own (the
  first bucket whose running count reaches round(n x pct / 100)), never averaged;
- the summary: queries by kind, transactions (events) and their rate, ignored errors and reconnects, the
  total time and number of events, the latency's min, avg, max, one percentile and sum (ms).

An event is one call of the script's `event()`: a transaction of the OLTP scripts. Under `--rate` sysbench
1.0.20 times an event from when a thread takes it from the queue, not from when it was scheduled, so the
queue's own wait is in the queue lines, not in the latency.

Anything that is not what sysbench 1.0.20 writes (a cut summary, a histogram that holds another number
of events than the summary) is a `parse` failure naming the file and what was wrong: never a traceback.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from strata.core.errors import TrialFailure

VERSION = re.compile(r"^sysbench (\d+\.\d+\.\d+)", re.M)
THREADS = re.compile(r"^Number of threads: (\d+)$", re.M)
INTERVAL = re.compile(
    r"^\[ (\d+)s \] thds: (\d+) tps: ([\d.]+) qps: ([\d.]+) \(r/w/o: ([\d.]+)/([\d.]+)/([\d.]+)\) "
    r"lat \(ms,(\d+)%\): ([\d.]+) err/s: ([\d.]+) reconn/s: ([\d.]+)$"
)
QUEUE = re.compile(r"^\[ (\d+)s \] queue length: (\d+), concurrency: (\d+)$")
HISTOGRAM = "Latency histogram (values are in milliseconds)"
BUCKET = re.compile(r"^ *(\d+\.\d{3}) \|\**\s+(\d+)$")
QUERIES = {k: re.compile(rf"^ {{8}}{k}:\s+(\d+)$", re.M) for k in ("read", "write", "other", "total")}
RATES = {
    k: re.compile(rf"^ {{4}}{label}:\s+(\d+)\s+\(([\d.]+) per sec\.\)$", re.M)
    for k, label in (("transactions", "transactions"), ("queries", "queries"), ("errors", "ignored errors"))
}
RECONNECTS = re.compile(r"^ {4}reconnects:\s+(\d+)\s+\(([\d.]+) per sec\.\)$", re.M)
TOTAL_TIME = re.compile(r"^ {4}total time:\s+([\d.]+)s$", re.M)
EVENTS = re.compile(r"^ {4}total number of events:\s+(\d+)$", re.M)
LATENCY = {k: re.compile(rf"^ {{9}}{k}:\s+([\d.]+)$", re.M) for k in ("min", "avg", "max", "sum")}
PERCENTILE = re.compile(r"^ {9}(\d+)th percentile:\s+([\d.]+)$", re.M)
FATAL = "FATAL: "
# what sysbench prints on every run: not its words on a failure
ORDINARY = re.compile(
    r"^(sysbench \d|Running the test|Number of threads|Report intermediate|Initializing|Threads started|\[ \d+s \]|"
    r"Latency histogram|Creating |Inserting |\(last message repeated|\s)"
)
WORDS_CHARS = 4000
OUTPUT = "stderr.txt"  # a client's output: sysbench's stdout on its stderr
# sysbench's words for input it or the server rejected: its options, its script, the script's SQL
BAD_INPUT = re.compile(
    r"invalid option|Invalid value|Cannot find benchmark|attempt to |syntax error|unexpected symbol|doesn't exist|"
    r"Unknown column|Unknown table|error 1064|errno = 1064|error loading",
    re.I,
)
DISK_FULL = re.compile(r"No space left|errno = 1114|error 1114|is full|errno: 28", re.I)


@dataclass
class Interval:
    """One `--report-interval 1` line (and its queue line under an offered rate)."""

    t_s: int
    threads: int
    tps: float
    qps: float
    errors_s: float
    reconnects_s: float
    lat_pct_ms: float
    queue: int | None = None
    concurrency: int | None = None


@dataclass
class Summary:
    version: str | None = None
    threads: int | None = None
    queries: dict[str, int] = field(default_factory=dict)  # read, write, other, total
    transactions: int | None = None
    tps: float | None = None
    qps: float | None = None
    errors: int = 0  # errors sysbench ignored (deadlocks, lock waits: --mysql-ignore-errors)
    reconnects: int = 0
    total_time_s: float | None = None
    events: int | None = None
    lat_ms: dict[str, float] = field(default_factory=dict)  # min, avg, max, sum
    lat_pct: tuple[int, float] | None = None  # (95, 13.70): sysbench's own percentile


def parse_summary(output: str) -> Summary:
    s = Summary()
    if m := VERSION.search(output):
        s.version = m.group(1)
    if m := THREADS.search(output):
        s.threads = int(m.group(1))
    s.queries = {k: int(m.group(1)) for k, rx in QUERIES.items() if (m := rx.search(output))}
    rates = {k: m for k, rx in RATES.items() if (m := rx.search(output))}
    if "transactions" in rates:
        s.transactions, s.tps = int(rates["transactions"].group(1)), float(rates["transactions"].group(2))
    if "queries" in rates:
        s.qps = float(rates["queries"].group(2))
    if "errors" in rates:
        s.errors = int(rates["errors"].group(1))
    if m := RECONNECTS.search(output):
        s.reconnects = int(m.group(1))
    if m := TOTAL_TIME.search(output):
        s.total_time_s = float(m.group(1))
    if m := EVENTS.search(output):
        s.events = int(m.group(1))
    s.lat_ms = {k: float(m.group(1)) for k, rx in LATENCY.items() if (m := rx.search(output))}
    if m := PERCENTILE.search(output):
        s.lat_pct = (int(m.group(1)), float(m.group(2)))
    return s


def parse_intervals(output: str) -> list[Interval]:
    out: list[Interval] = []
    for line in output.splitlines():
        if m := INTERVAL.match(line):
            g = m.groups()
            out.append(Interval(int(g[0]), int(g[1]), float(g[2]), float(g[3]), float(g[9]), float(g[10]), float(g[8])))
        elif (m := QUEUE.match(line)) and out and out[-1].t_s == int(m.group(1)):
            out[-1].queue, out[-1].concurrency = int(m.group(2)), int(m.group(3))
    return out


def parse_histogram(output: str) -> Counter[float] | None:
    """The histogram's buckets, {value in ms: events}; None when the output holds no histogram."""
    lines = output.splitlines()
    try:
        start = lines.index(HISTOGRAM) + 2  # its title, then the column heads
    except ValueError:
        return None
    counts: Counter[float] = Counter()
    for line in lines[start:]:
        m = BUCKET.match(line)
        if not m:
            break
        counts[float(m.group(1))] += int(m.group(2))
    return counts


def percentile_ms(counts: Counter[float], pct: float) -> float | None:
    """sysbench's percentile of a histogram: the first bucket whose running count reaches round(n x pct/100)."""
    n = sum(counts.values())
    if n == 0:
        return None
    rank = math.floor(n * pct / 100 + 0.5)
    running = 0
    for value in sorted(counts):
        running += counts[value]
        if running >= rank:
            return value
    return max(counts)


def words(output: str) -> list[str]:
    """sysbench's own account of what went wrong, each line once: its `FATAL:` lines, and any other line that
    is not its ordinary output (an option it cannot read)."""
    said = []
    for line in output.splitlines():
        if line.startswith(FATAL):
            said.append(line[len(FATAL) :].strip())
        elif line.strip() and not ORDINARY.match(line):
            said.append(line.strip())
    return list(dict.fromkeys(said))


def failure(phase: str, returncode: int, output: str) -> TrialFailure:
    """A sysbench that exited non-zero, in its own words and with the category they say."""
    said = words(output)
    how = f"exited with {returncode}"
    if returncode < 0 or returncode > 128:  # a signal: directly, or through the shell that ran it
        how = f"was killed by signal {-returncode if returncode < 0 else returncode - 128}"
    first = "; ".join(said[:2])[:600] if said else "(it said nothing)"
    text = "\n".join(said)
    if DISK_FULL.search(text):
        category = "disk_full"
    elif BAD_INPUT.search(text):
        category = "bad_input"
    else:
        category = "tool_error"
    detail = output.strip()[-WORDS_CHARS:]
    return TrialFailure(category, f"sysbench ({phase}) {how}: {first}", detail)


@dataclass
class Run:
    """One sysbench run (one server's client in the measured run): its summary, series and histogram."""

    summary: Summary
    intervals: list[Interval]
    histogram: Counter[float]
    window: tuple[float, float] | None = None  # wall-clock seconds in which it ran events


def read_run(out_dir: Path) -> Run:
    """A measured run's client directory, checked whole: its summary complete, its histogram every event."""
    path = out_dir / OUTPUT
    output = _text(path)
    s = parse_summary(output)
    missing = [
        what
        for what, v in (
            ("its transactions", s.transactions),
            ("its total time", s.total_time_s),
            ("its number of events", s.events),
            ("its latency sum", s.lat_ms.get("sum")),
        )
        if v is None
    ]
    if missing:
        raise TrialFailure(
            "parse",
            f"sysbench's summary in {path} ends before {missing[0]}: its output was cut short",
            output[-WORDS_CHARS:],
        )
    hist = parse_histogram(output)
    if hist is None:
        raise TrialFailure("parse", f"sysbench's output in {path} holds no latency histogram (--histogram)", "")
    counted = sum(hist.values())
    if counted != s.events:
        raise TrialFailure(
            "parse",
            f"sysbench's histogram in {path} holds {counted} events, its summary {s.events}: its output was cut short",
            output[-WORDS_CHARS:],
        )
    return Run(s, parse_intervals(output), hist, _window(path, s.total_time_s))


def _window(output: Path, total_time_s: float | None) -> tuple[float, float] | None:
    """The wall-clock seconds of its events: its summary was written as they ended (the file's last change),
    `total time` after they began."""
    try:
        end = output.stat().st_mtime
    except OSError:
        return None
    return (end - total_time_s, end) if total_time_s else None


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
