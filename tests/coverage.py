"""What the integration tests exercise, as keys derived from strata's registries (docs/development.md "What the
tiers cover").

Every integration test declares the keys its real run exercises (`@covers(...)`, a pytest marker); a test of
the suite (tests/unit/test_suite_layout.py) checks that every key of `universe()` is exercised by a default-tier
test, or by a full-only test that says why it is alone (tests/conftest.py FULL_ONLY), or is named in
`NOT_RUN_HERE` with the reason no test runs it; and that a full-only test `covered` by a default-tier one
exercises no key that one does not. The universe is read from the registries, never typed here, so a new
device, file system, runtime, storage driver, VM share, path, workload or failure category is a key the suite
must place.

Every declaration is checked against what the test ran (tests/integration/conftest.py): the trials it stored
under its tmp_path (`keys_of_trial`), and the events of tests/integration/ledger.py (each `strata` command with
its exit code, each trial run through the library, a kill -9 and the cleanup after it, a bench's exit code:
`keys_of_events`). A key it declares but did not run, or a stored trial's key it does not declare, fails the
test. Only what ran counts: a trial refused as `unsupported` gives `refused:KEY` keys, which cover nothing;
a trial that failed before its instances started counts its lower layers only; a command refused with exit 2
gives `refused:command:NAME`.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The modes of a layer whose values are keys of their own: (layer, plugin) -> the field of its parameters
# whose Literal values they are. Other fields (a VM's disk cache, fio's options) are parameters, not paths.
MODES: dict[tuple[str, str], str] = {
    ("device", "remote"): "transport",
    ("runtime", "docker"): "storage_driver",
    ("runtime", "podman"): "storage_driver",
    ("runtime", "vm"): "share",
}
KUBERNETES_CLUSTERS = ("testbed", "kubeconfig")  # strata's own single-node test bed, or a user's cluster
HOST_MODES = {
    "hosts:one": "a trial placed on one test host, through its agent",
    "hosts:span": "one trial whose instances run on two or more hosts, merged into one result",
    "hosts:storage-host": "a remote device served by another host of the experiment",
    "hosts:kubernetes-span": "one trial whose pods run on two or more Kubernetes nodes, merged into one result",
    "hosts:doctor-on-every-host": "`strata doctor --hosts`: every host's agent asked",
    "hosts:cleanup-on-every-host": "`strata cleanup --hosts`: every host's agent journal undone",
}
# Failures each runtime detects in its own way (a container's OOMKilled, a pod's status, a host process's cgroup):
# a key per runtime besides the category's own.
BY_RUNTIME = ("oom", "timeout", "instance_died")
LIFECYCLE = {
    "fault:kill9": "strata killed with SIGKILL, then one `strata cleanup` removes what it left",
    "fault:signal": "SIGINT or SIGTERM: teardown, then `--resume` finishes the run",
}


REFUSED = "refused:"  # a key whose cell was tried and refused (an `unsupported` trial, a command's exit 2)


def covers(*keys: str) -> pytest.MarkDecorator:
    """The keys a test's real run exercises (checked against what it ran), and the `refused:` keys it
    expects refused."""
    return pytest.mark.covers(*keys)


def declared(item: pytest.Item) -> frozenset[str] | None:
    """A collected test's declaration (the markers of a parametrized case and of its function, merged)."""
    marks = list(item.iter_markers("covers"))
    if not marks:
        return None
    return frozenset(k for m in marks for k in m.args)


def _literal(model: Any, field: str) -> tuple[str, ...]:
    return tuple(typing.get_args(model.model_fields[field].annotation))


def universe() -> dict[str, str]:
    """Every key, with what it is: read from the registries and the models' Literal types."""
    from strata.core.errors import FAILURE_CATEGORIES
    from strata.experiment.model import Experiment
    from strata.stack.devices import REGISTRY as DEVICES
    from strata.stack.filesystems import REGISTRY as FILESYSTEMS
    from strata.stack.runtimes import REGISTRY as RUNTIMES
    from strata.workloads import REGISTRY as WORKLOADS

    del Experiment  # imported for its side effect: the models of every plugin are complete
    keys: dict[str, str] = {}
    for layer, registry in (("device", DEVICES), ("runtime", RUNTIMES)):
        for name, plugin in registry.items():
            keys[f"{layer}:{name}"] = f"the {name} {layer}"
            field = MODES.get((layer, name))
            if field:
                for value in _literal(plugin.params, field):
                    keys[f"{layer}:{name}:{value}"] = f"the {name} {layer} with {field} {value}"
    for cluster in KUBERNETES_CLUSTERS:
        keys[f"runtime:kubernetes:{cluster}"] = f"pods on {cluster}"
    for name in FILESYSTEMS:
        keys[f"filesystem:{name}"] = f"the {name} file system"
    for rname, runtime in RUNTIMES.items():
        for path in runtime.paths:
            keys[f"path:{rname}/{path}"] = f"the {path} path of {rname}"
    for wname in WORKLOADS:
        keys[f"workload:{wname}"] = f"the {wname} workload"
        for rname in RUNTIMES:
            keys[f"workload:{wname}@{rname}"] = f"{wname} on {rname}"
        keys[f"workload:{wname}@hosts"] = f"{wname} on test hosts (its instances placed by an agent)"
    keys.update(HOST_MODES)
    for category, (meaning, _) in FAILURE_CATEGORIES.items():
        keys[f"fault:{category}"] = meaning
        if category in BY_RUNTIME:
            for rname in RUNTIMES:
                keys[f"fault:{category}@{rname}"] = f"{meaning}, as {rname} reports it"
    keys.update(LIFECYCLE)
    from strata.cli.main import SUBCOMMANDS

    for command, module in SUBCOMMANDS.items():
        keys[f"command:{command}"] = f"`strata {command}`: {module.HELP}"
    for spec in sorted((ROOT / "examples").glob("*.yaml")):
        keys[f"example:{spec.name}"] = f"examples/{spec.name} at smoke scale"
    for bench in benches():
        keys[f"bench:{bench}"] = f"bench/{bench}'s tiny run"
    return keys


def benches() -> list[str]:
    """The benches with a tiny run (tests/integration/test_benches.py's table)."""
    import importlib

    return sorted(importlib.import_module("tests.integration.test_benches").BENCHES)


# Failures before any instance started: the layers below the runtime were built, the workload never ran.
NOT_STARTED = ("container_start", "vm_start", "boot_timeout")
# Failures that built nothing the trial names (a layer's build failed, or the host refused the cell).
NOT_BUILT = ("provision", "unsupported")


def keys_of_trial(trial: dict[str, Any], failure: str | None = None, facts: dict[str, Any] | None = None) -> set[str]:
    """The keys one trial exercises: its resolved form (`Trial.resolved()`, the `trial` of a stored result),
    for a failed one its failure category, and what the stack's facts say it chose (a VM's share under
    `auto`). Only what ran counts: a refused trial (`unsupported`) gives its keys as `refused:` keys, a trial
    whose build failed (`provision`) its failure alone, one whose instances never started (NOT_STARTED) its
    layers below the workload."""
    keys = _layer_keys(trial, facts)
    if failure in NOT_BUILT:
        keys = {REFUSED + k for k in keys} if failure == "unsupported" else set()
    elif failure in NOT_STARTED:
        keys = {k for k in keys if not k.startswith("workload:")}
    if failure:
        keys.add(f"fault:{failure}")
        if failure in BY_RUNTIME:
            keys.add(f"fault:{failure}@{trial['runtime']['type']}")
    return keys


def _layer_keys(trial: dict[str, Any], facts: dict[str, Any] | None) -> set[str]:
    keys: set[str] = set()
    chosen = ((facts or {}).get("runtime") or {}).get("share")
    if chosen and trial["runtime"]["type"] == "vm" and trial["path"] == "bind":
        keys.add(f"runtime:vm:{chosen}")
    dev, rt, wl, path = trial["device"], trial["runtime"], trial["workload"], trial["path"]
    keys.add(f"device:{dev['type']}")
    for (layer, plugin), field in MODES.items():
        part = dev if layer == "device" else rt
        if part["type"] == plugin and part.get(field) and not (plugin == "vm" and path != "bind"):
            keys.add(f"{layer}:{plugin}:{part[field]}")
    if rt["type"] == "kubernetes":
        keys.add(f"runtime:kubernetes:{'testbed' if rt.get('kubeconfig') is None else 'kubeconfig'}")
    keys.add(f"filesystem:{trial['filesystem']['type']}")
    keys.add(f"runtime:{rt['type']}")
    keys.add(f"path:{rt['type']}/{path.split(':', 1)[0]}")
    placement = trial.get("placement")
    keys.add(f"workload:{wl['type']}")
    keys.add(f"workload:{wl['type']}@{'hosts' if placement else rt['type']}")
    if placement:
        keys.add("hosts:span" if len(placement["instances"]) > 1 else "hosts:one")
        nodes = placement.get("nodes") or {}
        if len(placement["instances"]) > 1 and all(str(n).startswith("kubernetes:") for n in nodes.values()):
            keys.add("hosts:kubernetes-span")
    if dev.get("host"):
        keys.add("hosts:storage-host")
    return keys


def keys_of_results(root: Path, since: float) -> set[str]:
    """The keys of every trial stored under `root` (any depth) since `since` (a time.time())."""
    import json

    keys: set[str] = set()
    for p in root.rglob("trials/*.json"):  # an earlier attempt kept by --resume ran too (its failure)
        if p.stat().st_mtime < since:
            continue
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if "trial" not in r or r.get("status") is None:
            continue
        failed = (r.get("flags") or {}).get("failed") or {}
        category = (failed.get("category") or "internal") if r["status"] != "ok" else None
        keys |= keys_of_trial(r["trial"], category, r.get("stack_facts"))
    return keys


EXAMPLES = ROOT / "examples"
BENCH_DIR = ROOT / "bench"


def keys_of_events(events: list[dict[str, Any]]) -> set[str]:
    """The keys of a test's ledger (tests/integration/ledger.py): a command that ran to its end (exit 0, or 1:
    a trial failed, a gate held) gives `command:NAME`, and `example:SPEC` for an example it ran or
    validated, `hosts:*-on-every-host` for `doctor`/`cleanup --hosts` that passed, `runtime:kubernetes:testbed`
    for a `testbed kubernetes up` that passed; exit 2 gives
    `refused:command:NAME`. A `strata run` killed with SIGKILL, then a cleanup that exited 0, gives
    `fault:kill9`; one that ended on SIGINT or SIGTERM (exit 130) `fault:signal`. What the library built or
    ran gives its keys, a failure it raised `fault:CATEGORY`; a bench that exited 0 `bench:NAME`."""
    keys: set[str] = set()
    killed = False
    for e in events:
        kind = e["kind"]
        if kind == "built":
            keys |= set(e["keys"])
        elif kind == "failed":
            keys.add(f"fault:{e['category']}")
            if e["category"] in BY_RUNTIME:
                keys.add(f"fault:{e['category']}@{e['runtime']}")
        elif kind == "bench" and e["rc"] == 0:
            keys.add(f"bench:{e['name']}")
        elif kind == "kill9" and e["rc"] == -9 and e["undone"] > 0:
            keys.add("fault:kill9")
        elif kind == "command" and e["argv"]:
            name, rc, args = e["argv"][0], e["rc"], e["argv"][1:]
            if rc in (0, 1):
                keys.add(f"command:{name}")
                keys |= {f"example:{Path(a).name}" for a in args if name in ("run", "validate") and _example(a)}
                if name in ("doctor", "cleanup") and "--hosts" in args and rc == 0:
                    keys.add(f"hosts:{name}-on-every-host")
                if name == "cleanup" and rc == 0 and killed:
                    keys.add("fault:kill9")
                if name == "testbed" and args[:2] == ["kubernetes", "up"] and rc == 0:
                    keys.add("runtime:kubernetes:testbed")
            elif rc == 2:
                keys.add(f"{REFUSED}command:{name}")
            elif rc == 130 and name == "run":
                keys.add("fault:signal")
            killed = killed or (rc == -9 and name == "run")
    return keys


def _example(arg: str) -> bool:
    """An example's file, or a copy of it under its own name (a test's cut of it, docs/development.md)."""
    p = Path(arg)
    return p.suffix == ".yaml" and (EXAMPLES / p.name).is_file()


def mismatch(declared: frozenset[str], ran: set[str], stored: set[str]) -> tuple[set[str], set[str]]:
    """(declared keys the test did not run, keys its stored trials ran that it does not declare): `ran`, every
    key it ran (its stored trials' and its ledger's); `stored`, its stored trials' alone (a shared fixture's
    ledger is not held against each test of the module). A declared `refused:KEY` also holds when KEY ran (a
    host that can build the cell). Not held against a test: a failure category or refusal it did not declare
    (a host may refuse a cell)."""
    missing = {k for k in declared if k not in ran and not (k.startswith(REFUSED) and k[len(REFUSED) :] in ran)}
    allowed = declared | {k[len(REFUSED) :] for k in declared if k.startswith(REFUSED)}
    extra = {k for k in stored - allowed if derivable(k) and not k.startswith("fault:")}
    return missing, extra


DERIVED_HOSTS = ("hosts:one", "hosts:span", "hosts:storage-host", "hosts:kubernetes-span")


def derivable(key: str) -> bool:
    """Whether a stored trial shows the key (the others come from the ledger's events only: commands,
    lifecycle, examples, benches, the host commands)."""
    kind = key.split(":", 1)[0]
    return (
        kind in ("device", "filesystem", "runtime", "path", "workload")
        or key in DERIVED_HOSTS
        or (kind == "fault" and key not in LIFECYCLE)
    )


def keys_of_spec(spec: Path, scale: str = "smoke") -> frozenset[str]:
    """The keys of every trial an experiment file plans (at `scale`) on this host: a trial its plugins say
    this host cannot run (the plan's `unsupported`, as `strata validate` shows it) gives `refused:` keys."""
    from strata.core.host import host_facts
    from strata.experiment.load import load_spec
    from strata.experiment.plan import resolve

    exp, workloads = load_spec(spec, scale)
    plan = resolve(exp, workloads, host_facts())
    keys: set[str] = set()
    for t in plan.trials:
        r = t.resolved()
        refused = t.id in plan.unsupported or refused_here(r["runtime"].get("storage_driver"))
        keys |= keys_of_trial(r, "unsupported" if refused else None, _host_choice(r))
    return frozenset(keys)


# Storage drivers whose daemons refuse to start without a kernel module (their refusal comes at run time, in
# the daemon's own words, not from the plan).
DRIVER_MODULES = {"devicemapper": "dm_mod", "aufs": "aufs", "zfs": "zfs"}


def refused_here(driver: str | None) -> bool:
    """Whether a container runtime's storage driver needs a kernel module this host lacks."""
    import sys

    sys.path.insert(0, str(ROOT))
    from tests.integration.helpers import kernel_has

    module = DRIVER_MODULES.get(driver or "")
    return module is not None and not kernel_has(module)


def _host_choice(trial: dict[str, Any]) -> dict[str, Any] | None:
    """What this host will choose for a trial that leaves it to the host: a VM's share under `auto` is
    virtiofs where virtiofsd is installed (its probe boot mounts it on the hosts this suite runs on), else 9p
    (stack/vm/runtime.py `choose_share`), as the stored facts will say."""
    rt = trial["runtime"]
    if rt["type"] != "vm" or rt.get("share") != "auto":
        return None
    from strata.stack.vm.qemu import virtiofsd_binary

    return {"runtime": {"share": "virtiofs" if virtiofsd_binary() else "9p"}}


# The README's list of what only the full tier runs: the keys no default-tier test declares, by kind.
KINDS = (
    ("device", "devices"),
    ("filesystem", "file systems"),
    ("runtime", "runtimes, storage drivers and modes"),
    ("path", "paths (runtime/path)"),
    ("workload", "workloads on a runtime or on test hosts"),
    ("hosts", "across hosts"),
    ("fault", "failures"),
    ("command", "commands"),
    ("example", "examples at smoke scale"),
    ("bench", "benches' tiny runs"),
)


def full_only_list(declared: dict[str, dict[str, Any] | None]) -> str:
    """Markdown bullets: per kind, the keys only full-only tests run; then what the full-only tests that say
    they are alone run although the default tier runs each of their keys (a combination of covered parts)."""
    import sys

    sys.path.insert(0, str(ROOT))
    from tests.conftest import FULL_ONLY, full_only

    tiers = tiers_of(declared)
    lines = []
    for kind, title in KINDS:
        keys = sorted(k.split(":", 1)[1] for k, tier in tiers.items() if tier == "full" and k.split(":", 1)[0] == kind)
        if keys:
            lines.append(f"- {title}: {', '.join(f'`{k}`' for k in keys)}")
    combos = []
    for why in FULL_ONLY.values():
        nodes = [n for n in declared if full_only(n) is why]
        keys = {k for n in nodes for k in (declared[n] or {}).get("keys", ())}
        if not why.covered_by and nodes and all(tiers.get(k) == "default" for k in keys) and full_only(nodes[0]):
            combos.append(why.reason)
    if combos:
        lines.append(f"- and, of parts the default tier runs each: {'; '.join(combos)}")
    return "\n".join(lines)


def tiers_of(declared: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    """key -> "default" (a default-tier test runs it) or "full" (only full-only tests do); a `refused:` key
    places nothing."""
    import sys

    sys.path.insert(0, str(ROOT))
    from tests.conftest import full_only

    tiers: dict[str, str] = {}
    for node, d in declared.items():
        for key in (d or {}).get("keys", ()):
            if key.startswith(REFUSED):
                continue  # a refusal runs nothing
            if tiers.get(key) != "default":
                tiers[key] = "full" if full_only(node) else "default"
    return tiers


def collect_declarations() -> dict[str, dict[str, Any] | None]:
    """Every test's declaration, collected with --full (tests/conftest.py writes them: STRATA_COVERAGE_DUMP)."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "declared.json"
        cp = subprocess.run(
            [sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider", "--full"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "STRATA_COVERAGE_DUMP": str(dump)},
            check=False,
            timeout=600,
        )
        if not dump.exists():
            raise RuntimeError(f"collection failed:\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}")
        declared: dict[str, dict[str, Any] | None] = json.loads(dump.read_text())
    return declared


def main(argv: list[str]) -> int:
    """`python -m tests.coverage`: every key and the tier that runs it; `--readme`: rewrite the README's list."""
    declared = collect_declarations()
    tiers = tiers_of(declared)
    if argv == ["--readme"]:
        readme = ROOT / "README.md"
        text = readme.read_text()
        begin, end = "<!-- full-tier-only: begin -->", "<!-- full-tier-only: end -->"
        head, rest = text.split(begin, 1)
        readme.write_text(f"{head}{begin}\n{full_only_list(declared)}\n{end}{rest.split(end, 1)[1]}")
        return 0
    for key, what in universe().items():
        print(f"{tiers.get(key, 'none'):8} {key:45} {what}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
