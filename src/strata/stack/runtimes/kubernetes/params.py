"""The kubernetes runtime's parameters (runtime.py's plugin, session.py's session)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.params import Strict, size_field

CONTAINERD_SOCK = "/run/containerd/containerd.sock"


class KubernetesParams(Strict):
    """Pods on Kubernetes: strata's own single-node test bed on the stack's file system, or your cluster."""

    type: Literal["kubernetes"] = "kubernetes"
    kubeconfig: str | None = Field(
        default=None, description="your cluster (its current context, or `context`); without it: strata's test bed"
    )
    context: str | None = Field(default=None, description="the kubeconfig's context to use")
    node: str | None = Field(
        default=None, description="the node the pods are pinned to; with a kubeconfig: this machine's node (default)"
    )
    claim_size: int = Field(default=4 << 30, description="the storage each claim (local, pvc:CLASS) requests")
    containerd_socket: str = Field(
        default=CONTAINERD_SOCK, description="with a kubeconfig: the node's containerd, where strata imports its image"
    )
    name: str = Field(default="", description="default: kubernetes, or kubernetes:CONTEXT with a kubeconfig")

    _size = field_validator("claim_size", mode="before")(size_field)

    @model_validator(mode="after")
    def _name(self) -> Self:
        if not self.name:
            name = "kubernetes" if self.kubeconfig is None else f"kubernetes:{self.context or 'cluster'}"
            object.__setattr__(self, "name", name)
        if self.claim_size < 1 << 20 or self.claim_size > 1 << 50:
            raise ValueError("claim_size must be between 1 MiB and 1 PiB")
        return self
