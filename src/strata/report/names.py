"""Stable file names for figures and short labels for stacks in a figure."""

from __future__ import annotations

import re


def figure_id(kind: str, name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{kind}-{slug}"[:90]


def short_labels(stacks: list[str]) -> dict[str, str]:
    """Drop the stack parts (device/filesystem/runtime/path) that all stacks of a figure share."""
    parts = [s.split("/") for s in stacks]
    if len(parts) < 2 or len({len(p) for p in parts}) != 1:
        return {s: s for s in stacks}
    keep = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    if not keep:
        keep = list(range(len(parts[0])))
    return {s: "/".join(p[i] for i in keep) for s, p in zip(stacks, parts)}
