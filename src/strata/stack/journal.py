"""A journal of every resource strata creates, written before it is created.

Each line is an intent `{"seq", "kind", "data"}` or a release `{"release": seq}`,
fsynced, so after `kill -9` `strata cleanup` can undo exactly what is left.
Each kind's undo action is declared by the plugins that journal it (`Undoing`)
and handed to `cleanup`. Undo actions are idempotent: an intent whose resource
never came into being is harmless to undo. An undo may return a note: what went with a layer
beneath it that was already gone or failing (a volume with its daemon's data
root, a store's files with a file system that fails), so `strata cleanup`
says what was lost instead of hiding it.

`strata cleanup` undoes in reverse creation order, so the users of a
resource go before it (a container before its volume, a volume before its
daemon, a store before the file system that holds it). An undo that fails
is tried once more after all the others: when the layer beneath it was
failing (a remote device whose server died with a killed strata: its file
system shuts down with EIO), undoing that layer is what lets it go, and one
call finishes.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Callable, Mapping, Protocol, TypedDict, runtime_checkable

from strata.core.jsondoc import JsonObject, ShapeError, as_obj, obj, text, whole

UndoFn = Callable[[JsonObject], str | None]  # removes one resource from its journal entry alone; a note
Undos = Mapping[str, UndoFn]  # kind -> its undo action


class Entry(TypedDict):
    """An intent not yet released, as `pending` reads it back: its kind, its data with every update merged."""

    kind: str
    data: JsonObject
    seq: int


@runtime_checkable
class Undoing(Protocol):
    """A plugin whose resources are journaled: the undo action of every kind it (and the machinery it uses)
    journals. `strata cleanup` and an agent collect them from the registries (run/undo.py); no module
    registers one by being imported."""

    undo: Undos


def state_dir() -> Path:
    return Path(os.environ.get("STRATA_STATE_DIR", "/var/lib/strata"))


class Journal:
    """The journal of one run. While the run lives it holds an exclusive lock on `<run>.lock`,
    so that `strata cleanup` sees a live run whatever its process is called."""

    def __init__(self, run_id: str, directory: Path | None = None):
        self.dir = (directory or state_dir()) / "journal"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"{run_id}.jsonl"
        self.lock_path = self.path.with_suffix(".lock")
        self._lock = open(self.lock_path, "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._lock.write(f"{os.getpid()}\n")
        self._lock.flush()
        self._seq = 0
        self._write({"owner_pid": os.getpid(), "started": time.time()})

    def _write(self, entry: dict[str, object]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def intent(self, kind: str, **data: object) -> int:
        self._seq += 1
        self._write({"seq": self._seq, "kind": kind, "data": data})
        return self._seq

    def update(self, seq: int, **data: object) -> None:
        """Add what became known once the resource exists (e.g. the loop device name)."""
        self._write({"update": seq, "data": data})

    def release(self, seq: int) -> None:
        self._write({"release": seq})

    def close(self) -> None:
        """Remove the journal once everything in it was released; let go of the run's lock."""
        if not pending(self.path):
            self.path.unlink(missing_ok=True)
        self.lock_path.unlink(missing_ok=True)
        self._lock.close()


def pending(path: Path) -> list[Entry]:
    """Intents of a journal file not yet released, in creation order."""
    entries: dict[int, Entry] = {}
    for line in path.read_text().splitlines():
        try:
            e = as_obj(json.loads(line), "a journal line")
        except json.JSONDecodeError:
            continue  # a torn last line from a kill -9: the intent before it still counts
        if "seq" in e:
            seq = _seq(e, "seq")
            entries[seq] = {"kind": text(e, "kind"), "data": dict(obj(e, "data")), "seq": seq}
        elif "update" in e and _seq(e, "update") in entries:
            entries[_seq(e, "update")]["data"].update(obj(e, "data"))
        elif "release" in e:
            entries.pop(_seq(e, "release"), None)
    return [entries[k] for k in sorted(entries)]


def _seq(e: JsonObject, key: str) -> int:
    seq = whole(e, key)
    if seq is None:
        raise ShapeError(f"{key!r} should be an integer, not null")
    return seq


def need(data: JsonObject, key: str) -> str:
    """A string member of an entry's data that its undo cannot do without: a KeyError naming it when the entry
    lacks it (an undo never guesses a path), a ShapeError when it holds another type."""
    if data.get(key) is None:
        raise KeyError(key)
    return text(data, key)


def strings(data: JsonObject, key: str, default: list[str] | None = None) -> list[str]:
    """A list of strings of an entry's data (paths, program names); a missing one is `default`, or a KeyError
    naming it when there is none."""
    v = data.get(key)
    if v is None:
        if default is None:
            raise KeyError(key)
        return default
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ShapeError(f"{key!r} should be a list of strings")
    return [x for x in v if isinstance(x, str)]


def live_owner(path: Path) -> int | None:
    """The pid of the live run that holds this journal's lock, or None when no run holds it.
    (A journal without a lock file, from an older strata: its owner pid, if that process lives.)"""
    lock = path.with_suffix(".lock")
    if lock.exists():
        try:
            with open(lock) as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return int(f.read().strip() or 0) or -1
                fcntl.flock(f, fcntl.LOCK_UN)
        except (OSError, ValueError):
            return None
        return None
    try:
        pid = json.loads(path.read_text().splitlines()[0])["owner_pid"]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (IndexError, KeyError, ValueError, OSError):
        return None
    return pid if pid != os.getpid() and b"strata" in cmdline else None


def live_runs(directory: Path | None = None) -> list[tuple[str, int]]:
    """(journal name, pid) of every run whose journal is held by a live process."""
    jdir = (directory or state_dir()) / "journal"
    found = [(p.name, live_owner(p)) for p in sorted(jdir.glob("*.jsonl"))] if jdir.is_dir() else []
    return [(name, pid) for name, pid in found if pid]


def cleanup(
    directory: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
    pattern: str = "*.jsonl",
    *,
    undo: Undos,
) -> int:
    """Undo every unreleased resource of runs that are no longer alive (of the journals named `pattern`) with
    the undo actions `undo` declares; returns the count."""
    jdir = (directory or state_dir()) / "journal"
    if not jdir.is_dir():
        return 0
    undone = 0
    for path in sorted(jdir.glob(pattern)):
        pid = live_owner(path)
        if pid and not force:
            log(
                f"a live strata run (pid {pid}) holds {path.name}: its resources are in use, nothing undone "
                "(stop that run first; --force undoes them anyway)"
            )
            continue
        entries = list(reversed(pending(path)))
        failed = _undo_all(entries, undo, log)
        if failed:  # the layers below are undone now: what failed on them may go
            failed = _undo_all(failed, undo, log, again=True)
        undone += len(entries) - len(failed)
        if failed:
            log(f"kept {path} ({len(failed)} resource(s) left); run `strata cleanup` again once fixed")
        else:
            path.unlink(missing_ok=True)
            if not pid:
                path.with_suffix(".lock").unlink(missing_ok=True)
    for lock in jdir.glob("*.lock"):  # a run killed before it journaled anything
        if not lock.with_suffix(".jsonl").exists() and not live_owner(lock.with_suffix(".jsonl")):
            lock.unlink(missing_ok=True)
    return undone


def _undo_all(entries: list[Entry], undo: Undos, log: Callable[[str], None], again: bool = False) -> list[Entry]:
    """Undo each entry in the given order, going on past failures; the entries that failed."""
    failed = []
    for entry in entries:
        what = " ".join(filter(None, (entry["kind"], _describe(entry["data"]))))
        try:
            if entry["kind"] not in undo:
                raise LookupError(f"no plugin declares the undo action of {entry['kind']}")
            note = undo[entry["kind"]](entry["data"])
        except Exception as e:  # keep going: one stuck resource must not block the others
            failed.append(entry)
            if again:  # what stays: the only "could not undo" a user reads
                log(f"could not undo {what}: {e}")
            else:  # not a failure yet: a layer beneath it often fails until it is undone itself
                log(f"waiting for the resources below {what} ({e}): tried again once they are undone")
            continue
        done = "undid" if not again else "undid (second try, with the resources below it undone)"
        log(f"{done} {what}" + (f": {note}" if note else ""))
    return failed


def _describe(data: JsonObject) -> str:
    return " ".join(f"{k}={v}" for k, v in data.items() if isinstance(v, (str, int)))[:200]
