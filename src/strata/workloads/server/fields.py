"""Parameter pieces every server workload's spec shares: durations, the word `none`, a script of the user's own
(`file:PATH`), a whole number in a raw spec, and the keys whose meaning and bounds are the same for every server
(the sessions of each server, the measured run's length, the warm-up, an offered rate, the seconds a server may
take to come up); each workload words their descriptions in its tool's terms.

The log on a path of its own (logpath.py) and the settings map (settings.py) are the template's too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import Field

from strata.core.jsondoc import JsonObject
from strata.core.params import Layer
from strata.core.units import parse_duration
from strata.workloads.base import spec_file

MAX_RATE = 10_000_000
MAX_SCRIPT_BYTES = 1 << 20  # a script of the user's own: the most strata accepts, and reads, of it
LINE_COMMENT = re.compile(r"--[^\n]*")  # SQL's, and Lua's
MAX_SECONDS = 86400
MiB = 1 << 20
T = TypeVar("T", bound=Layer)


def seconds(v: object) -> int:
    """A `mode="before"` validator for whole seconds: 60, '90s', '2m'."""
    if not isinstance(v, (int, float, str)):
        raise ValueError(f"a duration is a number of seconds or a string like 2m, not {type(v).__name__}")
    return int(parse_duration(v))


def none_word(v: object) -> object:
    """A `mode="before"` validator that reads the word `none` (any case) as None, for optional numbers."""
    return None if isinstance(v, str) and v.strip().lower() == "none" else v


def seconds_or_none(v: object) -> int | None:
    """A `mode="before"` validator for whole seconds that may be none."""
    v = none_word(v)
    return None if v is None else seconds(v)


def whole(value: object, default: int) -> int:
    """A raw spec's whole number (a `smoke` shrinking it), or `default` where it holds none (a sweep, a word)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def named(params: T, default_name: Callable[[T], str]) -> T:
    """The parameters with the workload's default name (what ran, and what differs from the defaults) when the spec
    gave them none (a model validator's, mode="after")."""
    if not params.name:
        object.__setattr__(params, "name", default_name(params))
    return params


def size_word(n: int) -> str:
    """A size in a default name: 128MiB, or bytes when it is no whole number of MiB."""
    return f"{n // MiB}MiB" if n % MiB == 0 else f"{n}B"


def resolve_script(raw: JsonObject, base_dir: Path, key: str, what: str, max_bytes: int | None = None) -> JsonObject:
    """A spec whose `key` says `file:PATH`: the path relative to the spec's folder, checked to be a file (of at
    most `max_bytes`), as the parameters' `file`."""
    raw = dict(raw)
    value = raw.get(key)
    if isinstance(value, str) and value.startswith("file:"):
        raw["file"] = spec_file(value[len("file:") :], base_dir, what, max_bytes, f"{key}: {value}")
    return raw


def writes(path: str | None, words: re.Pattern[str]) -> bool:
    """Does a script of the user's own write? Whether its text, its line comments left out, names one of the
    server's writing SQL `words` (its transactions' log must then reach the device); a file that cannot be read
    does not."""
    try:
        with open(path or "", errors="replace") as f:
            text = f.read(MAX_SCRIPT_BYTES)
    except OSError:
        return False
    return bool(words.search(LINE_COMMENT.sub("", text)))


# The `*_field` helpers return what pydantic's `Field` does (Any, so that a field's default is typed by its
# annotation).


def name_field(default_name: str) -> Any:
    """The trial's name; empty: `named` builds it as `default_name` says."""
    return Field(default="", description=f"default: {default_name}")


def script_field(default: str, description: str) -> Any:
    """The client's script: one of the tool's own or file:PATH (read with `resolve_script`)."""
    return Field(default=default, description=description)


def warmup_field(default: int, more: str = "") -> Any:
    """The seconds of unmeasured transactions before the measured run (validate them with `seconds`)."""
    return Field(
        default=default,
        ge=0,
        le=MAX_SECONDS,
        description=f"seconds of unmeasured transactions before the run, 0 to {MAX_SECONDS}{more}",
    )


def rate_field(description: str, most: int = MAX_RATE) -> Any:
    """The rate the clients offer each server or database, 1 to `most` a second; none: flat out (validate it with
    `none_word`)."""
    return Field(default=None, ge=1, le=most, description=description)


def runtime_field(description: str) -> Any:
    """The seconds of the measured run (validate them with `seconds`)."""
    return Field(default=60, ge=1, le=MAX_SECONDS, description=description)


def clients_field(description: str) -> Any:
    """The database sessions of each server, 1 to 1000."""
    return Field(default=1, ge=1, le=1000, description=description)


def start_timeout_field() -> Any:
    return Field(default=300, ge=10, le=3600, description="seconds a server may take to come up, 10 to 3600")
