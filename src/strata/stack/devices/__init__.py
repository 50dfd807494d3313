"""Device plugins, listed explicitly (docs/architecture.md "Adding a plugin").

The registry is built on first use: a plugin that lives in a package of its own
(stack/remote) imports this layer's base modules, so importing it first must not
come back here half-made.
"""

from strata.stack.devices.base import Device, DeviceHandle


def _registry() -> dict[str, Device]:
    from strata.stack.devices.block import BLOCK
    from strata.stack.devices.loop import LOOP
    from strata.stack.devices.remote import REMOTE
    from strata.stack.devices.zram import ZRAM

    return {d.name: d for d in (LOOP, ZRAM, BLOCK, REMOTE)}


def __getattr__(name: str):
    if name == "REGISTRY":
        globals()["REGISTRY"] = registry = _registry()
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["REGISTRY", "Device", "DeviceHandle"]
