"""Read a spec file into an Experiment, collecting every error at once.

Shorthands are normalized first (`xfs`, `docker:btrfs`, `high`, `{fio: {...}}`),
list-valued workload and load parameters are expanded into one entry per value
(a sweep), then pydantic validates and each workload plugin validates its own
parameters. Nothing here looks at the host (that is resolve, in plan.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from strata.errors import SpecErrors
from strata.spec.model import LOAD_PRESETS, Experiment
from strata.workloads import REGISTRY as WORKLOADS

# Keys whose value is a list by nature, never a sweep.
_LIST_KEYS = {"mount_options", "mkfs_options", "set"}


def load_spec(path: str | Path) -> tuple[Experiment, list[BaseModel]]:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SpecErrors([("", f"no spec file at {path}", "give the path of a YAML spec, e.g. examples/quick.yaml")], str(path))
    except yaml.YAMLError as e:
        raise SpecErrors([("", f"not valid YAML: {e}", "fix the YAML syntax at the line shown")], str(path))
    return parse_spec(raw, base_dir=path.parent, source=str(path))


def parse_spec(raw: Any, base_dir: Path = Path("."), source: str = "spec") -> tuple[Experiment, list[BaseModel]]:
    if not isinstance(raw, dict):
        raise SpecErrors([("", "a spec is a YAML mapping", "start from examples/quick.yaml")], source)
    errors: list[tuple[str, str, str]] = []
    doc = dict(raw)
    for key, norm in (("devices", _device), ("filesystems", _filesystem), ("runtimes", _runtime)):
        if key in doc:
            doc[key] = [norm(x) for x in _as_list(doc[key])]
    if "paths" in doc:
        doc["paths"] = _as_list(doc["paths"])
    if "loads" in doc:
        loads = []
        for i, x in enumerate(_as_list(doc["loads"])):
            preset = x if isinstance(x, str) else (x.get("preset") if isinstance(x, dict) else None)
            if preset is not None and preset not in LOAD_PRESETS:
                errors.append((f"loads[{i}]", f"unknown load preset {preset!r}", f"use one of: {', '.join(LOAD_PRESETS)}, or numjobs/iodepth"))
                continue
            loads += _sweep(_load(x))
        doc["loads"] = loads
    workloads_raw = [e for x in _as_list(doc.get("workloads", [])) for e in _sweep(_workload(x))]
    doc["workloads"] = workloads_raw
    exp = None
    try:
        exp = Experiment.model_validate(doc)
    except ValidationError as e:
        errors += _pydantic_errors(e, doc)
    workloads = []
    for i, w in enumerate(workloads_raw):
        kind = w.get("type") if isinstance(w, dict) else None
        plugin = WORKLOADS.get(kind)
        if plugin is None:
            errors.append((f"workloads[{i}]", f"unknown workload {kind!r}", f"use one of: {', '.join(WORKLOADS)}"))
            continue
        try:
            workloads.append(plugin.parse_spec(w, base_dir))
        except ValidationError as e:
            errors += _pydantic_errors(e, w, prefix=f"workloads[{i}]")
        except ValueError as e:
            errors.append((f"workloads[{i}]", str(e), "see the workload reference in the README"))
    if exp is not None:
        errors += _unique_names(exp)
    if errors:
        raise SpecErrors(_dedupe(errors), source)
    return exp, workloads


def _as_list(v):
    return v if isinstance(v, list) else [v]


def _device(x):
    if isinstance(x, str):
        if x.startswith("/dev/") or x.startswith("block:"):
            return {"type": "block", "path": x.removeprefix("block:")}
        return {"type": x}
    return x


def _filesystem(x):
    return {"type": x} if isinstance(x, str) else x


def _runtime(x):
    if isinstance(x, str):
        kind, _, driver = x.partition(":")
        return {"type": kind, **({"storage_driver": driver} if driver else {})}
    return x


def _load(x):
    if isinstance(x, str):
        return {"name": x, **LOAD_PRESETS[x]}
    if isinstance(x, dict) and "preset" in x and x["preset"] in LOAD_PRESETS:
        x = dict(x)
        p = x.pop("preset")
        return {"name": p, **LOAD_PRESETS[p], **x}
    return x


def _workload(x):
    """`rr` -> fio preset; `{fio: {...}}` -> `{type: fio, ...}`."""
    if isinstance(x, str):
        return {"type": "fio", "preset": x}
    if isinstance(x, dict) and len(x) == 1 and next(iter(x)) in WORKLOADS:
        (kind, params), = x.items()
        return {"type": kind, **(params or {})}
    return x


def _sweep(entry):
    """{bs: [4k, 64k], rw: randread} -> two entries; the swept keys go into the name."""
    if not isinstance(entry, dict):
        return [entry]
    keys = [k for k, v in entry.items() if isinstance(v, list) and k not in _LIST_KEYS]
    if not keys:
        return [entry]
    out = []
    for values in itertools.product(*(entry[k] for k in keys)):
        e = dict(entry)
        e.update(zip(keys, values))
        if e.get("name"):
            e["name"] = e["name"] + "".join(f"-{k}{v}" for k, v in zip(keys, values))
        out.append(e)
    return out


# Parts of pydantic's error locations that name a union member, not a key of the spec.
_UNION_TAGS = {"loop", "zram", "block"}


def _pydantic_errors(e: ValidationError, doc, prefix: str = "") -> list[tuple[str, str, str]]:
    out = []
    for err in e.errors():
        path = prefix
        for p in err["loc"]:
            if isinstance(p, int):
                path += f"[{p}]"
            elif p in _UNION_TAGS or "[" in p or "(" in p:
                continue  # a discriminated-union tag or a validator's name, not a key path
            else:
                path += ("." if path else "") + str(p)
        out.append((path, _problem(err), _fix(err, doc)))
    return out


def _problem(err) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        return "required key is missing"
    return err["msg"].removeprefix("Value error, ")


def _fix(err, doc) -> str:
    t = err["type"]
    if t == "extra_forbidden":
        return "remove it or check its spelling (see the spec reference in the README)"
    if t == "union_tag_invalid" or t == "literal_error":
        return f"use one of the values listed: {err.get('ctx', {}).get('expected', '')}".rstrip(": ")
    if t == "missing":
        return "add it"
    if t == "union_tag_not_found":
        return "add `type:` (loop, zram or block)"
    return "see the spec reference in the README"


def _unique_names(exp: Experiment) -> list[tuple[str, str, str]]:
    errors = []
    for key in ("devices", "filesystems", "runtimes", "loads"):
        names = [x.name for x in getattr(exp, key)]
        for n in sorted({n for n in names if names.count(n) > 1}):
            errors.append((key, f"two entries are named {n!r}", "give each a distinct `name:`"))
    return errors


def _dedupe(errors):
    seen, out = set(), []
    for e in errors:
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out
