"""strata run SPEC: build, run, store; resumable."""

from __future__ import annotations

import argparse
import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from strata.cli.unsupported import record_unsupported
from strata.cli.validate import add_part_arguments, print_plan
from strata.core.errors import StrataError
from strata.experiment.load import load_spec
from strata.experiment.plan import resolve
from strata.experiment.scale import SCALES, check_scale
from strata.run.runner import run_experiment, run_host_facts
from strata.stack.journal import Journal

if TYPE_CHECKING:
    from strata.experiment.model import Experiment
    from strata.hosts.executor import HostTrials

NAME = "run"
HELP = "build every stack of a spec, run its workloads, store every trial"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", help="a YAML spec, e.g. examples/quick.yaml")
    p.add_argument("-o", "--output", help="results directory (default: results/<experiment name>)")
    p.add_argument("--resume", action="store_true", help="skip trials already stored in the results directory")
    p.add_argument("--yes", action="store_true", help="run a plan of more than 10,000 trials or a week")
    p.add_argument(
        "--scale",
        choices=SCALES,
        default="full",
        help="smoke: every stack, path, workload kind, load and report section of the spec, each trial made cheap "
        "(1 repetition, seconds, small sizes, sweeps cut to their ends): will it run here? (results/<name>-smoke)",
    )
    add_part_arguments(p)


def main(args: argparse.Namespace) -> int:
    exp, workloads = load_spec(args.spec, args.scale, args.set)
    host = run_host_facts(workloads)
    plan = resolve(exp, workloads, host)
    if args.only:
        plan = plan.only(args.only)
    out = Path(args.output or f"results/{exp.name}{'-smoke' if exp.scale == 'smoke' else ''}")
    check_scale(out, exp.scale)
    print_plan(exp, plan)
    large = plan.too_large()
    if large and not args.yes:
        raise StrataError(large, "run fewer configurations or repetitions, or add --yes to run it anyway")
    print(f"results: {out}")
    with _executor(exp) as executor:
        summary = run_experiment(
            exp,
            workloads,
            plan.runnable,
            plan.skipped,
            out,
            resume=args.resume,
            host=host,
            executor=executor,
            invocation={"set": list(args.set), "only": args.only},
        )
    record_unsupported(out, plan, summary.run_id, exp.name, host)
    print(
        f"{summary.ok} ok, {summary.failed} failed, {summary.unsupported + len(plan.unsupported)} unsupported, "
        f"{summary.skipped_stored} already stored"
    )
    _summary_hook(out)
    return summary.exit_code


@contextlib.contextmanager
def _executor(exp: Experiment) -> Iterator[HostTrials | None]:
    """Where the trials run: here (None), or on the experiment's hosts through their agents."""
    if not exp.hosts:
        yield None
        return
    from strata.hosts.deploy import agents
    from strata.hosts.executor import HostTrials

    journal = Journal(f"swarm-{secrets.token_hex(4)}")
    try:
        with agents(exp, journal) as found:
            yield HostTrials(found, lost_after_s=exp.swarm.lost_after_s)
    finally:
        journal.close()


def _summary_hook(out: Path) -> None:
    """The report's terminal summary, when the report package is present."""
    try:
        from strata.report.terminal import summary_text
    except ImportError:
        from strata.cli.show import table_text
        from strata.results.store import load_results

        print(table_text(load_results(out)))
        return
    print(summary_text(out))
