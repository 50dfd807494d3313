"""The command a Cassandra node instance runs: the server template's script around the JVM.

The script (workloads/server/script.py) writes the node's cassandra.yaml and logback.xml into its
out dir (outside the stack under test), waits for its turn when it joins a cluster
(`<sync>/start-<k>`: nodes join one after another), runs the JVM with its log in `<out>/node.log`,
and kills the JVM (SIGKILL) once the workload writes `<sync>/stop`: the trial's data is thrown
away, and Cassandra's graceful shutdown (drain, announcing it to the peers, hints) took 5 to 11 s
per node here, every trial. A joining node that lost a race with the cluster's gossip on a busy
machine is started again, as Cassandra's own message advises.
"""

from __future__ import annotations

import shlex

from strata.workloads.server.script import EOF_MARK, LOG_NAME, STOP_FILE, server_script, start_file, write_files
from strata.workloads.ycsb import cassandra
from strata.workloads.ycsb.cassandra import NodeConfig

JOIN_RETRIES = 2
# what a joining node says when it lost a race with the cluster's gossip on a busy machine; Cassandra's
# advice for each is to start it again
JOIN_RACES = (
    "Unable to contact any seeds",
    "Other bootstrapping/leaving/moving nodes detected",
    "A node required to move the data consistently is down",
)

__all__ = ["EOF_MARK", "LOG_NAME", "STOP_FILE", "node_script", "start_file"]


def node_script(cfg: NodeConfig, jar_names: list[str], out_dir: str, sync_dir: str, turn: str | None) -> str:
    """The script (for `sh -c`); `cfg.conf_dir` must be `<out_dir>/conf`."""
    files = {f"{cfg.conf_dir}/{name}": text for name, text in cassandra.node_files(cfg).items()}
    return server_script(
        setup=[f"mkdir -p {shlex.quote(cfg.data_dir)} {shlex.quote(cfg.conf_dir)}", *write_files(files)],
        command=shlex.join(cassandra.node_argv(cfg, jar_names)),
        out_dir=out_dir,
        sync_dir=sync_dir,
        what="Cassandra node",
        turn=turn,
        retry_on=JOIN_RACES,
        retries=JOIN_RETRIES,
    )
