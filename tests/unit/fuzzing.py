"""The structural mutation the parsers' fuzz tests share: a JSON document's member dropped or given another type."""

import copy
import random

# Values of every JSON type a reader may not expect: wrong types, and numbers past an int64 or a float
ODD_VALUES = ["x", None, [], {}, -1, -(10**12), 10**30, 2**64, 10**400, 1.5e308, True, False, 0, ""]


def members(v, at=()):
    """(path, in a small container) of every member: a tool's histograms (maps of hundreds of buckets) would
    otherwise take nearly every pick."""
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []
    for k, x in items:
        yield at + (k,), len(v) <= 40
        yield from members(x, at + (k,))


def mutate_members(rng: random.Random, doc, below: int = 0):
    """`doc` (changed in place) with a member dropped or given another type, one to three times; only members
    more than `below` levels down (1: inside each record of a list, never a whole record)."""
    for _ in range(rng.randint(1, 3)):
        small = rng.random() < 0.8
        paths = [p for p, s in members(doc) if len(p) > below and s == small] or [
            p for p, _ in members(doc) if len(p) > below
        ]
        *up, key = rng.choice(paths)
        parent = doc
        for k in up:
            parent = parent[k]
        if rng.random() < 0.3:
            del parent[key]
        else:
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return doc
