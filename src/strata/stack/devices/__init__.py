"""Device plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from typing import Any

from strata.stack.blockdev import DeviceHandle
from strata.stack.devices.base import Device, DeviceSpec, HostDevice, Served
from strata.stack.devices.block import BLOCK
from strata.stack.devices.loop import LOOP
from strata.stack.devices.remote import REMOTE
from strata.stack.devices.zram import ZRAM
from strata.stack.precondition import Precondition

PLUGINS: list[Device[Any]] = [LOOP, ZRAM, BLOCK, REMOTE]  # each checked against the Protocol (scripts/lint)
REGISTRY: dict[str, Device[Any]] = {d.name: d for d in PLUGINS}


def served_by(params: DeviceSpec) -> str | None:
    """The host of the experiment that serves the device (`Served`: a remote device's `host`); None: it is
    provisioned on the host that runs the trial."""
    plugin = REGISTRY.get(params.type)
    return plugin.served_by(params) if isinstance(plugin, Served) else None


def served_at(params: DeviceSpec) -> str | None:
    """Where another host serves the device, once the manager set it (`Served`); None for every other device."""
    plugin = REGISTRY.get(params.type)
    return plugin.served_at(params) if isinstance(plugin, Served) else None


def precondition_of(params: DeviceSpec) -> Precondition | None:
    """The device's `precondition:` (stack/precondition.py), None where it has none or it does nothing."""
    pre = getattr(params, "precondition", None)
    return pre if isinstance(pre, Precondition) and not pre.empty else None


def guarded_name(params: DeviceSpec) -> str:
    """The device as the destroy guard's fix names it: a host's block device by its path, any other by its name."""
    plugin = REGISTRY.get(params.type)
    return plugin.device_path(params) if isinstance(plugin, HostDevice) else params.name


__all__ = [
    "REGISTRY",
    "Device",
    "DeviceHandle",
    "DeviceSpec",
    "guarded_name",
    "precondition_of",
    "served_at",
    "served_by",
]
