"""YCSB's output as strata's metrics: summary, per-second series, merged latency histograms.

- stdout: `[OVERALL], Throughput(ops/sec), X` and per operation `[READ], Operations, N`,
  `[READ], Return=OK, N` (return codes: OK, NOT_FOUND, ERROR, UNEXPECTED_STATE from the
  data-integrity check, ...). YCSB's own percentiles are kept only as a cross-check.
- stderr: `-s` status lines, `... 12 sec: 3400 operations; 283.3 current ops/sec; ...`, one a
  second: the throughput series (its last line is the partial second at the end).
- `hdr/<OP>.hdr` of every client: merged with hdr.merge into one histogram per operation,
  from which mean, min, max and the percentiles of every latency summary (workloads/latency.py) come (never
  averaged percentiles).

For N clients, `throughput_ops_s` is the sum of YCSB's overall figures (operations over each
client's whole run, which includes connecting and closing), and `window_ops_s` the mean of the
summed per-second series over the seconds in which all clients ran: the figure to compare
across client counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from strata.core.errors import TrialFailure
from strata.core.jsondoc import JsonObject
from strata.workloads import hdr
from strata.workloads.server import latency as server_latency
from strata.workloads.server import records as server_records

SUMMARY = re.compile(r"^\[([A-Za-z0-9_\-]+)\], ([^,]+), (.+)$")
STATUS = re.compile(r"^(\S+ \S+) (\d+) sec: (\d+) operations;(?: ([\d.]+) current ops/sec;)?")
# not operations: YCSB's JVM GC figures and the per-thread cleanup (which holds the driver's shutdown)
NOT_OPERATIONS = ("OVERALL", "CLEANUP")
# Under a target, `measurement.interval=both` (client.py) adds each operation timed from its intended start,
# when the throttle meant to send it: `[Intended-READ], ...` on stdout and `hdr/Intended-READ.hdr`. They
# are the same operations timed otherwise, never counted twice.
INTENDED = "Intended-"
TAIL = 4000  # the characters of an unreadable output kept with its failure


@dataclass
class Summary:
    runtime_ms: float | None = None
    throughput_ops_s: float | None = None
    operations: dict[str, int] = field(default_factory=dict)  # READ -> count
    returns: dict[str, dict[str, int]] = field(default_factory=dict)  # READ -> {OK: n, ERROR: n}
    reported: dict[str, dict[str, float]] = field(default_factory=dict)  # YCSB's own latency figures


def parse_summary(stdout: str) -> Summary:
    """YCSB's summary; a line of its form whose figure is no number is a parse failure (never a ValueError)."""
    s = Summary()
    for line in stdout.splitlines():
        m = SUMMARY.match(line.strip())
        if not m:
            continue
        try:
            _summary_line(s, *m.groups())
        except ValueError:
            raise TrialFailure(
                "parse", f"YCSB's summary line {line[:200]!r} holds no number where YCSB writes one", stdout[-TAIL:]
            ) from None
    return s


def _summary_line(s: Summary, section: str, key: str, value: str) -> None:
    if section.startswith("TOTAL_GC"):
        return
    if section.startswith(INTENDED):  # latency figures only: the operations are counted once, above
        if key != "Operations" and not key.startswith("Return="):
            s.reported.setdefault(section, {})[key] = float(value)
        return
    if section == "OVERALL":
        if key == "RunTime(ms)":
            s.runtime_ms = float(value)
        elif key == "Throughput(ops/sec)":
            s.throughput_ops_s = float(value)
    elif key == "Operations":
        s.operations[section] = int(value)
    elif key.startswith("Return="):
        s.returns.setdefault(section, {})[key[len("Return=") :]] = int(value)
    else:
        s.reported.setdefault(section, {})[key] = float(value)


@dataclass
class StatusPoint:
    time_s: float  # wall clock (the line's local time stamp, as epoch seconds)
    elapsed_s: int
    operations: int
    ops_per_s: float | None  # None before the first operation


def parse_status(stderr: str) -> list[StatusPoint]:
    """The `-s` lines in order (YCSB prints a last one at the end, possibly at the same second)."""
    points = []
    for line in stderr.splitlines():
        m = STATUS.match(line)
        if not m:
            continue
        try:
            stamp = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S:%f").timestamp()
            rate = float(m.group(4)) if m.group(4) is not None else None
            points.append(StatusPoint(stamp, int(m.group(2)), int(m.group(3)), rate))
        except ValueError:  # a date or a figure YCSB never writes (a line cut or garbled): unreadable output
            raise TrialFailure(
                "parse", f"YCSB's status line {line[:200]!r} is not one it writes", stderr[-TAIL:]
            ) from None
    return points


def measured_points(points: list[StatusPoint]) -> list[StatusPoint]:
    """The status intervals in which the client did operations. Left out: those before the
    first operation (JVM start, connecting: ~5 s here), the last line (the partial interval
    at the end) and the intervals after the last operation (the client closing)."""
    body = points[:-1] if len(points) > 1 else []
    final_ops = points[-1].operations if points else 0
    while body and body[0].operations == 0:
        body = body[1:]
    while body and body[-1].operations == final_ops and not body[-1].ops_per_s:
        body = body[:-1]
    return body


def throughput_series(points: list[StatusPoint]) -> list[float]:
    """YCSB's own "current ops/sec" of each measured interval (it divides by the exact ms)."""
    return [p.ops_per_s or 0.0 for p in measured_points(points)]


def latency(h: hdr.Histogram | None) -> JsonObject:
    """Mean, min, max, percentiles in microseconds (YCSB's unit), and the count."""
    return {k if k == "n" else f"{k}_us": v for k, v in server_latency.of_hdr(h, 1).items()}


def merged_histograms(hdr_dirs: list[Path]) -> dict[str, hdr.Histogram]:
    """Operation name -> the sum of that operation's histograms over every client."""
    by_op: dict[str, list[hdr.Histogram]] = {}
    for d in hdr_dirs:
        for f in sorted(Path(d).glob("*.hdr")):
            # never reported (latency() leaves them out), so never a reason to fail a trial: YCSB opens the
            # CLEANUP log from the first thread that cleans up, and two threads cleaning up together can both
            # open it, one truncating the other's line (NUL bytes in its place: seen in a full tier, 2026-12-07)
            if f.stem.removeprefix(INTENDED) in NOT_OPERATIONS:
                continue
            try:
                _, intervals = hdr.read_log(f)
            except hdr.HdrError as e:
                tail = f.read_text(errors="replace")[-TAIL:]
                raise TrialFailure("parse", f"YCSB's histogram log is unreadable: {str(e)[:500]}", tail) from None
            by_op.setdefault(f.stem, []).extend(i.histogram for i in intervals)
    try:
        return {op: h for op, hs in by_op.items() if (h := hdr.merge(hs)) is not None}
    except hdr.HdrError as e:  # a log whose header a corrupted line changed: not YCSB's one grid
        raise TrialFailure("parse", f"YCSB's histogram logs do not add up: {e}", "") from None


@dataclass
class ClientOutput:
    """What one client left: its stdout, stderr and hdr directory."""

    stdout: str
    stderr: str
    hdr_dir: Path


def client_output(d: Path) -> ClientOutput:
    """A client's directory as it left it (a file it did not write: empty)."""

    def text(name: str) -> str:
        p = d / name
        return p.read_text(errors="replace") if p.exists() else ""

    return ClientOutput(text("stdout.txt"), text("stderr.txt"), d / "hdr")


class Aggregate(TypedDict):
    """The clients of one trial (or of one database) together (`aggregate`)."""

    throughput_ops_s: float  # their own summaries' throughput, summed
    per_client_ops_s: list[float | None]
    operations: dict[str, int]  # by operation
    returns: dict[str, dict[str, int]]  # by operation, by return code
    errors: int  # operations that did not return OK
    latency: dict[str, JsonObject]  # by operation: `latency`
    window_ops_s: float | None  # the mean of `series_ops_s`
    series_ops_s: list[float]  # per second, over the seconds every client ran
    start_skew_s: float | None


def aggregate(clients: list[ClientOutput]) -> Aggregate:
    """Metrics of N clients of one trial: summed throughput, merged latencies, return codes."""
    summaries = [parse_summary(c.stdout) for c in clients]
    measured = [measured_points(parse_status(c.stderr)) for c in clients]
    series = [[p.ops_per_s or 0.0 for p in m] for m in measured]
    first_op = [m[0].time_s for m in measured if m]
    hists = merged_histograms([c.hdr_dir for c in clients])
    ops: dict[str, int] = {}
    returns: dict[str, dict[str, int]] = {}
    for s in summaries:
        for op, n in s.operations.items():
            ops[op] = ops.get(op, 0) + n
        for op, codes in s.returns.items():
            for code, n in codes.items():
                returns.setdefault(op, {})[code] = returns.setdefault(op, {}).get(code, 0) + n
    summed_series = server_records.added(series)
    return {
        "throughput_ops_s": sum(s.throughput_ops_s or 0.0 for s in summaries),
        "per_client_ops_s": [s.throughput_ops_s for s in summaries],
        "operations": {op: n for op, n in ops.items() if op not in NOT_OPERATIONS},
        "returns": returns,
        "errors": sum(
            n for op, codes in returns.items() for code, n in codes.items() if code != "OK" and op not in NOT_OPERATIONS
        ),
        "latency": {
            op: latency(h) for op, h in sorted(hists.items()) if op.removeprefix(INTENDED) not in NOT_OPERATIONS
        },
        "window_ops_s": sum(summed_series) / len(summed_series) if summed_series else None,
        "series_ops_s": summed_series,
        # clients' series are added second by second from each one's first operation; this
        # is how far apart those first seconds were (the sync evidence)
        "start_skew_s": max(first_op) - min(first_op) if first_op else None,
    }
