"""strata show RESULTS: a terminal table of results with their validity flags.

Its measurement columns are those the registered workloads declare for it (`Show` in strata/core/metrics.py),
then the device under test's write amplification (WA, strata/results/writes.py), its flags' marks and legend
those each flag declares (`Declared.mark`, strata/results/flags/declared.py).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from strata.analysis.cells.across import judge_results
from strata.cli.export import load_results_dir
from strata.cli.jsonout import add_json_argument, emit
from strata.core.errors import FAILURE_CATEGORIES
from strata.core.jsondoc import JsonObject
from strata.core.metrics import MetricSchema
from strata.results import writes
from strata.results.export import columns, flatten
from strata.results.flags import DECLARED
from strata.results.result import Result, typed
from strata.workloads.server import durability

NAME = "show"
HELP = "print stored results as a table, with validity flags"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="a results directory")
    add_json_argument(p)


def _num(v: float | None, scale: float, digits: int) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def headings(schemas: list[MetricSchema]) -> list[str]:
    """The measurement columns: every heading a registered workload prints its fields under, in order."""
    return list(dict.fromkeys(h for s in schemas for m in s.fields for h, _ in m.shown()))


def values(r: Result, schema: MetricSchema) -> dict[str, float]:
    """{heading: value at the heading's scale} of a result's fields, as its workload declares them; latencies
    of the direction that did the most operations."""
    d, out = schema.direction(r), {}
    for m in schema.fields:
        if m.show is None:
            continue
        for heading, stat in m.shown():
            v = m.value(r, d, stat)
            if v is not None and heading not in out:
                out[heading] = v / m.show.scale
    return out


def _digits() -> dict[str, int]:
    """The digits each heading is printed with (the first workload that declares it)."""
    from strata.workloads import declared

    out: dict[str, int] = {}
    for s in declared():
        for m in s.fields:
            if m.show is not None:
                for heading, _ in m.shown():
                    out.setdefault(heading, m.show.digits)
    return out


def rows(results: list[Result]) -> list[Row]:
    """One row per stored result, in the table's order: what the text and `--json` both show."""
    from strata.workloads import declared, metrics_of

    measured = headings(declared())
    cols = columns()
    out = []
    for r in sorted(
        results,
        key=lambda r: (r.stack, r.labels["workload"], r.labels["load"], r.labels["repetition"]),
    ):
        f = flatten(r, cols)
        schema = metrics_of(r.workload_type)
        failed = r.flags.failed
        labels: Mapping[str, object] = r.labels
        out.append(
            Row(
                r.trial_id,
                str(f["stack"]),
                {k: str(labels.get(k, "")) for k in LABELS},
                r.repetition,
                str(f["status"]),
                {h: v for h, v in values(r, schema).items() if h in measured},
                writes.device(r.writes),
                marks(r),
                durability.shown(r.metrics) or None,
                None if failed is None else {"category": failed.category or None, "message": failed.message},
                [_warning(w) for w in r.warnings],
            )
        )
    return out


LABELS = ("device", "filesystem", "runtime", "path", "workload", "load", "placement")


@dataclass
class Row:
    trial_id: str
    stack: str
    labels: dict[str, str]
    repetition: int
    status: str
    values: dict[str, float]  # heading -> value at the heading's scale (IOPS, MiB/s, us)
    wa: float | None
    flags: list[str]
    durability: str | None  # a database's durability settings in force (workloads/server/durability.py)
    failure: dict[str, str | None] | None
    warnings: list[dict[str, str | None]]


def _warning(w: object) -> dict[str, str | None]:
    """A stored warning: {flag, message} (results before flags had names stored the message only)."""
    if isinstance(w, dict):
        return {"flag": str(w.get("flag") or "") or None, "message": str(w.get("message", ""))}
    return {"flag": None, "message": str(w)}


def table_text(stored: Iterable[Result | JsonObject]) -> str:
    from strata.workloads import declared

    results = typed(stored)
    judge_results(results)  # above the raw device: judged across the stored trials, not stored
    shown = rows(results)
    # the measurement columns some row has a value in: a workload's heading none of these results has is left out
    measured = [h for h in headings(declared()) if any(h in row.values for row in shown)]
    durable = any(row.durability for row in shown)  # a column only where a database said its settings
    head = (
        "stack",
        "workload",
        "load",
        "rep",
        "status",
        *measured,
        "WA",
        "flags",
        *(("durability",) if durable else ()),
    )
    digits = _digits()
    table = [
        (
            row.stack,
            row.labels["workload"],
            row.labels["load"],
            str(row.repetition),
            row.status,
            *(_num(row.values.get(h), 1, digits[h]) for h in measured),
            _num(row.wa, 1, 2),
            " ".join(row.flags),
            *((row.durability or "-",) if durable else ()),
        )
        for row in shown
    ]
    if not table:
        return "no stored results"
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]

    def line(row: Sequence[object]) -> str:
        return "  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip()

    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in table]
    notes = [w for r in results for w in r.warnings]
    legends = ([WA_LEGEND] if any(writes.device(r.writes) is not None for r in results) else []) + (
        [DURABILITY_LEGEND] if durable else []
    )
    out += [""] + legends if legends else []
    if any(r.status != "ok" for r in results) or notes:
        out.append("")
        out.append("flags: " + legend())
    out += _legend(results)
    return "\n".join(out)


def as_json(path: str, results: list[Result]) -> dict[str, object]:
    """`strata show --json`: the table's rows with every value unrounded, and the legends (schema: cli/schemas.py)."""
    from strata.workloads import declared

    seen = sorted({f.category for r in results if (f := r.flags.failed) and f.category})
    return {
        "results": path,
        "columns": headings(declared()),
        "rows": [dataclasses.asdict(row) for row in rows(results)],
        "legend": {
            "flags": legend(),
            "wa": WA_LEGEND,
            "durability": DURABILITY_LEGEND,
            "failure_categories": {
                c: {"meaning": FAILURE_CATEGORIES[c][0], "fix": FAILURE_CATEGORIES[c][1]}
                for c in seen
                if c in FAILURE_CATEGORIES
            },
        },
    }


WA_LEGEND = "WA = write amplification: bytes the device under test wrote per byte the workload wrote"
DURABILITY_LEGEND = (
    "durability = the database's settings that decide when a commit reaches the device, as the server had them; "
    "NOT durable: a commit returned before its log reached the device, so its writes measure memory"
)


def marks(r: Result) -> list[str]:
    """A result's flags as each flag's declaration marks them (CACHE, SKEW, a failure's category)."""
    flags, out = r.flags, []
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


def _legend(results: list[Result]) -> list[str]:
    """What each failure category in the table means and what to do about it."""
    seen = sorted({f.category for r in results if (f := r.flags.failed) and f.category})
    if not seen:
        return []
    return ["failure categories:"] + [
        f"  {c}: {FAILURE_CATEGORIES[c][0]}; {FAILURE_CATEGORIES[c][1]}" if c in FAILURE_CATEGORIES else f"  {c}"
        for c in seen
    ]


def main(args: argparse.Namespace) -> int:
    results = load_results_dir(args.results)
    judge_results(results)  # above the raw device: judged across the stored trials, not stored
    if args.json:
        emit(NAME, as_json(args.results, results))
    else:
        print(table_text(results))
    return 0
