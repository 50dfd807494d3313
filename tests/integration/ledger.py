"""What an integration test actually ran, besides the trials it stored: the record its `@covers` declaration is
checked against (tests/coverage.py `keys_of_events`, tests/integration/conftest.py).

The helpers that start strata (helpers.py `strata`, `start_strata`) record each command with its exit code;
a test that drives the library below the run loop records each layer, path and workload once the library has
built or run it (`built`), and the failure it raised (`failed`); a test that kills a process of its own making
records the kill and the cleanup's count (`kill9`); the benches' runner records each bench's exit code. One
list per test: the fixture begins it at setup and reads it at teardown (a pytest worker runs one test at a
time). What a module- or session-scoped fixture built, set up before the test's own list begins, is kept for
every test of its module.
"""

from __future__ import annotations

import subprocess
from typing import Any

EVENTS: list[dict[str, Any]] = []
_STARTED: list[tuple[dict[str, Any], subprocess.Popen]] = []  # a command whose exit code is read at teardown
_SHARED: dict[str, list[dict[str, Any]]] = {}  # module -> what its shared fixtures built
_module = ""
_in_test = False


def enter(module: str) -> None:
    """A test of `module` is being set up: what is recorded until `begin` is its shared fixtures'."""
    global _module, _in_test
    _module, _in_test = module, False


def begin() -> None:
    global _in_test
    EVENTS.clear()
    _STARTED.clear()
    _in_test = True


def _record(event: dict[str, Any]) -> None:
    (EVENTS if _in_test else _SHARED.setdefault(_module, [])).append(event)


def command(argv: list[str], rc: int | None) -> None:
    """`strata ARGV...` ran and exited `rc` (a negative rc: killed by that signal; None: still running)."""
    _record({"kind": "command", "argv": [str(a) for a in argv], "rc": rc})


def started(argv: list[str], proc: subprocess.Popen) -> None:
    """`strata ARGV...` started in the background: its exit code is read when the test ends, in the order it
    started (a kill -9 comes before the cleanup that follows it)."""
    event: dict[str, Any] = {"kind": "command", "argv": [str(a) for a in argv], "rc": None}
    _record(event)
    _STARTED.append((event, proc))


def built(*keys: str) -> None:
    """Layers, paths or workloads the test ran through the library, as coverage keys (`device:loop`,
    `runtime:docker:overlay2`, `workload:fio@vm`): recorded only once the library returned them built or run,
    from the parameters it was given."""
    _record({"kind": "built", "keys": list(keys)})


def failed(category: str, runtime: str) -> None:
    """A TrialFailure of `category` the library raised in a trial on `runtime`."""
    _record({"kind": "failed", "category": category, "runtime": runtime})


def kill9(rc: int, undone: int) -> None:
    """A process of strata's making was killed with SIGKILL (its exit code `rc`), then a cleanup undid `undone`
    journal entries."""
    _record({"kind": "kill9", "rc": rc, "undone": undone})


def bench(name: str, rc: int) -> None:
    _record({"kind": "bench", "name": name, "rc": rc})


def events() -> list[dict[str, Any]]:
    """What the test's module's shared fixtures built, then every event of the test so far (the background
    commands' exit codes read now)."""
    for event, proc in _STARTED:
        event["rc"] = proc.poll()
    return [*_SHARED.get(_module, ()), *EVENTS]
