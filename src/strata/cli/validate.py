"""strata validate SPEC: the plan, without side effects."""

from __future__ import annotations

import argparse
from collections import Counter

from strata.core.host import host_facts
from strata.experiment.load import load_spec
from strata.experiment.looks import planned_looks
from strata.experiment.model import Experiment
from strata.experiment.plan import Plan, resolve
from strata.run.progress import fmt_s

NAME = "validate"
HELP = "check a spec and print the plan: stacks, devices written, trials (no side effects)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", help="a YAML spec, e.g. examples/quick.yaml")
    p.add_argument("-v", "--verbose", action="store_true", help="list every trial")
    p.add_argument("--scale", choices=("full", "smoke"), default="full", help="the plan at this scale (see run)")


def print_plan(exp: Experiment, plan: Plan, verbose: bool = False) -> None:
    print(
        f"experiment {exp.name}: {len(plan.trials)} trials ({len(plan.runnable)} runnable), "
        f"{len(plan.skipped)} impossible combinations skipped"
    )
    print("writes:")
    for w in plan.writes:
        print(f"  {w}")
    stacks = Counter(t.stack_key for t in plan.trials)
    print("stacks (device/filesystem/runtime: trials):")
    for key, n in stacks.items():
        print(f"  {'/'.join(key)}: {n}")
    if exp.auto:
        looks = ", ".join(map(str, planned_looks(exp.min_repetitions, exp.max_repetitions)))
        print(
            f"repetitions: auto, {exp.min_repetitions} to {exp.max_repetitions} per configuration, looking at {looks}: "
            f"each stops once decided against its group's best (margin {exp.margin:.0%}) or unlikely to be decided "
            f"by {exp.max_repetitions}; one compared with none once its interval is within {exp.precision:.0%}"
            + (f"; no new round after {fmt_s(exp.budget)}" if exp.budget else "")
        )
        print(
            f"estimated time: {fmt_s(plan.estimate_s())} for the first {exp.min_repetitions} rounds, up to "
            f"{fmt_s(plan.estimate_s() * exp.max_repetitions / exp.min_repetitions)}"
        )
    else:
        print(f"estimated time: {fmt_s(plan.estimate_s())}")
    reasons = Counter(plan.unsupported.values())
    if reasons:
        print("unsupported on this host:")
        for reason, n in reasons.items():
            print(f"  {n} trial(s): {reason}")
    if plan.skipped:
        print("skipped (impossible):")
        by_reason = Counter(s.reason for s in plan.skipped)
        for reason, n in by_reason.items():
            print(f"  {n}: {reason}")
    if verbose:
        print("trials:")
        for t in plan.trials:
            mark = " (unsupported)" if t.id in plan.unsupported else ""
            print(f"  {t.id} {t.label}{mark}")


def main(args: argparse.Namespace) -> int:
    exp, workloads = load_spec(args.spec, args.scale)
    plan = resolve(exp, workloads, host_facts())
    print_plan(exp, plan, args.verbose)
    return 0
