"""`precondition:` a device brought to the state its users run it in before any trial stands on it.

A fresh SSD, or a thin volume never written, reads zeros without touching the flash and writes at its
out-of-box speed; neither is the device's steady performance. SNIA's Solid State Storage Performance Test
Specification (PTS) asks for three steps, each optional here and run in this order once per device built
(StackCache, stack/provision.py), before the file system is made, outside every trial's time and the budget:

- `purge`: every block discarded (blkdiscard). PTS's purge is the drive's own secure erase or sanitize, which
  strata does not send; a discard of every block is what a block device offers without vendor commands. A
  device without discard support (its queue/discard_max_bytes is 0) is refused with that reason.
- `fill: N` (`true`: 2): N sequential passes of 128 KiB writes over the whole device with O_DIRECT (PTS's
  workload-independent preconditioning: twice the user capacity in 128 KiB sequential writes). fio's own JSON
  gives the bytes and the time.
- `steady`: rounds of fio on the device (`pattern`, `block_size`, `queue_depth`; by default random 4 KiB
  writes, the variable PTS's IOPS test tracks) until PTS's steady-state window holds: over the last five
  rounds, their IOPS within 20% of the window's mean (max - min), and the best linear fit's excursion over the
  window within 10% of it; at most `max_rounds` (PTS: 25). Every round is recorded, and whether it held.

A device that holds data is written only with the consent its plugin already asks for (`destroy:`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue, num, whole
from strata.core.params import Strict, size_field
from strata.core.proc import sh
from strata.core.units import parse_duration

WINDOW = 5  # PTS's measurement window: five rounds
MAX_EXCURSION = 0.20  # max - min of the window's rounds, beside their mean
MAX_SLOPE_EXCURSION = 0.10  # the linear fit's rise over the window, beside its mean
MAX_FILL_PASSES = 10
FILL_BS = 128 << 10
FILL_PASSES = 2  # `fill: true`
FILL_IODEPTH = 16
ASSUMED_MIB_S = (100, 500)  # write bandwidths the plan's estimate is said at (a disk's, a SATA SSD's)
PURGE_TIMEOUT_S = 3600


class Steady(Strict):
    """Rounds of fio on the device until SNIA PTS's steady-state window holds (at most `max_rounds`)."""

    pattern: Literal["randwrite", "write", "randrw"] = Field(default="randwrite", description="each round's I/O")
    block_size: int = Field(default=4096, description="each round's block size (accepts 4KiB); 512 B to 16 MiB")
    queue_depth: int = Field(default=16, ge=1, le=1024, description="each round's queue depth (libaio, O_DIRECT)")
    round: int = Field(default=60, description="seconds of each round (accepts 1m); 5 s to 1 h")
    max_rounds: int = Field(default=25, ge=WINDOW, le=100, description="the rounds run at most (PTS: 25)")

    _size = field_validator("block_size", mode="before")(size_field)

    @field_validator("round", mode="before")
    @classmethod
    def _seconds(cls, v: object) -> int:
        if not isinstance(v, (int, float, str)):
            raise ValueError("a round is a duration: write e.g. 60 or 1m")
        return int(parse_duration(v))

    @field_validator("round")
    @classmethod
    def _round_bounded(cls, v: int) -> int:
        if not 5 <= v <= 3600:
            raise ValueError("a steady round lasts from 5 s to 1 h")
        return v

    @field_validator("block_size")
    @classmethod
    def _bs_bounded(cls, v: int) -> int:
        if not 512 <= v <= 16 << 20 or v % 512:
            raise ValueError("a steady round's block_size is a multiple of 512 bytes, from 512 B to 16 MiB")
        return v


class Precondition(Strict):
    """What is done to the device before its first trial: purge, fill, steady (each optional, in that order)."""

    purge: bool = Field(default=False, description="discard every block first (blkdiscard); refused without discard")
    fill: int = Field(
        default=0, ge=0, le=MAX_FILL_PASSES, description="sequential passes over the whole device (true: 2)"
    )
    steady: bool | Steady = Field(
        default=False, description="true, or {pattern, block_size, queue_depth, round, max_rounds}"
    )

    @field_validator("fill", mode="before")
    @classmethod
    def _passes(cls, v: object) -> object:
        return (FILL_PASSES if v else 0) if isinstance(v, bool) else v

    @property
    def steady_rounds(self) -> Steady | None:
        return self.steady if isinstance(self.steady, Steady) else Steady() if self.steady else None

    @property
    def empty(self) -> bool:
        return not (self.purge or self.fill or self.steady)


def discard_refusal(kname: str) -> str | None:
    """Why `purge` cannot erase the device (None: it can): the kernel says it takes no discard."""
    try:
        most = int(Path(f"/sys/block/{kname}/queue/discard_max_bytes").read_text())
    except (OSError, ValueError):
        return f"{kname} is not a block device whose discard support this host can read"
    if most == 0:
        return f"{kname} takes no discard (its queue/discard_max_bytes is 0), so `purge` cannot erase it"
    return None


def plan_text(pre: Precondition, size_bytes: int | None) -> str:
    """What the precondition does and how long each part takes, for the plan (`strata validate`)."""
    parts = []
    if pre.purge:
        parts.append("purge: blkdiscard of the whole device (seconds on a device that discards in ranges)")
    if pre.fill:
        if not size_bytes:
            parts.append(f"fill: {pre.fill} sequential pass(es) of the whole device")
        else:
            mib = pre.fill * size_bytes / 2**20
            at = ", ".join(f"{mib / rate:,.0f} s at {rate} MiB/s" for rate in ASSUMED_MIB_S)
            parts.append(
                f"fill: {pre.fill} × {size_bytes / 2**20:,.0f} MiB = {mib:,.0f} MiB of sequential writes ({at})"
            )
    steady = pre.steady_rounds
    if steady is not None:
        parts.append(
            f"steady: {WINDOW} to {steady.max_rounds} rounds of {steady.round} s of {steady.pattern} "
            f"{steady.block_size} B at QD{steady.queue_depth} ({WINDOW * steady.round:,} to "
            f"{steady.max_rounds * steady.round:,} s)"
        )
    return "; ".join(parts)


def window(values: list[float]) -> JsonObject | None:
    """SNIA PTS's steady-state test of the last WINDOW rounds: their range and their linear fit's excursion,
    each beside the window's mean; None before there are WINDOW rounds."""
    if len(values) < WINDOW:
        return None
    ys = values[-WINDOW:]
    mean = sum(ys) / WINDOW
    xs = range(WINDOW)
    x_mean = (WINDOW - 1) / 2
    slope = sum((x - x_mean) * (y - mean) for x, y in zip(xs, ys)) / sum((x - x_mean) ** 2 for x in xs)
    excursion = (max(ys) - min(ys)) / mean if mean > 0 else float("inf")
    slope_excursion = abs(slope) * (WINDOW - 1) / mean if mean > 0 else float("inf")
    return {
        "rounds": [len(values) - WINDOW + 1, len(values)],
        "mean": round(mean, 3),
        "excursion": round(excursion, 4),
        "slope_excursion": round(slope_excursion, 4),
        "holds": excursion <= MAX_EXCURSION and slope_excursion <= MAX_SLOPE_EXCURSION,
    }


def run(pre: Precondition, device: str, kname: str, size_bytes: int) -> JsonObject:
    """Precondition the device at `device` (its kernel name `kname`); what was done, for the device's facts."""
    done: JsonObject = {}
    if pre.purge:
        why = discard_refusal(kname)
        if why:
            raise StrataError(why, "remove `purge` from the device's `precondition:` (a fill still writes it all)")
        start = time.monotonic()
        sh(["blkdiscard", "--force", device], timeout=PURGE_TIMEOUT_S)
        done["purge"] = {"tool": "blkdiscard", "seconds": round(time.monotonic() - start, 3)}
    if pre.fill:
        job = _fio(
            device, "fill", ["--rw=write", f"--bs={FILL_BS}", f"--iodepth={FILL_IODEPTH}", f"--loops={pre.fill}"]
        )
        write = _direction(job, "write")
        written = whole(write, "io_bytes", 0) or 0
        if written < pre.fill * size_bytes:
            raise StrataError(
                f"the fill of {device} wrote {written:,} bytes of {pre.fill * size_bytes:,}",
                "look at the device's health (dmesg), then run again",
            )
        done["fill"] = {
            "passes": pre.fill,
            "bytes": written,
            "seconds": round((num(write, "runtime", 0) or 0) / 1000, 3),  # fio's own runtime (ms)
            "bw_bytes": whole(write, "bw_bytes", 0),
        }
    steady = pre.steady_rounds
    if steady is not None:
        done["steady"] = _steady(steady, device)
    return done


def _steady(s: Steady, device: str) -> JsonObject:
    rounds: list[JsonValue] = []
    iops: list[float] = []
    last: JsonObject | None = None
    args = [f"--rw={s.pattern}", f"--bs={s.block_size}", f"--iodepth={s.queue_depth}", "--time_based"]
    args.append(f"--runtime={s.round}")
    while len(rounds) < s.max_rounds:
        job = _fio(device, "steady", args + ["--norandommap", "--randrepeat=0"], s.round + 600)
        ops = sum(num(_direction(job, d), "iops", 0.0) or 0.0 for d in ("read", "write"))
        iops.append(ops)
        rounds.append({"round": len(rounds) + 1, "iops": round(ops, 3)})
        last = window(iops)
        if last is not None and last["holds"]:
            break
    return {
        "pattern": s.pattern,
        "block_size": s.block_size,
        "queue_depth": s.queue_depth,
        "round_s": s.round,
        "rounds": rounds,
        "reached": bool(last and last["holds"]),
        "window": last,
    }


def _fio(device: str, name: str, args: list[str], timeout_s: float = 7 * 86400) -> JsonObject:
    """One fio job on the whole device with O_DIRECT; its JSON's first job (fio's own bytes and times)."""
    argv = [
        "fio",
        f"--name={name}",
        f"--filename={device}",
        "--ioengine=libaio",
        "--direct=1",
        "--output-format=json",
        *args,
    ]
    r = sh(argv, check=False, timeout=timeout_s)
    try:
        doc = json.loads(r.stdout[r.stdout.find("{") :])
        job: JsonObject = doc["jobs"][0]
    except (ValueError, KeyError, IndexError):
        raise StrataError(
            f"fio's {name} of {device} failed: {(r.stderr or r.stdout).strip()[-400:]}",
            "check the device (dmesg), or remove the step from `precondition:`",
        ) from None
    if r.returncode != 0 or job.get("error"):
        raise StrataError(
            f"fio's {name} of {device} failed (error {job.get('error')}): {r.stderr.strip()[-400:]}",
            "check the device (dmesg), or remove the step from `precondition:`",
        )
    return job


def apply(pre: Precondition | None, device: str, size_bytes: int, facts: JsonObject) -> None:
    """A device plugin's last step before it yields its handle: the precondition run, and what it did in the
    device's facts (stored with every trial on it)."""
    if pre is not None and not pre.empty:
        facts["precondition"] = run(pre, device, Path(os.path.realpath(device)).name, size_bytes)


def _direction(job: JsonObject, direction: str) -> JsonObject:
    d = job.get(direction)
    return d if isinstance(d, dict) else {}
