"""Looks and their error levels: intervals that stay valid when `repetitions: auto` stops early.

`repetitions: auto` looks at its intervals at a few planned numbers of repetitions (`planned_looks`: 3, 6
and 10 for 3..10, each about twice the last), not after every round: every look costs width (at 3, 5, 7
and 10, bench/decisions_sim.py measured 2 points fewer decisions and 10% wider supported margins for 9%
less machine time). The
error rate of each comparison is spent over the looks by the error-spending method of Lan & DeMets
(*Discrete sequential boundaries for clinical trials*, Biometrika 70, 1983) with the Pocock-type spending
function alpha(t) = alpha ln(1 + (e - 1) t) of Lan & DeMets (also Kim & DeMets 1987), t the share of
`max_repetitions` reached. The boundary of each look is the one that makes the probability of first crossing
at that look equal to the increment of alpha(t), given the looks before (the canonical joint distribution of
a sequence of z statistics, Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical
Trials*, 2000, ch. 3, computed by the recursive numerical integration of Armitage, McPherson & Rowe,
JRSS A 132, 1969). Each boundary is then used as a nominal two-sided level with Student's t at the look's
degrees of freedom (the significance-level approach to group sequential t-tests, Jennison & Turnbull 2000,
section 3.8; bench/decisions_sim.py measures what it gives at 3 to 10 repetitions).

A look that was not planned (the budget ended the run between two planned looks, or a run was cut short)
is a final look: it spends all the alpha left. The looks before it keep their levels.

Unlike the union bound over every round that strata used before (results stored with a `design` without
`looks`, read as they were run: `Design.spending == "bonferroni"`), the spending uses the correlation of
the looks (they share their first trials), so the same error buys narrower intervals.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from strata.analysis.decisions.stats import norm_quantile

POCOCK, BONFERRONI = "pocock", "bonferroni"
_GRID = 301  # points of the numerical integration over the continuation region


def spent(t: float, alpha: float) -> float:
    """The Pocock-type spending function: the error spent once a share t of the information is reached."""
    return alpha * math.log(1 + (math.e - 1) * min(max(t, 0.0), 1.0))


def levels(fractions: tuple[float, ...], alpha: float, final: bool = False, sides: int = 1) -> tuple[float, ...]:
    """The nominal level of each look at these information fractions (increasing, in (0, 1]), so that the
    chance of any look's interval missing is `alpha` spent by `spent`; with `final`, the last look spends all
    that is left (an unplanned last look). One-sided (the comparisons with the best, analysis/decisions/groups.py: the
    boundary is crossed on one side only) or two-sided (a configuration's own interval, `sides=2`)."""
    return _levels(tuple(round(f, 6) for f in fractions), round(alpha, 12), final, sides)


@functools.lru_cache(maxsize=4096)
def _levels(fractions: tuple[float, ...], alpha: float, final: bool, sides: int) -> tuple[float, ...]:
    out: list[float] = []
    dens: np.ndarray | None = None  # sub-density of the score S_k on the continuation region, on `grid`
    grid = np.zeros(0)
    prev_info, prev_spent = 0.0, 0.0
    for k, info in enumerate(fractions):
        target = alpha if final and k == len(fractions) - 1 else spent(info, alpha)
        step = max(target - prev_spent, 0.0)
        if dens is None:  # the first look: S_1 ~ N(0, info)
            b = norm_quantile(1 - step / sides) * math.sqrt(info) if step > 0 else math.inf
            grid = _points(b, info, sides)
            dens = np.exp(-(grid**2) / (2 * info)) / math.sqrt(2 * math.pi * info)
        else:
            delta = info - prev_info
            if delta <= 0:  # no new information: the boundary cannot move
                out.append(out[-1])
                continue
            w = _weights(grid)
            b = _solve(functools.partial(_crossing, grid=grid, mass=dens * w, delta=delta, sides=sides), step)
            new = _points(b, info, sides)
            kern = np.exp(-((new[:, None] - grid[None, :]) ** 2) / (2 * delta)) / math.sqrt(2 * math.pi * delta)
            dens = kern @ (dens * w)
            grid = new
        c = b / math.sqrt(info)
        out.append(math.erfc(c / math.sqrt(2)) * sides / 2 if math.isfinite(c) else 0.0)
        prev_info, prev_spent = info, target
    return tuple(out)


def _points(b: float, info: float, sides: int = 2) -> np.ndarray:
    """The continuation region's grid: (-b, b), or (-inf, b) one-sided; beyond 9 sd the density is nothing."""
    top = min(b, 9 * math.sqrt(info))
    return np.linspace(-top if sides == 2 else -9 * math.sqrt(info), top, _GRID)


def _weights(grid: np.ndarray) -> np.ndarray:
    """Simpson's weights on an odd number of equally spaced points."""
    h = grid[1] - grid[0]
    w = np.ones(len(grid))
    w[1:-1:2], w[2:-1:2] = 4, 2
    weights: np.ndarray = w * h / 3
    return weights


def _crossing(b: float, grid: np.ndarray, mass: np.ndarray, delta: float, sides: int = 2) -> float:
    """P(S_{k+1} >= b, or |S_{k+1}| >= b two-sided, and no earlier crossing), S_{k+1} = S_k + N(0, delta),
    S_k's sub-density as `mass`."""
    s = math.sqrt(2 * delta)
    tails = 0.5 * np.array(
        [math.erfc((b - g) / s) + (math.erfc((b + g) / s) if sides == 2 else 0.0) for g in grid.tolist()]
    )
    return float(np.dot(mass, tails))


def _solve(f: Callable[[float], float], target: float) -> float:
    """The b at which the decreasing f(b) equals target (bisection)."""
    if target <= 0:
        return math.inf
    lo, hi = 0.0, 1.0
    while f(hi) > target:
        hi *= 2
        if hi > 1e3:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
