"""Write amplification in the report: a figure per advice group (a workload at a load on a device), each
stack's bytes written per workload byte at each layer below it, with the table behind it.

The numbers are analysis/advice/amplification.py's (every measured repetition, its 95% interval); the raw
device is drawn too, as the reference (a device that writes what it is given: 1.0).
"""

from __future__ import annotations

from typing import TypedDict

from strata.analysis.advice.amplification import of_cell
from strata.analysis.analyse import Analysis
from strata.analysis.cells.query import by_context
from strata.report.names import figure_id, short_labels, with_shared
from strata.report.parts import Figure, Table

COLUMNS = ["stack", "load", "layer", "disk", "write amplification", "ci_low", "ci_high", "n"]
CAPTION = (
    "Bytes each layer wrote per byte the workload wrote (1.0: what it was given), over the workload's measured "
    "window; mean over repetitions with 95% intervals. What a journal, a copy-on-write tree or a layer's metadata "
    "adds; a layer below the device under test also carries what other tenants of its disk wrote."
)


class LayerBar(TypedDict):
    """One layer's bar of a write amplification figure (report/figures.py): its mean and 95% interval."""

    label: str  # the stack, as short_labels names it
    layer: str
    value: float
    low: float | None
    high: float | None


def layer_name(position: int) -> str:
    return "device under test" if position == 0 else "the disk below" if position == 1 else f"disk {position} below"


def amplification_figures(a: Analysis) -> list[Figure]:
    out = []
    for cells in by_context(a.cells).values():
        per = [(c, layers) for c in cells if (layers := of_cell(c))]
        if not per:
            continue
        c0 = per[0][0]
        name = f"{c0.labels['workload']} at load {c0.labels['load']} on {c0.labels['device']}"
        labels = short_labels([c.stack for c, _ in per])
        rows: list[list[object]] = []
        bars: list[LayerBar] = []
        for c, layers in per:
            for ly in layers:
                s = ly.summary
                rows.append(
                    [c.stack, c.labels["load"], layer_name(ly.position), ly.name, s.mean, s.ci_low, s.ci_high, s.n]
                )
                bars.append(
                    {
                        "label": labels[c.stack],
                        "layer": layer_name(ly.position),
                        "value": s.mean,
                        "low": s.ci_low,
                        "high": s.ci_high,
                    }
                )
        fid = figure_id("amplification", name)
        title = with_shared(f"{name}: write amplification per layer", [c.stack for c, _ in per])
        out.append(Figure(fid, "amplification", title, CAPTION, Table(fid, title, COLUMNS, rows), {"bars": bars}))
    return out
