"""Device plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from strata.stack.devices.base import Device, DeviceHandle
from strata.stack.devices.block import BLOCK
from strata.stack.devices.loop import LOOP
from strata.stack.devices.remote import REMOTE
from strata.stack.devices.zram import ZRAM

REGISTRY: dict[str, Device] = {d.name: d for d in (LOOP, ZRAM, BLOCK, REMOTE)}

__all__ = ["REGISTRY", "Device", "DeviceHandle"]
