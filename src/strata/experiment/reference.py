"""Generate the spec reference (docs/spec-reference.md) from the typed models.

The models are the one source of truth (docs/style.md); a unit test fails when
the committed reference is out of date: `python -m strata.experiment.reference`.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from strata.core.params import PATHS, Limits, Load, path_word
from strata.experiment import model
from strata.experiment.hosts import HostSpec, Placement, SwarmSpec
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.filesystems import FilesystemParams
from strata.stack.precondition import Precondition, Steady
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS


def sections() -> list[tuple[str, type[BaseModel]]]:
    return (
        [("Experiment (the top level of a spec file)", model.Experiment)]
        + [(f"devices: `type: {name}`", p.params) for name, p in DEVICES.items()]
        + [("devices: precondition (loop, zram, block)", Precondition), ("devices: precondition.steady", Steady)]
        + [("filesystems", FilesystemParams)]
        + [(f"runtimes: `type: {name}`", p.params) for name, p in RUNTIMES.items()]
        + [("loads", Load), ("loads: limits (per container)", Limits), ("exclude (each entry)", model.Exclude)]
        + [("hosts (each host)", HostSpec), ("placement (each entry)", Placement), ("swarm", SwarmSpec)]
    )


HEADER = """# Spec reference

Generated from the code by `python -m strata.experiment.reference`; do not edit by hand.

Shorthands: a device may be written `loop`, `zram` or `/dev/sdX`; a file system
`xfs`; a runtime `native`, `docker` (= `docker:overlay2`), `docker:DRIVER` or
`docker:system`; a load `low` (1 job x QD1) or `high` (32 jobs x QD32), or
`{preset: high, containers: 3}`; a workload `rr` (= `{fio: {preset: rr}}`).
A list as the value of a workload or load key is a sweep: one entry per value
(`bs: [4k, 16k, 64k]`). Sizes accept `4096`, `128k`, `512MiB`, `4GiB` (binary).
The experiment is the product of devices x filesystems x runtimes x paths x
workloads x loads x repetitions; impossible combinations are skipped with the
reason (`strata validate` lists them).
"""


def _type_name(ann: object) -> str:
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(ann))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(a) for a in typing.get_args(ann) if a is not type(None))
    if origin is list:
        return f"list of {_type_name(typing.get_args(ann)[0])}"
    if origin is dict:
        return "mapping"
    if origin is typing.Annotated:
        return _type_name(typing.get_args(ann)[0])
    return getattr(ann, "__name__", str(ann)).replace("typing.", "")


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        v = field.get_default(call_default_factory=True)
        return f"`{v.model_dump() if isinstance(v, BaseModel) else v}`"
    if isinstance(field.default, list) and field.default and isinstance(field.default[0], BaseModel):
        return "`[" + ", ".join(getattr(x, "name", "?") for x in field.default) + "]`"
    return f"`{field.default}`" if field.default not in (None, "") else "-"


def section(title: str, cls: type[BaseModel]) -> str:
    lines = [
        f"## {title}",
        "",
        (cls.__doc__ or "").strip().split("\n")[0],
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, f in cls.model_fields.items():
        lines.append(f"| `{name}` | {_type_name(f.annotation)} | {_default(f)} | {f.description or ''} |")
    return "\n".join(lines) + "\n"


def generate() -> str:
    parts = [HEADER]
    parts += [section(t, c) for t, c in sections()]
    parts.append(
        "## paths\n\nOne of "
        + ", ".join(f"`{path_word(p)}`" for p in PATHS)
        + ": `layer` = the container's writable layer (storage driver), `volume` = a named Docker volume per "
        "container, `bind` = a directory of the file system under test (natively: the mount point), `tmpfs` = "
        "memory (measures RAM, always flagged), `device` = the block device itself (raw only), `image` = a "
        "VM's data disk as a file on the file system under test; for pods: `hostpath` = a directory of the file "
        "system under test, `local` = the same as a `local` PersistentVolume and its claim, `emptydir` = the "
        "kubelet's directory (on strata's test bed: on the file system under test), `pvc:CLASS` = a claim of the "
        "StorageClass CLASS, provisioned by the cluster on its own storage, `pvc-block:CLASS` = a claim of the "
        "StorageClass CLASS with volumeMode Block, handed to the pod as a block device (a workload that needs a "
        "directory is refused on it, as on `device`). Each runtime provides some of them: "
        + "; ".join(f"{n}: {', '.join(p.paths)}" for n, p in RUNTIMES.items())
        + ".\n"
    )
    for name, plugin in WORKLOADS.items():
        parts.append(section(f"workloads: `{name}`", plugin.params))
    return "\n".join(parts)


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m strata.experiment.reference", description=__doc__)
    ap.add_argument("out", nargs="?", default="docs/spec-reference.md", help="where to write the reference")
    out = Path(ap.parse_args().out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(generate())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
