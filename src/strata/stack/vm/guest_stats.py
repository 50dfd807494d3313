"""The guest's own counters: /proc/diskstats and the CPU lines of /proc/stat, sampled each second.

The agent writes `guest-stats.txt` (blocks `== <guest uptime>` then the
lines) and `clock.txt` (`uptime_at_wall=<uptime> <wall clock>`, taken after
the clock was set from the host's). This module turns them into per-second
series on the host's wall clock and totals over the command's run: what the
guest believes its disks moved (beside the host's diskstats: a cache between
them shows as a difference), the flushes and discards it sent them (where the
guest's kernel counts them: collectors/diskstats.py), and how busy its vCPUs were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

SECTOR_BYTES = 512
# A disk's counters in a sample, by their index among the fields after its name (collectors/diskstats.py
# FIELDS) and their scale: the classic four, then discards and flushes where the guest's kernel has them.
DISK_COUNTERS = (
    ("reads", 0, 1),
    ("read_bytes", 2, SECTOR_BYTES),
    ("writes", 4, 1),
    ("write_bytes", 6, SECTOR_BYTES),
    ("discard_ios", 11, 1),
    ("discard_bytes", 13, SECTOR_BYTES),
    ("flush_ios", 15, 1),
)


class Sample(TypedDict):
    """One sample of the guest: its uptime, each disk's DISK_COUNTERS (as many as its line has), its CPU ticks
    (busy, total)."""

    uptime_s: float
    disks: dict[str, tuple[int, ...]]
    cpu: tuple[int, int] | None


def parse(text: str) -> list[Sample]:
    """-> [{"uptime_s", "disks": {name: (reads, read_bytes, writes, write_bytes[, discard_ios, discard_bytes
    [, flush_ios]])}, "cpu": [busy, total]}]: a disk's DISK_COUNTERS, as many as its line has."""
    samples: list[Sample] = []
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "==" and len(f) == 2:
            samples.append({"uptime_s": float(f[1]), "disks": {}, "cpu": None})
        elif samples and f[0] == "cpu" and len(f) >= 8:
            ticks = [int(x) for x in f[1:]]
            idle = ticks[3] + ticks[4]  # idle + iowait
            total = sum(ticks[:8])  # guest/guest_nice are already in user/nice
            samples[-1]["cpu"] = (total - idle, total)
        elif samples and len(f) >= 14 and f[0].isdigit() and not f[2].startswith(("loop", "ram")):
            fields = f[3:]
            samples[-1]["disks"][f[2]] = tuple(int(fields[i]) * k for _, i, k in DISK_COUNTERS if i < len(fields))
    return samples


def wall_offset(clock_text: str) -> float | None:
    """wall clock - guest uptime, from clock.txt."""
    for line in clock_text.splitlines():
        if line.startswith("uptime_at_wall="):
            up, wall = line.split("=", 1)[1].split()
            return float(wall) - float(up)
    return None


def summarize(
    samples: list[Sample], offset_s: float | None, start_s: float | None, end_s: float | None
) -> dict[str, object]:  # guest-stats.json
    """Totals between the samples bracketing the command's run, and the per-second series."""
    if offset_s is not None and start_s is not None and end_s is not None:
        inside = [s for s in samples if start_s - 1.0 <= s["uptime_s"] + offset_s <= end_s + 1.0]
        samples = inside if len(inside) >= 2 else samples
    if len(samples) < 2:
        return {"samples": len(samples)}
    first, last = samples[0], samples[-1]
    disks: dict[str, dict[str, int]] = {}
    for name, end in last["disks"].items():
        begin = first["disks"].get(name, (0,) * len(end))
        disks[name] = dict(zip((n for n, _, _ in DISK_COUNTERS), (e - b for e, b in zip(end, begin))))
    out: dict[str, object] = {
        "samples": len(samples),
        "window_s": round(last["uptime_s"] - first["uptime_s"], 3),
        "disks": disks,
    }
    if first["cpu"] and last["cpu"]:
        busy, total = (last["cpu"][i] - first["cpu"][i] for i in (0, 1))
        out["cpu_busy_percent"] = round(100.0 * busy / total, 1) if total else None
    out["series"] = _series(samples, offset_s)
    return out


def _series(samples: list[Sample], offset_s: float | None) -> dict[str, object]:
    t: list[float] = []
    cpu: list[float | None] = []
    per_disk: dict[str, dict[str, list[float]]] = {}
    for a, b in zip(samples, samples[1:]):
        dt = b["uptime_s"] - a["uptime_s"]
        if dt <= 0:
            continue
        t.append(round(b["uptime_s"] + (offset_s or 0.0), 3))
        if a["cpu"] and b["cpu"] and b["cpu"][1] > a["cpu"][1]:
            cpu.append(round(100.0 * (b["cpu"][0] - a["cpu"][0]) / (b["cpu"][1] - a["cpu"][1]), 1))
        else:
            cpu.append(None)
        for name, vb in b["disks"].items():
            va = a["disks"].get(name, vb)
            d = per_disk.setdefault(name, {"read_bytes_per_s": [], "write_bytes_per_s": []})
            d["read_bytes_per_s"].append(round((vb[1] - va[1]) / dt))
            d["write_bytes_per_s"].append(round((vb[3] - va[3]) / dt))
            if len(vb) == len(va) == len(DISK_COUNTERS):  # the guest's kernel counts flushes
                d.setdefault("flush_ios_per_s", []).append(round((vb[6] - va[6]) / dt, 1))
    return {"t": t, "cpu_busy_percent": cpu, "disks": per_disk}


def summarize_dir(out_dir: Path, start_s: float | None, end_s: float | None) -> dict[str, object] | None:
    """guest-stats.json from what the agent left in one instance's out dir (None without samples)."""
    try:
        samples = parse((out_dir / "guest-stats.txt").read_text())
    except OSError:
        return None
    try:
        offset = wall_offset((out_dir / "clock.txt").read_text())
    except OSError:
        offset = None
    summary = summarize(samples, offset, start_s, end_s)
    try:
        summary["data_disk"] = (out_dir / "guest-data-disk").read_text().strip() or None
    except OSError:
        summary["data_disk"] = None
    (out_dir / "guest-stats.json").write_text(json.dumps(summary))
    return summary
