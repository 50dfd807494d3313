"""HdrHistogram: logs as YCSB writes them read, histograms of any workload's latencies recorded, and
both merged exactly, without a C extension (ycsb's clients; pgbench's per-transaction logs).

YCSB 0.17.0 with `measurementtype=hdrhistogram` and `hdrhistogram.fileoutput=true` writes one
log per operation type (`READ.hdr`, `UPDATE.hdr`, ...) with HdrHistogram's HistogramLogWriter:
one line per status interval, each an interval histogram in the V2 compressed encoding, base64
(a deflated V2 payload of zigzag LEB128 counts, runs of zeros as negative numbers). The
intervals add up to the total histogram YCSB prints at the end (it accumulates the same
intervals), so the sum of every interval of every client's log is the one histogram of all
operations: percentiles are read from it, never averaged across clients (a mean of percentiles is
no percentile of anything).

The value arithmetic below is HdrHistogram 2.1.12's (AbstractHistogram: bucket indices,
lowest/highest/median equivalent values, getValueAtPercentile, getMean): the figures equal
what the Java library prints for the same counts (tests/unit/test_ycsb_mechanics.py checks
against YCSB's own output). Values are microseconds, as YCSB and pgbench record them; a
workload that records its own (`Histogram.record`) gets the same bucket grid (1 us, 3 significant
digits), so its histograms merge across clients and instances like YCSB's.
"""

from __future__ import annotations

import base64
import math
import re
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

V2_ENCODING_COOKIE = 0x1C849303
V2_COMPRESSED_COOKIE = 0x1C849304
V2_HEADER = struct.Struct(">iiiiqqd")  # cookie, payload length, normalizing offset, digits, lowest, highest, ratio
MAX_DIGITS = 5  # HdrHistogram's numberOfSignificantValueDigits: 0 to 5
MAX_VALUE = (1 << 63) - 1  # the largest value a (Java long) histogram holds


class HdrError(ValueError):
    """A histogram log line that is not what HdrHistogram writes."""


@dataclass
class Histogram:
    """Counts by bucket index on one bucket grid (lowest discernible value, significant digits)."""

    lowest: int = 1
    digits: int = 3
    counts: Counter[int] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        single_unit = 2 * 10**self.digits
        self.sub_bucket_count_magnitude = max(int(math.ceil(math.log2(single_unit))), 1)
        self.sub_bucket_half_count_magnitude = self.sub_bucket_count_magnitude - 1
        self.sub_bucket_count = 1 << self.sub_bucket_count_magnitude
        self.sub_bucket_half_count = self.sub_bucket_count // 2
        self.unit_magnitude = int(math.floor(math.log2(self.lowest)))
        self.sub_bucket_mask = (self.sub_bucket_count - 1) << self.unit_magnitude
        self.leading_zero_count_base = 64 - self.unit_magnitude - self.sub_bucket_half_count_magnitude - 1

    # ---- the grid ---------------------------------------------------------------
    def value_from_index(self, index: int) -> int:
        bucket = (index >> self.sub_bucket_half_count_magnitude) - 1
        sub = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        if bucket < 0:
            sub -= self.sub_bucket_half_count
            bucket = 0
        return sub << (bucket + self.unit_magnitude)

    def _bucket_index(self, value: int) -> int:
        v = value | self.sub_bucket_mask
        return self.leading_zero_count_base - (64 - v.bit_length())

    def index_of(self, value: int) -> int:
        bucket = self._bucket_index(value)
        sub = value >> (bucket + self.unit_magnitude)
        return ((bucket + 1) << self.sub_bucket_half_count_magnitude) + (sub - self.sub_bucket_half_count)

    def _range(self, value: int) -> tuple[int, int]:
        """(lowest equivalent value, size of the equivalent range) of `value`'s bucket."""
        bucket = self._bucket_index(value)
        sub = value >> (bucket + self.unit_magnitude)
        size = 1 << (self.unit_magnitude + (bucket + 1 if sub >= self.sub_bucket_count else bucket))
        return sub << (bucket + self.unit_magnitude), size

    def lowest_equivalent(self, value: int) -> int:
        return self._range(value)[0]

    def highest_equivalent(self, value: int) -> int:
        low, size = self._range(value)
        return low + size - 1

    def median_equivalent(self, value: int) -> int:
        low, size = self._range(value)
        return low + (size >> 1)

    # ---- statistics ---------------------------------------------------------------
    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, other: "Histogram") -> None:
        if (other.lowest, other.digits) != (self.lowest, self.digits):
            raise HdrError(
                f"cannot add histograms of different grids: lowest {other.lowest}/{self.lowest}, "
                f"digits {other.digits}/{self.digits}"
            )
        self.counts.update({i: c for i, c in other.counts.items() if c})

    def record(self, value: int, count: int = 1) -> None:
        self.counts[self.index_of(value)] += count

    def value_at_percentile(self, percentile: float) -> int:
        """AbstractHistogram.getValueAtPercentile of 2.1.12 (minus one ulp, ceil of the count)."""
        total = self.total
        if total == 0:
            return 0
        requested = min(max(math.nextafter(percentile, -math.inf), 0.0), 100.0)
        at = max(int(math.ceil(requested / 100.0 * total)), 1)
        running = 0
        for index in sorted(self.counts):
            running += self.counts[index]
            if running >= at:
                v = self.value_from_index(index)
                return self.lowest_equivalent(v) if percentile == 0.0 else self.highest_equivalent(v)
        return 0

    def mean(self) -> float:
        total = self.total
        if total == 0:
            return 0.0
        acc = 0.0
        for index in sorted(self.counts):
            if self.counts[index]:
                v = self.highest_equivalent(self.value_from_index(index))
                acc += self.median_equivalent(v) * float(self.counts[index])
        return acc / total

    def max(self) -> int:
        nonzero = [i for i, c in self.counts.items() if c]
        return self.highest_equivalent(self.value_from_index(max(nonzero))) if nonzero else 0

    def min(self) -> int:
        nonzero = [i for i, c in self.counts.items() if c]
        if not nonzero or self.counts.get(0, 0) > 0:
            return 0
        return self.lowest_equivalent(self.value_from_index(min(nonzero)))


# ---- decoding ---------------------------------------------------------------------


def _zigzag_varints(payload: bytes) -> Iterator[int]:
    """HdrHistogram's ZigZagEncoding: LEB128 of at most 9 bytes (the 9th carries 8 bits)."""
    i, n = 0, len(payload)
    while i < n:
        value, shift = 0, 0
        for k in range(9):
            if i >= n:
                raise HdrError("truncated varint in histogram payload")
            b = payload[i]
            i += 1
            if k == 8:
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        yield (value >> 1) ^ -(value & 1)


def decode(b64: str) -> Histogram:
    """One V2 (optionally compressed) histogram, as in a log line's last field; anything else is an HdrError."""
    try:
        raw = base64.b64decode(b64)
        cookie = struct.unpack_from(">i", raw)[0]
        if cookie & ~0xF0 == V2_COMPRESSED_COOKIE:
            length = struct.unpack_from(">i", raw, 4)[0]
            raw = zlib.decompress(raw[8 : 8 + length])
            cookie = struct.unpack_from(">i", raw)[0]
        if cookie & ~0xF0 != V2_ENCODING_COOKIE:
            raise HdrError(f"not a V2 HdrHistogram encoding (cookie {cookie:#x})")
        _, payload_len, normalizing, digits, lowest, _highest, _ratio = V2_HEADER.unpack_from(raw)
    except HdrError:
        raise
    except (ValueError, struct.error, zlib.error) as e:  # bad base64 (a ValueError), too short, bad deflate
        raise HdrError(f"not an encoded histogram: {e}") from None
    if normalizing != 0:
        raise HdrError("a shifted histogram (normalizing index offset != 0): YCSB never writes one")
    # HdrHistogram's own bounds: beyond them the grid's arithmetic would build numbers of unbounded size
    if not 0 <= digits <= MAX_DIGITS or lowest < 1:
        raise HdrError(f"a histogram of {digits} significant digits, lowest value {lowest}: not one HdrHistogram makes")
    h = Histogram(lowest=lowest, digits=digits)
    last = h.index_of(MAX_VALUE)
    index = 0
    for v in _zigzag_varints(raw[V2_HEADER.size : V2_HEADER.size + payload_len]):
        if v < 0:
            index += -v
        else:
            if v:
                if index > last:
                    raise HdrError(f"a count at index {index}, beyond the grid's last ({last}) of 64-bit values")
                h.counts[index] = v
            index += 1
    return h


@dataclass
class Interval:
    start_s: float  # seconds since the log's base time
    length_s: float
    histogram: Histogram


LINE = re.compile(r"^(?:Tag=[^,]*,)?([\d.]+),([\d.]+),([\d.]+),(\S+)$")


def read_log(path: Path) -> tuple[float | None, list[Interval]]:
    """(StartTime in epoch seconds or None, intervals) of one HistogramLogWriter file."""
    start, intervals = None, []
    for line in Path(path).read_text(errors="replace").splitlines():
        line = line.strip()
        try:
            if line.startswith("#[StartTime:"):
                start = float(line.split()[1])
            if not line or line.startswith("#") or line.startswith('"'):
                continue
            m = LINE.match(line)
            if not m:
                raise HdrError("not a histogram log line")
            intervals.append(Interval(float(m.group(1)), float(m.group(2)), decode(m.group(4))))
        except (ValueError, IndexError) as e:  # HdrError is a ValueError; float() of `1.2.3`, a bare StartTime
            raise HdrError(f"{path}: {e}: {line[:80]}") from None
    return start, intervals


def merge(histograms: Iterable[Histogram]) -> Histogram | None:
    """The sum of histograms on one grid (None for none)."""
    total: Histogram | None = None
    for h in histograms:
        if total is None:
            total = Histogram(lowest=h.lowest, digits=h.digits)
        total.add(h)
    return total
