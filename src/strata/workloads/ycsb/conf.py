"""Cassandra's settings map: `settings: {NAME: VALUE}`, any cassandra.yaml key the node knows, as PostgreSQL's map.

- Checked before anything is built (workloads/server/settings.py) against the node's own list: every public
  field of Cassandra's `Config` class and the older names its `@Replaces` keeps, read by reflection from the
  assembled jars (`Counters names`, in the binding) and cached per Cassandra version and binding, outside the
  jars' own directories (`names_cache`). Where the jars are not
  assembled yet the node judges at start: an unknown key stops it ("Invalid yaml") and its error line is the
  trial's failure.
- Refused: the keys strata sets itself (`MANAGED`: directories, addresses, ports, seeds, the cluster's name).
- Written typed (`typed`): a whole number as an int, true/false as a boolean, anything else as the string the
  spec gave ("10000ms", "256MiB": Cassandra 5's own units).
- The durability of a node is its `commitlog_sync` (`sync`): `periodic` (Cassandra's default: a write is
  acknowledged before its commit log is synced; synced every `commitlog_sync_period`), `batch` (each write
  waits on a sync) or `group` (writes wait on a sync every `commitlog_sync_group_window`). strata's own
  default stays periodic, 10 s; with batch or group its period is left out, which Cassandra requires.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, JsonValue
from strata.workloads.server.durability import Durability, Setting, value_of
from strata.workloads.server.settings import Catalog, Known, Notation, Rules

SYNC_MODES = ("periodic", "batch", "group")
NAMES_TIMEOUT_S = 60
INT = re.compile(r"[-+]?\d{1,18}")
NOTATION = Notation(
    example="{commitlog_sync: batch}",
    on_off=("true", "false"),
    booleans=frozenset({"true", "false"}),
    boolean_words="true or false",
    number_words=" (a whole number; durations and sizes as Cassandra writes them: 10000ms, 256MiB)",
    empty=False,
)
_WHERE = "strata sets it for every node (its directories on the path under test)"
_NET = "strata sets it: each node listens on its own 127.0.0.0/8 address and ports"
MANAGED = {
    "cluster_name": "strata names each cluster itself (strata-c<cluster>)",
    "data_file_directories": _WHERE,
    "commitlog_directory": _WHERE,
    "saved_caches_directory": _WHERE,
    "hints_directory": _WHERE,
    "cdc_raw_directory": _WHERE,
    "local_system_data_file_directory": _WHERE,
    "seed_provider": "strata makes each cluster's first node its seed",
    "listen_address": _NET,
    "listen_interface": _NET,
    "rpc_address": _NET,
    "rpc_interface": _NET,
    "broadcast_address": _NET,
    "broadcast_rpc_address": _NET,
    "storage_port": _NET,
    "ssl_storage_port": _NET,
    "native_transport_port": _NET,
    "native_transport_port_ssl": _NET,
    "start_native_transport": "strata needs it on: the YCSB clients speak CQL",
}
_KINDS = {"boolean": "bool", "Boolean": "bool", "int": "int", "Integer": "int", "long": "int", "Long": "int"}
_KINDS |= {"double": "real", "Double": "real", "float": "real", "Float": "real"}


def typed(settings: dict[str, str]) -> JsonObject:
    """The map as cassandra.yaml keys, each value of the YAML type Cassandra reads it as."""
    out: JsonObject = {}
    for name, value in settings.items():
        v: JsonValue = value
        if INT.fullmatch(value.strip()):
            v = int(value)
        elif value.strip().lower() in ("true", "false"):
            v = value.strip().lower() == "true"
        out[name] = v
    return out


def settle(yaml: JsonObject) -> JsonObject:
    """cassandra.yaml with the user's keys over strata's: strata's period of a periodic sync left out where the
    map gives a batch or group sync (Cassandra refuses a period beside them) or its period under the older name."""
    out = dict(yaml)
    if str(out.get("commitlog_sync", "periodic")).lower() != "periodic" or "commitlog_sync_period_in_ms" in out:
        out.pop("commitlog_sync_period", None)
    return out


def sync(settings: dict[str, str]) -> str:
    """The node's commitlog_sync under this map."""
    return settings.get("commitlog_sync", "periodic").strip().lower()


def problems(settings: dict[str, str]) -> list[str]:
    """What the node would refuse of the map's commit-log settings, said before anything is built."""
    mode = sync(settings)
    if mode not in SYNC_MODES:
        return [f"`settings.commitlog_sync` is one of {', '.join(SYNC_MODES)}, not {mode[:20]!r}"]
    window = {"commitlog_sync_group_window", "commitlog_sync_group_window_in_ms"} & set(settings)
    if mode == "group" and not window:
        return ["`settings.commitlog_sync: group` needs its window: add `commitlog_sync_group_window: 15ms` (say)"]
    if mode != "group" and window:
        return [f"`settings.commitlog_sync_group_window` is only read with `commitlog_sync: group` (now {mode})"]
    return []


def durable(settings: dict[str, str]) -> bool:
    """Each write waits on its commit log's sync (batch or group): periodic acknowledges it before."""
    return sync(settings) in ("batch", "group")


def durability(said: JsonObject, settings: dict[str, str]) -> Durability:
    """A node's commit-log durability in force (its own settings as Counters read them, else the spec's map, else
    strata's default): periodic acknowledges a write before its sync, batch and group after it."""
    mode = value_of("commitlog_sync", said, settings, default="periodic").lower()
    pace = {"periodic": ("commitlog_sync_period", "10000ms"), "group": ("commitlog_sync_group_window", "")}
    out = [
        Setting(
            "commitlog_sync",
            mode,
            f"commitlog_sync={mode}",
            "a write is acknowledged before its commit log is synced" if mode == "periodic" else "",
        )
    ]
    if mode in pace:
        name, default = pace[mode]
        every = value_of(name, said, settings, default=default)
        out.append(Setting(name, every, f"every {every}"))
    return Durability(tuple(out))


def parse_names(text: str) -> Catalog | None:
    """`Counters names`'s JSON ({version, names: {name: Java type, or "replaced:NEW"}}) as a catalog."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    names = doc.get("names") if isinstance(doc, dict) else None
    if not isinstance(names, dict) or not names:
        return None
    known: dict[str, Known] = {}
    for name, kind in names.items():
        if not isinstance(name, str) or not isinstance(kind, str):
            continue
        of = names.get(kind.removeprefix("replaced:"), kind) if kind.startswith("replaced:") else kind
        known[name.lower()] = Known(name, _KINDS.get(str(of), "string"))
    version = doc.get("version") if isinstance(doc.get("version"), str) else None
    return Catalog(f"Cassandra {version or ''}'s Config class (its cassandra.yaml keys)".replace("  ", " "), known)


def read_names(cassandra_lib: Path, binding_lib: Path, cache: Path) -> Catalog | None:
    """The node's own list of settings, from its jars (cached in `cache`), or None when the jars are not there."""
    if cache.is_file():
        found = parse_names(cache.read_text())
        if found is not None:
            return found
    if not cassandra_lib.is_dir() or not binding_lib.is_dir():
        return None
    argv = ["java", "-Xmx128m", "-cp", f"{cassandra_lib}/*:{binding_lib}/*", "strata.ycsb.Counters", "names"]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=NAMES_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = parse_names(cp.stdout)
    if found is not None and cp.returncode == 0:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(cp.stdout)
    return found


def catalog() -> Catalog | None:
    from strata.workloads.ycsb import jars  # the jars' places; imported here, as only a checked map needs them

    cass = jars.cassandra_home()
    if not (cass / jars.MANIFEST).is_file():
        return None
    try:
        binding = jars.ycsb_home()
    except StrataError:  # the binding's sources are not here: the node judges at start
        return None
    if not (binding / jars.MANIFEST).is_file():
        return None
    return read_names(cass / "lib", binding / "lib", names_cache(cass, binding))


def names_cache(cassandra: Path, binding: Path) -> Path:
    """Where the list read from these jars is kept: beside the jars' directories, never in them, since the agent
    image holds those trees and is keyed by what they hold (a list written in one after `strata prepare` built
    the image made every later run ask for the image again)."""
    from strata.workloads.ycsb import jars

    return jars.cache_dir() / "config-names" / f"{cassandra.name}+{binding.parent.name}-{binding.name}.json"


RULES = Rules(lambda: catalog(), MANAGED, NOTATION)
