"""The YCSB client: its command line, the standard workloads, and one run of it.

The client runs outside the stack under test (natively, on the host), with the classpath of
jars.ensure_ycsb(): YCSB 0.17.0's core, the DataStax driver and our binding. Per run it
writes what parse.py reads:
- stdout: YCSB's summary (`[OVERALL], Throughput(ops/sec), ...`, per-operation counts and
  return codes);
- stderr: a status line every second (`-s`, `status.interval=1`): the throughput series;
- `<out>/hdr/<OP>.hdr`: one HdrHistogram log per operation type
  (`measurementtype=hdrhistogram`, `hdrhistogram.fileoutput=true`), merged across clients.

The standard workloads A to F are YCSB 0.17.0's `workloads/workloada`..`workloadf`, unmodified
(Apache-2.0, in `workloads/`). A user's own properties file runs unmodified too: strata adds
only `-p` settings (hosts, output, and the counts the spec gives), which YCSB applies over
the file's.

Our binding stops the client with exit code 3 and a `[strata-cassandra] FATAL:` line when no
node answers (a node killed mid-run); `run_client` turns that into a TrialFailure with the
reason, as it does for any other non-zero exit.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from strata.core.errors import StrataError, TrialFailure
from strata.workloads.server import clients
from strata.workloads.server.clients import ClientResult, tail_text
from strata.workloads.ycsb.jars import BINDING_CLASS, COUNTERS_CLASS, RING_CHECK_CLASS

WORKLOADS_DIR = Path(__file__).parent / "workloads"
STANDARD = "abcdef"
FATAL_MARK = "[strata-cassandra] FATAL:"
FATAL_EXIT = 3
PERCENTILES = "50,95,99,99.9"
DEFAULT_CLIENT_HEAP = "512m"
UNBOUNDED_OPERATIONS = 2**31 - 1  # YCSB reads operationcount as a Java int


def workload_file(name: str) -> Path:
    """`a`..`f` (YCSB's standard workloads), or the path of the user's properties file."""
    if len(name) == 1 and name.lower() in STANDARD:
        return WORKLOADS_DIR / f"workload{name.lower()}"
    p = Path(name)
    if not p.is_file():
        raise StrataError(f"no YCSB workload {name!r}", "use a letter a-f or the path of a YCSB properties file")
    return p


@dataclass(frozen=True)
class ClientRun:
    """One YCSB client process: `load` inserts the records, `run` does the operations."""

    phase: str
    workload: Path
    hosts: tuple[str, ...]
    out_dir: Path
    port: int = 9042  # every node's CQL port (a cluster's nodes share it)
    records: int | None = None  # recordcount (None: the file's)
    operations: int | None = None  # operationcount (None: the file's, or unbounded when runtime_s is set)
    runtime_s: int | None = None  # maxexecutiontime
    threads: int = 1
    target_ops_s: int | None = None  # -target: offered rate of this client (None: as fast as it goes)
    insert_start: int | None = None  # a slice of the keys, for several loading clients
    insert_count: int | None = None
    keyspace: str = "ycsb"
    replication_factor: int = 1
    read_consistency: str = "QUORUM"
    write_consistency: str = "QUORUM"
    create_schema: bool = True
    data_integrity: bool = False
    heap: str = DEFAULT_CLIENT_HEAP
    extra: dict[str, str] = field(default_factory=dict)  # any other -p NAME=VALUE

    def __post_init__(self) -> None:
        if self.phase not in ("load", "run"):
            raise ValueError(f"phase must be load or run, not {self.phase!r}")
        if not self.hosts:
            raise ValueError("a YCSB client needs at least one host")
        if self.operations is not None and self.operations < 1:
            # YCSB 0.17.0 starts min(threads, operationcount) threads: none for 0
            raise ValueError("operations must be at least 1 (leave it unset and give runtime_s for a timed run)")


def properties(run: ClientRun) -> dict[str, str]:
    """The -p settings, in a stable order; they override the workload file's."""
    p = {
        "hosts": ",".join(run.hosts),
        "port": str(run.port),
        "cassandra.keyspace": run.keyspace,
        "cassandra.replicationfactor": str(run.replication_factor),
        "cassandra.readconsistencylevel": run.read_consistency,
        "cassandra.writeconsistencylevel": run.write_consistency,
        "cassandra.createschema": str(run.create_schema).lower(),
        "threadcount": str(run.threads),
        "status.interval": "1",
        "measurementtype": "hdrhistogram",
        "hdrhistogram.fileoutput": "true",
        "hdrhistogram.output.path": f"{run.out_dir / 'hdr'}/",
        "hdrhistogram.percentiles": PERCENTILES,
    }
    operations = run.operations
    if operations is None and run.runtime_s:
        operations = UNBOUNDED_OPERATIONS  # the time limit ends the run
    for key, value in (
        ("recordcount", run.records),
        ("operationcount", operations),
        ("maxexecutiontime", run.runtime_s),
        ("insertstart", run.insert_start),
        ("insertcount", run.insert_count),
    ):
        if value is not None:
            p[key] = str(value)
    if run.data_integrity:
        p["dataintegrity"] = "true"
    if run.target_ops_s:  # each operation timed from its intended start too (parse.py INTENDED)
        p["measurement.interval"] = "both"
    p.update(run.extra)
    return p


def client_argv(run: ClientRun, lib_dir: Path, java: str = "java") -> list[str]:
    argv = [
        java,
        f"-Xmx{run.heap}",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        f"{lib_dir}/*",
        "site.ycsb.Client",
        "-load" if run.phase == "load" else "-t",
        "-db",
        BINDING_CLASS,
        "-P",
        str(run.workload),
        "-s",
    ]
    if run.target_ops_s:
        argv += ["-target", str(run.target_ops_s)]
    for key, value in properties(run).items():
        argv += ["-p", f"{key}={value}"]
    return argv


def ring_check_argv(hosts: list[str], lib_dir: Path, port: int = 9042, java: str = "java") -> list[str]:
    """RingCheck: every node Up and Normal as seen from every node (see RingCheck.java)."""
    return [
        java,
        "-Xmx256m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
        "-cp",
        f"{lib_dir}/*",
        RING_CHECK_CLASS,
        ",".join(hosts),
        str(port),
    ]


def counters_argv(
    mode: str, hosts: list[str], lib_dir: Path, keyspace: str, table: str, port: int = 9042, java: str = "java"
) -> list[str]:
    """Counters: each node's own counters (`read`; `probe`: with traced reads), or a flush of the table's
    memtables on every node (`flush`); see Counters.java."""
    return [
        java,
        "-Xmx256m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
        "-cp",
        f"{lib_dir}/*",
        COUNTERS_CLASS,
        mode,
        ",".join(hosts),
        str(port),
        keyspace,
        table,
    ]


exited = clients.exited  # watched without reaping it (the template's)


def start_client(run: ClientRun, lib_dir: Path) -> subprocess.Popen[bytes]:
    """Start one client, its output in run.out_dir (stdout.txt, stderr.txt, hdr/, argv.txt)."""
    return clients.start(as_client(run, lib_dir))


def as_client(run: ClientRun, lib_dir: Path) -> clients.Client:
    """The run as the server template's client process."""
    return clients.Client(client_argv(run, lib_dir), run.out_dir, dirs=("hdr",))


def wait_client(proc: subprocess.Popen[bytes], run: ClientRun, t0: float, timeout_s: float) -> ClientResult:
    """Wait (killing the client at the deadline) and fail the trial on any non-zero exit.

    The client must not have been reaped already (use `exited`, not Popen.poll, to watch it)."""
    return clients.wait(proc, run.out_dir, run.phase, t0, timeout_s, client_failure, "the YCSB client")


def run_client(run: ClientRun, lib_dir: Path, timeout_s: float) -> ClientResult:
    t0 = time.monotonic()
    return wait_client(start_client(run, lib_dir), run, t0, timeout_s)


def client_failure(phase: str, returncode: int, stderr: str) -> TrialFailure:
    """The reason a client ended badly, in the words of our binding when it gave one."""
    fatal = [ln[len(FATAL_MARK) :].strip() for ln in stderr.splitlines() if ln.startswith(FATAL_MARK)]
    if fatal:
        return TrialFailure("tool_error", f"YCSB ({phase}) stopped: {fatal[0]}", tail_text(stderr))
    return TrialFailure("tool_error", f"the YCSB client ({phase}) exited with {returncode}", tail_text(stderr))
