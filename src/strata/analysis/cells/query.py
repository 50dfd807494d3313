"""Selecting and matching cells, for findings and advice.

Two cells match when they ran the same workload parameters at the same load
on the same device (names of workloads and loads aside), plus whatever layer
the caller also wants equal (the file system, for "volume vs host file system").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from strata.analysis.cells.cells import Cell
from strata.analysis.decisions.stats import Change, Summary, change
from strata.core.jsondoc import JsonObject, text, whole
from strata.core.params import PRESET_LIMITS


def summary_of(c: Cell) -> Summary:
    """A cell's summary: build_cells summarizes every cell it returns."""
    if c.summary is None:
        raise ValueError(f"cell {c.name} has no summary: cells come from build_cells")
    return c.summary


def select(
    cells: list[Cell],
    fs: str | None = None,
    plain: bool | None = None,
    option: str | None = None,
    baseline: bool | None = None,
    drivers: tuple[str, ...] | None = None,
    path: str | None = None,
    params: Mapping[str, tuple[object, ...]] | None = None,
    patterns: tuple[str, ...] | None = None,
    offered: bool | None = None,
    isolation: str | None = None,
    workload_re: str | None = None,
) -> list[Cell]:
    """Cells with device numbers, filtered. `plain`: no mount options; `option`: this mount option present;
    `params`: each named workload parameter one of the values given; `patterns`: the access pattern (the
    workload's declared `MetricSchema.io`) one of these; `baseline`, `isolation`: what the
    runtime plugin says it is (the baseline: native; a container, a VM); `offered`: whether the workload's
    clients offer a rate to databases (its declaration's `MetricSchema.offered`)."""
    out = [c for c in cells if c.values]
    if fs:
        out = [c for c in out if c.fs_type == fs]
    if baseline is not None:
        out = [c for c in out if c.baseline == baseline]
    if path:
        out = [c for c in out if c.path == path]
    for name, values in (params or {}).items():
        out = [c for c in out if c.param(name) in values]
    if patterns is not None:
        out = [c for c in out if access_pattern(c) in patterns]
    if drivers:
        out = [c for c in out if c.driver in drivers]
    if offered is not None:
        out = [c for c in out if (c.schema.offered is not None) == offered]
    if isolation:
        out = [c for c in out if c.isolation == isolation]
    if plain:
        out = [c for c in out if not c.mount_options]
    if option:
        out = [c for c in out if any(o.split("=")[0] == option for o in c.mount_options)]
    if workload_re:
        pattern = re.compile(workload_re, re.I)
        out = [c for c in out if pattern.search(_workload_text(c))]
    return out


def access_pattern(c: Cell) -> str | None:
    """The access pattern a cell ran (read, randread, ...), where its workload declares one (`MetricSchema.io`)."""
    io = c.schema.io
    return None if io is None or c.param(io.pattern) is None else text(c.workload, io.pattern)


def io_size(c: Cell) -> int | None:
    """The size of one I/O in bytes (the block size), where its workload declares one (`MetricSchema.io`)."""
    io = c.schema.io
    return None if io is None else whole(c.workload, io.size)


def _workload_text(c: Cell) -> str:
    return " ".join(str(x) for x in (c.labels["workload"], c.workload.get("name"), c.workload.get("file")) if x)


def match_key(c: Cell, also: tuple[str, ...] = ()) -> tuple[object, ...]:
    return (device_name(c), c.workload_key, c.load_key) + tuple(_layer(c, a) for a in also)


def _layer(c: Cell, name: str) -> object:
    return {
        "filesystem": c.fs_name,
        "fs_type": c.fs_type,
        "runtime": c.labels["runtime"],
        "path": c.path,
        "containers": c.containers,
    }[name]


def pairs(a: list[Cell], b: list[Cell], also: tuple[str, ...] = ()) -> list[tuple[Cell, Cell, Change]]:
    """Matched (a, b, change of b relative to a)."""
    index: dict[tuple[object, ...], Cell] = {}
    for c in a:
        index.setdefault(match_key(c, also), c)
    out = []
    for c in b:
        base = index.get(match_key(c, also))
        if base is not None and base is not c:
            out.append((base, c, change(summary_of(base), summary_of(c))))
    return out


def limits_of(c: Cell) -> JsonObject:
    """The limits a cell ran with; a preset (003 Table 2) counts as the limits it sets."""
    lim = dict(c.limits)
    preset = lim.pop("preset", None)
    lim.pop("share", None)
    out: JsonObject = {k: v for k, v in lim.items() if v is not None}
    for key in PRESET_LIMITS.get(str(preset or "none"), ()):
        out.setdefault(key, preset)
    return out


def device_name(c: Cell) -> str:
    """The name of the device a cell ran on (the spec's, as resolved)."""
    return c.device.name


def same_but_limits(c: Cell) -> tuple[object, ...]:
    """What a cell ran apart from its limits: the key of the run without them that it is compared with."""
    ld = tuple(kv for kv in c.load_key if kv[0] != "limits")
    return (device_name(c), c.labels["filesystem"], c.labels["runtime"], c.path, c.workload_key, ld)


def by_context(cells: list[Cell], also: tuple[str, ...] = ()) -> dict[tuple[object, ...], list[Cell]]:
    """Cells grouped by what they ran (workload, load, device, and `also`)."""
    groups: dict[tuple[object, ...], list[Cell]] = {}
    for c in cells:
        groups.setdefault(match_key(c, also), []).append(c)
    return groups


def short(c: Cell) -> str:
    return c.name


def fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if abs(v) >= 100:
        s = f"{v:,.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.2f}"
    return f"{s} {unit}".strip()


def at_highest_load(cells: list[Cell]) -> list[Cell]:
    """Per stack and workload, the single-container cells at the highest load measured ("unless otherwise
    indicated ... high load (32 jobs, 32 queue depth configured within the fio tool)", study 003 section 5)."""
    cells = [c for c in cells if c.containers == 1]
    top: dict[tuple[object, ...], int] = {}

    def key(c: Cell) -> tuple[object, ...]:
        return (c.stack, c.tag, c.workload_key)

    for c in cells:
        top[key(c)] = max(top.get(key(c), 0), c.outstanding)
    return [c for c in cells if c.outstanding == top[key(c)]]


def within(ch: Change, tol: float) -> bool:
    """|change| <= tol, or not distinguishable from it: the 95% interval reaches into [-tol, +tol]."""
    if abs(ch.rel) <= tol:
        return True
    return ch.rel_low is not None and ch.rel_high is not None and ch.rel_low <= tol and ch.rel_high >= -tol
