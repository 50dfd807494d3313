"""Read an experiment file into an Experiment, collecting every error at once.

Shorthands are normalized first (`xfs`, `docker:btrfs`, `high`, `{fio: {...}}`),
list-valued workload and load parameters are expanded into one entry per value
(a sweep), then pydantic validates the layers and each workload plugin its own
parameters. Nothing here looks at the host (that is resolve, in plan.py).

Whatever the input, the answer is an Experiment or SpecErrors naming each
problem with its key path: never a traceback (a seeded fuzz test in the test
suite keeps it so). Sizes of what a file can ask for are bounded before any
of it is built: nesting, aliases, sweeps and the number of trials.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from strata.core.errors import SpecErrors
from strata.core.params import LOAD_PRESETS, Layer
from strata.experiment.hosts import (
    check_device_hosts,
    check_kubernetes_hosts,
    check_names,
    check_workload_hosts,
    normalize_hosts,
    normalize_placement,
)
from strata.experiment.model import Experiment
from strata.experiment.overrides import apply as apply_overrides
from strata.experiment.overrides import source_of
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS
from strata.workloads.base import Shorthand

# Keys whose value is a list by nature, never a sweep.
_LIST_KEYS = {"mount_options", "mkfs_options", "set", "options"}  # options: a client's own (server workloads)
MAX_FILE_BYTES = 4 << 20
MAX_DEPTH = 40  # nesting of mappings and lists
MAX_NODES = 200_000  # YAML nodes with every alias expanded (a "billion laughs" file stops here)
MAX_TRIALS = 100_000  # the plan is counted before it is expanded; beyond this it is refused
# Parts of pydantic's error locations that name a union member, not a key of the file.
_UNION_TAGS = set(DEVICES) | set(RUNTIMES)

Error = tuple[str, str, str]  # (key path, problem, fix)


def load_spec(
    path: str | Path, scale: str = "full", overrides: list[str] | None = None
) -> tuple[Experiment, list[Layer]]:
    """The experiment of a file with the command line's `--set` overrides (experiment/overrides.py), at its own
    scale or at `scale` (smoke: experiment/scale.py, applied after the overrides)."""
    path = Path(path)
    raw = _read_yaml(path)
    if overrides:
        raw = apply_overrides(raw, overrides, str(path))
    if scale == "smoke":
        from strata.experiment.scale import smoke

        raw = smoke(raw)
    return parse_spec(raw, base_dir=path.parent, source=source_of(str(path), overrides or []))


def _fail(source: str, problem: str, fix: str) -> SpecErrors:
    return SpecErrors([("", problem, fix)], source)


def _read_yaml(path: Path) -> object:
    src = str(path)
    try:
        if path.is_dir():
            raise _fail(
                src, "this is a directory, not an experiment file", "give a YAML file, e.g. examples/quick.yaml"
            )
        data = path.read_bytes()[: MAX_FILE_BYTES + 1]
    except FileNotFoundError:
        raise _fail(src, f"no experiment file at {path}", "give the path of a YAML file, e.g. examples/quick.yaml")
    except OSError as e:
        raise _fail(src, f"cannot read {path}: {e.strerror}", "check the path and its permissions")
    if len(data) > MAX_FILE_BYTES:
        raise _fail(
            src, f"the file is larger than {MAX_FILE_BYTES >> 20} MiB", "an experiment file is a few lines of YAML"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(src, f"not a text file (byte {e.start} is not UTF-8)", "give a YAML file, e.g. examples/quick.yaml")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_size(node, src)
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _fail(src, f"not valid YAML: {e}", "fix the YAML syntax at the line shown")
    except RecursionError:
        raise _fail(src, "the YAML is nested too deeply", f"an experiment file nests at most {MAX_DEPTH} levels")


def _check_size(node: yaml.Node, src: str) -> None:
    """Refuse deep nesting and alias bombs before anything walks the document."""
    count, stack = 0, [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if n is None:
            continue
        count += 1
        if depth > MAX_DEPTH:
            raise _fail(src, f"the YAML nests deeper than {MAX_DEPTH} levels", "flatten the file")
        if count > MAX_NODES:
            raise _fail(
                src,
                f"the YAML expands to more than {MAX_NODES} values (aliases included)",
                "an experiment file is a few lines of YAML; avoid aliases of aliases",
            )
        if isinstance(n, yaml.MappingNode):
            stack += [(x, depth + 1) for kv in n.value for x in kv]
        elif isinstance(n, yaml.SequenceNode):
            stack += [(x, depth + 1) for x in n.value]


def _check_shape(raw: object, source: str) -> None:
    """The same bounds as for a file, for a document given in memory."""
    count, stack = 0, [(raw, 0)]
    while stack:
        v, depth = stack.pop()  # (a value of the document, its depth)
        count += 1
        if depth > MAX_DEPTH:
            raise _fail(source, f"the document nests deeper than {MAX_DEPTH} levels", "flatten it")
        if count > MAX_NODES:
            raise _fail(source, f"the document holds more than {MAX_NODES} values", "an experiment is a few lines")
        if isinstance(v, dict):
            stack += [(x, depth + 1) for kv in v.items() for x in kv]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]


def parse_spec(raw: object, base_dir: Path = Path("."), source: str = "spec") -> tuple[Experiment, list[Layer]]:
    if not isinstance(raw, dict):
        raise _fail(
            source, "an experiment file is a YAML mapping (name:, devices:, ...)", "start from examples/quick.yaml"
        )
    _check_shape(raw, source)
    errors: list[Error] = []
    doc: dict[str, object] = {str(k): v for k, v in raw.items()}
    for key, norm in (("devices", _claimed(DEVICES)), ("filesystems", _filesystem), ("runtimes", _claimed(RUNTIMES))):
        if key in doc:
            doc[key] = [norm(x) for x in _as_list(doc[key])]
    if "paths" in doc:
        doc["paths"] = _as_list(doc["paths"])
    if "hosts" in doc:
        doc["hosts"] = normalize_hosts(doc["hosts"])
    if "placement" in doc:
        hosts = doc.get("hosts")
        doc["placement"] = normalize_placement(doc["placement"], list(hosts) if isinstance(hosts, dict) else [])
    loads = [_load(x, f"loads[{i}]", errors) for i, x in enumerate(_as_list(doc.get("loads", [])))]
    workloads = [_workload(x, f"workloads[{i}]", errors) for i, x in enumerate(_as_list(doc.get("workloads", [])))]
    too_many = _count(doc, loads, workloads)
    if too_many:  # never expanded: report it with what else was found so far
        raise SpecErrors(_dedupe(errors + too_many), source)
    if "loads" in doc:
        doc["loads"] = [e for x in loads for e in _sweep(x)]
    if "devices" in doc:  # a device's parameters sweep too (a remote device's latency: [0, 50us])
        doc["devices"] = [e for x in _listed(doc["devices"]) for e in _sweep(x)]
    workloads_raw = [(where, e) for where, x in workloads for e in _sweep(x)]
    doc["workloads"] = [e for _, e in workloads_raw]
    exp: Experiment | None = None
    try:
        exp = Experiment.model_validate(doc)
    except ValidationError as e:
        errors += _pydantic_errors(e)
    parsed: list[Layer] = []
    for where, w in workloads_raw:
        parsed += _workload_params(w, where, base_dir, errors)
    if exp is not None:
        errors += _unique_names(exp) + check_names(exp.hosts, exp.placement)
        errors += check_device_hosts(exp.hosts, exp.devices) + check_kubernetes_hosts(exp.hosts, exp.runtimes)
        errors += check_workload_hosts(exp.hosts, parsed)
    if errors or exp is None:  # no Experiment without an error saying why
        raise SpecErrors(_dedupe(errors), source)
    return exp, parsed


def _as_list(v: object) -> list[object]:
    return v if isinstance(v, list) else [v]


def _listed(v: object) -> list[object]:
    """A member `parse_spec` made a list already (or left out: empty)."""
    return v if isinstance(v, list) else []


class _Claims(Protocol):
    """A device or runtime plugin, as far as a spec's one-word entry goes."""

    def shorthand(self, text: str) -> dict[str, str] | None: ...


def _claimed(registry: Mapping[str, _Claims]) -> Callable[[object], object]:
    """A one-word entry of a layer as the parameters of the plugin that claims it (`docker:btrfs`,
    `/dev/sdb`); one no plugin claims stays its own type, which validation names."""

    def norm(x: object) -> object:
        if not isinstance(x, str):
            return x
        return next((p for p in (plugin.shorthand(x) for plugin in registry.values()) if p is not None), {"type": x})

    return norm


def _filesystem(x: object) -> object:
    return {"type": x} if isinstance(x, str) else x


def _load(x: object, where: str, errors: list[Error]) -> object:
    """`high` or `{preset: high, containers: 3}` -> the preset's values, overridden by the entry's."""
    preset = x if isinstance(x, str) else (x.get("preset") if isinstance(x, dict) else None)
    if preset is None:
        return x
    if not isinstance(preset, str) or preset not in LOAD_PRESETS:
        errors.append(
            (
                where + (".preset" if isinstance(x, dict) else ""),
                f"unknown load preset {_short(preset)}",
                f"use one of: {', '.join(LOAD_PRESETS)} (one name, not a list), or numjobs/iodepth",
            )
        )
        return {}
    if isinstance(x, str):
        return {"name": x, **LOAD_PRESETS[x]}
    rest = {k: v for k, v in x.items() if k != "preset"} if isinstance(x, dict) else {}
    return {"name": preset, **LOAD_PRESETS[preset], **rest}


def _workload(x: object, where: str, errors: list[Error]) -> tuple[str, object]:
    """A one-word entry (`rr`) as the workload that claims it; `{NAME: {...}}` -> `{type: NAME, ...}`.
    Returns (key path, entry)."""
    if isinstance(x, str):
        for name, plugin in WORKLOADS.items():
            params = plugin.shorthand(x) if isinstance(plugin, Shorthand) else None
            if params is not None:
                return where, {"type": name, **params}
        errors.append(
            (
                where,
                f"{_short(x)} is not a workload",
                "write `{NAME: {...}}` with NAME one of: " + ", ".join(WORKLOADS) + ", or a preset such as rr",
            )
        )
        return where, {}
    if isinstance(x, dict) and len(x) == 1 and isinstance(next(iter(x)), str) and next(iter(x)) in WORKLOADS:
        ((kind, params),) = x.items()
        if params is None:
            params = {}
        if not isinstance(params, dict):
            errors.append(
                (
                    f"{where}.{kind}",
                    f"expected a mapping of {kind} parameters, not {_short(params)}",
                    f"write e.g. `- {{{kind}: {{...}}}}` (see the spec reference)",
                )
            )
            return where, {}
        return f"{where}.{kind}", {"type": kind, **params}
    return where, x


def _sweep_keys(entry: object) -> list[str]:
    if not isinstance(entry, dict):
        return []
    return [k for k, v in entry.items() if isinstance(v, list) and k not in _LIST_KEYS]


def _sweep_size(entry: object) -> int:
    return math.prod(len(entry[k]) for k in _sweep_keys(entry)) if isinstance(entry, dict) else 1


def _count(doc: dict[str, object], loads: list[object], workloads: list[tuple[str, object]]) -> list[Error]:
    """The number of trials, counted before anything is expanded."""
    n = max(1, sum(_sweep_size(x) for x in _listed(doc.get("devices"))))
    for key in ("filesystems", "runtimes", "paths", "placement"):
        n *= max(1, len(_listed(doc.get(key))))
    hosts = doc.get("hosts")
    if not doc.get("placement") and isinstance(hosts, dict):
        n *= max(1, len(hosts))  # the default placement: each host
    n *= max(1, sum(_sweep_size(x) for x in loads)) if loads else 1
    n *= max(1, sum(_sweep_size(x) for _, x in workloads))
    reps = doc.get("repetitions")
    if reps == "auto":
        reps = doc.get("max_repetitions", 10)
    n *= reps if isinstance(reps, int) and not isinstance(reps, bool) and 0 < reps <= 1000 else 1
    if n > MAX_TRIALS:
        return [
            (
                "",
                f"the experiment has {n:,} trials (the product of every list and sweep)",
                f"at most {MAX_TRIALS:,} per experiment file: split it, or sweep fewer values at once",
            )
        ]
    return []


def _sweep(entry: object) -> list[object]:
    """{bs: [4k, 64k], rw: randread} -> two entries; the swept keys go into the name."""
    keys = _sweep_keys(entry)
    if not keys or not isinstance(entry, dict):  # _sweep_keys finds none in what is not a mapping
        return [entry]
    out: list[object] = []
    for values in itertools.product(*(entry[k] for k in keys)):
        e = dict(entry)
        e.update(zip(keys, values))
        if e.get("name"):
            e["name"] = str(e["name"]) + "".join(f"-{k}{_short(v, 20)}" for k, v in zip(keys, values))
        out.append(e)
    return out


def _workload_params(w: object, where: str, base_dir: Path, errors: list[Error]) -> list[Layer]:
    kind = w.get("type") if isinstance(w, dict) else None
    plugin = WORKLOADS.get(kind) if isinstance(kind, str) else None
    if plugin is None or not isinstance(w, dict):  # a workload type is found only in a mapping
        what = "a mapping" if not isinstance(w, dict) else f"workload type {_short(kind)}"
        errors.append((where, f"unknown {what}", f"write `{{NAME: {{...}}}}` with NAME one of: {', '.join(WORKLOADS)}"))
        return []
    try:
        return [plugin.parse_params(w, base_dir)]
    except ValidationError as e:
        errors.extend(_pydantic_errors(e, prefix=where))
    except (ValueError, TypeError, OSError) as e:
        errors.append((where, str(e).removeprefix("Value error, "), "see docs/spec-reference.md"))
    return []


def _short(v: object, n: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= n else text[: n - 3] + "..."


def _pydantic_errors(e: ValidationError, prefix: str = "") -> list[Error]:
    out = []
    for err in e.errors():
        path = prefix
        for p in err["loc"]:
            if isinstance(p, int):
                path += f"[{p}]"
            elif p in _UNION_TAGS or "[" in str(p) or "(" in str(p):
                continue  # a discriminated-union tag or a validator's name, not a key path
            else:
                path += ("." if path else "") + str(p)
        out.append((path, _problem(err), _fix(err)))
    return out


def _problem(err: ErrorDetails) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        return "required key is missing"
    return str(err["msg"]).removeprefix("Value error, ")


def _fix(err: ErrorDetails) -> str:
    t = err["type"]
    if t == "extra_forbidden":
        return "remove it or check its spelling (see docs/spec-reference.md)"
    if t in ("union_tag_invalid", "literal_error"):
        return f"use one of the values listed: {err.get('ctx', {}).get('expected', '')}".rstrip(": ")
    if t == "missing":
        return "add it"
    if t == "union_tag_not_found":
        return "add `type:` (" + ", ".join(sorted(_UNION_TAGS)) + ")"
    return "see docs/spec-reference.md"


def _unique_names(exp: Experiment) -> list[Error]:
    errors = []
    for key in ("devices", "filesystems", "runtimes", "loads", "placement"):
        names = [x.name for x in getattr(exp, key)]
        for n in sorted({n for n in names if names.count(n) > 1}):
            errors.append((key, f"two entries are named {n!r}", "give each a distinct `name:`"))
    return errors


def _dedupe(errors: list[Error]) -> list[Error]:
    seen: set[Error] = set()
    out: list[Error] = []
    for e in errors:
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out
