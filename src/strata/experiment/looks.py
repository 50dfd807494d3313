"""When `repetitions: auto` looks at its results: planned with the experiment and stored in its design (so
that the analysis of stored results reads the looks the run took), judged by analysis/sequential.py."""

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
