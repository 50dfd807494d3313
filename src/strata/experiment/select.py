"""A part of an experiment by name: `strata run SPEC --only EXPR` (and `validate --only`).

EXPR is a small language like pytest's `-k`, over a trial's labels (device, file system, runtime, path,
workload, load, placement): words joined by `and`, `or` and `not`, with parentheses. A word matches a
trial when it matches one of its labels, or one of a label's parts (the label split at `:`, `/`, `-`,
`_`, `@`, `,` and spaces): `docker` matches the runtime `docker:overlay2`, `rr` the workload `fio-rr`.
`KEY=GLOB` matches one label only (`runtime=docker:*`, `load=high`). Shell globs (`*`, `?`, `[...]`) work
in both, and matching ignores case. The trials' ids do not change, so `--resume` of the whole spec runs
what the part left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from strata.core.errors import StrataError

KEYS = ("device", "filesystem", "runtime", "path", "workload", "load", "placement")
ALIASES = {"fs": "filesystem", "host": "placement"}
MAX_CHARS = 1000  # an expression is a line a user types
MAX_DEPTH = 32  # nested parentheses and `not`s
_PARTS = re.compile(r"[:/\-_@, ]+")
_TOKENS = re.compile(r"\(|\)|[^\s()]+")

Labels = Mapping[str, str]
Match = Callable[[Labels], bool]


def _fail(expr: str, problem: str) -> StrataError:
    return StrataError(
        f"--only {expr!r}: {problem}",
        "write words joined by and, or, not and parentheses, e.g. --only 'xfs and rr and not docker', or KEY=GLOB "
        f"with KEY one of {', '.join(KEYS)} (docs/commands.md)",
    )


@dataclass
class _Parser:
    expr: str
    tokens: list[str]
    at: int = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        tok = self.tokens[self.at]
        self.at += 1
        return tok

    def any_of(self, depth: int) -> Match:
        parts = [self.all_of(depth)]
        while self.peek() == "or":
            self.take()
            parts.append(self.all_of(depth))
        return parts[0] if len(parts) == 1 else lambda labels: any(p(labels) for p in parts)

    def all_of(self, depth: int) -> Match:
        parts = [self.negated(depth)]
        while self.peek() == "and":
            self.take()
            parts.append(self.negated(depth))
        return parts[0] if len(parts) == 1 else lambda labels: all(p(labels) for p in parts)

    def negated(self, depth: int) -> Match:
        if depth > MAX_DEPTH:
            raise _fail(self.expr, f"nested deeper than {MAX_DEPTH} levels")
        if self.peek() == "not":
            self.take()
            inner = self.negated(depth + 1)
            return lambda labels: not inner(labels)
        return self.atom(depth)

    def atom(self, depth: int) -> Match:
        tok = self.peek()
        if tok is None:
            raise _fail(self.expr, "it ends where a word was expected")
        if tok in ("and", "or", ")"):
            raise _fail(self.expr, f"{tok!r} where a word was expected")
        self.take()
        if tok == "(":
            inner = self.any_of(depth + 1)
            if self.peek() != ")":
                raise _fail(self.expr, "a '(' is not closed")
            self.take()
            return inner
        return _term(self.expr, tok)


def _term(expr: str, tok: str) -> Match:
    key, eq, pattern = tok.partition("=")
    if not eq:
        pattern = tok.lower()
        return lambda labels: any(_matches(pattern, v) for v in labels.values())
    key = ALIASES.get(key.lower(), key.lower())
    if key not in KEYS:
        raise _fail(expr, f"{tok!r}: no label {key!r}")
    if not pattern:
        raise _fail(expr, f"{tok!r}: nothing after '='")
    pattern = pattern.lower()
    return lambda labels: _matches(pattern, labels.get(key, ""))


def _matches(pattern: str, value: str) -> bool:
    value = value.lower()
    return bool(value) and (fnmatchcase(value, pattern) or any(fnmatchcase(p, pattern) for p in _PARTS.split(value)))


def parse(expr: str) -> Match:
    """The predicate of EXPR over a trial's labels, or a StrataError that says what is wrong with it."""
    if len(expr) > MAX_CHARS:
        raise _fail(expr[:60] + "...", f"longer than {MAX_CHARS} characters")
    tokens = _TOKENS.findall(expr)
    if not tokens:
        raise _fail(expr, "it is empty")
    p = _Parser(expr, tokens)
    match = p.any_of(0)
    if p.peek() is not None:
        raise _fail(expr, f"{p.peek()!r} where and, or or the end was expected")
    return match


def labels_text(all_labels: list[Labels]) -> str:
    """The labels that exist, per key: what an --only that matched nothing lists."""
    out = []
    for k in KEYS:
        values = sorted({v for labels in all_labels if (v := labels.get(k, ""))})
        if values:
            out.append(f"{k}: {', '.join(values)}")
    return "; ".join(out)
