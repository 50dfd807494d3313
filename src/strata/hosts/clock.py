"""Clocks of the hosts: each host's synchronization state, and its offset from the manager's clock.

A trial that spans hosts starts at one wall-clock time on every host, and its
`sync` flag compares the instances' I/O windows, which each tool stamps with
its own host's clock. Two things make that honest:

- each host's own view of its clock: the kernel's NTP state (adjtimex(2):
  synchronized or not, estimated and maximum error), and chrony's tracking
  when `chronyc` is there;
- the manager's estimate of each host's offset, from round trips to its agent
  (Cristian's algorithm: offset = agent time - midpoint of the round trip,
  uncertain by half the shortest round trip); start times are sent in each
  host's clock and windows brought back into the manager's.

Between the network namespaces of a test machine the clock is one clock: the
measured offsets are then the method's own error (half a round trip).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess
from dataclasses import dataclass

from strata.core.jsondoc import JsonObject

STA_UNSYNC = 0x0040
TIME_ERROR = 5  # adjtimex's return value when the clock is not synchronized


class _Timex(ctypes.Structure):
    """struct timex (glibc, x86_64): the fields read here, then padding."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long),
        ("time_usec", ctypes.c_long),
        ("tick", ctypes.c_long),
        ("pad", ctypes.c_byte * 256),
    ]


def kernel_state() -> JsonObject:
    """The kernel's NTP discipline state (read only: modes = 0)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        tx = _Timex()
        rc = libc.adjtimex(ctypes.byref(tx))
    except (OSError, AttributeError) as e:
        return {"error": str(e)}
    if rc < 0:
        return {"error": f"adjtimex failed (errno {ctypes.get_errno()})"}
    return {
        "synchronized": rc != TIME_ERROR and not tx.status & STA_UNSYNC,
        "esterror_us": tx.esterror,
        "maxerror_us": tx.maxerror,
    }


def chrony_tracking() -> JsonObject | None:
    """chronyc's tracking report (offset of the system clock from its source), when chrony runs here."""
    if not shutil.which("chronyc"):
        return None
    try:
        cp = subprocess.run(["chronyc", "-c", "tracking"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    fields = cp.stdout.strip().split(",")
    if cp.returncode != 0 or len(fields) < 14:
        return {"error": (cp.stderr or cp.stdout).strip()[:200]}
    return {
        "reference": fields[1],
        "stratum": int(fields[2]) if fields[2].isdigit() else None,
        "system_offset_s": float(fields[4]),
        "rms_offset_s": float(fields[6]),
        "root_dispersion_s": float(fields[11]),
        "leap": fields[13],
    }


def state() -> JsonObject:
    """This host's clock as facts and results store it: the kernel's view, and chrony's when it runs."""
    doc: JsonObject = {"kernel": kernel_state()}
    chrony = chrony_tracking()
    if chrony is not None:
        doc["chrony"] = chrony
    return doc


@dataclass(frozen=True)
class Offset:
    """The agent's clock minus the manager's, with its uncertainty (half the round trip it came from)."""

    offset_s: float
    uncertainty_s: float
    samples: int

    def to_json(self) -> JsonObject:
        return {"offset_s": self.offset_s, "uncertainty_s": self.uncertainty_s, "samples": self.samples}


def estimate(samples: list[tuple[float, float, float]]) -> Offset:
    """From (sent, agent's time, received) round trips: the one with the shortest round trip decides."""
    if not samples:
        raise ValueError("no round trips to estimate a clock offset from")
    t0, ta, t1 = min(samples, key=lambda s: s[2] - s[0])
    return Offset(ta - (t0 + t1) / 2, (t1 - t0) / 2, len(samples))
