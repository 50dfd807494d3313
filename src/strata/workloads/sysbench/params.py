"""The `sysbench` workload's spec: MariaDB 10.11 servers on the path under test, sysbench 1.0.20 on the host.

`sysbench: {script: oltp_read_write, tables: 4, table_size: 100000, clients: [1, 8, 32], runtime: 60,
warmup: 15, rand_type: special, rate: none, innodb_buffer_pool_size: 128MiB, innodb_flush_log_at_trx_commit: 1,
innodb_flush_method: O_DIRECT, innodb_log_file_size: 96MiB, innodb_doublewrite: true, settings: {...}, options: [],
redo_log: none}`. Every number is bounded; a list of any key is a sweep (experiment/load.py). `script` is
one of sysbench's OLTP scripts or `file:PATH`, a Lua script of your own run as it is (against the tables
the load made with oltp_common's `prepare`). The five InnoDB settings are those that decide what reaches
the device; any other goes in `settings`, checked against the server's own list before anything is built.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from strata.core.params import Strict, size_field
from strata.workloads.server import fields, logpath, settings
from strata.workloads.server import options as client_options

MiB = 1 << 20
# sysbench 1.0.20's OLTP scripts (/usr/share/sysbench): every one prepares its tables with oltp_common
READING_BUILTINS = ("oltp_read_only", "oltp_point_select", "select_random_points", "select_random_ranges")
WRITING_BUILTINS = (
    "oltp_read_write",
    "oltp_write_only",
    "oltp_insert",
    "oltp_delete",
    "oltp_update_index",
    "oltp_update_non_index",
)
BUILTIN = (*WRITING_BUILTINS[:2], *READING_BUILTINS[:2], *WRITING_BUILTINS[2:], *READING_BUILTINS[2:])
WARMUP_S = 15  # as pgbench's: the same seconds of unmeasured transactions before either database's run
FLUSH_METHODS = ("fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT", "O_DIRECT_NO_FSYNC")
# A script whose SQL names one of these writes (its transactions' redo log must reach the device): fields.writes.
WRITE_WORDS = re.compile(r"\b(insert|update|delete|replace|create|drop|alter|truncate)\b", re.I)
# How mariadbd writes its settings: no extension's names, ON and OFF, numbers such as 2000, 4k, 1G, 90.5.
NOTATION = settings.Notation(
    example="{innodb_io_capacity: 2000}",
    name=re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}"),
    on_off=("ON", "OFF"),
    booleans=frozenset({"on", "off", "true", "false", "1", "0"}),
    boolean_words="0/1/false/off/on/true",
    number=re.compile(r"[-+]?\d+(\.\d+)?[KMGTPE]?", re.I),
    number_words="",
    empty=False,
)


class SysbenchParams(Strict):
    """MariaDB 10.11 servers (one per container) on the path under test, each driven by sysbench on the host."""

    type: Literal["sysbench"] = "sysbench"
    name: str = fields.name_field(
        "sysbench-<script>-<tables>x<table_size>-c<clients>[-r<rate>] and the InnoDB settings that differ from "
        "MariaDB's defaults"
    )
    script: str = fields.script_field(
        "oltp_read_write",
        f"{', '.join(BUILTIN)} (sysbench's OLTP scripts), or file:PATH (a Lua script of your own, run as it is "
        "against the tables of oltp_common's prepare)",
    )
    tables: int = Field(default=4, ge=1, le=10_000, description="sysbench --tables: tables per server, 1 to 10000")
    table_size: int = Field(
        default=100_000,
        ge=1,
        le=1_000_000_000,
        description="sysbench --table-size: rows per table (about 240 bytes each with its index), 1 to 1000000000",
    )
    clients: int = fields.clients_field(
        "sysbench --threads: client threads per server, each its own database session (pgbench's clients), 1 to 1000"
    )
    runtime: int = fields.runtime_field("seconds of the measured run (sysbench --time)")
    warmup: int = fields.warmup_field(WARMUP_S, " (pgbench's default: the buffer pool and the redo log settle first)")
    rand_type: Literal["special", "uniform", "gaussian", "pareto"] = Field(
        default="special",
        description="sysbench --rand-type, how the rows a transaction touches are drawn: special (sysbench's "
        "default: rand_spec_res% of the draws go to rand_spec_pct% of the rows), uniform, gaussian, pareto "
        "(zipfian needs sysbench 1.1; Debian 12 ships 1.0.20)",
    )
    rand_spec_pct: int = Field(default=1, ge=1, le=100, description="sysbench --rand-spec-pct (special), 1 to 100")
    rand_spec_res: int = Field(default=75, ge=1, le=100, description="sysbench --rand-spec-res (special), 1 to 100")
    rand_pareto_h: float = Field(
        default=0.2, gt=0.0, lt=1.0, description="sysbench --rand-pareto-h (pareto), above 0 and below 1"
    )
    rate: int | None = fields.rate_field(
        "sysbench --rate: offered transactions per second of each server, 1 to 10000000 (a list is a sweep); none: "
        "flat out"
    )
    innodb_buffer_pool_size: int = Field(
        default=128 * MiB,
        ge=8 * MiB,
        le=1 << 40,
        description="InnoDB's own cache, bytes or e.g. 1GiB, 8MiB to 1TiB",
    )
    innodb_flush_log_at_trx_commit: Literal[0, 1, 2, 3] = Field(
        default=1,
        description="1: each commit writes and flushes the redo log; 3: flushes it at prepare and at commit; 2: "
        "writes it, flushed once a second; 0: both once a second",
    )
    innodb_flush_method: Literal["fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT", "O_DIRECT_NO_FSYNC"] = Field(
        default="O_DIRECT", description="how InnoDB writes its data files (O_DIRECT: not through the page cache)"
    )
    innodb_log_file_size: int = Field(
        default=96 * MiB,
        ge=4 * MiB,
        le=512 << 30,
        description="the redo log's size, bytes or e.g. 1GiB, 4MiB to 512GiB",
    )
    innodb_doublewrite: bool = Field(
        default=True, description="whether InnoDB writes each page twice (the doublewrite buffer) against torn pages"
    )
    settings: dict[str, str] = settings.settings_field(
        "any other MariaDB server setting, {name: value} as mariadbd takes it (innodb_io_capacity: 2000); each "
        "name checked against `mariadbd --verbose --help` before anything is built"
    )
    options: list[str] = client_options.options_field("sysbench", "--skip_trx=on, --range_size=10")
    LATER = frozenset({"options"})  # absent from the stored trials made before it
    redo_log: str | None = logpath.log_field("redo log (innodb_log_group_home_dir)")
    start_timeout: int = fields.start_timeout_field()
    file: str | None = Field(default=None, description="(set from `script: file:PATH`)")

    _times = field_validator("runtime", "warmup", mode="before")(fields.seconds)
    _sizes = field_validator("innodb_buffer_pool_size", "innodb_log_file_size", mode="before")(size_field)
    _none = field_validator("rate", mode="before")(fields.none_word)
    _settings = field_validator("settings", mode="before")(lambda v: settings.values(v, NOTATION))
    _redo = field_validator("redo_log", mode="before")(logpath.name)
    _options = field_validator("options", mode="before")(client_options.values)

    @field_validator("rand_type", mode="before")
    @classmethod
    def _rand_type(cls, v: object) -> object:
        if v == "zipfian":
            raise ValueError(
                "zipfian needs sysbench 1.1, and Debian 12 ships 1.0.20: use special, uniform, gaussian or pareto"
            )
        return v

    @field_validator("script")
    @classmethod
    def _script(cls, v: str) -> str:
        if v in BUILTIN or v.startswith("file:"):
            return v
        raise ValueError(f"unknown sysbench script {v[:60]!r}: use one of {', '.join(BUILTIN)}, or file:PATH")

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.script.startswith("file:") and not self.file:
            raise ValueError("`script: file:PATH` names a Lua script that was not found")
        return fields.named(self, default_name)

    @property
    def durable(self) -> bool:
        """Each commit waits on its redo log's flush (innodb_flush_log_at_trx_commit 1 or 3)."""
        return self.innodb_flush_log_at_trx_commit in (1, 3)

    def rand(self) -> list[str]:
        """sysbench's options for the draws: the type, and the parameters of that type alone."""
        out = [f"--rand-type={self.rand_type}"]
        if self.rand_type == "special":
            out += [f"--rand-spec-pct={self.rand_spec_pct}", f"--rand-spec-res={self.rand_spec_res}"]
        elif self.rand_type == "pareto":
            out.append(f"--rand-pareto-h={self.rand_pareto_h:g}")
        return out

    @property
    def builtin(self) -> str | None:
        return self.script if self.script in BUILTIN else None

    @property
    def writes(self) -> bool:
        """Do its transactions write? The OLTP scripts' answer; a user's script by its SQL's words."""
        if self.builtin is not None:
            return self.builtin in WRITING_BUILTINS
        return fields.writes(self.file, WRITE_WORDS)

    def innodb(self) -> dict[str, str]:
        """The spec's own InnoDB settings, as mariadbd takes them."""
        return {
            "innodb_buffer_pool_size": str(self.innodb_buffer_pool_size),
            "innodb_flush_log_at_trx_commit": str(self.innodb_flush_log_at_trx_commit),
            "innodb_flush_method": self.innodb_flush_method,
            "innodb_log_file_size": str(self.innodb_log_file_size),
            "innodb_doublewrite": "ON" if self.innodb_doublewrite else "OFF",
        }


def default_name(p: SysbenchParams) -> str:
    script = p.builtin or "file-" + (p.file or "script").rsplit("/", 1)[-1].removesuffix(".lua")
    name = f"sysbench-{script}-{p.tables}x{p.table_size}-c{p.clients}"
    name += f"-r{p.rate}" if p.rate is not None else ""
    name += f"-w{p.warmup}" if p.warmup != WARMUP_S else ""
    if p.rand_type != "special" or (p.rand_spec_pct, p.rand_spec_res) != (1, 75):
        draws = {"special": f"{p.rand_spec_res}-{p.rand_spec_pct}", "pareto": f"{p.rand_pareto_h:g}"}
        name += f"-rand_{p.rand_type}" + (f"_{draws[p.rand_type]}" if p.rand_type in draws else "")
    differ = {
        "bp": (fields.size_word(p.innodb_buffer_pool_size), "128MiB"),
        "trx": (str(p.innodb_flush_log_at_trx_commit), "1"),
        "flush": (p.innodb_flush_method, "O_DIRECT"),
        "log": (fields.size_word(p.innodb_log_file_size), "96MiB"),
        "dblwr": ("on" if p.innodb_doublewrite else "off", "on"),
    }
    name += "".join(f"-{key}_{value}" for key, (value, default) in differ.items() if value != default)
    name += f"-redo_{p.redo_log}" if p.redo_log else ""
    return name + settings.words(p.settings) + client_options.words(p.options)
