"""strata show RESULTS: a terminal table of results with their validity flags.

Its measurement columns are those the registered workloads declare for it (`Show` in strata/core/metrics.py).
"""

from __future__ import annotations

from strata.cli.export import load_results_dir
from strata.core.errors import FAILURE_CATEGORIES
from strata.core.metrics import MetricSchema
from strata.results.export import columns, flatten
from strata.results.flags import Flags

NAME = "show"
HELP = "print stored results as a table, with validity flags"


def add_arguments(p):
    p.add_argument("results", help="a results directory")


def _num(v, scale: float, digits: int) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def headings(schemas: list[MetricSchema]) -> list[str]:
    """The measurement columns: every heading a registered workload prints its fields under, in order."""
    return list(dict.fromkeys(h for s in schemas for m in s.fields for h, _ in m.shown()))


def shown(r: dict, schema: MetricSchema) -> dict[str, str]:
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


def table_text(results: list[dict]) -> str:
    from strata.workloads import declared, metrics_of

    measured = headings(declared())
    head = ("stack", "workload", "load", "rep", "status", *measured, "flags")
    cols = columns()
    rows = []
    for r in sorted(
        results,
        key=lambda r: (r.get("stack", ""), r["labels"]["workload"], r["labels"]["load"], r["labels"]["repetition"]),
    ):
        f = flatten(r, cols)
        flags = []
        if f["cache_suspect"]:
            flags.append("CACHE")
        elif (cache := Flags.of(r).cache) and cache.expected:
            flags.append("cached(expected)")
        if f["sync_suspect"]:
            flags.append("SKEW")
        if f["failed_category"]:
            flags.append(f["failed_category"])
        values = shown(r, metrics_of(((r.get("trial") or {}).get("workload") or {}).get("type", "")))
        rows.append(
            (
                f["stack"],
                f["workload"],
                f["load"],
                str(f["repetition"]),
                f["status"],
                *(values.get(h, "-") for h in measured),
                " ".join(flags),
            )
        )
    if not rows:
        return "no stored results"
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(row):
        return "  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip()

    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    notes = [w for r in results for w in r.get("warnings", [])]
    if any(r["status"] != "ok" for r in results) or notes:
        out.append("")
        out.append("flags: CACHE = a cache answered, not device performance; SKEW = instances did not run together")
    out += _legend(results)
    return "\n".join(out)


def _legend(results: list[dict]) -> list[str]:
    """What each failure category in the table means and what to do about it."""
    seen = sorted({f.category for r in results if (f := Flags.of(r).failed) and f.category})
    if not seen:
        return []
    return ["failure categories:"] + [
        f"  {c}: {FAILURE_CATEGORIES[c][0]}; {FAILURE_CATEGORIES[c][1]}" if c in FAILURE_CATEGORIES else f"  {c}"
        for c in seen
    ]


def main(args) -> int:
    print(table_text(load_results_dir(args.results)))
    return 0
