"""Synthetic stored results in strata's current result schema (schema.py), for the
report benchmark (bench/report_bench.py) and for unit tests of the analysis.

The numbers follow a simple model shaped by the seed studies (003: file systems
near raw, btrfs slow for small random I/O, nodatacow x5 for random writes,
ext4 random reads below raw, container throughput peaking at 4; 004: ext4 best
for file server and mail), with multiplicative noise per repetition.

    python3 bench/synth_results.py OUT_DIR --trials 10000
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any, Iterator

from strata.results.schema import SCHEMA_VERSION
from strata.workloads.base import headline

HOST = {
    "hostname": "synth",
    "kernel": "6.1.0",
    "os": "Debian GNU/Linux 12 (bookworm)",
    "cpus": 2,
    "tools": {"fio": "fio-3.33"},
    "strata_version": "0.1.0",
}


def _lat(mean_us: float) -> dict[str, Any]:
    m = mean_us * 1000
    return {
        "n": 1000,
        "mean": m,
        "min": m * 0.3,
        "max": m * 8,
        "p50": m * 0.9,
        "p90": m * 1.5,
        "p99": m * 3,
        "p99_9": m * 5,
    }


def fio_metrics(rw: str, bs: int, iops: float, lat_us: float, containers: int = 1) -> dict[str, Any]:
    ddir = "write" if "write" in rw else "read"
    other = "read" if ddir == "write" else "write"
    moved = int(iops * bs * 30)
    side = {
        "iops": iops,
        "bw_bytes": int(iops * bs),
        "io_bytes": moved,
        "total_ios": int(iops * 30),
        "slat_ns": _lat(lat_us * 0.05),
        "clat_ns": _lat(lat_us * 0.95),
        "lat_ns": _lat(lat_us),
    }
    zero = {
        "iops": 0.0,
        "bw_bytes": 0,
        "io_bytes": 0,
        "total_ios": 0,
        **{k: {"n": 0, "mean": None} for k in ("slat_ns", "clat_ns", "lat_ns")},
    }
    inst = [{ddir: {"iops": iops / containers, "bw_bytes": int(iops * bs / containers)}} for _ in range(containers)]
    sequential = not rw.startswith("rand")
    primary = headline(
        iops * bs / 1e6 if sequential else iops,
        "MB/s" if sequential else "IOPS",
        "bw_bytes" if sequential else "iops",
        "fio_iops",
        series_unit="IOPS",
        iops=iops,
        bw_bytes=int(iops * bs),
    )
    return {"kind": "fio", ddir: side, other: zero, "instances": inst, "fio_version": "fio-3.33", "primary": primary}


def filebench_metrics(mb_per_s: float, ops_per_s: float) -> dict[str, Any]:
    flowops = [
        {
            "name": n,
            "ops": int(ops_per_s * 60 / 4),
            "ops_per_s": ops_per_s / 4,
            "mb_per_s": mb_per_s / 4,
            "latency_us": {"mean": 800.0, "p50": 600.0, "p90": 1500.0, "p99": 4000.0, "p99_9": 9000.0, "max": 20000.0},
        }
        for n in ("openfile", "readfile", "appendfile", "closefile")
    ]
    return {
        "kind": "filebench",
        "primary": headline(mb_per_s, "MB/s", "mb_per_s", ops_per_s=ops_per_s, mb_per_s=mb_per_s),
        "flowops": flowops,
    }


def make_result(
    fs: str = "xfs",
    runtime: str = "native",
    driver: str | None = None,
    path: str | None = None,
    rw: str = "randread",
    bs: int = 4096,
    numjobs: int = 1,
    iodepth: int = 1,
    containers: int = 1,
    rep: int = 0,
    value: float = 1000.0,
    kind: str = "fio",
    workload: str | None = None,
    load: str | None = None,
    device: str = "loop",
    mount_options: tuple[str, ...] = (),
    cache: bool = False,
    lat_us: float | None = None,
    steady: dict[str, Any] | None = None,
    experiment: str = "synthetic",
    host: dict[str, Any] | None = None,
    status: str = "ok",
    size: int = 1 << 30,
    limits: dict[str, Any] | None = None,
    device_type: str = "loop",
    design: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One stored result. `value`: IOPS (fio random), MB/s (fio sequential and filebench)."""
    path = path or ("device" if fs == "raw" else "bind")
    fs_name = fs + "".join("-" + o.replace("=", "") for o in mount_options)
    rt_name = runtime if runtime in ("native", "vm") else f"docker:{driver or 'overlay2'}"
    wl: dict[str, Any]
    if kind == "filebench":
        wl = {"type": "filebench", "name": workload or "fileserver", "file": f"{workload or 'fileserver'}.f"}
        metrics = filebench_metrics(value, value * 40)
    else:
        wl = {
            "type": "fio",
            "name": workload or f"{rw}-{bs // 1024}k",
            "rw": rw,
            "bs": bs,
            "direct": 1,
            "ioengine": "libaio",
            "size": size,
            "runtime": 30,
            "ramp_time": 5,
            "file": None,
            "options": {},
        }
        iops = value if rw.startswith("rand") else value * 1e6 / bs
        lat = lat_us if lat_us is not None else 1e6 * numjobs * iodepth * containers / max(iops, 1.0)
        metrics = fio_metrics(rw, bs, iops, lat, containers)
    ld = {
        "name": load or f"j{numjobs}xqd{iodepth}" + (f"x{containers}c" if containers > 1 else ""),
        "numjobs": numjobs,
        "iodepth": iodepth,
        "containers": containers,
        "limits": limits or {},
    }
    trial = {
        "device": {"name": device, "type": device_type},
        "filesystem": {"name": fs_name, "type": fs, "mount_options": list(mount_options), "mkfs_options": []},
        "runtime": {
            "name": rt_name,
            "type": runtime,
            **({"storage_driver": driver or "overlay2"} if runtime == "docker" else {}),
        },
        "path": path,
        "workload": wl,
        "load": ld,
        "repetition": rep,
    }
    tid = hashlib.sha256(json.dumps(trial, sort_keys=True).encode()).hexdigest()[:16]
    flags = {
        "failed": None,
        "sync": {"suspect": False, "skew_s": 0.0, "instances": containers},
        "cache": {
            "suspect": cache,
            "reason": "a cache answered" if cache else "device moved the workload's bytes",
            "evidence": {"read_disk_share": 0.05} if cache else {},
        },
    }
    if steady is not None:
        flags["steady"] = steady
    labels = {
        "device": device,
        "filesystem": fs_name,
        "runtime": rt_name,
        "path": path,
        "workload": wl["name"],
        "load": ld["name"],
        "repetition": rep,
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "trial_id": tid,
        "run_id": "synthetic",
        "experiment": experiment,
        "status": status,
        "stack": f"{device}/{fs_name}/{rt_name}/{path}",
        "labels": labels,
        "trial": trial,
        **({"design": design} if design else {}),
        "metrics": metrics if status == "ok" else {},
        "flags": flags,
        "warnings": [],
        "host": host or HOST,
        "stack_facts": {"device": {"kernel_name": "loop0"}},
        "collectors": {},
        "artifacts": f"trials/{tid}",
    }


FS_FACTOR = {
    ("raw", "randread"): 1.0,
    ("ext4", "randread"): 0.75,
    ("xfs", "randread"): 0.98,
    ("btrfs", "randread"): 0.45,
    ("ext4", "randwrite"): 0.95,
    ("xfs", "randwrite"): 0.8,
    ("btrfs", "randwrite"): 0.15,
    ("raw", "randwrite"): 1.0,
}
DRIVER_FACTOR = {"overlay2": 0.97, "btrfs": 0.5, "devicemapper": 0.6, "vfs": 0.9}


def model(
    fs: str, opt: str | None, driver: str | None, path: str, rw: str, bs: int, jobs: int, depth: int, containers: int
) -> float:
    base: float = (80000.0 if rw == "randread" else 60000.0) * min(1.0, jobs * depth / 64) ** 0.5
    f = FS_FACTOR.get((fs, rw), 0.95)
    if opt == "dioread_nolock" and rw == "randread":
        f *= 1.25
    if opt == "nodatacow" and rw == "randwrite":
        f *= 5
    if path == "layer":
        f *= DRIVER_FACTOR.get(driver or "", 0.9)
    if fs == "btrfs" and rw == "randread":
        f = min(1.0, f * (bs / 4096) ** 0.4)
    if fs == "xfs" and rw == "randwrite" and jobs > 24:
        f *= 0.4
    scale: float = min(containers, 4) ** 0.5 * (0.85 ** max(0, containers - 4))
    smaller_io: float = (4096 / bs) ** 0.6
    return base * f * scale * smaller_io


Configuration = tuple[str, str | None, str, str | None, str, str, int, int, int, int]


def configurations() -> Iterator[Configuration]:
    fss = [
        ("raw", None),
        ("ext4", None),
        ("ext4", "dioread_nolock"),
        ("xfs", None),
        ("btrfs", None),
        ("btrfs", "nodatacow"),
    ]
    runtimes = [
        ("native", None, "device"),
        ("native", None, "bind"),
        ("docker", "overlay2", "layer"),
        ("docker", "overlay2", "volume"),
        ("docker", "overlay2", "bind"),
        ("docker", "btrfs", "layer"),
    ]
    for (fs, opt), (rt, drv, path) in itertools.product(fss, runtimes):
        if (fs == "raw") != (path == "device") or (drv == "btrfs" and fs != "btrfs"):
            continue
        cont: tuple[int, ...]
        if rt == "native":
            cont = (1,)
        else:
            cont = (1, 2, 3, 4, 6, 8)
        for rw, bs, jobs, depth, c in itertools.product(
            ("randread", "randwrite"), (4096, 16384, 65536), (1, 4, 16, 32), (1, 32), cont
        ):
            yield fs, opt, rt, drv, path, rw, bs, jobs, depth, c


def generate(out: Path, trials: int, seed: int = 1) -> int:
    rnd = random.Random(seed)
    configs = list(configurations())
    reps = max(1, trials // len(configs))
    n = 0
    for rep in range(reps + 1):
        for fs, opt, rt, drv, path, rw, bs, jobs, depth, c in configs:
            if n >= trials:
                return n
            v = model(fs, opt, drv, path, rw, bs, jobs, depth, c) * rnd.lognormvariate(0, 0.05)
            r = make_result(fs, rt, drv, path, rw, bs, jobs, depth, c, rep, v, mount_options=(opt,) if opt else ())
            _write(out, r, rnd)
            n += 1
    return n


def _write(out: Path, r: dict[str, Any], rnd: random.Random) -> None:
    """The result file and its artifacts; flags.steady as the runner stores it (validity.steady)."""
    from strata.results.flags import Flag, Flags
    from strata.results.validity import steady

    d = out / "trials"
    (d / r["trial_id"]).mkdir(parents=True, exist_ok=True)
    iops = r["metrics"]["primary"]["iops"]
    series = [[t, iops * rnd.uniform(0.9, 1.1)] for t in range(30)]
    Flags({Flag.STEADY: steady(series)}).write(r)
    (d / f"{r['trial_id']}.json").write_text(json.dumps(r, indent=1, sort_keys=True))
    (d / r["trial_id"] / "workload-series.json").write_text(json.dumps({"fio_iops": series}))
    t = [1.7e9 + i for i in range(31)]
    (d / r["trial_id"] / "series.json").write_text(
        json.dumps(
            {
                "t": t,
                "host": {
                    "cpu_percent": {"iowait": [rnd.uniform(0, 20) for _ in range(30)]},
                    "page_cache_bytes": [2**28 + i * 2**20 for i in range(30)],
                },
                "diskstats": {"loop0": {"util_percent": [rnd.uniform(80, 100) for _ in range(30)]}},
            }
        )
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--trials", type=int, default=10000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    print(f"{generate(Path(a.out), a.trials, a.seed)} synthetic trials in {a.out}")


if __name__ == "__main__":
    main()
