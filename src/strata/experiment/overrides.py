"""Overrides on the command line: `strata run SPEC --set KEY=VALUE` (repeatable), as Helm's `--set`.

KEY is a dotted path into the experiment file as written (`devices.0.size`, `repetitions`, `workloads.0.fio.size`):
a number steps into a list (its length appends), a word into a mapping (a new key is made there). VALUE is read
as YAML (`2GiB`, `3`, `[rr, rw]`, `{type: loop, size: 1GiB}`). The overridden file is then validated as the file
itself is, so a bad key or value is named with its path, as in the file; what is wrong with the override itself
(no `=`, an index beyond the list, a key below a scalar) is named with the `--set` it came from.
"""

from __future__ import annotations

import copy

import yaml

from strata.core.errors import SpecErrors

MAX_OVERRIDES = 100
MAX_KEY_CHARS = 200
MAX_VALUE_CHARS = 10_000
MAX_DEPTH = 16  # the parts of a key
MAX_INDEX = 1000  # a list of the experiment file is a few entries long

Error = tuple[str, str, str]


def parse(item: str) -> tuple[list[str | int], object]:
    """KEY=VALUE as its key's parts (words and list indices) and its value; ValueError says what is wrong."""
    key, eq, text = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise ValueError("is not KEY=VALUE")
    if len(key) > MAX_KEY_CHARS or len(text) > MAX_VALUE_CHARS:
        raise ValueError(f"is longer than {MAX_KEY_CHARS} characters of key or {MAX_VALUE_CHARS} of value")
    words = key.split(".")
    if len(words) > MAX_DEPTH or any(not w for w in words):
        raise ValueError(f"{key!r} is not a dotted key of at most {MAX_DEPTH} parts (devices.0.size)")
    parts: list[str | int] = []
    for w in words:
        if w.isdigit():
            if len(w) > 4 or int(w) > MAX_INDEX:
                raise ValueError(f"list index {w} is beyond {MAX_INDEX}")
            parts.append(int(w))
        else:
            parts.append(w)
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError as e:
        raise ValueError(f"its value is not valid YAML: {str(e).splitlines()[0]}")
    except RecursionError:
        raise ValueError("its value is nested too deeply")
    return parts, value


def apply(raw: object, items: list[str], source: str) -> object:
    """The experiment file's document with every override applied in order, or SpecErrors naming each bad one."""
    if len(items) > MAX_OVERRIDES:
        raise SpecErrors([("", f"{len(items)} --set options", f"give at most {MAX_OVERRIDES}")], source)
    doc = copy.deepcopy(raw)
    errors: list[Error] = []
    for item in items:
        where = f"--set {item[:80]}"
        try:
            parts, value = parse(item)
            doc = _set(doc, parts, value)
        except ValueError as e:
            errors.append((where, str(e), "write --set KEY=VALUE, KEY dotted into the file (devices.0.size=2GiB)"))
    if errors:
        raise SpecErrors(errors, source)
    return doc


def _set(doc: object, parts: list[str | int], value: object) -> object:
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(doc, list) and isinstance(head, int):
        if head > len(doc):
            raise ValueError(f"index {head} is beyond the list's {len(doc)} entr{'y' if len(doc) == 1 else 'ies'}")
        if head == len(doc):
            doc.append(_set(None, rest, value))
        else:
            doc[head] = _set(doc[head], rest, value)
        return doc
    if doc is None:
        doc = {} if isinstance(head, str) else []
        return _set(doc, parts, value)
    if isinstance(doc, dict) and isinstance(head, str):
        doc[head] = _set(doc.get(head), rest, value)
        return doc
    kind = "a list" if isinstance(doc, list) else "a mapping" if isinstance(doc, dict) else f"the value {doc!r}"[:60]
    raise ValueError(f"{head!r} cannot step into {kind}")


def source_of(path: str, items: list[str]) -> str:
    """Where the errors of an overridden file come from, in SpecErrors' heading."""
    return path + (f" with {len(items)} --set override(s)" if items else "")
