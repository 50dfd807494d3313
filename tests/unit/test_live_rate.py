"""The live rate of the progress line (workloads/live.py, run/progress.py): read from captured outputs of
fio 3.33 (`--eta=always`), pgbench 15 and sysbench 1.0.20, redrawn on a terminal only."""

import io
import os
import random
import shutil
import time
from pathlib import Path

from strata.run.progress import Progress
from strata.workloads import REGISTRY, live
from strata.workloads.base import LiveRate

DATA = Path(__file__).resolve().parents[1] / "data"


def _trial(tmp: Path, *files: tuple[str, Path]) -> Path:
    for rel, src in files:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp / rel)
    return tmp


def test_fio_status_lines_of_every_instance_are_added(tmp_path):
    one = DATA / "fio" / "3.33" / "status-randread.stdout"
    mixed = DATA / "fio" / "3.33" / "status-randrw-2jobs.stdout"
    d = _trial(tmp_path, ("inst-0/stdout", one))
    assert REGISTRY["fio"].live_rate(d) == "25.6k IOPS, 99.9 MiB/s"  # its last line: [r=99.9MiB/s][r=25.6k IOPS]
    _trial(tmp_path, ("inst-1/stdout", mixed))  # [r=88.5MiB/s,w=89.7MiB/s][r=22.7k,w=23.0k IOPS]
    assert REGISTRY["fio"].live_rate(d) == "71.3k IOPS, 278.1 MiB/s (2 instances)"


def test_a_stale_or_missing_file_says_nothing(tmp_path):
    d = _trial(tmp_path, ("inst-0/stdout", DATA / "fio" / "3.33" / "status-randread.stdout"))
    old = time.time() - 60
    os.utime(d / "inst-0" / "stdout", (old, old))
    assert REGISTRY["fio"].live_rate(d) is None
    assert REGISTRY["fio"].live_rate(tmp_path / "none") is None


def test_the_databases_per_second_lines(tmp_path):
    d = _trial(
        tmp_path,
        ("run/server-0/stderr.txt", DATA / "pgbench" / "15" / "tpcb" / "stderr.txt"),
    )
    last = [x for x in (d / "run/server-0/stderr.txt").read_text().splitlines() if x.startswith("progress:")][-1]
    assert REGISTRY["pgbench"].live_rate(d) == f"{float(last.split(', ')[1].split()[0]):,.0f} tps"
    s = tmp_path / "sys"
    s.mkdir()
    lines = (DATA / "sysbench" / "1.0.20" / "read_write" / "stdout.txt").read_text().splitlines()
    per_second = [x for x in lines if "] thds:" in x]
    for k in (0, 1):  # two servers' clients, each cut after its per-second lines (as while it runs)
        (s / f"run/server-{k}").mkdir(parents=True)
        (s / f"run/server-{k}/stderr.txt").write_text("\n".join(per_second) + "\n")
    tps = float(per_second[-1].split("tps: ")[1].split()[0])
    assert REGISTRY["sysbench"].live_rate(s) == f"{2 * tps:,.0f} tps (2 clients)"


def test_which_workloads_say_a_live_rate():
    assert {n for n, p in REGISTRY.items() if isinstance(p, LiveRate)} == {"fio", "pgbench", "sysbench"}


def test_fuzz_the_readers_never_raise(tmp_path):
    rng = random.Random(59)
    src = [(DATA / "fio" / "3.33" / "status-randrw-2jobs.stdout").read_bytes(),
           (DATA / "pgbench" / "15" / "tpcb" / "stderr.txt").read_bytes()]  # fmt: skip
    f = tmp_path / "inst-0" / "stdout"
    f.parent.mkdir()
    for _ in range(2000):
        b = bytearray(rng.choice(src))
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i : i + rng.randint(0, 9)] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 4)))
        f.write_bytes(bytes(b))
        r = live.fio_rate([f])
        assert r is None or "IOPS" in r
        t = live.tps_rate([f], live._PGBENCH)
        assert t is None or t.endswith("tps")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_the_rate_on_a_terminal_only():
    tty = _Tty()
    p = Progress(1, [1.0], stream=tty)
    p.start("loop/xfs/native/bind rr low #0", lambda: "25.6k IOPS, 99.9 MiB/s")
    time.sleep(2.5)
    p.note("a warning")
    p._stop_live()
    out = tty.getvalue()
    assert "loop/xfs/native/bind rr low #0  | now 25.6k IOPS, 99.9 MiB/s" in out and "a warning\n" in out
    pipe = io.StringIO()
    p = Progress(1, [1.0], stream=pipe)
    p.start("t", lambda: "1 IOPS")
    time.sleep(1.5)
    p._stop_live()
    assert "now" not in pipe.getvalue() and p.live_thread is None


def test_a_failing_rate_does_not_stop_the_line():
    tty = _Tty()
    p = Progress(1, [1.0], stream=tty)
    p.start("t", lambda: 1 / 0)  # type: ignore[arg-type,return-value]
    time.sleep(1.5)
    p._stop_live()
    assert "now" not in tty.getvalue()
