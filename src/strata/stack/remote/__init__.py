"""The `remote` device: block storage served over TCP by a storage host strata starts in a
network namespace of its own (issue 9; study 003 sections 5.4 and 6.3).

Importing this package registers its undo actions (remote_dir, marked_process,
fuse_mount, remote_loop, nbd_device, nvmet, nvme_connect, netns, veth, qdisc).
"""

from strata.stack.remote.caps import available, choose_client, probe, problems
from strata.stack.remote.device import RemoteHandle, backing_problems, provision_remote
from strata.stack.remote.model import RemoteDevice

__all__ = [
    "RemoteDevice",
    "RemoteHandle",
    "available",
    "backing_problems",
    "choose_client",
    "probe",
    "problems",
    "provision_remote",
]
