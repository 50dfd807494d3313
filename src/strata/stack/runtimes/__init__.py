"""Runtime plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from strata.stack.runtimes.base import PathHandle, Runtime, RuntimeSession, Unsupported
from strata.stack.runtimes.docker.session import DOCKER
from strata.stack.runtimes.native import NATIVE

REGISTRY: dict[str, Runtime] = {r.name: r for r in (NATIVE, DOCKER)}

__all__ = ["REGISTRY", "PathHandle", "Runtime", "RuntimeSession", "Unsupported"]
