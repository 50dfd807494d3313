"""The journal: a live run is seen by `strata cleanup` through its lock, whatever its process is called."""

import subprocess
import sys
import time

from strata.stack import journal as jn

HOLD = """
import sys, time
from pathlib import Path
from strata.stack.journal import Journal, undo_action
@undo_action("test-thing")
def _undo(data): Path(data["path"]).unlink(missing_ok=True)
j = Journal("live", Path(sys.argv[1]))
j.intent("test-thing", path=sys.argv[2])
print("READY", flush=True)
time.sleep(60)
"""


def test_cleanup_leaves_a_live_run_alone_and_undoes_it_once_dead(tmp_path):
    thing = tmp_path / "thing"
    thing.write_text("x")

    @jn.undo_action("test-thing")
    def _undo(data):
        from pathlib import Path

        Path(data["path"]).unlink(missing_ok=True)

    # a process whose command line does not say "strata": only the lock can tell it lives
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), str(thing)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY"
        logs = []
        assert jn.live_runs(tmp_path) == [("live.jsonl", p.pid)]
        assert jn.cleanup(tmp_path, log=logs.append) == 0
        assert thing.exists() and any("live strata run" in line and str(p.pid) in line for line in logs)
    finally:
        p.kill()
        p.wait()
    time.sleep(0.1)
    assert jn.live_runs(tmp_path) == []
    assert jn.cleanup(tmp_path, log=lambda _: None) == 1
    assert not thing.exists()
    assert list((tmp_path / "journal").iterdir()) == []


def test_a_closed_journal_leaves_no_lock(tmp_path):
    j = jn.Journal("done", tmp_path)
    j.close()
    assert list((tmp_path / "journal").iterdir()) == []


def test_cleanup_of_one_kind_of_journal_leaves_the_others(tmp_path):
    @jn.undo_action("test-mark")
    def _undo(data):
        from pathlib import Path

        Path(data["path"]).unlink()

    marks = {}
    for run in ("kubernetes-1", "run-2"):
        marks[run] = tmp_path / run
        marks[run].write_text("x")
        j = jn.Journal(run, tmp_path)
        j.intent("test-mark", path=str(marks[run]))
        j._lock.close()  # its process "died": the lock is free
        j.lock_path.unlink()
    assert jn.cleanup(tmp_path, log=lambda _: None, pattern="kubernetes-*.jsonl") == 1
    assert not marks["kubernetes-1"].exists() and marks["run-2"].exists()
    assert [p.name for p in (tmp_path / "journal").glob("*.jsonl")] == ["run-2.jsonl"]
