"""strata validate SPEC: the plan, without side effects."""

from __future__ import annotations

import argparse
from collections import Counter

from strata.core.host import host_facts
from strata.experiment.expand import BASELINE_ROUNDS
from strata.experiment.load import load_spec
from strata.experiment.model import Experiment
from strata.experiment.plan import Plan, resolve
from strata.run.progress import fmt_s
from strata.run.repeat import Repetitions

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
        planned = Repetitions(exp, plan.runnable).looks
        looks = ", ".join(map(str, planned))
        paid = " (what the budget pays for at the estimated trial time)" if planned[-1] < exp.max_repetitions else ""
        print(
            f"repetitions: auto, {exp.min_repetitions} to {exp.max_repetitions} per configuration, looking at {looks}"
            f"{paid}: each stops once decided against its group's best (margin {exp.margin:.0%}) or unlikely to be "
            f"decided by {planned[-1]}; one compared with none once its interval is within {exp.precision:.0%}; the "
            f"raw baselines in the first {BASELINE_ROUNDS} rounds"
            + (f"; no new round after {fmt_s(exp.budget)} of trials (set-up not counted)" if exp.budget else "")
        )
        print(
            f"estimated time: {fmt_s(plan.estimate_s())} for the first {exp.min_repetitions} rounds, up to "
            f"{fmt_s(plan.estimate_s() * planned[-1] / exp.min_repetitions)}"
        )
    else:
        print(f"estimated time: {fmt_s(plan.estimate_s())}")
    print_order(exp, plan)
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


def print_order(exp: Experiment, plan: Plan) -> None:
    """The random order within each planned round: its seed, and the stacks of each round in the order they run
    (each stack's trials together; `-v` lists every trial in run order)."""
    print(f"order within each round: random, seed {exp.order_seed}{'' if exp.seed is not None else ' (from the name)'}")
    rounds: dict[tuple[str, int], list[str]] = {}
    for t in plan.trials:
        stacks = rounds.setdefault((t.device.name, t.repetition), [])
        name = "/".join(t.stack_key)
        if not stacks or stacks[-1] != name:
            stacks.append(name)
    for (device, rep), stacks in rounds.items():
        where = f"{device} " if len(exp.devices) > 1 else ""
        print(f"  {where}round {rep}: {', '.join(stacks)}")


def main(args: argparse.Namespace) -> int:
    exp, workloads = load_spec(args.spec, args.scale)
    plan = resolve(exp, workloads, host_facts())
    print_plan(exp, plan, args.verbose)
    return 0
