"""Validity: every judgement of whether a number measures storage, in one package.

A trial stores its evidence (the bytes the workload moved and each disk
below it moved, the instances' I/O windows, the per-second series); this
package judges it, at the end of the trial and again in the report once
repetitions exist, and nowhere else. Every threshold of a flag lives here,
beside its judgement, and so do the words the report uses for it:

- cache (disks.py): for direct I/O, a disk below the workload moved far fewer
  bytes than the workload says it moved: a cache answered (the studies'
  loop-lvm anomaly; fuse-overlayfs here). Buffered I/O and tmpfs are
  *expected* to include the cache, and are marked so, not flagged.
- above_raw (raw.py): the result beats the raw device it sits on. With byte
  evidence that the device moved the bytes, that is not proof of a cache: the
  result is `unconfirmed` (a suspect outlier, or a disturbed raw baseline)
  until repetitions of both decide, by the interval of their ratio.
- sync (windows.py): the instances' measured I/O windows, from the workloads'
  own output, must overlap for most of their duration.
- steady (series.py, snia.py): the tail of the headline's per-second series
  (SNIA PTS), without the partial last second; in a repeated design, a drift.
- spread (repetitions.py): the coefficient of variation of repetitions.
- emulated (emulation.py): the runtime ran the instances under CPU emulation
  (a VM under TCG).
- flush (flushes.py): the syncs the workload asked for, against the flushes each
  layer below saw: a stack that keeps them issues at least syncs / streams.
- absorbed (absorbed.py): the workload's O_DIRECT writes, against the writes the
  device under test took: a page cache or a journal that took them gives fewer,
  or merged ones.
- failed (failure.py): no measurement, with the failure's category
  (errors.FAILURE_CATEGORIES).

`judge_trial` (trial.py) judges a trial's flags from its `TrialEvidence`
(evidence.py). Each judgement is a typed value (`Judgement`, `Steady`,
`Emulated`, `Failure`: strata/results/flags/, which declares each flag and
reads them back from stored results); warnings are `Warning(flag, message)`.
The headline value of a result is `headline()`.
"""

from strata.results.validity.disks import (
    MIN_CHECKED_BYTES,
    MIN_DEVICE_SHARE,
    bytes_moved,
    cache,
    cache_across_hosts,
    cache_below,
    layer_share,
    min_share,
    shows_cache,
)
from strata.results.validity.emulation import emulated, emulated_across_hosts
from strata.results.validity.evidence import MovedBytes, TrialEvidence, headline
from strata.results.validity.failure import FAILURE_STDERR_CHARS, failed
from strata.results.validity.raw import (
    ABOVE_RAW_TOLERANCE,
    MIN_ABOVE,
    above_raw,
    above_raw_repeated,
    is_baseline_runtime,
    is_raw_baseline,
    raw_baseline_key,
)
from strata.results.validity.repetitions import MAX_CV, spread
from strata.results.validity.series import (
    STEADY_WINDOW_S,
    full_seconds,
    judge_design,
    repeated,
    series_stats,
    steady,
    with_basis,
)
from strata.results.validity.trial import JUDGES, Warning, judge_trial, warnings_of
from strata.results.validity.windows import MAX_SKEW_SHARE, MIN_OVERLAP, sync

__all__ = [
    "ABOVE_RAW_TOLERANCE",
    "FAILURE_STDERR_CHARS",
    "JUDGES",
    "MAX_CV",
    "MAX_SKEW_SHARE",
    "MIN_ABOVE",
    "MIN_CHECKED_BYTES",
    "MIN_DEVICE_SHARE",
    "MIN_OVERLAP",
    "STEADY_WINDOW_S",
    "MovedBytes",
    "TrialEvidence",
    "Warning",
    "above_raw",
    "above_raw_repeated",
    "bytes_moved",
    "cache",
    "cache_across_hosts",
    "cache_below",
    "emulated",
    "emulated_across_hosts",
    "failed",
    "full_seconds",
    "headline",
    "is_baseline_runtime",
    "is_raw_baseline",
    "judge_design",
    "judge_trial",
    "layer_share",
    "min_share",
    "raw_baseline_key",
    "repeated",
    "series_stats",
    "shows_cache",
    "spread",
    "steady",
    "sync",
    "warnings_of",
    "with_basis",
]
