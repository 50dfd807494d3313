"""Chaos: strata run while a seeded schedule kills a part of it every few seconds (issue 62).

The spec (written here) runs fio and pgbench natively, in Docker (a private dockerd, overlay2) and in
Podman on xfs on a loop device: 3 stacks x 2 workloads x --repetitions rounds of short trials. While it
runs, a schedule drawn from --seed waits 2-6 s, draws a kind of part (weights 1 for strata, 2 for each
other), and kills one of that kind running at that moment (none running: nothing, and it waits again):

- `strata`: the run itself (SIGKILL); then `strata cleanup` and `strata run --resume`, as the README says;
- `dockerd`: the run's private daemon (SIGKILL);
- `container`: the first process of a running container (SIGKILL: the container ends);
- `fio`: a fio process of a trial (SIGKILL; not the plan's `--parse-only` check);
- `server`: a PostgreSQL server of the run (its postmaster, SIGKILL).

Only processes of this run are touched: a part is ours if the strata process, or a container shim or
conmon of this run's workdir or daemon, is among its ancestors.

Each fault's time is matched with the stored trial that was running then (its result file's write time less
its duration_s, or its whole-second started_at..finished_at,
read from every stored attempt, the failed ones kept as `<id>.attempt-K.json`; at the edge of two trials,
the one that failed); the trial must have failed, with the category the fault names: `daemon_died`
(dockerd), `instance_died` (server; also for a container of a pgbench trial, which may hold the server
or a client), `tool_error` (fio; a container of a fio trial). A fault in no trial (between trials, in the run's
own set-up), or at the edge of two that both stood, is counted as `between` and only has to lose nothing.
When a pass has stored every trial, the next one starts a new results directory with the same spec.
When --faults are injected, each results directory gets a last `--resume` without faults.

At the end: trials lost (planned but not stored as ok after the last pass; or a trial stored twice),
faults miscategorised (a failure of another category, or a trial that did not fail), leftovers after one
`strata cleanup` (mounts, loop devices, processes of the workdir, cgroups and run directories, image
copies in /var/tmp),
and what a second cleanup still found. Targets: 0, 0, 0, "nothing left behind".

A failed trial that no fault explains (none within its times: a layer kept dead from a fault between
trials, say) is counted as miscategorised too, but for the trials a stack did not run because its layer
died twice in a row (counted apart: the next pass runs them). The cgroups checked are those this run's journals named
(read every few seconds while it runs), so other runs on the machine are left out of the count.

Injecting stops after --faults, or after --minutes (the pass under way then runs to its end, without faults).

    bench/chaos.py [--faults 100] [--seed 1] [--repetitions 7] [--minutes 120]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import tiny

ROOT = Path(__file__).resolve().parent.parent
STRATA = [str(Path(sys.executable).parent / "strata")]  # the venv's entry point
KINDS = ("strata", "dockerd", "container", "fio", "server")
WEIGHTS = {"strata": 1, "dockerd": 2, "container": 2, "fio": 2, "server": 2}
# what the trial the fault hit must say (a container: by the trial's workload, in judge)
EXPECTED = {
    "dockerd": {"daemon_died"},
    "fio": {"tool_error"},
    "server": {"instance_died"},
}
RUN_ROOT = "/run/strata/"  # where dockerd and podman stores keep their sockets and state
Procs = dict[int, tuple[str, int, str]]  # pid -> (name, ppid, command line)
EDGE_S = 1.0  # the stored times are whole seconds
# A result file is written as its trial ends, and its duration_s is exact: its mtime less duration_s places the
# trial to within the write's delay, where the whole-second times, each widened by EDGE_S, spill a second into
# the trials before and after (seed 7: a dockerd killed 0.1 s after a trial was stored, judged against it).
PRECISE_EDGE_S = 0.25  # before the start only: the write's delay
MAX_PASSES = 200  # a stack that fails whatever happens must not keep the bench going


@dataclass
class Fault:
    t: float
    kind: str
    pid: int
    what: str
    verdict: str = ""  # ok | between | miscategorised: ...


@dataclass
class Campaign:
    out: Path
    faults: list[Fault] = field(default_factory=list)
    passes: int = 0


def spec(workdir: Path, repetitions: int) -> dict[str, Any]:
    return {
        "name": "chaos",
        "workdir": str(workdir),
        "devices": [{"type": "loop", "size": "2GiB"}],
        "filesystems": ["xfs"],
        "runtimes": ["native", "docker:overlay2", "podman:overlay"],
        "paths": ["bind"],
        "workloads": [
            {"fio": {"preset": "rr", "size": "32MiB", "runtime": 3, "ramp_time": 0}},
            {"pgbench": {"scale": 1, "clients": 2, "threads": 1, "runtime": 4, "warmup": 1}},
        ],
        "loads": ["low"],
        "repetitions": repetitions,
    }


# ---- the processes of this run -----------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, rest = s[s.index("(") + 1 : s.rindex(")")], s[s.rindex(")") + 2 :].split()
    return (name, int(rest[1])) if rest[0] != "Z" else None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _procs() -> Procs:
    """pid -> (name, ppid, command line) of every live process."""
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            st = _stat(int(p.name))
            if st:
                out[int(p.name)] = (st[0], st[1], _cmdline(int(p.name)))
    return out


def _ours(pid: int, procs: Procs, roots: set[int], marks: list[str]) -> bool:
    seen = 0
    while pid > 1 and pid in procs and seen < 64:
        if pid in roots or any(m in procs[pid][2] for m in marks):
            return True
        pid, seen = procs[pid][1], seen + 1
    return False


def targets(strata_pid: int | None, workdir: Path) -> dict[str, list[tuple[int, str]]]:
    """Each kind's live parts of this run: (pid, what)."""
    procs = _procs()
    daemons = [p for p, (n, _, c) in procs.items() if n == "dockerd" and str(workdir) in c]
    marks = [str(workdir)] + [
        c.split("unix://", 1)[1].split()[0].rsplit("/", 1)[0] for d in daemons for c in [procs[d][2]] if "unix://" in c
    ]
    roots = {strata_pid} if strata_pid else set()
    found: dict[str, list[tuple[int, str]]] = {k: [] for k in KINDS}
    if strata_pid and strata_pid in procs:
        found["strata"].append((strata_pid, "strata run"))
    found["dockerd"] = [(d, "dockerd") for d in daemons]
    for pid, (name, ppid, _) in procs.items():
        if not _ours(pid, procs, roots, marks):
            continue
        parent = procs.get(ppid, ("", 0, ""))[0]
        if name == "fio" and "--parse-only" not in procs[pid][2]:  # a trial's, not the plan's check
            # fio laying out its files before the barrier (--create_only) is the instance's prepare step
            found["fio"].append((pid, "fio (prepare step)" if "--create_only=1" in procs[pid][2] else "fio"))
        elif name == "postgres" and procs.get(ppid, ("",))[0] != "postgres":
            found["server"].append((pid, "postgres (postmaster)"))
        if parent.startswith("containerd-shim") or parent == "conmon":
            found["container"].append((pid, f"container init {name} (under {parent})"))
    return found


# ---- a pass of strata, and the schedule that kills its parts -------------------------------------------


def strata(args: list[Any], env: dict[str, str], timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(STRATA + [str(a) for a in args], capture_output=True, text=True, env=env, timeout=timeout)


def one_pass(
    c: Campaign,
    spec_file: Path,
    env: dict[str, str],
    workdir: Path,
    rng: random.Random,
    budget: int,
    cgroups: set[str],
    deadline: float = math.inf,
) -> bool:
    """Run (or resume) the campaign while faults come; True when strata was killed."""
    c.passes += 1
    resume = ["--resume"] if (c.out / "trials").exists() else []
    log = open(c.out.with_suffix(f".pass{c.passes}.log"), "w")
    proc = subprocess.Popen(
        STRATA + ["run", str(spec_file), "-o", str(c.out), *resume],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    killed = threading.Event()
    stop = threading.Event()

    state = Path(env["STRATA_STATE_DIR"])

    def schedule() -> None:
        while not stop.is_set():
            census(state, cgroups)
            if len(c.faults) >= budget or time.time() > deadline:
                stop.wait(1)
                continue
            if stop.wait(rng.uniform(2, 6)):
                return
            census(state, cgroups)
            kind = rng.choices(KINDS, [WEIGHTS[k] for k in KINDS])[0]  # drawn first: strata stays 1 in 9
            live = targets(proc.pid, workdir)[kind]
            if not live:
                continue
            pid, what = rng.choice(live)
            t = time.time()
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            c.faults.append(Fault(t, kind, pid, what))
            if kind == "strata":
                killed.set()
                return

    th = threading.Thread(target=schedule, daemon=True)
    th.start()
    proc.wait()
    stop.set()
    th.join()
    log.close()
    return killed.is_set()


# ---- judging -----------------------------------------------------------------------------------------


def _t(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def records(out: Path) -> list[dict[str, Any]]:
    """Every stored attempt: a trial's `<id>.json`, and the failures a resume kept as `<id>.attempt-N.json`
    (a rename: the file keeps the time it was written), each with that time as `_written`."""
    found = []
    for f in sorted((out / "trials").glob("*.json")):
        with open(f) as fh:
            found.append({**json.load(fh), "_written": f.stat().st_mtime})
    return found


def window(r: dict[str, Any]) -> tuple[float, float]:
    """When a stored attempt ran: from its file's write time and its exact duration_s where they agree with its
    whole-second times, else those times widened by EDGE_S."""
    lo, hi = _t(r["started_at"]), _t(r["finished_at"])
    written, took = r.get("_written"), r.get("duration_s")
    if isinstance(written, float) and isinstance(took, (int, float)) and hi <= written < hi + 1 + EDGE_S:
        return written - took - PRECISE_EDGE_S, written  # a fault after the write cannot have changed it
    return lo - EDGE_S, hi + EDGE_S


def stored(out: Path) -> dict[str, dict[str, Any]]:
    """Each trial's current record, `<id>.json`."""
    res = {}
    for f in (out / "trials").glob("*.json"):
        if ".attempt-" not in f.name:
            with open(f) as fh:
                r = json.load(fh)
            res[r["trial_id"]] = r
    return res


def _expected(kind: str, what: str, trial: dict[str, Any]) -> set[str]:
    """The categories a fault of `kind` must give the trial it ended: a container's by the trial's workload,
    not by what the container had started yet (a pgbench trial's may hold its server or a client; a fio trial's,
    its prepare step or its run); a fio killed while it laid out its files, `prepare`."""
    if kind == "container":  # a fio trial's container may die in its prepare step (fio laying out its files)
        return {"instance_died"} if trial["labels"]["workload"].startswith("pgbench") else {"tool_error", "prepare"}
    if kind == "fio" and what.endswith("(prepare step)"):
        return {"prepare"}
    return EXPECTED[kind]


def judge(c: Campaign, since: int) -> None:
    """The faults of the last pass against the trials stored then (before a resume runs them again)."""
    attempts = records(c.out)
    for f in c.faults[since:]:
        if f.kind == "strata":
            f.verdict = "ok"  # its trial is not stored; the resume runs it
            continue
        # a fault ends its trial at once, so its time is near the trial's end: the window is the trial's
        # (`window`); at a boundary of two, the one that failed
        inside = [r for r in attempts if window(r)[0] <= f.t <= window(r)[1]]
        if f.kind == "dockerd":  # a private dockerd serves docker stacks only: one killed as another stack's trial
            # began was the stack before's, being torn down (a trial's time includes building its stack)
            inside = [r for r in inside if r["stack"].split("/")[2].startswith("docker")]
        if len(inside) > 1:
            inside = [r for r in inside if r["status"] != "ok"] or inside
        if len(inside) != 1:
            f.verdict = "between"
            continue
        r = inside[0]
        failed = r["flags"].get("failed") or {}
        want = _expected(f.kind, f.what, r)
        if r["status"] == "ok":
            f.verdict = f"miscategorised: {r['trial_id']} {r['stack']} ok, not {sorted(want)}"
        elif failed.get("category") in want:
            f.verdict = "ok"
        else:
            f.verdict = (
                f"miscategorised: {r['trial_id']} {r['stack']} {failed.get('category')}: "
                f"{str(failed.get('message'))[:160]} (wanted {sorted(want)})"
            )


def unexplained(c: Campaign, since_t: float) -> tuple[list[str], int]:
    """Trials of the last pass that failed with no fault within their times; and how many of those a stack
    stopped after its layer died twice in a row did not run (strata's rule, after two faults: run again)."""
    out, stopped = [], 0
    for r in records(c.out):
        if r["status"] != "failed" or _t(r["started_at"]) < since_t - EDGE_S:
            continue
        lo, hi = _t(r["started_at"]) - EDGE_S, _t(r["finished_at"]) + EDGE_S
        if not any(lo <= f.t <= hi for f in c.faults):
            failed = r["flags"].get("failed") or {}
            if "died twice in a row" in str(failed.get("message")):
                stopped += 1
                continue
            out.append(f"{r['trial_id']} {r['stack']} {failed.get('category')}: {str(failed.get('message'))[:160]}")
    return out, stopped


def census(state: Path, seen: set[str]) -> None:
    """The cgroups and run directories this run's journals name (a daemon's or a store's cgroup parent and run
    directory, a native instance's cgroups), kept while they exist: the journal of a run that ended is gone,
    and another run's cgroups are none of ours."""

    def walk(v: object) -> None:
        if isinstance(v, str) and v.startswith(RUN_ROOT):  # a daemon's or a podman store's run directory
            seen.add(v.rstrip("/"))
        elif isinstance(v, str) and (v.startswith("strata-") or "/sys/fs/cgroup/" in v):
            seen.add(v.rstrip("/").rsplit("/", 1)[-1])
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    for j in (state / "journal").glob("*.jsonl"):
        try:
            lines = j.read_text().splitlines()
        except OSError:
            continue
        for ln in lines:
            try:
                walk(json.loads(ln).get("data"))
            except (ValueError, AttributeError):
                continue


def image_copies() -> set[Path]:
    """containers/image's temporary copies in /var/tmp (a killed `podman load` left its blobs there)."""
    return set(Path("/var/tmp").glob("storage*"))


def leftovers(workdir: Path, cgroups: set[str], copies_before: set[Path]) -> list[str]:
    left = [
        f"mount {ln.split()[1]}"
        for ln in Path("/proc/mounts").read_text().splitlines()
        if str(workdir) in ln.split()[1]
    ]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left += [f"loop {ln}" for ln in loops.splitlines() if str(workdir) in ln]
    procs = _procs()
    left += [f"process {p} {n}: {c[:100]}" for p, (n, _, c) in procs.items() if str(workdir) in c and p != os.getpid()]
    left += [f"cgroup {cg}" for cg in sorted(Path("/sys/fs/cgroup").glob("*/strata*")) if cg.name in cgroups]
    left += [f"run directory {d}" for d in sorted(cgroups) if d.startswith(RUN_ROOT) and Path(d).exists()]
    left += [f"image copy {d}" for d in sorted(image_copies() - copies_before)]
    return left


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--faults", type=int, default=100, help="faults to inject (1 to 1000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repetitions", type=int, default=7, help="rounds of the spec (1 to 20): 6 trials each")
    p.add_argument("--minutes", type=float, default=120, help="stop injecting after this long (1 to 600)")
    p.add_argument("--keep", type=Path, help="keep the results here")
    tiny.add(p)
    a = p.parse_args()
    is_tiny = tiny.apply(a, faults=3, repetitions=1)
    if not 1 <= a.faults <= 1000 or not 1 <= a.repetitions <= 20 or not 1 <= a.minutes <= 600:
        p.error("--faults must be 1 to 1000, --repetitions 1 to 20 and --minutes 1 to 600")
    if os.geteuid() != 0:
        p.error("run as root: strata makes loop devices, file systems and daemons")
    rng = random.Random(a.seed)
    tmp = Path(tempfile.mkdtemp(prefix="strata-chaos-"))
    workdir = Path(f"/var/tmp/strata-chaos-{os.getpid()}")
    env = {**os.environ, "STRATA_STATE_DIR": str(tmp / "state"), "PYTHONPATH": str(ROOT / "src")}
    spec_file = tmp / "chaos.yaml"
    spec_file.write_text(json.dumps(spec(workdir, a.repetitions)))
    base = a.keep or tmp / "results"
    base.mkdir(parents=True, exist_ok=True)
    campaigns = [Campaign(base / "c1")]
    cgroups: set[str] = set()  # named by this run's journals
    copies_before = image_copies()
    t0 = time.time()
    deadline = t0 + 60 * a.minutes
    odd: list[str] = []
    stopped = 0
    while sum(c.passes for c in campaigns) < MAX_PASSES:
        c = campaigns[-1]
        total = sum(len(x.faults) for x in campaigns)
        since, since_t = len(c.faults), time.time()
        killed = one_pass(c, spec_file, env, workdir, rng, a.faults - total + len(c.faults), cgroups, deadline)
        judge(c, since)
        more, n = unexplained(c, since_t)
        odd, stopped = odd + more, stopped + n
        if killed:
            strata(["cleanup"], env)
        total = sum(len(x.faults) for x in campaigns)
        if total >= a.faults or time.time() > deadline:
            break
        runs = list((c.out / "runs").glob("*.json"))
        planned = json.loads(runs[0].read_text())["trials"] if runs else None
        done = stored(c.out)
        if planned is not None and len(done) >= planned and all(r["status"] == "ok" for r in done.values()):
            campaigns.append(Campaign(base / f"c{len(campaigns) + 1}"))
    # the last pass of each campaign, with no faults: every planned trial stored as ok
    lost, twice, planned_all = 0, 0, 0
    for c in campaigns:
        one_pass(c, spec_file, env, workdir, rng, 0, cgroups)  # no fault: the census only
        runs = sorted((c.out / "runs").glob("*.json"))
        planned = json.loads(runs[0].read_text())["trials"]
        planned_all += planned
        done = stored(c.out)
        lost += planned - sum(1 for x in done.values() if x["status"] == "ok")
        ids = [r["trial_id"] for r in records(c.out) if r["status"] == "ok"]
        twice += len(ids) - len(set(ids))  # a trial stored as ok once only, whatever its failed attempts
    first = strata(["cleanup"], env)
    left = leftovers(workdir, cgroups, copies_before)
    with contextlib.suppress(OSError):
        workdir.rmdir()  # the workdir the first pass made (empty once cleaned up)
    second = strata(["cleanup"], env)
    faults = [f for c in campaigns for f in c.faults]
    (base / "faults.json").write_text(
        json.dumps([{**vars(f), "campaign": c.out.name} for c in campaigns for f in c.faults], indent=1)
    )
    bad = [f for f in faults if f.verdict.startswith("miscategorised")]
    print(
        f"chaos: seed {a.seed}, {len(campaigns)} results director(ies), {planned_all} trials planned, "
        f"{sum(c.passes for c in campaigns)} passes, {time.time() - t0:.0f} s"
    )
    print(f"{'fault':>10} {'injected':>9} {'in a trial':>11} {'between':>8} {'miscategorised':>15}")
    for k in KINDS:
        fs = [f for f in faults if f.kind == k]
        print(
            f"{k:>10} {len(fs):>9} {sum(f.verdict == 'ok' for f in fs):>11} "
            f"{sum(f.verdict == 'between' for f in fs):>8} {sum(f in bad for f in fs):>15}"
        )
    print(
        f"faults injected {len(faults)}; trials lost {lost + twice} (target 0; stored twice {twice}); "
        f"miscategorised {len(bad) + len(odd)} (target 0; failures no fault explains: {len(odd)}); "
        f"leftovers {len(left)} (target 0)"
    )
    print(f"trials not run because their stack's layer died twice in a row: {stopped} (run again by the next pass)")
    for f in bad:
        print(f"  {f.kind} ({f.what}) at {f.t:.1f}: {f.verdict}")
    for x in odd:
        print(f"  failed with no fault: {x}")
    for x in left:
        print(f"  left: {x}")
    print(f"  first cleanup: {first.stdout.strip()[-200:]}; second: {second.stdout.strip()[-200:]}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    clean = "nothing left behind" in second.stdout
    return 0 if is_tiny or (not (lost or twice or bad or odd or left) and clean) else 1


if __name__ == "__main__":
    sys.exit(main())
