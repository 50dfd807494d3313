"""The one user-facing error type (docs/style.md, item 7).

A StrataError names what is wrong, where, and the fix; `strata` prints it and
exits 2. A failed trial is not an error of this kind: it is recorded as a
result with `flags.failed` and the run goes on.
"""

from __future__ import annotations


class StrataError(Exception):
    """A problem the user can fix: bad input, missing tool, unsafe device."""

    def __init__(self, problem: str, fix: str = "", where: str = ""):
        self.problem, self.fix, self.where = problem, fix, where
        super().__init__(self.message())

    def message(self) -> str:
        head = f"{self.where}: {self.problem}" if self.where else self.problem
        return f"{head}\n  fix: {self.fix}" if self.fix else head


class SpecErrors(StrataError):
    """Every error of a spec at once, each with its key path."""

    def __init__(self, errors: list[tuple[str, str, str]], source: str = "spec"):
        self.errors = errors  # (key path, problem, fix)
        lines = [f"{source}: {len(errors)} error(s)"]
        for path, problem, fix in errors:
            lines.append(f"  {path or '<top>'}: {problem}" + (f"\n      fix: {fix}" if fix else ""))
        super().__init__("\n".join(lines))

    def message(self) -> str:  # the problem text is already complete
        return self.problem


# Every category a failed trial can be stored with, what it means and what to do about it.
# The one list: the table in docs/validity.md and `strata show`'s legend are printed from it.
FAILURE_CATEGORIES: dict[str, tuple[str, str]] = {
    "tool_error": (
        "the workload's tool exited with an error",
        "read flags.failed.stderr; run the command in trials/<id>/command.json by hand",
    ),
    "bad_input": ("the tool rejected its options or job file", "fix the workload's parameters or file"),
    "parse": ("the tool's output could not be read", "a bug: report it with the trial's artifacts"),
    "disk_full": (
        "the file system under test filled up",
        "use a larger device, a smaller `size` or a shorter `runtime`",
    ),
    "oom": (
        "an instance was killed by the OOM killer (its memory limit)",
        "raise `limits.memory` or lower what each instance holds (bs x iodepth x numjobs, heap)",
    ),
    "daemon_died": (
        "the container engine (or the test bed's daemons) died during the trial or as it started",
        "read its log in stderr; strata starts it again for the next trial "
        "(twice in a row: that stack's remaining trials are not run)",
    ),
    "remote_lost": (
        "the remote storage target or its link was lost",
        "read stderr; the next trial gets a fresh storage host",
    ),
    "host_lost": ("a host of the experiment left or its agent died", "check the host; the run goes on with the others"),
    "timeout": (
        "the instances ran far beyond their expected end",
        "look for a hung device or tool; raise the runtime estimate with a shorter workload",
    ),
    "boot_timeout": ("a virtual machine did not boot in time", "read the console tail in stderr"),
    "vm_start": ("the virtual machines could not be started", "read QEMU's log and the console tail in stderr"),
    "vm_died": (
        "a virtual machine ended before its command finished",
        "read the console tail and agent-error in stderr",
    ),
    "instance_died": (
        "a server instance (a database node) ended before the workload asked it to stop",
        "read the tail of its log in stderr (killed, crashed; `oom` when its memory limit was the cause)",
    ),
    "not_ready": ("a server (a database node) did not come up in time", "read the tail of its log in stderr"),
    "prepare": ("an instance's prepare step (laying out its files) failed", "read stderr; check free space"),
    "container_start": ("the runtime could not create or start the instances", "read the message; run `strata doctor`"),
    "runtime": ("the runtime failed while the instances ran", "read the message and stderr"),
    "stopped_early": ("the workload stopped before its runtime was over", "read the reason in the message"),
    "provision": (
        "a layer of the stack could not be built (the message names the command)",
        "fix what the message says, then `strata run SPEC --resume`",
    ),
    "unsupported": (
        "this host cannot build a layer of the stack",
        "`strata doctor` says why; not a failure of the run",
    ),
    "internal": ("a bug in strata (the traceback is in stderr)", "report it with the trial's JSON"),
}


class Unsupported(Exception):
    """This host cannot build a layer of the stack; the message is the layer's own error text."""


# Failures that mean a layer of the stack died with the trial: the runner builds it again for the next one.
LAYER_DIED = {"remote_lost": "device", "daemon_died": "runtime"}


class TrialFailure(Exception):
    """A trial could not produce a measurement; recorded, never fatal to the run.

    `layer`: the stack layer that died with the trial ("device", "runtime"), which the
    runner then builds again for the next trial."""

    def __init__(self, category: str, message: str, stderr: str = "", layer: str | None = None):
        if category not in FAILURE_CATEGORIES:
            raise ValueError(f"unknown failure category {category!r}")
        self.category, self.stderr, self.layer = category, stderr, layer or LAYER_DIED.get(category)
        super().__init__(message)


def categories_markdown() -> str:
    """The table of failure categories in docs/validity.md (tests/unit/test_readme.py keeps it equal)."""
    rows = [f"| `{name}` | {meaning} | {fix} |" for name, (meaning, fix) in FAILURE_CATEGORIES.items()]
    return "\n".join(["| category | what happened | what to do |", "|---|---|---|", *rows])
