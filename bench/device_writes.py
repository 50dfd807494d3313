#!/usr/bin/env python3
"""How far the flush and absorbed rules stand from their thresholds on real stacks (issue 44). Run as root.

strata runs, on one loop device, ext4 (with barriers, with barrier=0, with data=journal), xfs and btrfs,
natively, under two fio jobs: 4 KiB random writes with an fsync after each, and 4 KiB random O_DIRECT
writes without; at low (1 job x QD1) and high load (4 jobs x QD16). For every trial it prints what each
rule reads, in its threshold's unit:

- flushes/owed: the flushes the device under test saw over those a stack that keeps its syncs owes
  (syncs / streams); the flush flag fires below 0.5 (results/validity/flushes.py MIN_FLUSH_SHARE);
- merged/write: the writes the device took merged into another, less the 4 a sync left to a journal's
  commits, per random O_DIRECT write; the absorbed flag fires above 0.5 (absorbed.py MAX_MERGED_SHARE);
- WA: the device under test's write amplification.

Then the margins: the least flushes/owed of the stacks that keep their syncs and the most of barrier=0;
the most merged/write of plain file systems and the least of data=journal. Prints; exits 0 either way.
Usage: sudo .venv/bin/python bench/device_writes.py [--repetitions 2] [--runtime 6] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import tiny
import yaml

from strata.results.validity.absorbed import JOURNAL_MERGES_PER_SYNC, MAX_MERGED_SHARE
from strata.results.validity.flushes import MIN_FLUSH_SHARE

FILESYSTEMS = [
    "ext4",
    {"type": "ext4", "mount_options": ["barrier=0"]},
    {"type": "ext4", "mount_options": ["data=journal"]},
    "xfs",
    "btrfs",
]


def spec(work: Path, runtime: int, reps: int, loads: list[Any]) -> dict[str, Any]:
    job = {"rw": "randwrite", "bs": "4k", "size": "128MiB", "runtime": runtime, "ramp_time": 1}
    return {
        "name": "device-writes",
        "workdir": str(work / "wd"),
        "repetitions": reps,
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": FILESYSTEMS,
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": [{"fio": {**job, "name": "fsync", "options": {"fsync": 1}}}, {"fio": {**job, "name": "rw"}}],
        "loads": loads,
    }


def rows(out: Path) -> list[dict[str, Any]]:
    """Per trial: its stack, workload, load, the two rules' quantities and its flags."""
    found = []
    for p in sorted((out / "trials").glob("*.json")):
        r = json.loads(p.read_text())
        if r.get("status") != "ok":
            continue
        flags = r.get("flags") or {}
        flush, absorbed = flags.get("flush") or {}, flags.get("absorbed") or {}
        fe, ae = flush.get("evidence") or {}, absorbed.get("evidence") or {}
        per = (fe.get("per_disk") or {}).get((fe.get("disks") or [""])[0]) or {}
        owed = fe.get("owed")
        merged = None
        if ae.get("writes") and ae.get("random"):
            merged = (ae["device_merges"] - JOURNAL_MERGES_PER_SYNC * (ae.get("syncs") or 0)) / ae["writes"]
        found.append(
            {
                "stack": r["stack"],
                "workload": r["labels"]["workload"],
                "load": r["labels"]["load"],
                "flushes": per["flush_ios"] / owed if owed and per.get("flush_ios") is not None else None,
                "merged": merged,
                "wa": next(iter(((r.get("writes") or {}).get("amplification") or {}).values()), None),
                "flags": " ".join(k.upper() for k in ("flush", "absorbed") if (flags.get(k) or {}).get("suspect")),
            }
        )
    return found


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def report(found: list[dict[str, Any]]) -> None:
    print(f"{'stack':36} {'workload':8} {'load':5} {'flushes/owed':>12} {'merged/write':>12} {'WA':>7}  flags")
    for t in found:
        cells = (_num(t["flushes"]), _num(t["merged"]), _num(t["wa"]))
        print(
            f"{t['stack']:36} {t['workload']:8} {t['load']:5} {cells[0]:>12} {cells[1]:>12} {cells[2]:>7}  {t['flags']}"
        )
    kept = [t["flushes"] for t in found if t["flushes"] is not None and "barrier0" not in t["stack"]]
    dropped = [t["flushes"] for t in found if t["flushes"] is not None and "barrier0" in t["stack"]]
    plain = [t["merged"] for t in found if t["merged"] is not None and "datajournal" not in t["stack"]]
    journal = [
        t["merged"] for t in found if t["merged"] is not None and "datajournal" in t["stack"] and t["workload"] == "rw"
    ]
    print(
        f"flush: stacks that keep their syncs saw at least {_num(min(kept, default=None))} of the flushes owed, "
        f"barrier=0 at most {_num(max(dropped, default=None))} (flagged below {MIN_FLUSH_SHARE})"
    )
    print(
        f"absorbed: plain file systems merged at most {_num(max(plain, default=None))} a random write, "
        f"data=journal at least {_num(min(journal, default=None))} (flagged above {MAX_MERGED_SHARE})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--runtime", type=int, default=6)
    tiny.add(ap)
    args = ap.parse_args()
    loads: list[Any] = ["low", {"name": "high", "numjobs": 4, "iodepth": 16}]
    if tiny.apply(args, repetitions=1, runtime=1):
        loads = ["low"]
    with tempfile.TemporaryDirectory(prefix="strata-bench-writes-") as d:
        work = Path(d)
        (work / "s.yaml").write_text(yaml.safe_dump(spec(work, args.runtime, args.repetitions, loads)))
        cp = subprocess.run(
            [sys.executable, "-m", "strata.cli.main", "run", str(work / "s.yaml"), "-o", str(work / "out")],
            capture_output=True,
            text=True,
        )
        found = rows(work / "out")
        if not found:
            print(f"no trial finished: {cp.stdout[-2000:]}{cp.stderr[-2000:]}")
            return 1
        report(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
