"""Runtime plugins, listed explicitly (docs/architecture.md "Adding a plugin")."""

from typing import Any

from strata.core.errors import Unsupported
from strata.stack.paths import PathHandle
from strata.stack.runtimes.base import Runtime, RuntimeSession
from strata.stack.runtimes.docker.runtime import DOCKER
from strata.stack.runtimes.kubernetes.runtime import KUBERNETES
from strata.stack.runtimes.native import NATIVE
from strata.stack.runtimes.podman import PODMAN_RUNTIME
from strata.stack.vm.runtime import VM

PLUGINS: list[Runtime[Any]] = [NATIVE, DOCKER, PODMAN_RUNTIME, VM, KUBERNETES]  # each checked against the Protocol
REGISTRY: dict[str, Runtime[Any]] = {r.name: r for r in PLUGINS}

__all__ = ["REGISTRY", "PathHandle", "Runtime", "RuntimeSession", "Unsupported"]
