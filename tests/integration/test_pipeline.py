"""strata in a pipeline, on the real thing (issue 59): a part of examples/quick.yaml by name under a
pseudo-terminal, whose progress line shows fio's running IOPS; `--resume` of the whole spec runs the rest;
the overrides stored; `show --json` of the run and `compare --fail-on` of the run against itself."""

import json
import os
import pty
import select
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.coverage import covers

from .helpers import leftovers, results, strata

pytestmark = pytest.mark.integration

QUICK = Path(__file__).resolve().parents[2] / "examples" / "quick.yaml"


def _under_a_terminal(argv: list[str], env: dict, timeout_s: float) -> tuple[int, str]:
    """Run argv with its stderr (the progress line) on a pseudo-terminal; (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    got = bytearray()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed: strata ended
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    try:
        rc = p.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    return rc, got.decode(errors="replace")


@covers(
    "device:loop",
    "filesystem:raw",
    "filesystem:xfs",
    "filesystem:ext4",
    "runtime:native",
    "runtime:docker",
    "runtime:docker:overlay2",
    "path:native/device",
    "path:native/bind",
    "path:docker/volume",
    "path:docker/bind",
    "workload:fio",
    "workload:fio@native",
    "workload:fio@docker",
    "command:run",
    "command:show",
    "command:compare",
)
def test_a_part_by_name_then_the_rest_by_resume(tmp_path):
    workdir = Path(f"/var/tmp/strata-it-{uuid.uuid4().hex[:8]}")
    env = {**os.environ, "STRATA_STATE_DIR": str(tmp_path / "state")}
    out = tmp_path / "out"
    sets = [
        f"workdir={workdir}",
        "devices.0.size=1GiB",
        "repetitions=1",
        "workloads.0.fio.size=64MiB",
        "workloads.0.fio.runtime=4",
        "workloads.0.fio.ramp_time=0",
    ]
    args = [str(QUICK), "-o", str(out), *(x for s in sets for x in ("--set", s))]
    try:
        argv = [sys.executable, "-m", "strata.cli.main", "run", *args, "--only", "xfs and rr and not docker"]
        rc, term = _under_a_terminal(argv, env, 900)
        assert rc == 0, term[-3000:]
        part = results(out)
        assert sorted(r["labels"]["load"] for r in part) == ["high", "low"]
        assert {(r["labels"]["filesystem"], r["labels"]["runtime"], r["labels"]["workload"]) for r in part} == {
            ("xfs", "native", "rr")
        }
        # the progress line, redrawn while fio ran: its IOPS from fio's own status line
        assert " | now " in term and " IOPS, " in term, term[-3000:]
        run = json.loads(next((out / "runs").glob("*.json")).read_text())
        assert run["invocation"] == {"set": sets, "only": "xfs and rr and not docker"}
        assert run["spec"]["repetitions"] == 1 and run["spec"]["devices"][0]["size"] == 1 << 30

        whole = strata("run", *args, "--resume", env=env, check=0, timeout=1800)
        assert "2 already stored" in whole.stdout
        rs = results(out)
        assert len(rs) == 20 and all(r["status"] == "ok" for r in rs), [r["flags"].get("failed") for r in rs]
        assert {r["trial_id"] for r in part} < {r["trial_id"] for r in rs}
    finally:
        strata("cleanup", "--force", env=env)
    assert leftovers(workdir) == []

    shown = json.loads(strata("show", "--json", out, check=0).stdout)
    assert len(shown["rows"]) == 20 and all(r["values"]["IOPS"] > 0 for r in shown["rows"])
    # one repetition each: no interval, so nothing is decided worse, and only `undecided` fails
    assert strata("compare", out, out, "--fail-on", "worse").returncode == 0
    assert strata("compare", out, out, "--fail-on", "undecided").returncode == 1
