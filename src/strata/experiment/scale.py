"""The smoke scale: the same experiment design with every trial made cheap.

`strata run SPEC --scale smoke` keeps every device, file system, runtime, path,
workload kind, load and limit preset of the spec, so that every stack is built
and every report section is drawn, but each trial is short and small: one
repetition, 1 s runs (5 s for a database's clients), small files and record counts, devices of at
most SMOKE_DEVICE_BYTES, and each sweep cut to its first and last values. It
answers "will this study run to a complete report here?" in minutes, never
"how fast is this stack": its results are marked (`design.scale: smoke`), stored
apart (results/<name>-smoke by default), and the report says so on every page.

The transformation works on the experiment file as written, before it is
validated: what it does not recognise it leaves as it is, for the validator to
judge. Each workload shrinks its own parameters (`Workload.smoke`).
"""

from __future__ import annotations

import copy
import os

from strata.core.params import LoadCounts, size_at_most, sweep_ends

SCALES = ("full", "smoke")
SMOKE_DEVICE_BYTES = 4 << 30
SWEEP_LOAD_KEYS = LoadCounts.names()


def smoke(doc: object) -> object:
    """The experiment file at smoke scale (a new document; `doc` is not changed)."""
    if not isinstance(doc, dict):
        return doc
    from strata.workloads import REGISTRY as WORKLOADS
    from strata.workloads.base import Smoke

    out = copy.deepcopy(doc)
    out["scale"] = "smoke"
    out["repetitions"] = 1
    for key in ("min_repetitions", "max_repetitions", "budget", "precision"):
        out.pop(key, None)
    for dev in out.get("devices") or []:
        if isinstance(dev, dict) and "size" in dev:
            dev["size"] = size_at_most(dev["size"], SMOKE_DEVICE_BYTES)
    if isinstance(out.get("loads"), list):
        out["loads"] = _loads([_load(x) for x in out["loads"]])
    workloads = out.get("workloads")
    if isinstance(workloads, list):
        for i, entry in enumerate(workloads):
            if isinstance(entry, dict) and len(entry) == 1:
                ((kind, params),) = entry.items()
                plugin = WORKLOADS.get(kind)
                if plugin is not None and isinstance(params, dict) and isinstance(plugin, Smoke):
                    workloads[i] = {kind: plugin.smoke(params)}
    return out


def _loads(loads: list[object]) -> list[object]:
    """A container sweep written as several loads (`{containers: 1}`, `{containers: 2}`, ...) cut to its
    first and last loads, like a list."""
    groups: dict[str, list[int]] = {}
    for i, load in enumerate(loads):
        if isinstance(load, dict) and isinstance(load.get("containers"), int):
            key = repr(sorted((k, repr(v)) for k, v in load.items() if k not in ("name", "containers")))
            groups.setdefault(key, []).append(i)
    dropped = {i for idx in groups.values() if len(idx) > 2 for i in idx[1:-1]}
    return [load for i, load in enumerate(loads) if i not in dropped]


def _load(load: object) -> object:
    if isinstance(load, dict):
        return {k: sweep_ends(v) if k in SWEEP_LOAD_KEYS else v for k, v in load.items()}
    return load


def check_scale(out: str | os.PathLike[str], scale: str) -> None:
    """Refuse to store trials of one scale beside stored trials of the other (a smoke result must never
    be mistaken for a measurement, nor fill the gaps of one)."""
    import json
    from pathlib import Path

    from strata.core.errors import StrataError

    for p in sorted((Path(out) / "trials").glob("*.json"))[:50]:
        try:
            stored = (json.loads(p.read_text()).get("design") or {}).get("scale", "full")
        except (OSError, ValueError, AttributeError):
            continue
        if stored != scale:
            raise StrataError(
                f"{out} holds {stored}-scale results and this run is {scale}-scale",
                "give this run its own results directory (-o), or run it at the scale of the stored one",
            )
        return
