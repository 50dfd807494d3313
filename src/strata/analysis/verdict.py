"""Outcomes of the findings' checks and the helpers that state them with their numbers.

A check returns an Outcome: held, not held, or not measured, with one line of numbers per
configuration it looked at (analysis/findings.py holds the registry of claims).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.analysis.baseline import ratio_to_raw

HELD, NOT_HELD, NOT_MEASURED = "held", "not held", "not measured"
# The studies, as docs/studies.md numbers them.
S003 = "study 003 (Xu et al. 2017)"
S004 = "study 004 (Ramadan)"
S002 = "study 002 (Xu et al., short version)"
S001 = "study 001 (Shirinbab et al.)"
SMALL_BS = 16 * 1024
RANDOM = ("randread", "randwrite")


@dataclass
class Outcome:
    status: str
    numbers: list = field(default_factory=list)

    @property
    def detail(self) -> str:
        return "; ".join(self.numbers) if self.numbers else "nothing in these results speaks to it"


def verdict(items: list[tuple[bool, str]]) -> Outcome:
    if not items:
        return Outcome(NOT_MEASURED)
    held = all(ok for ok, _ in items)
    return Outcome(HELD if held else NOT_HELD, [t if ok or len(items) == 1 else f"{t} (fails)" for ok, t in items])


def ratios(ctx, cells, test) -> Outcome:
    items = []
    for c in cells:
        r = ratio_to_raw(c, ctx.raw)
        if r is not None:
            ci = f" [{r.low:.2f}, {r.high:.2f}]" if r.low is not None else " (n=1, no interval)"
            items.append((test(r.value), f"{c.name}: {r.value:.2f}x raw{ci}"))
    return verdict(items)


def changes(prs, test, what="") -> Outcome:
    return verdict(
        [
            (
                test(ch),
                f"{b.name} vs {a.labels['filesystem']}/{a.labels['runtime']}/{a.labels['path']}{what}: {ch.text()}",
            )
            for a, b, ch in prs
        ]
    )


def factor(a, b) -> float:
    return b.summary.mean / a.summary.mean if a.summary.mean else float("nan")
