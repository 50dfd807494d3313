"""The spread flag: how much the repetitions of one configuration vary (their coefficient of variation).

Judged across trials when stored results become cells (analysis/cells/across.py); analysis/advice/hygiene.py
words the configurations it warns of.
"""

from __future__ import annotations

from strata.results.flags import Flag, Judgement, Spread

# Repetitions that vary by more than this (coefficient of variation) are too noisy to rank stacks by.
MAX_CV = 0.10


def spread(cv: float | None) -> Spread:
    bad = cv is not None and cv > MAX_CV
    return Judgement(
        Flag.SPREAD,
        bad,
        f"repetitions vary by {cv:.0%} (coefficient of variation > {MAX_CV:.0%})" if bad else "",
        extra={"cv": cv},
    )
