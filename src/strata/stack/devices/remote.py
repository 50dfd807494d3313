"""`remote`: block storage served over TCP by a storage host strata starts in a network namespace of its
own (study 003 sections 5.4 and 6.3: local against NVMe over Fabrics). The mechanics are in the
stack/remote package; this is its plugin of the device layer. docs/remote.md says what runs where."""

from __future__ import annotations

from pathlib import Path
from typing import ContextManager

from strata.core.jsondoc import JsonObject
from strata.core.params import shorthand
from strata.stack import blockdev, marked, netns
from strata.stack.blockdev import needs_root
from strata.stack.devices.base import Served
from strata.stack.journal import Journal, Undoing, Undos
from strata.stack.remote import caps, nbd, nvme
from strata.stack.remote import device as remote_device
from strata.stack.remote.device import RemoteHandle, backing_problems, provision_remote
from strata.stack.remote.model import RemoteDevice

RemoteParams = RemoteDevice


class Remote(Served[RemoteParams], Undoing):
    name = "remote"
    params = RemoteParams
    # the storage host's namespace and link, its server and backing file, the client's device (served here or
    # by a host of the experiment: remote/serve.py)
    undo: Undos = {
        **remote_device.UNDO,
        **nbd.UNDO,
        **nvme.UNDO,
        **netns.UNDO,
        **marked.UNDO,
        **blockdev.UNDO,
    }

    def shorthand(self, text: str) -> dict[str, str] | None:
        return shorthand(self.name, text)

    def served_by(self, params: RemoteParams) -> str | None:
        return params.host

    def served_at(self, params: RemoteParams) -> str | None:
        return params.served_at

    def available(self, host: JsonObject, params: RemoteParams | None = None) -> str | None:
        return needs_root() or caps.available(params)

    def problems(self, params: RemoteParams) -> list[str]:
        return backing_problems(params)

    def writes(self, params: RemoteParams, workdir: Path) -> str:
        if params.host and params.backing_path:
            return f"{params.backing_path} on host {params.host} (served over nbd to the client hosts, ERASED)"
        if params.host:
            return (
                f"a {(params.size or 0) >> 20} MiB backing file in host {params.host}'s workdir (created and removed)"
            )
        if params.backing_path:
            return f"{params.backing_path} (served by a storage host in a network namespace, ERASED)"
        return (
            f"a {(params.size or 0) >> 20} MiB backing file under {workdir} served over {params.transport} "
            "(created and removed)"
        )

    def size_bytes(self, params: RemoteParams) -> int | None:
        return params.size

    def provision(self, params: RemoteParams, journal: Journal, workdir: Path) -> ContextManager[RemoteHandle]:
        return provision_remote(params, journal, workdir)

    def doctor(self, host: JsonObject, probe: bool) -> list[tuple[str, str | None]]:
        return [(name, reason) for _, name, reason in caps.doctor_rows()]


REMOTE = Remote()
