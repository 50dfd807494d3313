"""strata show RESULTS: a terminal table of results with their validity flags."""

from __future__ import annotations

from strata.cli.export import load_results_dir
from strata.errors import FAILURE_CATEGORIES
from strata.export import flatten

NAME = "show"
HELP = "print stored results as a table, with validity flags"


def add_arguments(p):
    p.add_argument("results", help="a results directory")


def _num(v, scale=1.0, fmt="{:.0f}"):
    return "-" if v is None else fmt.format(v / scale)


def table_text(results: list[dict]) -> str:
    head = ("stack", "workload", "load", "rep", "status", "IOPS", "MiB/s", "lat mean us", "lat p99 us", "flags")
    rows = []
    for r in sorted(
        results,
        key=lambda r: (r.get("stack", ""), r["labels"]["workload"], r["labels"]["load"], r["labels"]["repetition"]),
    ):
        f = flatten(r)
        d = "read" if (f["read_iops"] or 0) >= (f["write_iops"] or 0) else "write"
        flags = []
        if f["cache_suspect"]:
            flags.append("CACHE")
        elif ((r.get("flags") or {}).get("cache") or {}).get("expected"):
            flags.append("cached(expected)")
        if f["sync_suspect"]:
            flags.append("SKEW")
        if f["failed_category"]:
            flags.append(f["failed_category"])
        rows.append(
            (
                f["stack"],
                f["workload"],
                f["load"],
                str(f["repetition"]),
                f["status"],
                _num(f["iops"] if f["iops"] is not None else f["ops_per_s"]),
                _num(f["bw_bytes"], 2**20, "{:.1f}") if f["bw_bytes"] is not None else _num(f["mb_per_s"], 1, "{:.1f}"),
                _num(f[f"{d}_lat_mean_ns"], 1000, "{:.1f}"),
                _num(f[f"{d}_lat_p99_ns"], 1000, "{:.1f}"),
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
    seen = sorted({((r.get("flags") or {}).get("failed") or {}).get("category") for r in results} - {None})
    if not seen:
        return []
    return ["failure categories:"] + [
        f"  {c}: {FAILURE_CATEGORIES[c][0]}; {FAILURE_CATEGORIES[c][1]}" if c in FAILURE_CATEGORIES else f"  {c}"
        for c in seen
    ]


def main(args) -> int:
    print(table_text(load_results_dir(args.results)))
    return 0
