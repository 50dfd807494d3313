"""pgbench 15's output as strata reads it: summary, per-second progress, per-transaction logs.

- stdout: the summary (`number of transactions actually processed: N`, `number of failed
  transactions: N (x%)`, `number of transactions retried: N`, `total number of retries: N`, with
  `--latency-limit` `number of transactions skipped: N` (under a rate, apart from those processed) and
  `number of transactions above the X ms latency limit: N/M`, `tps = X (without initial connection
  time)`). A run that was aborted (a server that died, SQL the
  server rejected) still prints a complete-looking summary: its exit code and stderr's `pgbench:
  error:` lines say so, and those are its words in the failure.
- stderr: `--progress 1` lines, `progress: 3.0 s, 646.9 tps, lat 3.065 ms stddev 3.097, 0 failed[, lag
  X ms][, N retried, M retries]`: the per-second series.
- `--log --log-prefix tx`: `tx.<pid>` (thread 0) and `tx.<pid>.<n>`, a line per transaction,
  `client transaction latency_us script epoch_s epoch_us [lag_us] [retries]`, the latency
  `failed` for a transaction that failed. Every latency goes into an HdrHistogram (workloads/hdr.py,
  1 us, 3 digits), so several threads', clients' and servers' latencies merge exactly; with an
  offered rate a latency counts from the transaction's scheduled start (pgbench's own rule, which
  keeps a slow server's queueing in the figure).

With `--sampling-rate` the logs hold pgbench's random draw of the transactions (sampling.py): their
number is checked against the summary's times the rate, within the draw's spread.

Anything that is not what pgbench 15 writes (a cut summary, a cut log line, logs that hold another
number of transactions than the summary) is a `parse` failure naming the file and what was wrong,
with pgbench's own words beside it: never a traceback.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from strata.core.errors import TrialFailure
from strata.workloads import hdr
from strata.workloads.pgbench import sampling

LOG_PREFIX = "tx"
SUMMARY = {
    "processed": re.compile(r"^number of transactions actually processed: (\d+)", re.M),
    "failed": re.compile(r"^number of failed transactions: (\d+)", re.M),
    "retried": re.compile(r"^number of transactions retried: (\d+)", re.M),
    "retries": re.compile(r"^total number of retries: (\d+)", re.M),
    "skipped": re.compile(r"^number of transactions skipped: (\d+)", re.M),  # under --rate and --latency-limit
    "late": re.compile(r"^number of transactions above the [\d.]+ ms latency limit: (\d+)", re.M),
}
TPS = re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M)
VERSION = re.compile(r"^pgbench \((.+)\)$", re.M)
TRANSACTION_TYPE = re.compile(r"^transaction type: (.+)$", re.M)
PROGRESS = re.compile(
    r"^progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms stddev ([\d.]+|NaN), (\d+) failed"
    r"(?:, lag ([\d.]+) ms)?(?:, (\d+) retried, (\d+) retries)?"
)
ERROR = "pgbench: error: "
ABORTED = "Run was aborted"
# pgbench's words for input it or the server rejected: its options, its script, the script's SQL
BAD_INPUT = re.compile(
    r"syntax error|invalid command|unrecognized|does not exist|undefined variable|invalid .*(option|value)|must be"
)
WORDS_CHARS = 4000
MAX_LATENCY_US = 10**12  # 11.6 days: a latency beyond it is not one pgbench wrote


@dataclass
class Summary:
    version: str | None = None
    transaction_type: str | None = None
    processed: int | None = None
    failed: int = 0
    retried: int = 0
    retries: int = 0
    skipped: int = 0  # not run: they would have started later than --latency-limit (pgbench counts them apart)
    late: int = 0  # completed above --latency-limit
    tps: float | None = None


def parse_summary(stdout: str) -> Summary:
    s = Summary()
    if m := VERSION.search(stdout):
        s.version = m.group(1)
    if m := TRANSACTION_TYPE.search(stdout):
        s.transaction_type = m.group(1)
    counts = {k: int(m.group(1)) for k, rx in SUMMARY.items() if (m := rx.search(stdout))}
    s.processed = counts.get("processed")
    s.failed, s.retried, s.retries, s.skipped, s.late = (
        counts.get(k, 0) for k in ("failed", "retried", "retries", "skipped", "late")
    )
    if m := TPS.search(stdout):
        s.tps = float(m.group(1))
    return s


@dataclass
class Progress:
    t_s: float
    tps: float
    failed: int
    lag_ms: float | None = None
    retried: int | None = None


def parse_progress(stderr: str) -> list[Progress]:
    out = []
    for line in stderr.splitlines():
        m = PROGRESS.match(line)
        if m:
            lag = float(m.group(6)) if m.group(6) is not None else None
            retried = int(m.group(7)) if m.group(7) is not None else None
            out.append(Progress(float(m.group(1)), float(m.group(2)), int(m.group(5)), lag, retried))
    return out


def words(stderr: str) -> str:
    """pgbench's own account of what went wrong: its `pgbench: error:` lines, with their continuations."""
    lines, keep = [], False
    for line in stderr.splitlines():
        if line.startswith(ERROR):
            keep = True
            lines.append(line[len(ERROR) :])
        elif keep and (line.startswith((" ", "\t", "LINE ", "DETAIL:", "HINT:")) or line.startswith("pgbench:")):
            lines.append(line)
        else:
            keep = False
    return "\n".join(lines)[-WORDS_CHARS:]


def failure(phase: str, returncode: int, stderr: str) -> TrialFailure:
    """A pgbench that exited non-zero, in its own words and with the category they say."""
    said = words(stderr) or stderr.strip()[-WORDS_CHARS:] or f"(nothing on stderr; exit code {returncode})"
    first = said.splitlines()[0] if said else ""
    if "No space left on device" in stderr or "could not extend file" in stderr:
        category = "disk_full"
    elif BAD_INPUT.search(said):
        category = "bad_input"
    else:
        category = "tool_error"
    return TrialFailure(category, f"pgbench ({phase}) exited with {returncode}: {first}", stderr[-WORDS_CHARS:])


@dataclass
class Logs:
    """Every transaction of one pgbench run, from its per-transaction logs."""

    latency: hdr.Histogram = field(default_factory=hdr.Histogram)  # us, completed transactions
    lag: hdr.Histogram = field(default_factory=hdr.Histogram)  # us, with an offered rate
    completed: int = 0
    failed: int = 0
    skipped: int = 0
    retried: int = 0
    retries: int = 0
    first_start_s: float | None = None  # wall clock: the first transaction's (scheduled) start
    last_end_s: float | None = None


def log_files(out_dir: Path) -> list[Path]:
    return sorted(p for p in out_dir.glob(f"{LOG_PREFIX}.*") if p.is_file())


def read_logs(out_dir: Path, lag: bool, retries: bool) -> Logs:
    """Every log of a run's threads; `lag`: lines carry the schedule lag (an offered rate), `retries`: the
    retries (--max-tries above 1)."""
    files = log_files(out_dir)
    if not files:
        raise TrialFailure("parse", f"pgbench left no per-transaction log ({LOG_PREFIX}.*) in {out_dir}")
    logs, lat, lags = Logs(), Counter[int](), Counter[int]()
    width = 6 + lag + retries
    for path in files:
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                _line(logs, lat, lags, line, width, lag, retries, f"{path.name}, line {n}")
    for value, count in lat.items():
        logs.latency.record(value, count)
    for value, count in lags.items():
        logs.lag.record(value, count)
    return logs


def _line(
    logs: Logs, lat: Counter[int], lags: Counter[int], line: str, width: int, lag: bool, retries: bool, where: str
) -> None:
    f = line.split()
    ok = len(f) == width and line.endswith("\n") and all(x.isdigit() for i, x in enumerate(f) if i != 2)
    if not ok or not ((f[2].isdigit() and int(f[2]) < MAX_LATENCY_US) or f[2] in ("failed", "skipped")):
        raise TrialFailure("parse", f"pgbench's log {where} is not a transaction of pgbench 15: {line[:120]!r}")
    end_s = int(f[4]) + int(f[5]) / 1e6
    if retries and int(f[-1]):
        logs.retried += 1
        logs.retries += int(f[-1])
    if f[2] == "failed":
        logs.failed += 1
        return
    if f[2] == "skipped":
        logs.skipped += 1
        return
    us = int(f[2])
    lat[max(us, 1)] += 1
    if lag:
        lags[max(int(f[6]), 1)] += 1
    logs.completed += 1
    start_s = end_s - us / 1e6
    logs.first_start_s = start_s if logs.first_start_s is None else min(logs.first_start_s, start_s)
    logs.last_end_s = end_s if logs.last_end_s is None else max(logs.last_end_s, end_s)


@dataclass
class Run:
    """One pgbench run (one server's client in the measured run): its summary, series and logs."""

    summary: Summary
    progress: list[Progress]
    logs: Logs
    sampling_rate: float = 1.0  # the share of its transactions its logs hold (--sampling-rate)


def read_run(out_dir: Path, lag: bool, retries: bool, sampling_rate: float = 1.0) -> Run:
    """A measured run's client directory, checked whole: its summary complete, its logs every transaction (or,
    logged at `sampling_rate` below 1, as many as pgbench's draw gives: sampling.whole)."""
    stdout = _text(out_dir / "stdout.txt")
    stderr = _text(out_dir / "stderr.txt")
    said = words(stderr)
    s = parse_summary(stdout)
    if ABORTED in stderr:
        first = said.splitlines()[0] if said else ABORTED
        raise TrialFailure("tool_error", f"pgbench aborted its run: {first}", stderr[-WORDS_CHARS:])
    if s.processed is None or s.tps is None:
        missing = "its number of transactions" if s.processed is None else "its tps line"
        raise TrialFailure(
            "parse",
            f"pgbench's summary in {out_dir / 'stdout.txt'} ends before {missing}: its output was cut short",
            (stdout + "\n" + stderr)[-WORDS_CHARS:],
        )
    logs = read_logs(out_dir, lag, retries)
    logged, summed = logs.completed + logs.failed + logs.skipped, s.processed + s.failed + s.skipped
    if not sampling.whole(logged, summed, sampling_rate):
        of = f"{summed}" if sampling_rate >= 1.0 else f"{summed} (about {summed * sampling_rate:.0f} at its "
        of += "" if sampling_rate >= 1.0 else f"sampling rate {sampling.word(sampling_rate)})"
        raise TrialFailure(
            "parse",
            f"pgbench's logs in {out_dir} hold {logged} transactions, its summary {of}: its output was cut short",
            stdout[-WORDS_CHARS:],
        )
    return Run(s, parse_progress(stderr), logs, sampling_rate)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
