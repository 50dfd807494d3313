"""strata show RESULTS: a terminal table of results with their validity flags.

Its measurement columns are those the registered workloads declare for it (`Show` in strata/core/metrics.py),
then the device under test's write amplification (WA, strata/results/writes.py), its flags' marks and legend
those each flag declares (`Declared.mark`, strata/results/flags/declared.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from strata.cli.export import load_results_dir
from strata.core.errors import FAILURE_CATEGORIES
from strata.core.metrics import MetricSchema
from strata.results import writes
from strata.results.export import columns, flatten
from strata.results.flags import DECLARED, Flags

NAME = "show"
HELP = "print stored results as a table, with validity flags"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="a results directory")


def _num(v: float | None, scale: float, digits: int) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def headings(schemas: list[MetricSchema]) -> list[str]:
    """The measurement columns: every heading a registered workload prints its fields under, in order."""
    return list(dict.fromkeys(h for s in schemas for m in s.fields for h, _ in m.shown()))


def shown(r: dict[str, Any], schema: MetricSchema) -> dict[str, str]:
    """{heading: text} of a result's fields, as its workload declares them; latencies of the direction
    that did the most operations."""
    d, out = schema.direction(r), {}
    for m in schema.fields:
        if m.show is None:
            continue
        for heading, stat in m.shown():
            v = m.value(r, d, stat)
            if v is not None and heading not in out:
                out[heading] = _num(v, m.show.scale, m.show.digits)
    return out


def table_text(results: list[dict[str, Any]]) -> str:
    from strata.workloads import declared, metrics_of

    measured = headings(declared())
    head = ("stack", "workload", "load", "rep", "status", *measured, "WA", "flags")
    cols = columns()
    rows = []
    for r in sorted(
        results,
        key=lambda r: (r.get("stack", ""), r["labels"]["workload"], r["labels"]["load"], r["labels"]["repetition"]),
    ):
        f = flatten(r, cols)
        flags = marks(r)
        values = shown(r, metrics_of(((r.get("trial") or {}).get("workload") or {}).get("type", "")))
        rows.append(
            (
                f["stack"],
                f["workload"],
                f["load"],
                str(f["repetition"]),
                f["status"],
                *(values.get(h, "-") for h in measured),
                _num(writes.device(r), 1, 2),
                " ".join(flags),
            )
        )
    if not rows:
        return "no stored results"
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(row: Sequence[object]) -> str:
        return "  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip()

    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    notes = [w for r in results for w in r.get("warnings", [])]
    if any(writes.device(r) is not None for r in results):
        out += ["", WA_LEGEND]
    if any(r["status"] != "ok" for r in results) or notes:
        out.append("")
        out.append("flags: " + legend())
    out += _legend(results)
    return "\n".join(out)


WA_LEGEND = "WA = write amplification: bytes the device under test wrote per byte the workload wrote"


def marks(r: dict[str, Any]) -> list[str]:
    """A result's flags as each flag's declaration marks them (CACHE, SKEW, a failure's category)."""
    flags, out = Flags.of(r), []
    for d in DECLARED.values():
        if d.mark is not None and (v := flags.get(d.flag)) is not None and (m := d.mark(d, v)):
            out.append(m)
    return out


def legend() -> str:
    """What each flag's mark means (a failure's category has its own legend: `_legend`)."""
    return "; ".join(
        f"{d.word} = {d.meaning}" + (", not device performance" if d.apart else "")
        for d in DECLARED.values()
        if d.mark is not None and d.meaning
    )


def _legend(results: list[dict[str, Any]]) -> list[str]:
    """What each failure category in the table means and what to do about it."""
    seen = sorted({f.category for r in results if (f := Flags.of(r).failed) and f.category})
    if not seen:
        return []
    return ["failure categories:"] + [
        f"  {c}: {FAILURE_CATEGORIES[c][0]}; {FAILURE_CATEGORIES[c][1]}" if c in FAILURE_CATEGORIES else f"  {c}"
        for c in seen
    ]


def main(args: argparse.Namespace) -> int:
    print(table_text(load_results_dir(args.results)))
    return 0
