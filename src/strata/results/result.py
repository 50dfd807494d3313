"""One trial's result, typed: what run/trial.py builds, the store writes and the readers read by attribute.

The stored form is the JSON `to_json` gives (store.py `stored_doc` adds `schema_version`); `from_json` reads
that form back (a part's result sent by a host's agent, a result stored by this version), and `from_stored`
reads every stored format, an older one upgraded in memory first (schema.py's migrations: stored files are
never rewritten): what store.py `load_results` returns, each with the `file` it was read from. What a
workload, a collector or a layer says of the trial (`metrics`, `collectors`, `stack_facts`, `host`, the
resolved `trial`) is each plugin's own JSON, kept as it is; the flags are typed (`flags.Flags`, their one
codec). The read side (analysis/, report/, show, export) reads those documents through typed views, each
read once (results/stored.py: `layers`, the trial's layers, load and placement; `primary`, the headline;
`host_facts`; `collected`, the collectors' totals), and a workload's own fields through its `MetricSchema`.

The keys (store.py RESULT_FIELDS): every result has `trial_id` .. `collectors`, and `artifacts` (a trimmed
copy may lack it: tests/data/results/quick-a); `status` once the trial ended; `started_at`, `finished_at`,
`duration_s` once it ran (or was refused); `setup_s` when it built a stack; `writes` when it was judged;
`design` when the runner stored its design; `hosts` across hosts. A key this version does not know (a newer
strata's addition) is kept in `extra` and written back.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, NotRequired, TypedDict, cast

from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.results.flags import Flags, number
from strata.results.schema import migrate
from strata.results.stored import Collected, Headline, HostFacts, TrialDoc
from strata.results.validity.evidence import headline_of
from strata.results.validity.trial import WarningDoc
from strata.results.writes import Writes

if TYPE_CHECKING:
    from strata.experiment.model import DesignDoc


class Labels(TypedDict):
    """The trial's names, layer by layer, as the tables and filters show them."""

    device: str
    filesystem: str
    runtime: str
    path: str
    workload: str
    load: str
    repetition: int
    placement: NotRequired[str]  # across hosts: the placement's name


def no_labels() -> Labels:
    """The labels of a result whose trial was not read (a host's part that failed before: hosts/agent.py)."""
    return {"device": "", "filesystem": "", "runtime": "", "path": "", "workload": "", "load": "", "repetition": 0}


# The optional keys, each stored only when set (None: absent from the stored form).
OPTIONAL = ("artifacts", "status", "started_at", "finished_at", "duration_s", "setup_s", "writes", "design", "hosts")


@dataclass
class Result:
    """A trial's result (docs/architecture.md "Results"; the format's history in schema.py)."""

    trial_id: str = ""
    run_id: str = ""
    experiment: str = ""
    stack: str = ""
    labels: Labels = field(default_factory=lambda: no_labels())
    trial: JsonObject = field(default_factory=dict)  # the resolved trial (experiment/expand.py Trial.resolved)
    host: JsonObject = field(default_factory=dict)  # the host's facts (core/host.py), the tools' versions
    metrics: JsonObject = field(default_factory=dict)  # the workload's (workloads/base.py Parsed.metrics)
    flags: Flags = field(default_factory=Flags)
    warnings: list[WarningDoc] = field(default_factory=list)
    stack_facts: JsonObject = field(default_factory=dict)  # what each layer said of itself
    collectors: JsonObject = field(default_factory=dict)  # the collectors' totals (collectors/)
    artifacts: str | None = None  # the trial's artifact directory, relative to the results directory
    status: str | None = None  # "ok", "failed" or "unsupported" (store.py STATUSES); None: not ended
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    setup_s: float | None = None  # building the stack, apart from the trial's own time
    writes: Writes | None = None  # results/writes.py
    design: DesignDoc | None = None  # how the repetitions were taken (run/repeat.py design_doc)
    hosts: dict[str, JsonObject] | None = None  # across hosts: each host's node, clock, part (hosts/executor.py)
    extra: JsonObject = field(default_factory=dict)  # keys this version does not know, kept as read
    # the file it was loaded from (store.py load_results; None: not loaded), never stored
    file: str | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, doc: JsonObject, file: str | None = None) -> Result:
        """A result in this version's form (`to_json`'s, or a stored file's once migrated). The plugins' documents
        are read as objects; the record's own (labels, warnings, writes, design) are this version's, as written."""
        hosts = doc.get("hosts")
        return cls(
            trial_id=text(doc, "trial_id"),
            run_id=text(doc, "run_id"),
            experiment=text(doc, "experiment"),
            stack=text(doc, "stack"),
            labels=cast(Labels, doc.get("labels") or no_labels()),
            trial=obj(doc, "trial"),
            host=obj(doc, "host"),
            metrics=obj(doc, "metrics"),
            flags=Flags.of(doc),
            warnings=cast("list[WarningDoc]", list(arr(doc, "warnings"))),
            stack_facts=obj(doc, "stack_facts"),
            collectors=obj(doc, "collectors"),
            artifacts=_text(doc, "artifacts"),
            status=_text(doc, "status"),
            started_at=_text(doc, "started_at"),
            finished_at=_text(doc, "finished_at"),
            duration_s=number(doc, "duration_s"),
            setup_s=number(doc, "setup_s"),
            writes=cast("Writes | None", doc.get("writes")),
            design=cast("DesignDoc | None", doc.get("design")),
            hosts=None if hosts is None else {h: as_obj(v, h) for h, v in as_obj(hosts, "hosts").items()},
            extra={k: v for k, v in doc.items() if k not in KNOWN},
            file=file,
        )

    @classmethod
    def from_stored(cls, doc: JsonObject, file: str | None = None) -> Result:
        """A stored result of any version (schema.py upgrades an older one, in place, first)."""
        return cls.from_json(migrate(doc), file)

    def to_json(self) -> dict[str, object]:
        """The stored form, without `schema_version` (the store adds it)."""
        doc: dict[str, object] = {
            "trial_id": self.trial_id,
            "run_id": self.run_id,
            "experiment": self.experiment,
            "stack": self.stack,
            "labels": self.labels,
            "trial": self.trial,
            "host": self.host,
            "metrics": self.metrics,
            "flags": self.flags.to_json(),
            "warnings": self.warnings,
            "stack_facts": self.stack_facts,
            "collectors": self.collectors,
        }
        optional = {
            "artifacts": self.artifacts,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_s": self.duration_s,
            "setup_s": self.setup_s,
            "writes": self.writes,
            "design": self.design,
            "hosts": self.hosts,
        }
        return doc | {k: v for k, v in optional.items() if v is not None} | self.extra

    @property
    def headline(self) -> tuple[float | None, str]:
        """(value, unit) of the headline: what the workload named in `metrics.primary`."""
        return headline_of(self.metrics)

    @property
    def primary(self) -> Headline:
        """The headline, whole: its value and unit, the field it is and its per-second series."""
        return Headline.of(self.metrics)

    @property
    def workload_type(self) -> str:
        """The registry key of the trial's workload ("" when the trial was not read)."""
        return self.layers.workload.type

    # What the read side reads, typed (results/stored.py); each read once, when first asked: a stored result is
    # not changed once loaded.
    @functools.cached_property
    def layers(self) -> TrialDoc:
        """The resolved trial, layer by layer, with its load and placement."""
        return TrialDoc.of(self.trial)

    @functools.cached_property
    def host_facts(self) -> HostFacts:
        return HostFacts.of(self.host)

    @functools.cached_property
    def collected(self) -> Collected:
        """The collectors' totals the analysis reads."""
        return Collected.of(self.collectors, self.stack_facts)

    @property
    def repetition(self) -> int:
        """Its repetition as labelled (0 when it has none), to name the trial in a message."""
        return self.labels.get("repetition", 0)

    @property
    def repetitions(self) -> int | None:
        """The repetitions its design fixed (None: `auto`, or stored without a design)."""
        n = None if self.design is None else self.design.get("repetitions")
        return n if isinstance(n, int) else None

    @property
    def scale(self) -> str | None:
        """The scale it was taken at (experiment/scale.py: "smoke" is never a measurement), None: full."""
        return None if self.design is None else self.design.get("scale")


def _text(doc: JsonObject, key: str) -> str | None:
    return None if doc.get(key) is None else text(doc, key)


def typed(results: Iterable[Result | JsonObject]) -> list[Result]:
    """Results as the read side reads them: a stored document given as such (a study's published numbers, a
    test's synthetic result) is read as `load_results` reads a file."""
    return [r if isinstance(r, Result) else Result.from_stored(r) for r in results]


# The keys a Result reads into its fields (the store's `schema_version` too: once read, it is this version's).
KNOWN = frozenset(f.name for f in fields(Result) if f.name not in ("extra", "file")) | {"schema_version"}
