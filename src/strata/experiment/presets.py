"""The limit presets of study 003's Table 2, resolved on the host that runs the trial.

003 section 6.2 divides the host's cores, memory and disk bandwidth by the largest container count
(eight) and gives each container that share: `CPU` (cores only), `MEM` (memory only), `BW` (disk
bandwidth only), `CPU+MEM`, `ALL` (all three) and `none`. A spec names the preset
(`limits: MEM`, or `limits: {preset: ALL, share: 4}`) and the trial id keeps the name, so results
of different hosts merge; the numbers are resolved when the trial runs, from the host's cores and
memory and from the device's sequential read bandwidth, which strata measures with fio first (once
per device, read-only) and stores with every result of the trial (`stack_facts.limits`).
Explicit values given beside a preset override its values.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from strata.core.errors import StrataError
from strata.core.params import PRESET_LIMITS, Limits, Load

FIO_RUNTIME_S = 5
_measured: dict[str, int] = {}  # device path -> sequential read bytes/s (one measurement per device)


def needs_bandwidth(limits: Limits) -> bool:
    return bool(limits.preset) and "read_bps" in PRESET_LIMITS[limits.preset]


def resolve(load: Load, cores: int, memory_bytes: int, device_bps: int | None) -> tuple[Load, dict]:
    """The load with the preset's numbers in its limits, and the record of how they were derived."""
    lim = load.limits
    if not lim.preset:
        return load, {}
    share = lim.share
    derived: dict = {}
    for part in PRESET_LIMITS[lim.preset]:
        if part == "cpus":
            derived["cpus"] = round(max(0.01, cores / share), 3)
        elif part == "memory":
            derived["memory"] = memory_bytes // share // (1 << 20) * (1 << 20)
        else:
            if not device_bps:
                raise StrataError(f"the {lim.preset} preset needs the device's bandwidth, which was not measured", "")
            derived[part] = max(1, device_bps // share)
    explicit = {k: v for k, v in lim.model_dump().items() if v is not None and k not in ("preset", "share")}
    values = {**derived, **explicit}
    resolved = Limits.model_validate(values)
    record = {
        "preset": lim.preset,
        "share": share,
        "resolved": resolved.model_dump(exclude_none=True),
        "basis": {"cores": cores, "memory_bytes": memory_bytes, "device_read_bps": device_bps},
    }
    return load.model_copy(update={"limits": resolved}), record


def on_host(load: Load, host: dict) -> Load:
    """The preset's cores and memory on this host (for the checks before a run; bandwidth left out)."""
    lim = load.limits
    if not lim.preset or not host.get("cpus") or not host.get("memory_bytes"):
        return load
    keep = {k: v for k, v in lim.model_dump().items() if v is not None and k not in ("preset", "share")}
    bw = 1 if "read_bps" in PRESET_LIMITS[lim.preset] else None
    resolved, _ = resolve(
        load.model_copy(update={"limits": Limits(preset=lim.preset, share=lim.share, **keep)}),
        host["cpus"],
        host["memory_bytes"],
        bw,
    )
    return resolved


def device_read_bps(device_path: str) -> int:
    """Sequential read bandwidth of the device (fio, O_DIRECT, 1 MiB, read-only, a few seconds); cached."""
    if device_path in _measured:
        return _measured[device_path]
    if not shutil.which("fio"):
        raise StrataError("the BW and ALL limit presets measure the device with fio", "apt-get install fio")
    argv = [
        "fio", "--name=strata-bw", f"--filename={device_path}", "--readonly", "--rw=read", "--bs=1M",
        "--direct=1", "--ioengine=libaio", "--iodepth=16", "--time_based", f"--runtime={FIO_RUNTIME_S}",
        "--output-format=json",
    ]  # fmt: skip
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=FIO_RUNTIME_S + 120)
    try:
        bps = int(json.loads(cp.stdout[cp.stdout.find("{") :])["jobs"][0]["read"]["bw_bytes"])
    except (ValueError, KeyError, IndexError):
        raise StrataError(f"fio could not measure {device_path}: {(cp.stderr or cp.stdout)[-500:]}", "run fio by hand")
    _measured[device_path] = bps
    return bps
