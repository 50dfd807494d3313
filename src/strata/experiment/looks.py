"""When `repetitions: auto` looks at its results: planned before the first trial, from the repetitions the
budget pays for at the trials' estimated time (`budget_looks`), and stored in every result's design (so that
the analysis of stored results reads the looks the run took), judged by analysis/decisions/sequential.py."""

from __future__ import annotations

import math

LOOK_STEP = 2.0  # each planned look at about this many times the repetitions of the last


def planned_looks(first: int, last: int) -> tuple[int, ...]:
    """The repetitions at which `auto` looks: `first`, `last`, and between them a geometric progression of
    step about LOOK_STEP (3..10: 3, 6, 10; 3..6: 3, 6; 3..30: 3, 7, 14, 30; 2..3: 2, 3)."""
    if last <= first:
        return (first,)
    k = max(1, round(math.log(last / first) / math.log(LOOK_STEP)))
    return tuple(sorted({min(last, math.ceil(first * (last / first) ** (i / k) - 1e-9)) for i in range(k + 1)}))


def affordable(first: int, last: int, round_s: list[float], budget_s: float | None) -> int:
    """The most repetitions the budget pays for: rounds are added while their estimated time (round_s[r], the
    trials of round r; set-up not counted, as the budget does not count it) fits in it; never fewer than
    `first`, never more than `last`."""
    if budget_s is None:
        return last
    spent, n = 0.0, 0
    for r in range(last):
        spent += round_s[r] if r < len(round_s) else (round_s[-1] if round_s else 0.0)
        if spent > budget_s:
            break
        n = r + 1
    return min(max(n, first), last)


def budget_looks(first: int, last: int, round_s: list[float], budget_s: float | None) -> tuple[int, ...]:
    """The looks of `repetitions: auto` planned before the first trial: `planned_looks` up to the repetitions
    the budget pays for (a look the budget cannot reach would only cost width: its level is spent at the
    earlier looks for nothing)."""
    return planned_looks(first, affordable(first, last, round_s, budget_s))
