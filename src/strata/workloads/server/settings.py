"""A server's settings map: any setting the server knows, as the spec writes it, checked against the server.

A server workload's parameters hold `settings: {NAME: VALUE}` (`settings_field`, validated by `values`):
at most MAX_SETTINGS names, each a setting's word (or `prefix.name`, an extension's own, where the server's
notation allows it), each value one short line of text (YAML's `on`/`off`/`true`/`false` come back as the
server's words for a boolean, numbers as they were written). How a server writes its settings is its
`Notation`: PostgreSQL's is the default; MariaDB's takes no extension's names, writes its booleans ON and OFF,
and its numbers 2000, 4k, 1G. Before anything is built the workload's `validate` checks every name against the
server's own list of its settings (`Catalog`: PostgreSQL's `postgres --describe-config`, MariaDB's `mariadbd
--verbose --help`), refuses those strata sets itself (its port, its log, what the spec's own keys set), and
checks each value's shape where the server says its type (a boolean, a number in its notation); every
problem names the setting and the fix (`problems`). What only the server can judge (an enum's words, a
value's bounds in its unit) it judges at start: a value it rejects stops it, and its own error line is the
trial's failure (lifecycle.wait_ready). The settings the server had in force are read back from it and
stored with every trial (the workload's `server_facts`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from pydantic import Field

from strata.core.jsondoc import JsonObject

MAX_SETTINGS = 200
MAX_VALUE_CHARS = 1000
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?")
BOOLEAN_WORDS = frozenset({"on", "off", "true", "false", "yes", "no", "1", "0", "t", "f", "y", "n"})
NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*([A-Za-z]{1,3})?\s*")


@dataclass(frozen=True)
class Notation:
    """How a server writes its settings: a name (`name`), a boolean (`on_off` as strata writes YAML's, any of
    `booleans` read, `boolean_words` in a message), a number (`number`, `number_words` in a message), whether a
    value may be empty; and a map to show in a message (`example`). The defaults are PostgreSQL's."""

    example: str = "{max_wal_size: 4GB}"
    name: re.Pattern[str] = NAME
    on_off: tuple[str, str] = ("on", "off")
    booleans: frozenset[str] = BOOLEAN_WORDS
    boolean_words: str = "on or off"
    number: re.Pattern[str] = NUMBER
    number_words: str = " (with an optional unit: 30s, 4GB)"
    empty: bool = True


DEFAULT = Notation()


def settings_field(description: str) -> Any:  # what pydantic's Field returns
    """The `settings` key of a server workload's parameters (validate it with `values`, mode="before")."""
    return Field(default_factory=dict, description=description)


def values(v: object, notation: Notation = DEFAULT) -> dict[str, str]:
    """A spec's settings map as text, bounded; a clear error naming the entry otherwise."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"`settings` is a mapping of a setting's name to its value, e.g. {notation.example}")
    if len(v) > MAX_SETTINGS:
        raise ValueError(f"`settings` holds {len(v)} settings: at most {MAX_SETTINGS}")
    out: dict[str, str] = {}
    for name, value in v.items():
        if not isinstance(name, str) or not notation.name.fullmatch(name):
            raise ValueError(f"`settings`: {str(name)[:70]!r} is not a setting's name (letters, digits and _)")
        out[name] = text(name, value, notation)
    return out


def text(name: str, value: object, notation: Notation = DEFAULT) -> str:
    """One setting's value as the server reads it."""
    if isinstance(value, bool):
        return notation.on_off[0] if value else notation.on_off[1]
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        if (not value and not notation.empty) or len(value) > MAX_VALUE_CHARS or any(c in value for c in "\n\r\0"):
            length = f"at most {MAX_VALUE_CHARS}" if notation.empty else f"1 to {MAX_VALUE_CHARS}"
            raise ValueError(f"`settings.{name}`: one line of {length} characters")
        return value
    what = "a list" if isinstance(value, list) else type(value).__name__
    raise ValueError(
        f"`settings.{name}` is {what}: one value per setting (to compare values, write a workload for each)"
    )


@dataclass(frozen=True)
class Known:
    """A setting the server knows: its name and type (bool, int, real, enum, string)."""

    name: str
    kind: str


@dataclass(frozen=True)
class Catalog:
    """Every setting a server knows, and where that list came from (for the message)."""

    source: str  # "`postgres --describe-config` (PostgreSQL 15.10)"
    known: dict[str, Known] = field(default_factory=dict)


@dataclass(frozen=True)
class Rules:
    """What a server brings to its settings map: its own list of settings (`catalog`, read only when a map is
    checked; None: it cannot be read here, and the server judges at start), those strata sets itself (`managed`:
    lower-case name -> how, refused in the map) and how it writes them (`notation`)."""

    catalog: Callable[[], Catalog | None]
    managed: Mapping[str, str]
    notation: Notation = DEFAULT


def problems(
    settings: dict[str, str],
    catalog: Catalog | None,
    managed: Mapping[str, str],
    server: str,
    notation: Notation = DEFAULT,
) -> list[str]:
    """Each setting of the map the server does not know, that strata sets itself (`managed`: name -> how), or
    whose value is not of its type; each with the fix. `catalog` None: the server's list could not be read,
    so only `managed` is checked."""
    out = []
    for name, value in settings.items():
        low = name.lower()
        if low in managed:
            out.append(f"`settings.{name}`: {managed[low]}")
            continue
        if catalog is None or "." in name:  # an extension's own setting: the server takes any such name
            continue
        known = catalog.known.get(low)
        if known is None:
            close = difflib.get_close_matches(low, list(catalog.known), n=3, cutoff=0.75)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            out.append(
                f"`settings.{name}`: {server} has no setting {name!r}: {hint}{catalog.source} lists every setting it "
                "knows; remove it or correct its name"
            )
        elif known.kind == "bool" and value.strip().lower() not in notation.booleans:
            out.append(f"`settings.{name}` is a boolean of {server}: {notation.boolean_words}, not {value[:40]!r}")
        elif known.kind in ("int", "real") and not notation.number.fullmatch(value.strip()):
            out.append(f"`settings.{name}` is a number of {server}{notation.number_words}, not {value[:40]!r}")
    return out


def in_force(settings: dict[str, str], sources: dict[str, str], version: str, size: tuple[str, str]) -> JsonObject:
    """What a started server says of itself, stored with the trial (the workload's `server_facts`): its version (its
    setting `version`), the size of its page or block (`size`: the fact's key, the setting that says it), the
    settings in force and where each value came from."""
    unit = settings.get(size[1], "")
    return {
        "version": settings.get(version),
        size[0]: int(unit) if unit.isdigit() else None,
        "settings": dict(settings),
        "sources": dict(sources),
    }


def words(settings: dict[str, str]) -> str:
    """The map in a name: `-NAME_VALUE` for each setting, in the spec's order."""
    return "".join(f"-{k}_{re.sub(r'[^A-Za-z0-9.]+', '', v)[:20]}" for k, v in settings.items())
