"""Provision the layers of a stack once and share them across consecutive trials.

Layers nest (device -> filesystem -> runtime); when the next trial needs a
different layer, that layer and every layer above it are torn down and built
anew. Provisioners are an explicit registry so unit tests can pass fakes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from strata.stack import device as device_layer
from strata.stack import filesystem as fs_layer
from strata.stack.runtime import Unsupported, provision_native


def _docker(*args, **kw):
    from strata.stack.docker import provision_docker  # imported late: optional layer
    return provision_docker(*args, **kw)


@dataclass
class Provisioners:
    device: dict = field(default_factory=lambda: dict(device_layer.PROVISION))
    filesystem: object = fs_layer.provision
    runtime: dict = field(default_factory=lambda: {"native": provision_native, "docker": _docker})


class StackCache:
    def __init__(self, journal, workdir: Path, host: dict, provisioners: Provisioners | None = None):
        self.journal, self.workdir, self.host = journal, workdir, host
        self.workdir_was_there = workdir.exists()
        self.p = provisioners or Provisioners()
        self.levels: list[tuple[object, contextlib.ExitStack, object]] = []  # (key, stack, value)
        self.failed: dict[tuple, Exception] = {}

    def get(self, trial):
        """(device handle, mounted fs, runtime session) for the trial; raises what provisioning raised."""
        keys = [
            ("device", trial.device.model_dump_json()),
            ("fs", trial.device.name, trial.filesystem.model_dump_json()),
            ("rt", trial.device.name, trial.filesystem.name, trial.runtime.model_dump_json()),
        ]
        for depth, key in enumerate(keys):
            if key in self.failed:
                raise self.failed[key]
            if depth < len(self.levels) and self.levels[depth][0] == key:
                continue
            self._close_from(depth)
            try:
                self._open(depth, key, trial)
            except (Unsupported, Exception) as e:
                self.failed[key] = e
                raise
        return tuple(v for _, _, v in self.levels)

    def _open(self, depth: int, key, trial) -> None:
        es = contextlib.ExitStack()
        try:
            if depth == 0:
                cm = self.p.device[trial.device.type](trial.device, self.journal, self.workdir)
            elif depth == 1:
                cm = self.p.filesystem(trial.filesystem, self.levels[0][2], self.journal, self.workdir)
            else:
                cm = self.p.runtime[trial.runtime.type](trial.runtime, self.levels[1][2], self.journal, self.workdir, self.host)
            value = es.enter_context(cm)
        except BaseException:
            es.close()
            raise
        self.levels.append((key, es, value))

    def _close_from(self, depth: int) -> None:
        while len(self.levels) > depth:
            _, es, _ = self.levels.pop()
            es.close()

    def close(self) -> None:
        self._close_from(0)
        # Leave the workdir as found: drop the mount point parent, and the workdir if this run made it.
        for d in [self.workdir / "mnt"] + ([] if self.workdir_was_there else [self.workdir]):
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: never removes anything else
