"""The `pgbench` workload's spec: PostgreSQL 15 servers on the path under test, pgbench on the host.

`pgbench: {script: tpcb-like, scale: 10, clients: [1, 8, 32], threads: 2, runtime: 60, warmup: 15,
rate: none, protocol: simple, synchronous_commit: on, fsync: true, shared_buffers: 128MiB, wal_level:
replica, full_page_writes: true, checkpoint_timeout: 30, max_wal_size: 1GiB, settings: {}, options: [], wal_path:
none}`. Every number is bounded; a list of any key is a sweep (experiment/load.py).

- `script`: one of pgbench's built-in scripts or `file:PATH` (a pgbench script of your own, run as it is,
  against the tables `pgbench -i` made), or several weighted as pgbench weighs them (`tpcb-like@9,
  select-only@1`: `-b NAME@W`, `-f PATH@W`).
- The load: `scale`, and pgbench's init options (`init_steps` -I, `foreign_keys`, `fillfactor` -F,
  `partitions`, `partition_method`, `unlogged_tables`). The run: `protocol` (-M), `rate`, `latency_limit`,
  `max_tries`, and `vacuum` (pgbench's VACUUM of its tables before the first transactions; -n when off).
- `log_sampling`: the share of the transactions the per-transaction log holds (pgbench --sampling-rate), from
  which the latency percentiles come: `auto` (about 2,000 a second, from the warm-up's throughput: sampling.py)
  or a rate.
- Checkpoints inside the measurement: a timed checkpoint every `checkpoint_timeout` (30 s, PostgreSQL's
  least), one started as the warm-up starts; with the defaults (a 15 s warm-up, a 60 s run) every trial
  holds the same two checkpoints, whatever its speed, as long as its WAL between two of them stays below
  what `max_wal_size` allows (a checkpoint forced by WAL volume comes after a fixed amount of work, so the
  faster stack would pay for more of them: the report flags compared trials whose counts differ).
- Server settings: the five that decide what reaches the device and the two of checkpoints as keys of
  their own, and `settings` for any other (`postgres -c NAME=VALUE`, checked against `postgres
  --describe-config`: workloads/server/settings.py). `wal_path`: the WAL on a path of its own
  (`initdb --waldir`, on a second volume, bind mount, tmpfs...: workloads/server/logpath.py).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.jsondoc import JsonObject
from strata.core.params import Strict, size_field
from strata.workloads.pgbench.sampling import MIN_RATE as MIN_SAMPLING
from strata.workloads.server import fields, logpath, settings
from strata.workloads.server import options as client_options

MiB = 1 << 20
BUILTIN = ("tpcb-like", "simple-update", "select-only")
WRITING_BUILTINS = ("tpcb-like", "simple-update")
MAX_SCRIPTS = 16
MAX_WEIGHT = 1000
INIT_STEPS = re.compile(r"[dtgGvpf]{1,20}")  # pgbench -I: drop, tables, generate (client/server), vacuum, keys
# A script that names one of these writes (its transactions' WAL must reach the device): fields.writes.
WRITE_WORDS = re.compile(r"\b(insert|update|delete|merge|copy|create|drop|alter|truncate|vacuum|cluster)\b", re.I)
SCRIPT_ENTRY = re.compile(r"(?P<what>[^@]+?)(?:@(?P<weight>\d{1,4}))?")


# pgbench's docs: "a thread manages a few clients, say between 2 and 10"; `threads: auto` gives each thread 4
CLIENTS_PER_THREAD = 4


def entries(script: str) -> list[tuple[str, int | None]]:
    """`tpcb-like@9, file:x.sql@1` -> [("tpcb-like", 9), ("file:x.sql", 1)]; a single script without a weight
    -> [(script, None)]. Raises ValueError naming the entry that is neither."""
    parts = [p.strip() for p in script.split(",")] if "," in script or "@" in script else [script.strip()]
    if not 1 <= len(parts) <= MAX_SCRIPTS:
        raise ValueError(f"`script` names {len(parts)} scripts: 1 to {MAX_SCRIPTS}, comma-separated")
    out: list[tuple[str, int | None]] = []
    for part in parts:
        m = SCRIPT_ENTRY.fullmatch(part)
        what = m.group("what").strip() if m else ""
        if not m or not (what in BUILTIN or (what.startswith("file:") and len(what) > 5)):
            raise ValueError(
                f"unknown pgbench script {part[:60]!r}: use one of {', '.join(BUILTIN)}, or file:PATH, each with an "
                "optional @WEIGHT (tpcb-like@9, select-only@1)"
            )
        weight = int(m.group("weight")) if m.group("weight") else None
        if weight is not None and not 1 <= weight <= MAX_WEIGHT:
            shown = what if len(what) <= 60 else what[:57] + "..."  # a path of any length typed: a short message
            raise ValueError(f"`script`: the weight of {shown} is {weight}: 1 to {MAX_WEIGHT}")
        out.append((what, weight))
    if len(out) > 1 and any(w is None for _, w in out):
        out = [(w, n if n is not None else 1) for w, n in out]  # pgbench's own default weight
    return out


class PgbenchParams(Strict):
    """PostgreSQL 15 servers (one per container) on the path under test, each driven by pgbench on the host."""

    type: Literal["pgbench"] = "pgbench"
    name: str = fields.name_field(
        "pgbench-<script>-s<scale>-c<clients>[-j<threads>][-r<rate>] and what differs from the defaults below"
    )
    script: str = fields.script_field(
        "tpcb-like",
        "tpcb-like, simple-update, select-only (pgbench's built-in scripts), or file:PATH (a pgbench script of your "
        "own, run as it is); several weighted as pgbench weighs them: tpcb-like@9, select-only@1",
    )
    scale: int = Field(
        default=10, ge=1, le=100_000, description="pgbench -i -s: 100,000 accounts (16 MiB) per unit; 1 to 100000"
    )
    clients: int = fields.clients_field("pgbench -c: database sessions per server, 1 to 1000")
    threads: int | Literal["auto"] = Field(
        default="auto",
        description="pgbench -j: client threads per server, 1 to 1000 (at most `clients` of them run); auto: one per "
        f"{CLIENTS_PER_THREAD} clients, as pgbench's docs advise (a thread manages a few clients, between 2 and 10)",
    )
    runtime: int = fields.runtime_field(
        "seconds of the measured run (pgbench -T), 1 to 86400; a multiple of checkpoint_timeout puts the same "
        "checkpoints in every trial"
    )
    warmup: int = fields.warmup_field(15, "; half of checkpoint_timeout keeps the run's checkpoints away from its ends")
    rate: int | None = fields.rate_field(
        "pgbench --rate: offered transactions per second of each server, 1 to 10000000 (a list is a sweep); none: "
        "flat out. Under a rate the advice compares latency (the spec's `latency_stat`)"
    )
    latency_limit: float | None = Field(
        default=None,
        gt=0,
        le=3_600_000,
        description="pgbench --latency-limit: milliseconds above which a transaction counts as late (and, under a "
        "rate, one that would start later is skipped), up to 3600000; none: no limit",
    )
    protocol: Literal["simple", "extended", "prepared"] = Field(
        default="simple", description="pgbench -M: how each query is sent (prepared: parsed once per session)"
    )
    max_tries: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="pgbench --max-tries: tries of a transaction that fails to serialize, 1 to 1000",
    )
    log_sampling: float | Literal["auto"] = Field(
        default="auto",
        description="pgbench --sampling-rate: the share of the transactions its per-transaction log holds (the "
        "latency percentiles are theirs; throughput and counts are pgbench's summary's), 0.0001 to 1; auto: about "
        "2000 a second of a host's servers together, from the warm-up's throughput (else the offered rate), and "
        "the whole log below that or with neither",
    )
    vacuum: bool = Field(
        default=True,
        description="pgbench's VACUUM of its tables before the first transactions after the load (false: -n)",
    )
    init_steps: str | None = Field(
        default=None,
        description="pgbench -I: the load's steps, of dtgGvpf (none: pgbench's own, dtgvp)",
    )
    foreign_keys: bool = Field(default=False, description="pgbench -i --foreign-keys")
    fillfactor: int = Field(default=100, ge=10, le=100, description="pgbench -i -F: the tables' fill factor, 10 to 100")
    partitions: int = Field(
        default=0, ge=0, le=10_000, description="pgbench -i --partitions: of pgbench_accounts, 0 (none) to 10000"
    )
    partition_method: Literal["range", "hash"] = Field(default="range", description="pgbench -i --partition-method")
    unlogged_tables: bool = Field(
        default=False, description="pgbench -i --unlogged-tables: tables whose changes write no WAL"
    )
    synchronous_commit: Literal["on", "off", "local", "remote_write", "remote_apply"] = Field(
        default="on", description="whether a commit waits for its WAL to be flushed"
    )
    fsync: bool = Field(default=True, description="whether PostgreSQL forces its writes to the device")
    shared_buffers: int = Field(
        default=128 * MiB,
        ge=128 << 10,
        le=1 << 40,
        description="PostgreSQL's own cache, bytes or e.g. 256MiB, 128KiB to 1TiB (the rest of a read is the "
        "page cache's)",
    )
    wal_level: Literal["minimal", "replica", "logical"] = Field(
        default="replica", description="how much the WAL records (minimal: no replication)"
    )
    full_page_writes: bool = Field(
        default=True, description="whether the first change of a page after a checkpoint writes the whole page"
    )
    checkpoint_timeout: int = Field(
        default=30,
        ge=30,
        le=86400,
        description="seconds between timed checkpoints, 30 (PostgreSQL's least) to 86400; one starts as the "
        "warm-up starts",
    )
    max_wal_size: int = Field(
        default=1 << 30,
        ge=32 * MiB,
        le=1 << 40,
        description="the WAL that forces a checkpoint before its time, bytes or e.g. 4GiB, 32MiB to 1TiB (larger "
        "than the WAL of a checkpoint_timeout keeps every checkpoint timed)",
    )
    settings: dict[str, str] = settings.settings_field(
        "any other PostgreSQL setting: {NAME: VALUE}, passed as postgres -c NAME=VALUE (wal_compression: lz4, "
        "huge_pages: off, wal_sync_method: ..., backend_flush_after: 0); checked against postgres --describe-config"
    )
    options: list[str] = client_options.options_field("pgbench", "--progress-timestamp, --random-seed=7")
    LATER = frozenset({"options"})  # absent from the stored trials made before it
    wal_path: str | None = logpath.log_field("WAL (initdb --waldir)")
    start_timeout: int = fields.start_timeout_field()
    file: str | None = Field(default=None, description="(set from `script: file:PATH`: the first script file)")
    files: list[str] = Field(default_factory=list, description="(set from `script`: every script file, resolved)")

    _times = field_validator("runtime", "warmup", "checkpoint_timeout", mode="before")(fields.seconds)
    _sizes = field_validator("shared_buffers", "max_wal_size", mode="before")(size_field)
    _settings = field_validator("settings", mode="before")(lambda v: settings.values(v))
    _options = field_validator("options", mode="before")(client_options.values)
    _wal_path = field_validator("wal_path", mode="before")(lambda v: logpath.name(v))
    _none = field_validator("rate", "latency_limit", "init_steps", mode="before")(fields.none_word)

    @field_validator("script")
    @classmethod
    def _script(cls, v: str) -> str:
        entries(v)
        return v

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() == "auto":
            return "auto"
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1000:
            raise ValueError(f"threads is a whole number from 1 to 1000, or auto, not {str(v)[:40]!r}")
        return v

    @field_validator("log_sampling", mode="before")
    @classmethod
    def _log_sampling(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() == "auto":
            return "auto"
        try:
            v = float(v) if isinstance(v, str) else v
        except ValueError:
            pass
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not MIN_SAMPLING <= v <= 1:
            raise ValueError(
                f"log_sampling {str(v)[:30]!r}: auto, or the share of the transactions pgbench logs, "
                f"{MIN_SAMPLING:g} to 1 (0.1: one in ten)"
            )
        return float(v)

    @field_validator("init_steps")
    @classmethod
    def _init_steps(cls, v: str | None) -> str | None:
        if v is not None and not INIT_STEPS.fullmatch(v):
            raise ValueError(
                f"init_steps {v[:30]!r}: pgbench -I takes up to 20 of d (drop), t (tables), g (generate on the "
                "client), G (on the server), v (vacuum), p (primary keys), f (foreign keys)"
            )
        return v

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        wanted = sum(1 for what, _ in entries(self.script) if what.startswith("file:"))
        if wanted and len(self.files) != wanted:
            raise ValueError("`script: file:PATH` names a pgbench script that was not found")
        return fields.named(self, default_name)

    @property
    def builtin(self) -> str | None:
        """The one built-in script it runs, or None (a file, or several scripts)."""
        return self.script if self.script in BUILTIN else None

    def runs(self) -> list[tuple[str, str, int | None]]:
        """What pgbench runs: ("-b", name, weight) for a built-in, ("-f", path, weight) for a file."""
        files = iter(self.files)
        return [
            ("-f", next(files), w) if what.startswith("file:") else ("-b", what, w) for what, w in entries(self.script)
        ]

    @property
    def effective_threads(self) -> int:
        """pgbench -j: one thread runs one client or more, never none; `auto` one per CLIENTS_PER_THREAD clients."""
        if self.threads == "auto":
            return -(-self.clients // CLIENTS_PER_THREAD)
        return min(self.threads, self.clients)

    @property
    def writes(self) -> bool:
        """Do its transactions write? The built-in scripts' answer; a user's script by its SQL's words."""
        for flag, what, _ in self.runs():
            if (flag == "-b" and what in WRITING_BUILTINS) or (flag == "-f" and fields.writes(what, WRITE_WORDS)):
                return True
        return False


def scale_below_clients(workload: JsonObject) -> str | None:
    """A stored trial's tpcb-like run with fewer branches (one per unit of scale) than clients, in words: every
    transaction updates one branch row, so clients beyond them queue on its lock, not on storage."""
    scale, clients, script = workload.get("scale"), workload.get("clients"), workload.get("script")
    if not isinstance(scale, int) or not isinstance(clients, int) or not isinstance(script, str):
        return None
    if scale >= clients or not any(what == "tpcb-like" for what, _ in entries(script)):
        return None
    return (
        "tpcb-like at a scale below its clients: every transaction updates one of `scale` branch rows, so the "
        "clients beyond them wait on row locks, not on storage"
    )


def _script_words(p: PgbenchParams) -> str:
    out = []
    for what, weight in entries(p.script):
        word = "file-" + what[5:].rsplit("/", 1)[-1] if what.startswith("file:") else what
        out.append(word + (f"@{weight}" if weight is not None else ""))
    return "+".join(out)


def default_name(p: PgbenchParams) -> str:
    name = f"pgbench-{_script_words(p)}-s{p.scale}-c{p.clients}"
    name += f"-j{p.threads}" if p.threads != "auto" else ""
    name += f"-r{p.rate}" if p.rate else ""
    name += f"-w{p.warmup}" if p.warmup != 15 else ""
    name += f"-M{p.protocol}" if p.protocol != "simple" else ""
    name += f"-ll{p.latency_limit:g}" if p.latency_limit else ""
    name += "-novacuum" if not p.vacuum else ""
    name += f"-ls{p.log_sampling:g}" if p.log_sampling != "auto" else ""
    init = {
        "I": (p.init_steps or "", ""),
        "fk": ("on" if p.foreign_keys else "", ""),
        "F": (str(p.fillfactor), "100"),
        "parts": (f"{p.partitions}{p.partition_method}" if p.partitions else "", ""),
        "unlogged": ("on" if p.unlogged_tables else "", ""),
    }
    name += "".join(f"-{key}{value}" for key, (value, default) in init.items() if value != default)
    server = {
        "sc": (p.synchronous_commit, "on"),
        "fsync": ("on" if p.fsync else "off", "on"),
        "sb": (fields.size_word(p.shared_buffers), "128MiB"),
        "wal": (p.wal_level, "replica"),
        "fpw": ("on" if p.full_page_writes else "off", "on"),
        "cpt": (f"{p.checkpoint_timeout}s", "30s"),
        "maxwal": (fields.size_word(p.max_wal_size), "1024MiB"),
    }
    name += "".join(f"-{key}_{value}" for key, (value, default) in server.items() if value != default)
    name += settings.words(p.settings)
    name += client_options.words(p.options)
    name += f"-walon{p.wal_path}" if p.wal_path else ""
    return name
