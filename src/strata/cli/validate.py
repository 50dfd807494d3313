"""strata validate SPEC: the plan, without side effects."""

from __future__ import annotations

import argparse
from collections import Counter

from strata.cli.jsonout import add_json_argument, emit
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
    add_part_arguments(p)
    add_json_argument(p)


def add_part_arguments(p: argparse.ArgumentParser) -> None:
    """--set and --only, the same for run and validate."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the spec (repeatable): a dotted path into the file, a YAML value, e.g. "
        "--set devices.0.size=2GiB --set repetitions=3; validated like the file",
    )
    p.add_argument(
        "--only",
        metavar="EXPR",
        help="only the trials whose labels match EXPR: words (globs) joined by and, or, not and parentheses, or "
        "KEY=GLOB for one label (device, filesystem, runtime, path, workload, load, placement), e.g. "
        "'xfs and rr and not docker'; --resume of the whole spec later runs the rest",
    )


def print_plan(exp: Experiment, plan: Plan, verbose: bool = False) -> None:
    print(
        f"experiment {exp.name}: {len(plan.trials)} trials ({len(plan.runnable)} runnable), "
        f"{len(plan.skipped)} impossible combinations skipped"
        + (f"; the part --only {plan.part[0]!r} of {plan.part[1]} trials" if plan.part else "")
    )
    print("writes:")
    for w in plan.writes:
        print(f"  {w}")
    if plan.preconditions:
        print("precondition (once per device built, before its first trial; not counted in the time below):")
        for p in plan.preconditions:
            print(f"  {p}")
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


def plan_json(exp: Experiment, plan: Plan) -> dict[str, object]:
    """`strata validate --json`: the plan the text prints, every trial listed (schema: cli/schemas.py)."""
    repetitions: dict[str, object] = {"mode": "fixed", "count": exp.first_repetitions}
    estimate = plan.estimate_s()
    if exp.auto:
        looks = Repetitions(exp, plan.runnable).looks
        repetitions = {
            "mode": "auto",
            "min": exp.min_repetitions,
            "max": exp.max_repetitions,
            "looks": list(looks),
            "margin": exp.margin,
            "budget_s": exp.budget,
        }
        estimate_max = estimate * looks[-1] / exp.min_repetitions
    else:
        estimate_max = estimate
    stacks = Counter(t.stack_key for t in plan.trials)
    return {
        "experiment": exp.name,
        "scale": exp.scale,
        "part": None if plan.part is None else {"only": plan.part[0], "of_trials": plan.part[1]},
        "trials": [
            {
                "id": t.id,
                "label": t.label,
                "labels": t.names,
                "repetition": t.repetition,
                "unsupported": plan.unsupported.get(t.id),
            }
            for t in plan.trials
        ],  # fmt: skip
        "runnable": len(plan.runnable),
        "writes": plan.writes,
        "preconditions": plan.preconditions,
        "stacks": [{"stack": "/".join(k), "trials": n} for k, n in stacks.items()],
        "repetitions": repetitions,
        "estimate_s": {"first_rounds": estimate, "at_most": estimate_max},
        "order_seed": exp.order_seed,
        "skipped": [{"label": s.label, "reason": s.reason} for s in plan.skipped],
    }


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
    exp, workloads = load_spec(args.spec, args.scale, args.set)
    plan = resolve(exp, workloads, host_facts())
    if args.only:
        plan = plan.only(args.only)
    if args.json:
        emit(NAME, plan_json(exp, plan))
    else:
        print_plan(exp, plan, args.verbose)
    return 0
