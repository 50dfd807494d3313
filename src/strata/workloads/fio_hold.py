"""fio holding itself at the trial's start barrier, after its own start-up (workloads/fio.py `barrier`).

fio's `exec_prerun` runs in each job once its files are open and before its clock starts (fio 3.33's
backend.c, thread_main). There each job runs HOLD: it adds itself to READY_JOBS, the last one writes the
instance's `ready`, and every job waits for `go` and the start it names (core/release.py), as the container
wrapper does. On a loaded host fio's start-up after the release spread 32 instances' first I/O by 1.2 s.
"""

from __future__ import annotations

import shlex

from strata.core import release
from strata.core.instances import Target
from strata.core.params import Load

# $1: go, $2: ready, $3: the instance's jobs
BARRIER_SCRIPT = "fio-barrier.sh"
READY_JOBS = "ready-jobs"  # "$2-jobs": beside the instance's `ready`
HOLD = """echo job >> "$2-jobs"
if [ "$(wc -l < "$2-jobs")" -ge "$3" ]; then date +%s.%N > "$2.tmp" && mv "$2.tmp" "$2"; fi
""" + release.wait_sh('"$1"')


def held(load: Load, target: Target) -> list[str]:
    """fio's options that hold its jobs at the trial's barrier; none without one (a local run, or a guest
    whose agent holds it). The trailing `#` comments out the redirection fio appends to the command
    (`> strata.prerun.txt 2>&1`), which would write a file in fio's working directory."""
    if not target.sync_dir:
        return []
    script = f"{target.out_dir}/{BARRIER_SCRIPT}"
    words = [script, f"{target.sync_dir}/go", f"{target.out_dir}/ready", str(load.numjobs)]
    return [f"--exec_prerun=sh {shlex.join(words)} #"]
