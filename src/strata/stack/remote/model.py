"""The `remote` device in a spec: transport, client, backing store, fabric."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.params import Strict, size_field
from strata.stack.netns import Fabric, format_rate, format_us, parse_rate_bit, parse_time_us

DEFAULT_SIZE_BYTES = 4 * 2**30
SERVED_AT = r"^[0-9a-fA-F.:]{2,45}:[0-9]{1,5}/[0-9a-f]{8}$"  # ADDR:PORT/TOKEN of one served target


class RemoteDevice(Strict):
    """A block device served over TCP by a storage host that strata starts in a network namespace
    of its own (study 003 section 5.4: local against NVMe over Fabrics)."""

    type: Literal["remote"] = "remote"
    name: str = Field(default="", description="default: remote-<transport>[-<latency>][-<rate>]")
    transport: Literal["nbd", "nvme-tcp"] = Field(default="nbd", description="nbd (nbdkit) or nvme-tcp (kernel nvmet)")
    client: Literal["auto", "kernel", "fuse"] = Field(
        default="auto",
        description="nbd: kernel (nbd module + nbd-client) or fuse (nbdfuse + loop); auto: kernel if present",
    )
    size: int | None = Field(
        default=None, description="bytes of a backing file strata fills in the workdir (default 4GiB)"
    )
    backing_path: str | None = Field(default=None, description="serve this block device instead of a file (erased!)")
    destroy: bool = Field(default=False, description="allow strata to erase `backing_path`")
    latency: float = Field(
        default=0.0, description="added one way on each end of the link: 50us, 0.05ms; a number is microseconds"
    )
    rate: int | None = Field(
        default=None, description="link rate each way: 10gbit, 100mbit; a number is bits per second"
    )
    host: str | None = Field(
        default=None,
        description="serve the store from this host of `hosts:` (a Swarm node) over the real network, "
        "instead of from a namespace on the client's host",
    )
    served_at: str | None = Field(
        default=None,
        pattern=SERVED_AT,
        description="set by the manager, not in a spec: ADDR:PORT/TOKEN of the target the storage host serves "
        "(a new target, a new token: the client hosts attach again)",
    )

    _size = field_validator("size", mode="before")(size_field)

    @field_validator("latency", mode="before")
    @classmethod
    def _latency(cls, v: object) -> object:
        return parse_time_us(v) if isinstance(v, str) else v  # a number: microseconds, as stored

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, v: object) -> object:
        return parse_rate_bit(v) if isinstance(v, str) else v  # a number: bits per second, as stored

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.size is not None and self.backing_path is not None:
            raise ValueError("give either `size` (a file strata fills) or `backing_path` (a block device), not both")
        if self.backing_path is None:
            if self.destroy:
                raise ValueError("`destroy` applies to `backing_path` only")
            size = DEFAULT_SIZE_BYTES if self.size is None else self.size
            if size < 64 << 20 or size % (1 << 20):
                raise ValueError("a remote backing file size is a whole number of MiB, at least 64MiB")
            object.__setattr__(self, "size", size)
        if self.rate is not None and self.rate < 8000:
            raise ValueError("rate is at least 8kbit")
        if not 0 <= self.latency <= 1e6:
            raise ValueError("latency is between 0 and 1s")
        if self.transport == "nvme-tcp" and self.client == "fuse":
            raise ValueError("nvme-tcp has only a kernel client (nvme-cli); use client: kernel or auto")
        if self.host is not None:
            self._check_host()
        if not self.name:
            parts = ["remote", self.transport]
            if self.latency:
                parts.append(format_us(self.latency))
            if self.rate:
                parts.append(format_rate(self.rate))
            if self.host:
                parts += ["on", self.host]
            object.__setattr__(self, "name", "-".join(parts))
        return self

    def _check_host(self) -> None:
        if self.transport != "nbd":
            raise ValueError("a storage host on another node serves nbd only (nvmet there is untested)")
        if self.latency or self.rate:
            raise ValueError(
                "`latency` and `rate` shape the link to a namespace storage host; between two hosts the "
                "link is the real network: drop them, or drop `host`"
            )

    @property
    def fabric(self) -> Fabric:
        return Fabric(self.latency, self.rate)
