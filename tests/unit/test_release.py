"""The start barrier's release: `go` names a start a lead ahead; waiters in sh start then, together."""

import subprocess
import time

from strata.core import release


def _waiters(go, n):
    script = release.wait_sh(str(go)) + "date +%s.%N\n"
    return [subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(n)]


def test_waiters_start_at_the_named_time_not_when_they_saw_it(tmp_path):
    waiters = _waiters(tmp_path / "go", 6)
    time.sleep(0.3)  # all polling
    at = release.release(tmp_path, lead_s=0.6)
    starts = [float(p.communicate(timeout=10)[0]) for p in waiters]
    # none before the named start, though each saw the file about half a second earlier; the upper bound only
    # keeps a busy machine's late wake-up (timing belongs to bench/barrier_release.py)
    assert all(at - 0.01 <= s < at + 1.0 for s in starts), (at, starts)
    assert not (tmp_path / "go.tmp").exists()


def test_a_go_without_a_start_releases_at_once(tmp_path):
    for text in ("", "1.5\n", "garbage"):
        (tmp_path / "go").write_text(text)
        cp = subprocess.run(
            ["sh", "-c", release.wait_sh(str(tmp_path / "go")) + "echo started"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert (cp.returncode, cp.stdout, cp.stderr) == (0, "started\n", "")


def test_a_past_start_releases_at_once(tmp_path):
    (tmp_path / "go").write_text(f"{int((time.time() - 5) * 1e9)}\n")
    t = time.time()
    cp = subprocess.run(
        ["sh", "-c", release.wait_sh(str(tmp_path / "go")) + "echo started"], capture_output=True, text=True, timeout=10
    )
    assert cp.stdout == "started\n" and time.time() - t < 1.0


def test_sleep_until_a_past_time_returns(monkeypatch):
    slept = []
    monkeypatch.setattr(release.time, "sleep", slept.append)
    release.sleep_until(time.time() - 1)
    assert slept == [0.0]
