"""Remote against direct-attached storage: which cells the report and the findings compare.

Study 003 (section 5.4, Figure 4) runs every storage configuration twice, on a local NVMe SSD
and on the same kind of SSD over the fabric. A remote cell is matched with the local cell that
ran everything else the same (file system, runtime, path, workload, load); a local device of the
same type as the remote's backing store (a file, like a loop image) is preferred when several match.
"""

from __future__ import annotations

from strata.analysis.cells.cells import Cell


def is_remote(c: Cell) -> bool:
    return c.device.type == "remote" or bool(c.device.get("remote"))


def same_but_device(c: Cell) -> tuple[object, ...]:
    return (c.labels["filesystem"], c.labels["runtime"], c.path, c.workload_key, c.load_key)


def remote_pairs(cells: list[Cell]) -> list[tuple[Cell, Cell]]:
    """(local, remote) for every remote cell with device numbers whose local twin has them too."""
    local: dict[tuple[object, ...], Cell] = {}
    for c in sorted((c for c in cells if c.values and not is_remote(c)), key=_preference):
        local.setdefault(same_but_device(c), c)
    return [(local[same_but_device(c)], c) for c in cells if c.values and is_remote(c) and same_but_device(c) in local]


def _preference(c: Cell) -> tuple[object, ...]:
    return (c.device.type not in ("loop", "block"), c.labels["device"])
