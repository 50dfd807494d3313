"""The command a Cassandra node instance runs: a small shell script around the JVM.

The runtime runs it like any instance (natively, in a container), so the node gets the path under
test, the limits, the collectors and the journal of every other instance. The script

- writes the node's cassandra.yaml and logback.xml into its out dir (outside the stack under test),
- waits for its turn when it joins a cluster (`<sync>/start-<k>`: nodes join one after another),
- runs the JVM with its log in `<out>/node.log`,
- kills the JVM (SIGKILL) once the workload writes `<sync>/stop`, and then exits 0: the trial's data
  is thrown away, and Cassandra's graceful shutdown (drain, announcing it to the peers, hints) took 5
  to 11 s per node here, every trial. A node that ends before that exits non-zero with its log's tail
  on stderr, and the workload's `Running.check` ends the trial as `instance_died` (or `oom`).
"""

from __future__ import annotations

import shlex

from strata.workloads.ycsb import cassandra
from strata.workloads.ycsb.cassandra import NodeConfig

STOP_FILE = "stop"
LOG_NAME = "node.log"
EOF_MARK = "STRATA_EOF"
JOIN_RETRIES = 2
# what a joining node says when it lost a race with the cluster's gossip on a busy machine; Cassandra's
# advice for each is to start it again
JOIN_RACES = (
    "Unable to contact any seeds",
    "Other bootstrapping/leaving/moving nodes detected",
    "A node required to move the data consistently is down",
)


def start_file(instance: int) -> str:
    return f"start-{instance}"


def node_script(cfg: NodeConfig, jar_names: list[str], out_dir: str, sync_dir: str, turn: str | None) -> str:
    """The script (for `sh -c`); `cfg.conf_dir` must be `<out_dir>/conf`."""
    files = cassandra.node_files(cfg)
    for text in files.values():
        if EOF_MARK in text:
            raise ValueError(f"a node file contains {EOF_MARK}")
    q = shlex.quote
    out, sync = q(out_dir), q(sync_dir)
    lines = ["set -u", f"mkdir -p {q(cfg.data_dir)} {q(cfg.conf_dir)}"]
    for name, text in files.items():
        lines += [f"cat >{q(cfg.conf_dir + '/' + name)} <<'{EOF_MARK}'", text.rstrip("\n"), EOF_MARK]
    if turn:
        lines.append(f"while [ ! -e {sync}/{turn} ]; do [ -e {sync}/{STOP_FILE} ] && exit 0; sleep 0.1; done")
    lines += [
        f"date +%s.%N >{out}/node.launched",
        "tries=0",
        "while :; do",
        f"{shlex.join(cassandra.node_argv(cfg, jar_names))} >{out}/{LOG_NAME} 2>&1 &",
        "pid=$!",
        f"( while [ ! -e {sync}/{STOP_FILE} ]; do sleep 0.2; done; kill -KILL $pid 2>/dev/null ) &",
        "watcher=$!",
        "wait $pid",
        "rc=$?",
        "kill $watcher 2>/dev/null",
        f"[ -e {sync}/{STOP_FILE} ] && exit 0",
        # a joining node that lost a race with the gossip (no seed answered its shadow round in time, or the
        # node before it still looked bootstrapping) is started again, as Cassandra's own message advises;
        # each attempt's log is kept
        f"if [ $tries -lt {JOIN_RETRIES} ] && grep -qF {' '.join('-e ' + shlex.quote(m) for m in JOIN_RACES)} "
        f"{out}/{LOG_NAME}; then",
        f"  tries=$((tries + 1)); mv {out}/{LOG_NAME} {out}/{LOG_NAME}.failed-$tries; sleep 2; continue",
        "fi",
        "break",
        "done",
        'echo "the Cassandra node exited with code $rc before it was asked to stop; its log ends:" >&2',
        f"tail -c 3000 {out}/{LOG_NAME} >&2",
        "exit $((rc == 0 ? 1 : rc))",
    ]
    return "\n".join(lines) + "\n"
