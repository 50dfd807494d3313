"""Runtime plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from strata.errors import Unsupported
from strata.stack.runtimes.base import PathHandle, Runtime, RuntimeSession
from strata.stack.runtimes.docker.session import DOCKER
from strata.stack.runtimes.native import NATIVE
from strata.stack.runtimes.podman import PODMAN_RUNTIME
from strata.stack.vm.runtime import VM

REGISTRY: dict[str, Runtime] = {r.name: r for r in (NATIVE, DOCKER, PODMAN_RUNTIME, VM)}

__all__ = ["REGISTRY", "PathHandle", "Runtime", "RuntimeSession", "Unsupported"]
