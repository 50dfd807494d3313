"""Seeded mutation fuzzing of the experiment-file validator: it must answer every input with a plan or
SpecErrors naming the problem, never a traceback, a hang or a runaway allocation.

The unit suite runs 1,500 mutants, the examples taken in turn (tests/unit/test_spec_fuzz.py); this
script runs as many as asked, through the whole of `strata validate` but the host checks:

    python3 bench/spec_fuzz.py --mutants 50000 --seed 7
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Iterator

import tiny
import yaml

from strata.core.errors import SpecErrors
from strata.experiment.expand import expand
from strata.experiment.load import load_spec, parse_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GARBAGE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    10**400,
    -(10**30),
    1.5,
    -0.0,
    float("inf"),
    float("nan"),
    "",
    "x",
    "rr",
    "high",
    "loop",
    "xfs",
    "docker:overlay2",
    "1e999",
    "9" * 400,
    "4GiB",
    "-5MiB",
    "0.5k",
    "/dev/sda",
    "../../etc/passwd",
    "\u0000",
    "\u202e",
    "a" * 3000,
    [],
    [1, 2],
    ["low", "high"],
    [[[]]],
    {},
    {"a": 1},
    {"type": {"a": 1}},
    {"preset": ["low"]},
    {"fio": "rr"},
    {"fio": {"file": 5}},
    "tpcb-like",
    "file:/dev/zero",
    {"pgbench": {"script": 5}},
    {"pgbench": {"shared_buffers": "9" * 400, "rate": [0, "none"]}},
]


def examples() -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, yaml.safe_load(p.read_text())) for p in sorted(EXAMPLES.glob("*.yaml"))]


KeyPath = tuple[str | int, ...]  # keys and indexes from the document's root


def _paths(doc: Any, prefix: KeyPath = ()) -> Iterator[KeyPath]:
    """Every (path, container) in a document: where a mutation can land."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _get(doc: Any, path: KeyPath) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _depth(doc: Any) -> int:
    stack, deepest = [(doc, 0)], 0
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    return deepest


def _nested(depth: int) -> list[Any]:
    v: list[Any] = []
    for _ in range(depth):
        v = [v]
    return v


def mutate(doc: Any, rnd: random.Random) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rnd.randint(1, 4)):
        if _depth(doc) > 100:
            break
        paths = list(_paths(doc))
        path = rnd.choice(paths)
        if not path:
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        op = rnd.random()
        if op < 0.45:
            parent[key] = copy.deepcopy(rnd.choice(GARBAGE))
        elif op < 0.55 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.65 and isinstance(parent, dict):
            # a copy: a later mutation inside it must not grow GARBAGE itself (every later mutant then slower)
            parent[rnd.choice(["colour", "type", "name", "file", "size", "preset"])] = copy.deepcopy(
                rnd.choice(GARBAGE)
            )
        elif op < 0.75:
            parent[key] = [copy.deepcopy(parent[key])] * rnd.choice([2, 3, 50, 1000])
        elif op < 0.80:
            parent[key] = _nested(rnd.choice([5, 50, 300]))
        elif op < 0.90 and isinstance(parent[key], str):
            s = parent[key]
            i = rnd.randrange(len(s) + 1)
            parent[key] = s[:i] + rnd.choice(["x", "9" * 30, ":", "-", "[", "\u00e9"]) + s[i:]
        else:
            parent[key] = {rnd.choice(["fio", "filebench", "null", "type"]): copy.deepcopy(parent[key])}
    return doc


def check_one(doc: Any) -> str | None:
    """None if the validator answered properly, else what went wrong."""
    try:
        exp, workloads = parse_spec(doc)
        expand(exp, workloads)
    except SpecErrors as e:
        if not e.errors or not all(isinstance(p, str) and problem for p, problem, _ in e.errors):
            return f"SpecErrors without a key path or a problem: {e.errors}"
    except Exception:
        return traceback.format_exc()
    return None


def mutate_text(text: str, rnd: random.Random) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rnd.randint(1, 8)):
        i = rnd.randrange(len(data))
        data[i] = rnd.randrange(256)
    return bytes(data)


def run(mutants: int, seed: int, tmp: Path | None = None) -> list[tuple[int, str, str]]:
    """(seed, example, failure) for every mutant the validator did not answer properly."""
    rnd = random.Random(seed)
    docs = examples()
    failures = []
    for k in range(mutants):
        name, doc = docs[k % len(docs)]
        s = rnd.randrange(1 << 30)
        problem = check_one(mutate(doc, random.Random(s)))
        if problem is None and tmp is not None and k % 10 == 0:  # the file reader too: bytes, not YAML
            path = tmp / f"m{k}.yaml"
            path.write_bytes(mutate_text((EXAMPLES / name).read_text(), random.Random(s)))
            try:
                load_spec(path)
            except SpecErrors:
                pass
            except Exception:
                problem = traceback.format_exc()
        if problem:
            failures.append((s, name, problem))
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    tiny.add(ap)
    args = ap.parse_args()
    tiny.apply(args, mutants=300)
    import tempfile

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        failures = run(args.mutants, args.seed, Path(tmp))
    by_site: dict[str, list[tuple[int, str]]] = {}
    for s, name, tb in failures:
        by_site.setdefault(tb.strip().splitlines()[-1][:120], []).append((s, name))
    print(f"{args.mutants} mutants in {time.monotonic() - t0:.1f} s: {len(failures)} crashes at {len(by_site)} sites")
    for site, cases in by_site.items():
        print(f"  {site}  ({len(cases)}x, e.g. seed {cases[0][0]} of {cases[0][1]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
