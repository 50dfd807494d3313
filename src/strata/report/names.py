"""Stable file names for figures, short labels for stacks in a figure, and what the labels leave out.

A figure's rows or bars name what differs between them; what is the same for all of them goes into its
title, so no figure shows "bind, volume" without saying which runtime and file system (issue 25)."""

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


PARTS = ("device", "file system", "runtime", "path")


def shared(stacks: list[str]) -> str:
    """The stack parts every stack of a figure has in common, named ("file system xfs, runtime
    docker:overlay2"): the ones short_labels drops. Empty when the labels keep every part."""
    parts = [s.split("/") for s in stacks]
    if len(set(stacks)) < 2 or len({len(p) for p in parts}) != 1 or len(parts[0]) != len(PARTS):
        return ""
    same = [i for i in range(len(PARTS)) if len({p[i] for p in parts}) == 1]
    if len(same) == len(PARTS):
        return ""
    return ", ".join(f"{PARTS[i]} {parts[0][i]}" for i in same)


def row_labels(stacks: list[str]) -> tuple[dict[str, str], str]:
    """Labels for rows that also name their load, and what the title must add. With one stack the rows
    name only their loads and the title names the whole stack ("device loop, file system ext4, runtime
    docker:overlay2, path layer"), instead of repeating it on every row."""
    unique = sorted(set(stacks))
    parts = unique[0].split("/") if len(unique) == 1 else []
    if len(parts) == len(PARTS):
        return {unique[0]: ""}, ", ".join(f"{PARTS[i]} {parts[i]}" for i in range(len(PARTS)))
    return short_labels(unique), shared(unique)


def row_label(stack_label: str, load: str, n: int) -> str:
    """A compared row's label: its stack's label and load, and why it has no interval when it has none."""
    label = f"{stack_label} {load}".strip()
    return label if n >= 2 else f"{label} (1 repetition: no interval)"


def titled(title: str, common: str) -> str:
    return f"{title} ({common})" if common else title


def with_shared(title: str, stacks: list[str]) -> str:
    """The title, with what its rows have in common when the rows' labels leave it out."""
    common = shared(stacks)
    return f"{title} ({common})" if common else title
