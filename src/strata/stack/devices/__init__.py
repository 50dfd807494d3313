"""Device plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from typing import Any

from strata.stack.blockdev import DeviceHandle
from strata.stack.devices.base import Device
from strata.stack.devices.block import BLOCK
from strata.stack.devices.loop import LOOP
from strata.stack.devices.remote import REMOTE
from strata.stack.devices.zram import ZRAM

PLUGINS: list[Device[Any]] = [LOOP, ZRAM, BLOCK, REMOTE]  # each checked against the Protocol (scripts/lint)
REGISTRY: dict[str, Device[Any]] = {d.name: d for d in PLUGINS}

__all__ = ["REGISTRY", "Device", "DeviceHandle"]
