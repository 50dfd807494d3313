"""Every registered plugin satisfies its layer's Protocol (docs/architecture.md "The contracts").

A member the Protocol declares and the plugin lacks, or a method whose parameters differ, fails here,
not in the middle of a run; so does a registry key that is not the plugin's name or its params' `type`.
"""

import inspect
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
from strata.workloads.base import Workload

LAYERS = [
    ("device", DEVICES, Device),
    ("filesystem", FILESYSTEMS, Filesystem),
    ("runtime", RUNTIMES, Runtime),
    ("workload", WORKLOADS, Workload),
]
PLUGINS = [(layer, name, plugin, proto) for layer, reg, proto in LAYERS for name, plugin in reg.items()]


def members(proto) -> tuple[set[str], dict[str, inspect.Signature]]:
    attrs = set(typing.get_type_hints(proto)) if proto.__annotations__ else set()
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


@pytest.mark.parametrize("layer,name,plugin,proto", PLUGINS, ids=[f"{p[0]}:{p[1]}" for p in PLUGINS])
def test_registry_key_is_the_plugins_name_and_its_params_type(layer, name, plugin, proto):
    assert plugin.name == name
    type_field = plugin.params.model_fields.get("type")
    assert type_field is not None, f"{name}: params without a `type` key"
    allowed = typing.get_args(type_field.annotation)
    assert name in allowed, f"{name}: params.type allows {allowed}"


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
    from strata.params import PATHS

    for name, rt in RUNTIMES.items():
        assert set(rt.paths) <= set(PATHS), name


def _package_graph() -> dict[str, set[str]]:
    """strata's top-level packages and modules, and which of them each imports (anywhere in its code)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "src" / "strata"
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).parts
        node = rel[0].removesuffix(".py")
        graph.setdefault(node, set())
        for n in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in n.names]
                if isinstance(n, ast.Import)
                else [n.module]
                if isinstance(n, ast.ImportFrom) and n.module and n.level == 0
                else []
            )
            for name in names:
                parts = name.split(".")
                if parts[0] == "strata" and len(parts) > 1 and parts[1] != node:
                    graph[node].add(parts[1])
    return graph


def test_no_import_cycle_between_packages():
    graph = _package_graph()
    seen, stack = set(), []

    def visit(node, path):
        if node in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(node) :] + [node]))
        if node in seen:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        seen.add(node)

    for node in sorted(graph):
        visit(node, stack)
    # the bottom stays the bottom
    for bottom in ("params", "instances", "errors", "units"):
        assert graph[bottom] <= {"units", "errors"}, (bottom, graph[bottom])


def test_every_module_imports_first():
    """A cycle inside a package only shows when its module is the first one imported (as a
    script importing strata.stack.vm.runtime did): import each module into a clean slate."""
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
        "    for k in [k for k in sys.modules if k == 'strata' or k.startswith('strata.')]:\n"
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


def test_cleanup_knows_every_undo_action():
    """`strata cleanup` runs in a fresh process: every kind a module journals must be registered there."""
    root = Path(__file__).resolve().parents[2] / "src"
    kinds = set()
    for p in (root / "strata").rglob("*.py"):
        kinds |= set(re.findall(r'undo_action\("([\w-]+)"\)', p.read_text()))
    probe = "import strata.cli.cleanup\nfrom strata.stack.journal import UNDO\nprint(' '.join(sorted(UNDO)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert kinds and kinds <= set(out.stdout.split()), sorted(kinds - set(out.stdout.split()))


def test_a_module_that_journals_a_kind_brings_its_undo_action():
    """Imported first (a script, a helper process), a module must not journal a kind whose undo action
    lives in a module it does not import: the journal refuses it mid-provisioning."""
    root = Path(__file__).resolve().parents[2] / "src"
    wanted = {}
    for p in (root / "strata").rglob("*.py"):
        kinds = set(re.findall(r'\.intent\(\s*"([\w-]+)"', p.read_text()))
        if kinds:
            wanted[".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = sorted(kinds)
    probe = (
        "import importlib, json, sys\n"
        "bad = []\n"
        "for m, kinds in json.loads(sys.argv[1]).items():\n"
        "    for k in [k for k in sys.modules if k == 'strata' or k.startswith('strata.')]:\n"
        "        del sys.modules[k]\n"
        "    UNDO = importlib.import_module(m) and importlib.import_module('strata.stack.journal').UNDO\n"
        "    bad += [f'{m}: {k}' for k in kinds if k not in UNDO]\n"
        "print('\\n'.join(bad))\n"
    )
    import json

    out = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(wanted)], capture_output=True, text=True, timeout=300, cwd=root
    )
    assert wanted and out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", out.stdout
