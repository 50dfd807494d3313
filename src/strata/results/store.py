"""Result files: one JSON per trial, append-only, written atomically (docs/style.md, item 8).

Layout of a results directory:
    runs/<run_id>.json          resolved spec, host facts, skipped combinations, per run
    trials/<trial_id>.json      one result (results/result.py Result; its keys RESULT_FIELDS)
    trials/<trial_id>/          raw artifacts: inst-N/fio.json, series.json, logs
    trials/<trial_id>.attempt-K.json   an earlier failed attempt, kept when resumed
    trials/<trial_id>.earlier-K/       an earlier attempt's raw artifacts (failed or killed), set aside when
                                       the trial runs again; K counts in the order they were set aside

The format's version and history, and the migrations of older results, are in schema.py.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from strata.results.result import Result
from strata.results.schema import SCHEMA_VERSION

STATUSES = ("ok", "failed", "unsupported")
RESULT_FIELDS = (
    "schema_version",
    "trial_id",
    "run_id",
    "experiment",
    "status",
    "stack",
    "labels",
    "trial",
    "started_at",
    "finished_at",
    "duration_s",
    "metrics",
    "flags",
    "warnings",
    "host",
    "stack_facts",
    "collectors",
    "artifacts",
)


def stored_doc(result: Result) -> dict[str, object]:
    """A result as the store writes it: its JSON, with the format's version."""
    return {"schema_version": SCHEMA_VERSION, **result.to_json()}


def atomic_write_json(path: Path, doc: Mapping[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultStore:
    def __init__(self, root: Path | str):
        # absolute: artifact dirs are bind-mounted into containers, which need absolute sources
        self.root = Path(root).resolve()
        self.trials = self.root / "trials"

    def result_path(self, trial_id: str) -> Path:
        return self.trials / f"{trial_id}.json"

    def artifacts_dir(self, trial_id: str) -> Path:
        """The raw artifacts' directory of a new attempt of the trial. What an earlier attempt left there (a
        failed or killed one, run again by --resume) is set aside whole as `<trial_id>.earlier-K/`: a workload
        that reads every log of its directory (pgbench's per-process transaction logs) must not count an
        earlier attempt's, and nothing of that attempt is overwritten."""
        d = self.trials / trial_id
        if d.is_dir() and any(d.iterdir()):
            k = 1
            while (aside := self.trials / f"{trial_id}.earlier-{k}").exists():
                k += 1
            os.replace(d, aside)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def status(self, trial_id: str) -> str | None:
        p = self.result_path(trial_id)
        if not p.exists():
            return None
        try:
            status = json.loads(p.read_text()).get("status")
            return None if status is None else str(status)
        except json.JSONDecodeError:
            return None

    def write(self, result: Result) -> Path:
        """Store a result; an earlier failed attempt is kept beside it, never overwritten."""
        assert result.status in STATUSES, result.status
        path = self.result_path(result.trial_id)
        if path.exists():
            previous = json.loads(path.read_text())
            if previous.get("status") == "ok":
                raise FileExistsError(f"{path} already holds a finished trial; results are never overwritten")
            k = 1
            while (keep := path.with_name(f"{result.trial_id}.attempt-{k}.json")).exists():
                k += 1
            os.replace(path, keep)
        atomic_write_json(path, stored_doc(result))
        return path

    def write_run(self, run_id: str, doc: Mapping[str, object]) -> None:
        atomic_write_json(self.root / "runs" / f"{run_id}.json", {"schema_version": SCHEMA_VERSION, **doc})

    def count(self) -> int:
        return (
            len(list(self.trials.glob("*.json"))) - len(list(self.trials.glob("*.attempt-*.json")))
            if self.trials.exists()
            else 0
        )


def read_bytes(path: str) -> bytes:
    """os.read, not open(): on the VMs strata runs on, buffered open() costs ~150 us per
    small file against ~8 us (measured on 10,000 result files: 2.3 s against 0.08 s)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def results_dirs(root: str) -> list[str]:
    """`root` if it holds trials/, else every directory below it that does (never walking
    into trials/, whose artifact folders hold most of the files)."""
    if os.path.isdir(os.path.join(root, "trials")):
        return [root]
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        if "trials" in dirnames:
            found.append(dirpath)
            dirnames[:] = []
        dirnames.sort()
    return sorted(found)


def load_results(root: Path | str, include_attempts: bool = False) -> list[Result]:
    """Every stored trial result under `root` (a results dir, or a folder of them), migrated, each with the
    `file` it was read from."""
    paths = []
    for d in results_dirs(str(root)):
        trials = os.path.join(d, "trials")
        paths += [
            os.path.join(trials, n)
            for n in sorted(os.listdir(trials))
            if n.endswith(".json") and not n.startswith(".") and (include_attempts or ".attempt-" not in n)
        ]
    # the reads wait in the kernel (GIL released) while this thread parses what has arrived
    with ThreadPoolExecutor(4) as pool, _collector_paused():
        return [_parse(p, data) for p, data in zip(paths, pool.map(read_bytes, paths, chunksize=64))]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsed JSON holds no reference cycles, so the cycle collector has nothing to find in it; left on, it
    walks the growing heap again and again (about 40% of the time to load 10,000 results)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse(path: str, data: bytes) -> Result:
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return Result.from_stored(doc, path)
    except ValueError as e:
        raise ValueError(f"{path} is not a readable result: {e}")


def load_runs(root: Path | str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(Path(root).rglob("runs/*.json"))]
