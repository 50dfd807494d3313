"""Measurement hygiene: warnings that say what to do (docs/style.md, item 10).

Modelled on pyperf's `format_checks` (pyperf/_cli.py) and hyperfine's
`output/warnings.rs`: each check looks at stored evidence and, when it fails,
says what is wrong with the number and what to change to get a good one.
Checks: cache suspected (flags.cache, and results above the raw device),
too few repetitions, high spread, trials longer than the noise rewards (analysis/cells/variance.py), not
steady (SNIA PTS), start skew between containers (flags.sync), failed trials, pooled hosts. Each flag
is judged by validity/, whose thresholds the warnings quote; nothing here judges a flag again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from strata.analysis.cells.cells import Cell
from strata.analysis.cells.query import by_context
from strata.experiment.expand import BASELINE_ROUNDS
from strata.results.flags import DECLARED
from strata.results.result import Result
from strata.results.validity import disks, raw, repetitions, series

MIN_REPETITIONS = 3  # fewer leave a configuration's interval too wide to call a difference
SHOW = 4


@dataclass
class HygieneWarning:
    kind: str
    message: str
    fix: str
    items: list[str] = field(default_factory=list)

    def text(self) -> str:
        shown = ", ".join(self.items[:SHOW])
        more = f" and {len(self.items) - SHOW} more" if len(self.items) > SHOW else ""
        where = f" ({shown}{more})" if self.items else ""
        return f"{self.message}{where}." + (f" What to do: {self.fix}" if self.fix else "")

    @property
    def note(self) -> bool:
        """Said once, nothing to do: what a check did not judge, by the spec's own design."""
        return not self.fix


def check(cells: list[Cell], results: list[Result]) -> list[HygieneWarning]:
    out: list[HygieneWarning] = []
    out.extend(_cache(cells))
    w = _unconfirmed(cells)
    if w:
        out.append(w)
    out.extend(_repetitions(cells))
    for fn in (_spread, _trial_length):
        w = fn(cells)
        if w:
            out.append(w)
    out.extend(_steady(cells))
    out.extend(_events(cells))
    out.extend(_cautions(cells))
    for fn in (_sync, _failed):
        w = fn(cells)
        if w:
            out.append(w)
    out.extend(_declared(cells))
    out.extend(_hosts(results))
    return out


def _declared(cells: list[Cell]) -> list[HygieneWarning]:
    """A flag without a check of its own here is said as its declaration words it: its meaning and its fix
    (`Declared.fix`, strata/results/flags/declared.py)."""
    out = []
    for d in DECLARED.values():
        if not d.fix:
            continue
        items = [f"{c.name} #{r.repetition}" for c in cells for r in c.measured if r.flags.warns(d.flag)]
        if items:
            out.append(HygieneWarning(d.key, f"{len(items)} trial(s) flagged {d.word}: {d.meaning}", d.fix, items))
    return out


def _cache(cells: list[Cell]) -> list[HygieneWarning]:
    cached = [(f"{c.name} #{r.repetition}", r.flags.cache) for c in cells for r in c.cached]
    if not cached:
        return []
    # a database whose data set fits in its servers' memory is flagged by that, whatever its bytes: its fix is a
    # larger data set or a memory limit (the scale it says), not O_DIRECT
    fits = [(name, m) for name, j in cached if j is not None and (m := j.evidence.get("memory") or {}).get("fits")]
    # reads of blocks never written (a sparse file, a loop device over one): holes, not a cache; written first
    holes = [name for name, j in cached if j is not None and j.reason.startswith("the data was never written")]
    by_bytes = len(cached) - len(fits) - len(holes)
    whys, fixes = [], []
    if holes:
        whys.append(f"{len(holes)} read data never written, which reads as zeros without the device")
        fixes.append("write the data first (`precondition: fill`), or let the workload lay out its own files")
    if by_bytes:
        whys.append(disks.rule("their") if not fits else f"{by_bytes} as {disks.rule('their')}")
        fixes.append("measure the device with O_DIRECT on a path that honours it (loop devices with `direct_io: true`)")
        if any(j is not None and j.evidence.get("basis") for _, j in cached):  # a database's bytes, not O_DIRECT
            fixes.append(
                "a workload whose bytes are not O_DIRECT I/O (evidence.basis) needs a data set larger than the "
                "memory, or its writes forced to the device"
            )
    if fits:
        whys.append(
            "their data set fits in the memory their servers can use"
            if not by_bytes
            else f"{len(fits)} as their data set fits in the memory their servers can use"
        )
        fixes += list(dict.fromkeys(str(m["fix"]) for _, m in fits if m.get("fix")))[:2]
    fixes.append("see flags.cache.evidence in the trial's JSON")
    return [
        HygieneWarning(
            "cache",
            f"a cache answered in {len(cached)} trial(s) ({'; '.join(whys)}): they are drawn apart, labeled "
            "cache, never as device performance",
            "; ".join(fixes),
            [name for name, _ in cached],
        )
    ]


def _events(cells: list[Cell]) -> list[HygieneWarning]:
    """Trials an advice group compares that hold different counts of what a workload declares must be equal
    among them (core/metrics.py Events: PostgreSQL's checkpoints inside the measured run): a checkpoint forced
    by WAL volume comes after a fixed amount of work, so within a fixed duration the faster stack pays for
    more of them, and the comparison is not like for like."""
    out = []
    for group in by_context([c for c in cells if c.values and not c.is_raw]).values():
        for ev in group[0].schema.events:
            seen = {c.name: sorted({n for r in c.ok if (n := ev.count(r)) is not None}) for c in group}
            if len({n for counts in seen.values() for n in counts}) > 1:
                items = [f"{name}: {', '.join(map(str, counts))}" for name, counts in seen.items() if counts]
                out.append(
                    HygieneWarning(
                        "events",
                        f"compared trials of {group[0].labels['workload']} saw different numbers of {ev.word}s "
                        "in their measured run: the comparison is not like for like",
                        ev.fix,
                        items,
                    )
                )
    return out


def _cautions(cells: list[Cell]) -> list[HygieneWarning]:
    """What a workload declares of its own parameters that makes a number measure something else than storage
    (core/metrics.py Caution: pgbench's scale below its clients), with the configurations it applies to."""
    found: dict[tuple[str, str, str], list[str]] = {}  # (kind, what is wrong, fix) -> configurations
    for c in cells:
        for caution in c.schema.cautions:
            said = caution.check(c.workload)
            if said is not None:
                found.setdefault((caution.kind, said, caution.fix), []).append(c.name)
    return [HygieneWarning(kind, said, fix, items) for (kind, said, fix), items in found.items()]


def _unconfirmed(cells: list[Cell]) -> HygieneWarning | None:
    """Above the raw device although the device moved the bytes: decided by the intervals where both sides
    have repetitions, else by a single comparison, whose fix depends on why there is no interval: the spec's
    design (one repetition), or trials of a repeated design that failed."""
    by_interval = [c for c in cells if c.above_raw and c.above_raw.evidence.get("low") is not None]
    singly = [c for c in cells if c not in by_interval and (c.above_raw or c.unconfirmed)]
    decided = [f"{c.name} ({c.above_raw.evidence['ratio']:.2f}x raw)" for c in by_interval if c.above_raw]
    single = [
        f"{c.name} ({c.above_raw.evidence['ratio']:.2f}x raw)" if c.above_raw else f"{c.name} #{r.repetition}"
        for c in singly
        for r in (c.unconfirmed[:1] if c.above_raw else c.unconfirmed)
    ]
    if not decided and not single:
        return None
    what, fixes = [], []
    if decided:
        what.append(f"{len(decided)} configuration(s) beat the raw device they sit on beyond the intervals")
        fixes.append(
            "the intervals decided those: measure where no cache sits below the device (in a VM, a disk the "
            "hypervisor does not cache), and rerun the raw device if its run was disturbed"
        )
    if single:
        what.append(f"{len(single)} result(s) beat a single raw-device trial {raw.tolerance_words()}")
        if any(_planned(c) < 2 for c in singly):
            fixes.append(
                "rerun the raw device and these stacks with repetitions (`repetitions: 3` or `auto`, "
                "`strata run SPEC --resume -o RESULTS`): the intervals then decide"
            )
        else:  # a repeated design: the raw device or the stack kept fewer than 2 successful trials
            fixes.append(
                "their design repeats them, but they or their raw device kept fewer than 2 successful trials: fix "
                "what failed and rerun with `strata run SPEC --resume -o RESULTS`: the intervals then decide"
            )
    return HygieneWarning(
        "unconfirmed",
        "; ".join(what) + ", although the device moved the workload's bytes: a cache below the device (the "
        "hypervisor's) or a disturbed raw baseline; drawn apart as unconfirmed, not as device performance",
        "; ".join(fixes),
        decided + single,
    )


def _planned(c: Cell) -> int:
    """The repetitions a configuration's design plans: `auto`'s least (`_auto_plan`), a fixed design's
    `repetitions` (its trials, stored before the design was)."""
    if c.design.first:
        return _auto_plan(c)
    stored = [n for r in c.ok + c.failed + c.unconfirmed if (n := r.repetitions)]
    return max(stored, default=len(c.ok) + len(c.failed) + len(c.unconfirmed))


def _repetitions(cells: list[Cell]) -> list[HygieneWarning]:
    """Too few repetitions for the design the results were taken under (the `design` stored with each trial).
    A fixed design is held to MIN_REPETITIONS; under `repetitions: auto` every configuration runs at least
    `min_repetitions` and the raw baseline BASELINE_ROUNDS on purpose (experiment/expand.py: it is no
    candidate, and two trials give its ratios an interval), so only what has fewer than that plan says so:
    trials that failed, or a run the budget or an interruption ended."""
    fixed = [f"{c.name} (n={c.reps})" for c in cells if not c.design.first and 0 < c.reps < MIN_REPETITIONS]
    auto = [f"{c.name} (n={c.reps} of {n})" for c in cells if c.design.first and 0 < c.reps < (n := _auto_plan(c))]
    why = "their confidence intervals are wide or missing, and differences cannot be called significant"
    out = []
    if fixed:
        out.append(
            HygieneWarning(
                "repetitions",
                f"{len(fixed)} configuration(s) have fewer than {MIN_REPETITIONS} repetitions: {why}",
                f"set `repetitions: {MIN_REPETITIONS}` (or more) in the spec and rerun it with "
                "`strata run SPEC --resume -o RESULTS` (stored trials are kept)",
                fixed,
            )
        )
    if auto:
        out.append(
            HygieneWarning(
                "repetitions",
                f"{len(auto)} configuration(s) have fewer repetitions than `repetitions: auto` plans for them "
                f"({BASELINE_ROUNDS} for a raw baseline, `min_repetitions` for any other configuration): {why}",
                "their other trials failed or were drawn apart (the warnings above say which), or the run ended "
                "early (its `budget`, an interruption): fix what failed (flags.failed in each trial's JSON) and "
                "rerun with `strata run SPEC --resume -o RESULTS`, which keeps the stored trials and runs the "
                "missing ones; raise `budget` if it ended the run",
                auto,
            )
        )
    return out


def _auto_plan(c: Cell) -> int:
    """The repetitions `repetitions: auto` runs a configuration at the least: a raw baseline in its first
    BASELINE_ROUNDS rounds only, any other `min_repetitions` (the design's first look)."""
    return BASELINE_ROUNDS if c.is_raw else c.design.first


def _spread(cells: list[Cell]) -> HygieneWarning | None:
    spread = [c for c in cells if c.spread is not None and c.spread.warns]
    if not spread:
        return None
    quiet = "keep other work off the host and the device while measuring"
    # `repetitions: auto` already adds rounds where they decide something (a raw baseline runs its 2 rounds
    # by design): what a user can change there is how far it may go
    fix = (
        f"{quiet}; `repetitions: auto` adds rounds only where they decide something: raise `max_repetitions` "
        "or `budget` to let it run more"
        if all(c.design.first for c in spread)
        else f"add repetitions (more, shorter trials where the trial-to-trial spread dominates), and {quiet}"
    )
    return HygieneWarning(
        "spread",
        f"{len(spread)} configuration(s) vary by more than {repetitions.MAX_CV:.0%} (coefficient of variation) "
        "between repetitions",
        fix,
        [f"{c.name} (CV {c.summary.cv:.0%})" for c in spread],
    )


def _trial_length(cells: list[Cell]) -> HygieneWarning | None:
    """Kalibera & Jones: spend repetitions where the variance is. When trial means vary far more than
    the seconds within a trial, shorter trials in greater number give a tighter interval in the same time;
    when the seconds vary far more, fewer and longer ones do."""
    from strata.analysis.cells.variance import better_trials, of_cells

    items, best, shorter = [], None, 0

    for name, comp in of_cells([c for c in cells if c.reps >= 2]).items():
        n = max(2, round(comp.trials))
        better = better_trials(comp, n)
        if better:
            items.append(
                f"{name}: between {comp.between_cv:.1%}, within {comp.within_cv:.1%}/s: {better[0]} repetitions of "
                f"{better[1]} s decide sooner than {n} of {comp.seconds:.0f} s"
            )
            shorter += better[1] < comp.seconds
            best = best or better
    if not items or best is None:  # an item is a better design
        return None
    if shorter == len(items):
        return HygieneWarning(
            "trial_length",
            f"trial-to-trial spread dominates in {len(items)} configuration(s): the trial, not the second, is the "
            "unit of noise here, so longer trials do not narrow the intervals",
            f"run shorter trials (`runtime`, e.g. {best[1]} s) with more repetitions, or `repetitions: auto`",
            items,
        )
    return HygieneWarning(
        "trial_length",
        f"the trials' length does not suit their noise in {len(items)} configuration(s): the seconds within a trial "
        "vary far more (or far less) than trials do, so other trial lengths narrow the intervals in the same time",
        "run trials of the length each item gives (`runtime`), with the repetitions it gives",
        items,
    )


def _steady(cells: list[Cell]) -> list[HygieneWarning]:
    """By the trial's basis (validity.with_basis): a single trial must be steady (SNIA) to stand for the
    storage; in a repeated design, whose intervals carry the noise and whose trials the spec may make short
    on purpose, only a drift counts, and what is too short to judge is said once, with nothing to do."""
    found: dict[tuple[str, str], list[str]] = {}
    for c in cells:
        for r, s in c.steady:
            if s is None:
                continue
            item = f"{c.name} #{r.repetition}"
            verdict = "warns" if s.warns else "short" if not s.judged else ""
            if verdict:
                found.setdefault((s.basis or "snia", verdict), []).append(item)
    out = []
    if drifted := found.get(("drift", "warns")):
        out.append(
            HygieneWarning(
                "steady",
                f"{len(drifted)} trial(s) drifted during their measured window ({series.drift_words()}): a warm-up "
                "or a filling cache biases their means",
                "raise `ramp_time` so that the measurement starts after the warm-up, and precondition the device "
                "first; the trials may stay short",
                drifted,
            )
        )
    unsteady, short = found.get(("snia", "warns"), []), found.get(("snia", "short"), [])
    if unsteady:
        out.append(
            HygieneWarning(
                "steady",
                f"{len(unsteady)} trial(s) did not reach steady state ({series.criterion_words()})",
                "run longer or set `until: steady` where the workload has it; precondition the device first"
                + (f"; {len(short)} more trial(s) were too short to judge" if short else ""),
                unsteady,
            )
        )
    elif short:
        out.append(
            HygieneWarning(
                "steady",
                f"{len(short)} trial(s) were too short to judge steady state (fewer than {series.STEADY_WINDOW_S} "
                "per-second samples)",
                f"set `runtime` to {2 * series.STEADY_WINDOW_S} s or more, or `until: steady`",
                short,
            )
        )
    if repeated_short := found.get(("drift", "short")):
        out.append(
            HygieneWarning(
                "steady",
                f"steady state was not judged in {len(repeated_short)} trial(s) shorter than {series.STEADY_WINDOW_S} "
                "whole seconds: the spec made them short, and their repetitions' intervals carry their variation",
                "",
            )
        )
    return out


def _sync(cells: list[Cell]) -> HygieneWarning | None:
    items = []
    for c in cells:
        for r in c.measured:
            s = r.flags.sync
            if s is not None and s.suspect:
                items.append(f"{c.name} #{r.repetition} (skew {s.extra.get('skew_s', 0):.1f} s)")
    if not items:
        return None
    return HygieneWarning(
        "sync",
        f"the containers of {len(items)} trial(s) did not start together: the aggregate mixes periods when not all ran",
        "rerun with fewer containers or a longer runtime",
        items,
    )


def _failed(cells: list[Cell]) -> HygieneWarning | None:
    cats: Counter[str] = Counter()
    items = []
    for c in cells:
        for r in c.failed:
            f = r.flags.failed
            category = f.category if f else None
            cats[str(category or r.status)] += 1  # a str: sorted below
            items.append(f"{c.name} #{r.repetition}: {category}")
    if not items:
        return None
    summary = ", ".join(f"{n} {k}" for k, n in sorted(cats.items()))
    return HygieneWarning(
        "failed",
        f"{len(items)} trial(s) failed ({summary}) and are not in the figures",
        "read flags.failed (message, stderr) in each trial's JSON, fix the cause, then "
        "`strata run SPEC --resume -o RESULTS` reruns only them",
        items,
    )


def _hosts(results: list[Result]) -> list[HygieneWarning]:
    out = []
    hosts = sorted({r.host_facts.hostname for r in results if r.host})
    if len(hosts) > 1:
        out.append(
            HygieneWarning(
                "hosts",
                f"results of {len(hosts)} hosts are pooled in one report",
                "report each host on its own, or compare them with `strata compare A B`",
                hosts,
            )
        )
    notes = sorted({n for r in results if (n := r.host_facts.note)})
    for n in notes:
        out.append(
            HygieneWarning(
                "host", n, "read absolute numbers with care; ratios between stacks on the same host still hold"
            )
        )
    return out
