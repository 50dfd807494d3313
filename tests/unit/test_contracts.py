"""Every registered plugin satisfies its layer's Protocol (docs/architecture.md "The contracts").

The type checker is the gate (scripts/lint: every registry is typed by its Protocol, so mypy names a
plugin that lacks a member or whose method differs); the checks here repeat it at run time, so a unit
test run fails too, and add what no type says: a registry key that is not the plugin's name or its
params' `type`, the capabilities a workload declares, and every module importable first (the import
rules themselves are scripts/check-imports', tested in test_import_rules.py).
"""

import inspect
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from strata.collectors import REGISTRY as COLLECTORS
from strata.collectors.base import Collector
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.devices.base import Device
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems.base import Filesystem
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.stack.runtimes.base import Runtime
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import (
    Constrained,
    DeviceProbe,
    HostTools,
    SelfPlacing,
    ServerWorkload,
    Shorthand,
    Smoke,
    ToolWorkload,
    Upgrading,
    Workload,
)
from strata.workloads.server.template import ServerTemplate, WithSettings

LAYERS = [
    ("device", DEVICES, Device),
    ("filesystem", FILESYSTEMS, Filesystem),
    ("runtime", RUNTIMES, Runtime),
    ("workload", WORKLOADS, Workload),
]
PLUGINS = [(layer, name, plugin, proto) for layer, reg, proto in LAYERS for name, plugin in reg.items()]


def members(proto) -> tuple[set[str], dict[str, inspect.Signature]]:
    attrs = set(typing.get_type_hints(proto)) if proto.__annotations__ else set()
    attrs |= {n for n, f in vars(proto).items() if isinstance(f, property)}  # read-only members (`paths`)
    methods = {n: inspect.signature(f) for n, f in vars(proto).items() if callable(f) and not n.startswith("_")}
    return attrs, methods


def params_of(sig: inspect.Signature) -> list[str]:
    return [p for p in sig.parameters if p != "self"]


@pytest.mark.parametrize("layer,name,plugin,proto", PLUGINS, ids=[f"{p[0]}:{p[1]}" for p in PLUGINS])
def test_plugin_satisfies_its_protocol(layer, name, plugin, proto):
    attrs, methods = members(proto)
    for attr in attrs:
        assert hasattr(plugin, attr), f"{layer} {name} lacks `{attr}`"
    for method, sig in methods.items():
        impl = getattr(plugin, method, None)
        assert callable(impl), f"{layer} {name} lacks `{method}()`"
        assert params_of(inspect.signature(impl)) == params_of(sig), (
            f"{layer} {name}.{method}{inspect.signature(impl)} differs from the contract {sig}"
        )


CAPABILITIES = (Shorthand, Smoke, Upgrading, Constrained, ServerWorkload, SelfPlacing, DeviceProbe, HostTools)


def test_a_workloads_capabilities_are_what_it_declares_and_satisfies():
    """A capability is declared by deriving from it (mypy then checks its signatures); the helper base
    ToolWorkload has none, so `isinstance` at a call site means the workload does it."""
    have = {name: {c.__name__ for c in CAPABILITIES if isinstance(wl, c)} for name, wl in WORKLOADS.items()}
    assert have == {
        "fio": {"Shorthand", "Smoke", "Upgrading", "DeviceProbe", "HostTools"},
        "filebench": {"Smoke", "Upgrading"},
        "null": set(),
        "ycsb": {"Smoke", "Constrained", "ServerWorkload", "SelfPlacing", "HostTools"},
        "pgbench": {"Smoke", "Constrained", "ServerWorkload", "HostTools"},
        "sysbench": {"Smoke", "Constrained", "ServerWorkload", "HostTools"},
    }
    assert not any(isinstance(ToolWorkload(), c) for c in CAPABILITIES)
    for name, wl in WORKLOADS.items():
        for cap in CAPABILITIES:
            if isinstance(wl, cap):
                assert cap in type(wl).__mro__, f"{name} does {cap.__name__} without declaring it"
                for method, sig in members(cap)[1].items():
                    assert params_of(inspect.signature(getattr(wl, method))) == params_of(sig), (name, method)


@pytest.mark.parametrize("layer,name,plugin,proto", PLUGINS, ids=[f"{p[0]}:{p[1]}" for p in PLUGINS])
def test_registry_key_is_the_plugins_name_and_its_params_type(layer, name, plugin, proto):
    assert plugin.name == name
    type_field = plugin.params.model_fields.get("type")
    assert type_field is not None, f"{name}: params without a `type` key"
    allowed = typing.get_args(type_field.annotation)
    assert name in allowed, f"{name}: params.type allows {allowed}"


SERVERS = {n: w for n, w in WORKLOADS.items() if isinstance(w, ServerTemplate)}


@pytest.mark.parametrize("name,wl", SERVERS.items())
def test_the_keys_a_server_names_are_keys_of_its_params(name, wl):
    """The log's key (`server.log`) and the settings map are read from the parameters by name (template.py): a
    key the model lacks would leave the log with the data, or the map unchecked, without a word."""
    fields = wl.params.model_fields
    log = wl.server.log
    if log is not None:
        assert log.key in fields, f"{name}: the log's key {log.key!r} is no key of {wl.params.__name__}"
        assert wl.log_path(wl.params(**{log.key: "volume"})) == "volume" and wl.log_path(wl.params()) is None
    assert (wl.server.settings is not None) == ("settings" in fields), name
    assert isinstance(wl.params(), WithSettings) == ("settings" in fields), name


def test_the_registry_lists_every_workload_module_that_declares_a_plugin():
    """A workload's module declares `PLUGIN` and the registry's `MODULES` names it: one without the other is a
    workload that no spec can name, or an import error."""
    from strata import workloads

    root = Path(workloads.__file__).parent
    declaring = sorted(
        str(p.relative_to(root).with_suffix("")).replace("/", ".")
        for p in root.rglob("*.py")
        if re.search(r"^PLUGIN: Workload\[", p.read_text(), re.M)
    )
    assert declaring == sorted(workloads.MODULES)


@pytest.mark.parametrize("name,cls", COLLECTORS.items())
def test_collectors_satisfy_theirs(name, cls):
    attrs, methods = members(Collector)
    c = cls(None)
    assert c.name == name
    for m in methods:
        assert callable(getattr(c, m))


def test_every_plugin_answers_available_without_params():
    for _, _, plugin, _ in PLUGINS:
        reason = plugin.available({})
        assert reason is None or isinstance(reason, str)


def test_runtime_paths_are_in_the_vocabulary():
    from strata.core.params import PATHS

    for name, rt in RUNTIMES.items():
        assert set(rt.paths) <= set(PATHS), name


@pytest.mark.timeout(600)  # a hang guard: ~330 imports, each of its package from a clean slate
def test_every_module_imports_first():
    """A cycle inside a package only shows when its module is the first one imported (as a
    script importing strata.stack.vm.runtime did): import each module with its package (strata.X, every
    module under it) cleared first. The packages below stay imported: a package imports only those below
    it, never one above (scripts/check-imports), so no cycle runs through them, and importing each
    module's whole tree again made this test 93 s of a loaded worker's time."""
    root = Path(__file__).resolve().parents[2] / "src"
    modules = sorted(
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in (root / "strata").rglob("*.py")
        if p.name != "__main__.py"
    )
    probe = (
        "import importlib, sys, traceback\n"
        "bad = []\n"
        "for m in sys.argv[1:]:\n"
        "    pkg = '.'.join(m.split('.')[:2])\n"
        "    for k in [k for k in sys.modules if k == pkg or k.startswith(pkg + '.')]:\n"
        "        del sys.modules[k]\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except Exception:\n"
        "        bad.append(m + ': ' + traceback.format_exc().splitlines()[-1])\n"
        "print('\\n'.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *modules], capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", out.stdout


def _recorded_kinds() -> dict[str, set[str]]:
    """Each kind the code records in a journal (`journal.intent("KIND"`, or a `tracked(journal, seqs, "KIND"`
    that records it), with the modules that record it."""
    root = Path(__file__).resolve().parents[2] / "src"
    kinds: dict[str, set[str]] = {}
    for p in (root / "strata").rglob("*.py"):
        text = p.read_text()
        found = re.findall(r'\bintent\(\s*"([\w-]+)"', text)
        found += re.findall(r'\b_?tracked\(\s*(?:self\.)?journal,\s*(?:self\.)?seqs,\s*"([\w-]+)"', text)
        for kind in found:
            kinds.setdefault(kind, set()).add(str(p.relative_to(root)))
    return kinds


def test_every_kind_a_module_journals_is_declared_by_a_plugin():
    """An undo action is declared by the plugins that journal its kind (stack/journal.py `Undoing`) and collected
    from the registries (run/undo.py): a kind recorded anywhere that no plugin declares would only show when
    `strata cleanup` meets it ("could not undo"). The Swarm's machinery (the manager's services, the test hosts)
    declares its own beside them, which `strata cleanup` adds."""
    from strata.cli.cleanup import undo
    from strata.hosts import deploy, kubenodes, testbed
    from strata.run.undo import undo_actions

    recorded = _recorded_kinds()
    assert {"loop", "mount", "container", "vm_process", "kube-process", "cassandra-jvm", "bridge"} <= set(recorded)
    by_plugins = set(undo_actions())
    swarm = set(deploy.UNDO) | set(testbed.UNDO) | set(kubenodes.UNDO)
    missing = {k: sorted(m) for k, m in recorded.items() if k not in by_plugins | swarm}
    assert not missing, f"journaled, but no plugin declares its undo action: {missing}"
    assert set(recorded) <= set(undo()), "strata cleanup must know every kind"
    # and nothing is declared that nothing records (a renamed kind leaves its old name behind)
    assert set(undo()) <= set(recorded), sorted(set(undo()) - set(recorded))


def test_a_kind_is_undone_by_one_action_whoever_declares_it():
    from strata.run.undo import undo_actions
    from strata.stack.journal import Undoing

    class A(Undoing):
        undo = {"x": print}

    class B(Undoing):
        undo = {"x": repr}

    assert undo_actions(of=[A(), A(), object()]) == {"x": print}
    with pytest.raises(AssertionError, match="two undo actions declared for x"):
        undo_actions(of=[A(), B()])


def test_no_module_registers_an_undo_action_by_being_imported():
    """`strata cleanup` in a fresh process knows what it knows here, where every module is imported: the
    declarations come from the registries, never from a module imported for its side effects."""
    from strata.cli.cleanup import undo

    root = Path(__file__).resolve().parents[2] / "src"
    probe = "from strata.cli.cleanup import undo\nprint(' '.join(sorted(undo())))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == sorted(undo())
    for p in (root / "strata").rglob("*.py"):
        assert "undo_action(" not in p.read_text(), p


PLUGIN = """
from pathlib import Path
from typing import Any

from strata.core.instances import InstanceOutput, Target
from strata.core.params import Load, Strict
from strata.workloads.base import Constrained, Parsed, ToolWorkload, Workload


class P(Strict):
    pass


class Tool(ToolWorkload[P]):
    name = "tool"
    params = P

    def estimate_s(self, params: P) -> float:
        return 1.0

    def command(self, params: P, load: Load, target: Target, instance: int) -> list[str]:
        return []
{extra}

PLUGIN: Workload[P] = Tool()  # as a workload's module declares its registry entry
"""
PARSE = """
    def parse(self, params: P, outputs: list[InstanceOutput]) -> Parsed:
        return Parsed({}, {})
"""


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """mypy, as the lint gate runs it (the project's configuration), on one plugin module."""
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "plugin.py").write_text(source)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(root / "pyproject.toml"),
            "--no-warn-unused-configs",
            "plugin.py",
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(root / "src"), "MYPY_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_type_checker_rejects_a_plugin_that_does_not_satisfy_its_protocol(tmp_path):
    """The registries are typed by their Protocols: a plugin without a member of the core, or whose
    capability's method takes other arguments, fails the lint gate, naming the member."""
    good = _mypy(tmp_path, PLUGIN.format(extra=PARSE))
    assert good.returncode == 0, good.stdout
    no_parse = _mypy(tmp_path, PLUGIN.format(extra=""))
    assert no_parse.returncode == 1 and '"Tool"' in no_parse.stdout and "parse" in no_parse.stdout, no_parse.stdout
    wrong = PLUGIN.format(extra=PARSE).replace(
        "class Tool(ToolWorkload[P]):", "class Tool(ToolWorkload[P], Constrained[P]):"
    )
    wrong = wrong.replace(
        "\nPLUGIN:",
        "    def impossible(self, params: P) -> str | None:\n        return None\n\n"
        "    def problems(self, params: P, load: Load) -> list[tuple[str, str, str]]:\n        return []\n\nPLUGIN:",
    )
    bad_capability = _mypy(tmp_path, wrong)
    assert bad_capability.returncode == 1 and "impossible" in bad_capability.stdout, bad_capability.stdout
