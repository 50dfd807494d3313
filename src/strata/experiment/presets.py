"""The limit presets of study 003's Table 2, resolved on the host that runs the trial.

003 section 6.2 divides the host's cores, memory and disk bandwidth by the largest container count
(eight) and gives each container that share: `CPU` (cores only), `MEM` (memory only), `BW` (disk
bandwidth only), `CPU+MEM`, `ALL` (all three) and `none`. A spec names the preset
(`limits: MEM`, or `limits: {preset: ALL, share: 4}`) and the trial id keeps the name, so results
of different hosts merge; the numbers are resolved when the trial runs, from the host's cores and
memory and from the device's sequential read bandwidth, which strata measures first (once per device,
read-only, with the first registered workload that can: `DeviceProbe`) and stores with every result of
the trial (`stack_facts.limits`). Explicit values given beside a preset override its values.
"""

from __future__ import annotations

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, whole
from strata.core.params import PRESET_LIMITS, Limits, Load
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import DeviceProbe

_measured: dict[str, int] = {}  # device path -> sequential read bytes/s (one measurement per device)


def needs_bandwidth(limits: Limits) -> bool:
    return limits.preset is not None and "read_bps" in PRESET_LIMITS[limits.preset]


def resolve(load: Load, cores: int, memory_bytes: int, device_bps: int | None) -> tuple[Load, JsonObject]:
    """The load with the preset's numbers in its limits, and the record of how they were derived."""
    lim = load.limits
    if not lim.preset:
        return load, {}
    share = lim.share
    derived: dict[str, float | int] = {}
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
    record: JsonObject = {
        "preset": lim.preset,
        "share": share,
        "resolved": resolved.model_dump(exclude_none=True),
        "basis": {"cores": cores, "memory_bytes": memory_bytes, "device_read_bps": device_bps},
    }
    return load.model_copy(update={"limits": resolved}), record


def on_host(load: Load, host: JsonObject) -> Load:
    """The preset's cores and memory on this host (for the checks before a run; bandwidth left out)."""
    lim = load.limits
    cpus, memory_bytes = whole(host, "cpus"), whole(host, "memory_bytes")
    if not lim.preset or not cpus or not memory_bytes:
        return load
    keep = {k: v for k, v in lim.model_dump().items() if v is not None and k not in ("preset", "share")}
    bw = 1 if "read_bps" in PRESET_LIMITS[lim.preset] else None
    resolved, _ = resolve(
        load.model_copy(update={"limits": Limits(preset=lim.preset, share=lim.share, **keep)}),
        cpus,
        memory_bytes,
        bw,
    )
    return resolved


def needs_probe(loads: list[Load]) -> bool:
    """Whether any of these loads has a preset sized by a device's bandwidth (the probe runs first)."""
    return any(needs_bandwidth(ld.limits) for ld in loads)


def probe() -> DeviceProbe:
    """The first registered workload that measures a device's bandwidth (`DeviceProbe`)."""
    probe = next((w for w in WORKLOADS.values() if isinstance(w, DeviceProbe)), None)
    if probe is None:
        raise StrataError("the BW and ALL limit presets need a workload that measures a device", "use CPU or MEM")
    return probe


def device_read_bps(device_path: str) -> int:
    """Sequential read bandwidth of the device, measured once per device by the first workload that can
    (`DeviceProbe`: read-only, a few seconds; fio's reads 1 MiB blocks with O_DIRECT)."""
    if device_path not in _measured:
        _measured[device_path] = probe().read_bps(device_path)
    return _measured[device_path]


def measured_by(device_path: str) -> str:
    """How the device's bandwidth was measured, in words, stored with the resolved limits."""
    return probe().probe_words.format(path=device_path)
