"""A client's own options, passed through as they are: `options: [--name=value, ...]` on a server workload.

Engineers pass options strata has no key for (pgbench's `--progress-timestamp` or `--failures-detailed`,
sysbench's `--skip_trx` or `--range_size`). Each is bounded in shape (a long option, `--name` or `--name=value`,
at most MAX_OPTIONS of them, each at most MAX_CHARS characters) when the spec is read, and before anything is
built its name is checked against the tool's own list (`Known`: the long options its `--help` prints), with the
closest names when it is not there. Those strata sets itself are refused with the key that sets them
(`managed`). The measured run and the warm-up get them, after strata's own; the load does not.
"""

from __future__ import annotations

import difflib
import functools
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

MAX_OPTIONS = 32
MAX_CHARS = 200
HELP_TIMEOUT_S = 30
# a long option as a tool's --help prints it and as the spec writes it: --name, or --name=value
OPTION = re.compile(r"--([A-Za-z][A-Za-z0-9_-]{0,63})(=[^\n]{0,%d})?" % MAX_CHARS)
LISTED = re.compile(r"(?:^|[\s,\[])--([A-Za-z][A-Za-z0-9_-]{0,63})")


def options_field(tool: str, example: str) -> Any:  # what pydantic's Field returns
    """The `options` key of a server workload's parameters (validate it with `values`, mode="before")."""
    return Field(
        default_factory=list,
        description=f"{tool}'s own options for the warm-up and the measured run, as {tool} takes them ({example}); "
        f"at most {MAX_OPTIONS}, each a long option checked against `{tool} --help` before anything is built",
    )


def values(v: object) -> list[str]:
    """The spec's list, each a long option within its bounds (pydantic turns a ValueError into a spec error)."""
    if v is None:
        return []
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list):
        raise ValueError("options is a list of the client's long options, e.g. [--progress-timestamp]")
    if len(v) > MAX_OPTIONS:
        raise ValueError(f"at most {MAX_OPTIONS} options, not {len(v)}")
    out = []
    for item in v:
        if not isinstance(item, str) or not OPTION.fullmatch(item.strip()):
            raise ValueError(
                f"{str(item)[:60]!r} is not a long option: write --name or --name=value "
                f"(a value of at most {MAX_CHARS} characters on one line)"
            )
        out.append(item.strip())
    return out


def words(options: Sequence[str]) -> str:
    """The options in a trial's name: `-o<name>_<value>` each, in the spec's order."""
    return "".join(
        f"-o{name(o)}" + (f"_{re.sub(r'[^A-Za-z0-9.]+', '', o.split('=', 1)[1])[:20]}" if "=" in o else "")
        for o in options
    )


def name(option: str) -> str:
    """The option's name without its dashes and value: "--rand-type=uniform" -> "rand-type"."""
    return option[2:].split("=", 1)[0]


@dataclass(frozen=True)
class Known:
    """The long options a tool's --help lists (`names`), and where they came from, for a message (`source`)."""

    source: str
    names: frozenset[str]


def listed(help_text: str, source: str) -> Known:
    """The long options a --help text lists."""
    return Known(source, frozenset(m.group(1) for m in LISTED.finditer(help_text)))


def union(source: str, *lists: Known | None) -> Known | None:
    """The options of several lists together (a tool's own and its script's); None when one could not be read
    (the tool judges them at run, rather than strata refusing an option from half its list)."""
    read = [k for k in lists if k is not None]
    return Known(source, frozenset().union(*(k.names for k in read))) if len(read) == len(lists) else None


@functools.cache
def read_help(argv: tuple[str, ...], source: str) -> Known | None:
    """`argv`'s --help output as a list of its options, read once a process; None when the tool cannot be run
    here (it judges the options at run)."""
    try:
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=HELP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    known = listed(cp.stdout + cp.stderr, source)
    return known if known.names else None


def problems(options: Sequence[str], known: Known | None, managed: Mapping[str, str], tool: str) -> list[str]:
    """Why each option cannot be passed: one strata sets itself (with the key that sets it), or one the tool's
    own list lacks (with the closest names); none when the tool cannot be asked here."""
    out = []
    for option in options:
        n = name(option)
        if n in managed:
            out.append(f"`{option}`: strata sets {tool}'s --{n} itself ({managed[n]})")
        elif known is not None and n not in known.names:
            close = difflib.get_close_matches(n, sorted(known.names), n=3)
            hint = f" (did you mean {', '.join('--' + c for c in close)}?)" if close else ""
            out.append(f"`{option}`: {tool} has no option --{n}{hint} (checked against {known.source})")
    return out
