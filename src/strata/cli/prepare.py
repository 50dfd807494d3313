"""strata prepare SPEC...: build and cache what these experiments need, before any run does (no registry).

A run builds what is missing on first use; `strata prepare` builds it all beforehand and says, for
each item, its cache key, whether the cache held it and how long it took (scripts/prepare does it for
the examples and the integration tests, so that no test pays for a build). The items come from the
plugins: a workload or runtime that declares `Prebuilds` (ycsb's jars, the VM guest, the Kubernetes
test bed), the image of each workload a container runtime runs, and the agent image of a spec with
hosts. Only the trials the plan keeps count, so an excluded stack builds nothing.
"""

from __future__ import annotations

import argparse
import threading
import time
from functools import partial

from strata.core.errors import StrataError
from strata.core.instances import Build, ImageBuilder, Prebuilds
from strata.core.params import Layer
from strata.experiment.expand import expand
from strata.experiment.load import load_spec
from strata.experiment.model import Experiment

NAME = "prepare"
HELP = "build the images, VM guest, Kubernetes binaries and jars these specs need, now instead of on first use"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="+", metavar="SPEC", help="the experiments whose builds to make (YAML specs)")
    p.add_argument("--check", action="store_true", help="build nothing: say what is cached, exit 1 if anything is not")


def main(args: argparse.Namespace) -> int:
    items = merged([builds(*load_spec(spec)) for spec in args.specs])
    states: list[str] = []
    # what builds from sources of its own (the Kubernetes binaries: minutes of Go) goes on in a thread beside
    # the rest, which mostly waits on a mirror or Maven Central: the two overlap on the machine's cores
    apart = [b for b in items if b.apart and not args.check]

    def build_apart() -> None:
        for b in apart:
            states.append(_one(b, args.check, states))

    beside = threading.Thread(target=build_apart)
    beside.start()
    for b in items:
        if b not in apart:
            states.append(_one(b, args.check, states))
    beside.join()
    counts = ", ".join(
        f"{states.count(s)} {s}" for s in ("built", "cached", "missing", "unchecked", "failed") if s in states
    )
    print(f"prepare: {len(items)} items ({counts or 'nothing to build'})")
    if "failed" in states:
        return 1
    if args.check and ("missing" in states or "unchecked" in states):
        print("prepare: build them with `strata prepare` (scripts/prepare)")
        return 1
    return 0


def _one(b: Build, check: bool, before: list[str]) -> str:
    """Build `b` unless cached (only look, with `check`); say its state, time and key; return the state."""
    t0 = time.monotonic()
    if check and "missing" in before and b.image:
        # an image's spec may need what is missing (jars it holds): checking it would build them
        print(f"{b.name}: not checked (it may be built from what is missing above)", flush=True)
        return "unchecked"
    try:
        state = "cached" if b.cached() else "missing" if check else _made(b)
    except StrataError as e:
        print(f"{b.name}: FAILED after {time.monotonic() - t0:.1f} s: {e.message()}", flush=True)
        return "failed"
    print(f"{b.name}: {state} in {time.monotonic() - t0:.1f} s (cache key {_key(b)})", flush=True)
    return state


def _made(b: Build) -> str:
    b.make()
    return "built"


def _key(b: Build) -> str:
    try:
        return b.key()
    except StrataError as e:  # a key that needs a build first (an image of jars not yet assembled)
        return f"unknown: {e.problem}"


# ---- what to build ----


def builds(exp: Experiment, workloads: list[Layer]) -> list[Build]:
    """Every build the experiment's trials need, each once (by name): what others are built from first
    (a workload's own builds, then the runtimes'), then the images, then the hosts' agent image."""
    trials, _ = expand(exp, workloads)
    first: dict[str, Build] = {}
    images: dict[str, Build] = {}
    for t in trials:
        wl, rt = t.workload_plugin, t.runtime_plugin
        for plugin, params in ((wl, t.workload), (rt, t.runtime)):
            if isinstance(plugin, Prebuilds):
                for b in plugin.builds(params):
                    first.setdefault(b.name, b)
        if isinstance(rt, ImageBuilder):
            b = rt.image_build(wl.name, partial(wl.image, t.workload))  # called late: an image of jars needs them
            images.setdefault(b.name, b)
    out = [*first.values(), *images.values()]
    if exp.hosts:
        out.append(_agent_build(exp))
    return out


def _agent_build(exp: Experiment) -> Build:
    from strata.hosts.agentimage import for_experiment, workload_types
    from strata.hosts.deploy import tools_image
    from strata.stack.runtimes.docker.image import image_build

    return image_build(f"agent ({', '.join(workload_types(exp))})", lambda: for_experiment(tools_image(), exp))


def merged(lists: list[list[Build]]) -> list[Build]:
    """The builds of several experiments, each once, in the order first met (what others need first)."""
    seen: dict[str, Build] = {}
    for items in lists:
        for b in items:
            seen.setdefault(b.name, b)
    return sorted(seen.values(), key=lambda b: b.image)  # images are built from the rest
