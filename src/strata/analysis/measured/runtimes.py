"""Native against containers against VMs: which cells the report and the findings compare.

Study 001 runs the same work natively, in containers and in VMs. Each single-instance cell
of a container or VM runtime is matched with the native cell on the same device, file system,
workload and load (natively the mount point, or the device itself on `raw`). Cells measured
under emulation (a VM under TCG) are never matched: their numbers are the emulator's speed.
"""

from __future__ import annotations

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import pairs


def native_pairs(cells: list[Cell]) -> list[tuple[Cell, Cell]]:
    """(native, other) for every container or VM cell with one instance and a native twin."""
    natives = [c for c in cells if c.baseline and c.path in ("bind", "device") and not c.emulated]
    others = [
        c for c in cells if c.isolation in ("container", "vm") and c.containers == 1 and c.values and not c.emulated
    ]
    return [(a, b) for a, b, _ in pairs([c for c in natives if c.values], others, also=("filesystem",))]
