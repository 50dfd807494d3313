"""The command a server instance runs: a small shell script around the server process.

The runtime runs it like any instance (natively, in a container, in a pod), so the server gets the
path under test, the limits, the collectors and the journal of every other instance. The script

- runs the workload's setup lines (its data directory on the path under test, its config files
  written into the out dir, outside the stack under test; `files` writes them from here documents),
- waits for its turn when servers must start one after another (`<sync>/start-<k>`),
- stamps its launch (`<out>/node.launched`: the seconds to ready count from it),
- runs the server with its log in `<out>/<log>`,
- signals the server (`stop_signal`) once the workload writes `<sync>/stop`, and then exits 0: the
  trial's data is thrown away, so no graceful shutdown is waited for. A server that ends before
  that exits non-zero with its log's tail on stderr, and the workload's `Running.check` ends the
  trial as `instance_died` (or `oom`),
- starts the server again, at most `retries` times, when its log says one of `retry_on` (a race a
  server's own message advises to retry); each attempt's log is kept.
"""

from __future__ import annotations

import shlex

from strata.core.instances import Target

STOP_FILE = "stop"
LOG_NAME = "node.log"
LAUNCHED = "node.launched"
EOF_MARK = "STRATA_EOF"


def sync_of(target: Target) -> str:
    """The directory of the lifecycle's start and stop files: the runtime's, else beside the instance's out dir."""
    return target.sync_dir or f"{target.out_dir}/../sync"


def start_file(instance: int) -> str:
    return f"start-{instance}"


def write_files(files: dict[str, str]) -> list[str]:
    """Shell lines that write each file (path as the instance sees it -> its text) from a here document."""
    lines = []
    for path, text in files.items():
        if EOF_MARK in text:
            raise ValueError(f"a server's file contains {EOF_MARK}")
        lines += [f"cat >{shlex.quote(path)} <<'{EOF_MARK}'", text.rstrip("\n"), EOF_MARK]
    return lines


def server_script(
    *,
    setup: list[str],
    command: str,
    out_dir: str,
    sync_dir: str,
    what: str,
    turn: str | None = None,
    stop_signal: str = "KILL",
    retry_on: tuple[str, ...] = (),
    retries: int = 0,
    log_name: str = LOG_NAME,
) -> str:
    """The script (for `sh -c`). `command`: the server's command line, shell-quoted, run in the
    background so that the script can signal it; `what`: the server in words ("Cassandra node")."""
    q = shlex.quote
    out, sync, log = q(out_dir), q(sync_dir), f"{q(out_dir)}/{log_name}"
    lines = ["set -u", *setup]
    if turn:
        lines.append(f"while [ ! -e {sync}/{turn} ]; do [ -e {sync}/{STOP_FILE} ] && exit 0; sleep 0.1; done")
    lines += [
        f"date +%s.%N >{out}/{LAUNCHED}",
        "tries=0",
        "while :; do",
        f"{command} >{log} 2>&1 &",
        "pid=$!",
        f"( while [ ! -e {sync}/{STOP_FILE} ]; do sleep 0.2; done; kill -{stop_signal} $pid 2>/dev/null ) &",
        "watcher=$!",
        "wait $pid",
        "rc=$?",
        "kill $watcher 2>/dev/null",
        f"[ -e {sync}/{STOP_FILE} ] && exit 0",
    ]
    if retry_on and retries:
        patterns = " ".join("-e " + q(m) for m in retry_on)
        lines += [
            f"if [ $tries -lt {retries} ] && grep -qF {patterns} {log}; then",
            f"  tries=$((tries + 1)); mv {log} {log}.failed-$tries; sleep 2; continue",
            "fi",
        ]
    lines += [
        "break",
        "done",
        f'echo "the {what} exited with code $rc before it was asked to stop; its log ends:" >&2',
        f"tail -c 3000 {log} >&2",
        "exit $((rc == 0 ? 1 : rc))",
    ]
    return "\n".join(lines) + "\n"
