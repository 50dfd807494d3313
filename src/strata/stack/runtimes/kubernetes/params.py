"""The kubernetes runtime's parameters (runtime.py's plugin, session.py's session)."""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.jsondoc import JsonObject
from strata.core.params import Strict, size_field

CONTAINERD_SOCK = "/run/containerd/containerd.sock"
AGENT_ROOT = "/var/lib/strata"  # strata's agent's files on a node (the test bed binds it onto the node's disk)
TOLERATION_KEYS = {"key", "operator", "value", "effect", "tolerationSeconds"}
NAME = re.compile(r"[a-z0-9]([a-z0-9.,=/_-]{0,251}[a-z0-9])?", re.I)  # a name, or a label selector k=v,k2=v2


class KubernetesParams(Strict):
    """Pods on Kubernetes: strata's own single-node test bed on the stack's file system, or your cluster."""

    type: Literal["kubernetes"] = "kubernetes"
    kubeconfig: str | None = Field(
        default=None, description="your cluster (its current context, or `context`); without it: strata's test bed"
    )
    context: str | None = Field(default=None, description="the kubeconfig's context to use")
    node: str | None = Field(
        default=None,
        description="the node the pods go to: a node's name, or a label selector (disk=ssd,zone=a: the first node it "
        "names that takes the pods); with a kubeconfig, default this machine's node if it is one, else the first node "
        "that takes the pods",
    )
    tolerations: list[dict[str, str | int]] = Field(
        default_factory=list,
        description="the pods' and strata's agent's tolerations, as Kubernetes writes them ({key, operator, value, "
        "effect}), at most 16",
    )
    images: str | None = Field(
        default=None,
        description="REGISTRY/PREFIX: strata pushes its images there (skopeo) and the pods pull them; needed for a "
        "node that is not this machine",
    )
    registry_ca: str | None = Field(default=None, description="the CA certificate (a file) of `images:`'s registry")
    registry_auth: str | None = Field(
        default=None, description="a containers-auth.json file with credentials that may push to `images:`"
    )
    pull_secret: str | None = Field(
        default=None, description="the name of a Secret in `namespace` the nodes pull `images:` with"
    )
    namespace: str | None = Field(
        default=None,
        description="an existing namespace to run in (its Pod Security level must allow privileged pods); default "
        "a namespace strata makes and deletes, strata-RANDOM",
    )
    node_dir: str = Field(
        default=AGENT_ROOT,
        description="on a node that is not this machine: where strata's agent keeps the run's files (the instances' "
        "outputs, hostpath and local paths), removed when the run ends",
    )
    agent_port: int = Field(
        default=10299, ge=1024, le=65535, description="the port strata's agent listens on, on the node's address"
    )
    claim_size: int = Field(default=4 << 30, description="the storage each claim (local, pvc:CLASS) requests")
    node_lost_s: float = Field(
        default=30.0,
        ge=15,
        le=600,
        description="a node whose kubelet has not renewed its Lease this long ends the trial as host_lost (the "
        "kubelet renews it every 10 s by default)",
    )
    containerd_socket: str = Field(
        default=CONTAINERD_SOCK, description="with a kubeconfig: the node's containerd, where strata imports its image"
    )
    name: str = Field(default="", description="default: kubernetes, or kubernetes:CONTEXT with a kubeconfig")

    _size = field_validator("claim_size", mode="before")(size_field)

    @field_validator("tolerations")
    @classmethod
    def _tolerations(cls, v: list[dict[str, str | int]]) -> list[dict[str, str | int]]:
        if len(v) > 16:
            raise ValueError("at most 16 tolerations")
        for t in v:
            unknown = set(t) - TOLERATION_KEYS
            if unknown:
                raise ValueError(
                    f"a toleration has {', '.join(sorted(TOLERATION_KEYS))}, not {', '.join(sorted(unknown))}"
                )
            if t.get("operator", "Equal") not in ("Equal", "Exists"):
                raise ValueError("a toleration's operator is Equal or Exists")
            if t.get("effect", "") not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValueError("a toleration's effect is NoSchedule, PreferNoSchedule or NoExecute")
        return v

    def toleration_docs(self) -> list[JsonObject]:
        """The tolerations as the API takes them."""
        return [{k: v for k, v in t.items()} for t in self.tolerations]

    @field_validator("node", "namespace", "pull_secret")
    @classmethod
    def _names(cls, v: str | None) -> str | None:
        if v is not None and not NAME.fullmatch(v):
            raise ValueError(
                f"{v[:80]!r}: a Kubernetes name (or for node a label selector k=v,k2=v2) of at most 253 characters"
            )
        return v

    @field_validator("node_dir")
    @classmethod
    def _node_dir(cls, v: str) -> str:
        if not v.startswith("/") or ".." in v.split("/") or len(v) > 200 or v.rstrip("/") in ("", "/var", "/var/lib"):
            raise ValueError("node_dir is an absolute directory of its own on the node, e.g. /var/lib/strata")
        return v

    @model_validator(mode="after")
    def _name(self) -> Self:
        if not self.name:
            name = "kubernetes" if self.kubeconfig is None else f"kubernetes:{self.context or 'cluster'}"
            object.__setattr__(self, "name", name)
        if self.claim_size < 1 << 20 or self.claim_size > 1 << 50:
            raise ValueError("claim_size must be between 1 MiB and 1 PiB")
        return self
