"""The undo action of every kind a run on this host journals, collected from the plugins that declare them.

Each plugin that journals resources is `Undoing` (stack/journal.py): its `undo` names the undo action of each kind
it, and the machinery it uses, journals. `strata cleanup` and a host's agent hand what is collected here to the
journal's cleanup, so that no module has to be imported for its undo actions to be known, and a kind no plugin
declares is a unit test's failure (tests/unit/test_contracts.py), not a "could not undo" at cleanup time.
"""

from __future__ import annotations

from typing import Iterable

from strata.collectors import REGISTRY as COLLECTORS
from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.journal import UndoFn, Undoing, Undos
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.workloads import REGISTRY as WORKLOADS


def plugins() -> list[object]:
    """Every registered plugin of every layer."""
    return [
        *DEVICES.values(),
        *FILESYSTEMS.values(),
        *RUNTIMES.values(),
        *WORKLOADS.values(),
        *COLLECTORS.values(),
    ]


def undo_actions(*machinery: Undos, of: Iterable[object] | None = None) -> dict[str, UndoFn]:
    """kind -> undo action, as the plugins (`of`: the registries') declare them, and `machinery` beside them (the
    Swarm's services and test hosts, which `strata cleanup` undoes too). Two that declare one kind declare the
    same action."""
    undo: dict[str, UndoFn] = {}
    declared = [p.undo for p in (plugins() if of is None else of) if isinstance(p, Undoing)]
    for each in [*declared, *machinery]:
        for kind, fn in each.items():
            if undo.setdefault(kind, fn) is not fn:
                raise AssertionError(f"two undo actions declared for {kind}: {undo[kind]} and {fn}")
    return undo
