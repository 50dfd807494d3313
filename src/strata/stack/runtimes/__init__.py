"""Runtime plugins, listed explicitly (docs/architecture.md "Adding a plugin").

The registry is built on first use: a plugin that lives in a package of its own
(stack/vm) imports this layer's base modules, so importing it first must not come
back here half-made.
"""

from strata.errors import Unsupported
from strata.stack.runtimes.base import PathHandle, Runtime, RuntimeSession


def _registry() -> dict[str, Runtime]:
    from strata.stack.runtimes.docker.session import DOCKER
    from strata.stack.runtimes.native import NATIVE
    from strata.stack.runtimes.podman import PODMAN_RUNTIME
    from strata.stack.vm.runtime import VM

    return {r.name: r for r in (NATIVE, DOCKER, PODMAN_RUNTIME, VM)}


def __getattr__(name: str):
    if name == "REGISTRY":
        globals()["REGISTRY"] = registry = _registry()
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["REGISTRY", "PathHandle", "Runtime", "RuntimeSession", "Unsupported"]
