"""What the read side reads of a stored result, typed: the trial's layers, load and placement, the host's facts,
the collectors' totals and the headline (results/result.py `Result` hands them out, each read once), and the
collectors' per-second samples a trial keeps beside it (`Samples`: its series.json).

The stored JSON is read here, member by member (strata.core.jsondoc), so that the analysis and the report
read attributes and never the stored paths. What is a plugin's own stays its JSON: a layer's parameters
(`Layer.params`), a workload's (read through its `MetricSchema`, core/metrics.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.core.jsondoc import JsonObject, JsonValue, ShapeError, arr, as_obj, num, obj, text, whole


@dataclass(frozen=True)
class Layer:
    """One layer of the stack as the trial resolved it: its plugin's registry key, its name, its parameters."""

    type: str
    name: str
    params: JsonObject  # the plugin's own, as stored (`type` and `name` among them)

    @classmethod
    def of(cls, doc: JsonObject) -> Layer:
        return cls(text(doc, "type"), text(doc, "name"), doc)

    def get(self, key: str) -> JsonValue:
        """One of its parameters, or None."""
        return self.params.get(key)


@dataclass(frozen=True)
class Placement:
    """Where a trial's instances ran across hosts (hosts/): its name and the instances on each host."""

    name: str = ""
    instances: dict[str, int] | None = None  # None: on this host alone

    @classmethod
    def of(cls, doc: JsonObject) -> Placement:
        placed = obj(doc, "instances")
        return cls(text(doc, "name"), {h: whole(placed, h) or 0 for h in placed} if placed else None)


@dataclass(frozen=True)
class TrialDoc:
    """The resolved trial (experiment/expand.py Trial.resolved), layer by layer."""

    doc: JsonObject  # as stored: what a cell's key and the raw baseline's hash
    device: Layer
    filesystem: Layer
    mount_options: tuple[str, ...]
    runtime: Layer
    storage_driver: str | None
    path: str
    workload: Layer  # its `type` is the workload's registry key
    load: JsonObject  # core/params.py Load, as stored
    containers: int  # the load's concurrent instances
    limits: JsonObject  # the load's limits (a preset among them)
    placement: Placement
    repetition: int | None

    @classmethod
    def of(cls, doc: JsonObject) -> TrialDoc:
        fs, rt, load = obj(doc, "filesystem"), obj(doc, "runtime"), obj(doc, "load")
        return cls(
            doc,
            Layer.of(obj(doc, "device")),
            Layer.of(fs),
            tuple(str(o) for o in arr(fs, "mount_options")),
            Layer.of(rt),
            None if rt.get("storage_driver") is None else text(rt, "storage_driver"),
            text(doc, "path"),
            Layer.of(obj(doc, "workload")),
            load,
            whole(load, "containers") or 1,
            obj(load, "limits"),
            Placement.of(obj(doc, "placement")),
            whole(doc, "repetition"),
        )

    @property
    def preset(self) -> JsonValue:
        """The limits' preset (experiment/presets.py), or None."""
        return self.limits.get("preset")

    def section(self, name: str) -> JsonObject:
        """A section of the trial by its key (a sweep's dimension, a compared layer), empty when absent."""
        return obj(self.doc, name)


@dataclass(frozen=True)
class Headline:
    """The number every judgement of a result is about: what the workload named in `metrics.primary`."""

    value: float | None = None
    unit: str = ""
    metric: str = ""  # the field it is (fio's `iops`)
    series: str = ""  # its per-second series in workload-series.json ("": none)
    series_unit: str = ""

    @classmethod
    def of(cls, metrics: JsonObject) -> Headline:
        p = obj(metrics, "primary")
        return cls(num(p, "value"), text(p, "unit"), text(p, "metric"), text(p, "series"), text(p, "series_unit"))


@dataclass(frozen=True)
class HostFacts:
    """The facts of the host a result ran on (core/host.py), as the report names it."""

    hostname: str
    os: str
    kernel: str
    cpus: int | None
    tools: dict[str, str]  # each tool's version ("": not found)
    note: str | None  # what the host said of itself (an emulated CPU)

    @classmethod
    def of(cls, doc: JsonObject) -> HostFacts:
        tools = obj(doc, "tools")
        note = doc.get("note")
        return cls(
            text(doc, "hostname", "?"),
            str(doc.get("os", "")),
            str(doc.get("kernel", "")),
            whole(doc, "cpus"),
            {k: str(v) if v else "" for k, v in tools.items()},
            str(note) if note else None,
        )


@dataclass(frozen=True)
class DiskTotals:
    """One disk's diskstats over the trial (collectors/diskstats.py)."""

    read_bytes: float
    write_bytes: float
    span_s: float | None


@dataclass(frozen=True)
class Collected:
    """The collectors' totals over a trial (collectors/) that the analysis reads."""

    cpu_idle_percent: float | None  # the host's
    device: DiskTotals | None  # the device under test's (its kernel name in the device's facts)
    target_cpu_percent: float | None  # a remote device's storage target process, of one CPU
    kernel_name: str  # the device under test's, as its facts say ("": not said)

    @property
    def device_mb_s(self) -> float | None:
        """The device under test's MB/s read and written over the trial, None when not collected."""
        d = self.device
        if d is None or not d.span_s:
            return None
        return (d.read_bytes + d.write_bytes) / d.span_s / 1e6

    @classmethod
    def of(cls, collectors: JsonObject, stack_facts: JsonObject) -> Collected:
        name = text(obj(stack_facts, "device"), "kernel_name")
        d = obj(obj(collectors, "diskstats"), name)
        disk = DiskTotals(num(d, "read_bytes") or 0.0, num(d, "write_bytes") or 0.0, num(d, "span_s")) if d else None
        return cls(
            num(obj(collectors, "host"), "cpu_idle_percent"),
            disk,
            num(obj(obj(collectors, "remote_procs"), "target"), "cpu_percent"),
            name,
        )


@dataclass(frozen=True)
class Samples:
    """The collectors' per-second samples of a trial (its artifact series.json), as the report draws them; each
    number as stored (an int stays an int), a series the trial did not sample empty."""

    t: list[float]  # each sample's time; none: nothing sampled (then nor is anything else read)
    util_percent: list[float] = field(default_factory=list)  # the device under test's (else the first disk's)
    iowait_percent: list[float] = field(default_factory=list)  # the host's
    page_cache_bytes: list[float] = field(default_factory=list)
    cgroups: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)  # read, write bytes by group

    @classmethod
    def of(cls, doc: JsonObject, disk: str) -> Samples:
        """`disk`: the kernel name of the device under test (Collected.kernel_name)."""
        t = _numbers(doc, "t")
        if not t:
            return cls(t)
        stats = obj(doc, "diskstats")
        dev = as_obj(stats.get(disk) or next(iter(stats.values()), {}), "diskstats")
        host = obj(doc, "host")
        cpu = obj(host, "cpu_percent")
        groups = {k: as_obj(g, "cgroups") for k, g in obj(doc, "cgroups").items()}
        return cls(
            t,
            _numbers(dev, "util_percent") if dev.get("util_percent") else [],
            _numbers(cpu, "iowait") if cpu.get("iowait") else [],
            _numbers(host, "page_cache_bytes") if host.get("page_cache_bytes") else [],
            {k: (_numbers(g, "read_bytes"), _numbers(g, "write_bytes")) for k, g in groups.items()},
        )


def _numbers(d: JsonObject, key: str) -> list[float]:
    """d[key] as an array of numbers, kept as stored (a missing or null member is empty)."""
    xs = [x for x in arr(d, key) if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if len(xs) != len(arr(d, key)):
        raise ShapeError(f"{key!r} should hold numbers only")
    return xs
