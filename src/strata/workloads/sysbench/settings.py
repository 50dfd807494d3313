"""A server's settings map: any setting the server knows, as the spec writes it, checked against the server.

Written for the server template (workloads/server/), in the form the PostgreSQL workload's settings map
takes there, so that both can share it: the parameters hold `settings: {NAME: VALUE}` (`values`: at most
MAX_SETTINGS names, each a setting's word, each value one short line of text; YAML's true/false come back
as the server's on/off). Before anything is built the workload's `validate` checks every name against the
server's own list of its settings (`Catalog`: MariaDB's `mariadbd --verbose --help`), refuses those strata
sets itself (`managed`: the address, the data directory, what the spec's own keys set), and checks each
value's shape where the server says its type (a boolean, a number in the server's own notation); every
problem names the setting and the fix (`problems`). What only the server can judge (an enum's words, a
value's bounds) it judges at start: a value it rejects stops it, and its own error line is the trial's
failure. The settings in force are read back from the running server and stored with every trial.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

MAX_SETTINGS = 200
MAX_VALUE_CHARS = 1000
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def settings_field(description: str) -> Any:
    """The `settings` key of a server workload's parameters (validate it with `values`, mode="before")."""
    return Field(default_factory=dict, description=description)


def values(v: Any) -> dict[str, str]:
    """A spec's settings map as text, bounded; a clear error naming the entry otherwise."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError("`settings` is a mapping of a setting's name to its value, e.g. {innodb_io_capacity: 2000}")
    if len(v) > MAX_SETTINGS:
        raise ValueError(f"`settings` holds {len(v)} settings: at most {MAX_SETTINGS}")
    out: dict[str, str] = {}
    for name, value in v.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"`settings`: {str(name)[:70]!r} is not a setting's name (letters, digits and _)")
        out[name] = text(name, value)
    return out


def text(name: str, value: Any) -> str:
    """One setting's value as the server reads it."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        if not value or len(value) > MAX_VALUE_CHARS or any(c in value for c in "\n\r\0"):
            raise ValueError(f"`settings.{name}`: one line of 1 to {MAX_VALUE_CHARS} characters")
        return value
    what = "a list" if isinstance(value, list) else type(value).__name__
    raise ValueError(
        f"`settings.{name}` is {what}: one value per setting (to compare values, write a workload for each)"
    )


@dataclass(frozen=True)
class Known:
    """A setting the server knows: its name and type (bool, int, enum, string)."""

    name: str
    kind: str


@dataclass(frozen=True)
class Catalog:
    """Every setting a server knows, where that list came from (for the message), and the server's notation
    of a boolean and of a number."""

    source: str  # "`mariadbd --verbose --help` (MariaDB 10.11.19)"
    known: dict[str, Known] = field(default_factory=dict)  # by lower-case name
    booleans: frozenset[str] = frozenset({"on", "off", "true", "false", "1", "0"})
    number: re.Pattern[str] = re.compile(r"[-+]?\d+(\.\d+)?")


def problems(settings: dict[str, str], catalog: Catalog | None, managed: dict[str, str], server: str) -> list[str]:
    """Each setting of the map that strata sets itself (`managed`: lower-case name -> how), that the server does
    not know, or whose value is not of its type; each with the fix. `catalog` None: the server's list could
    not be read here, so only `managed` is checked."""
    out = []
    for name, value in settings.items():
        low = name.lower()
        if low in managed:
            out.append(f"`settings.{name}`: {managed[low]}")
            continue
        if catalog is None:
            continue
        known = catalog.known.get(low)
        if known is None:
            close = difflib.get_close_matches(low, list(catalog.known), n=3, cutoff=0.75)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            out.append(
                f"`settings.{name}`: {server} has no setting {name!r}: {hint}{catalog.source} lists every setting it "
                "knows; remove it or correct its name"
            )
        elif known.kind == "bool" and value.strip().lower() not in catalog.booleans:
            words = "/".join(sorted(catalog.booleans))
            out.append(f"`settings.{name}` is a boolean of {server} ({words}), not {value[:40]!r}")
        elif known.kind == "int" and not catalog.number.fullmatch(value.strip()):
            out.append(f"`settings.{name}` is a number of {server}, not {value[:40]!r}")
    return out


def words(settings: dict[str, str]) -> str:
    """The map in a name: `-NAME_VALUE` for each setting, in the spec's order."""
    return "".join(f"-{k}_{re.sub(r'[^A-Za-z0-9.]+', '', v)[:20]}" for k, v in settings.items())
