"""What a runtime is comes from its plugin (issue 22): the baseline and the isolation it declares, and
the one-word entries of a spec each device and runtime plugin claims itself."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.cells.cells import build_cells  # noqa: E402
from strata.analysis.cells.query import select  # noqa: E402
from strata.analysis.measured.runtimes import native_pairs  # noqa: E402
from strata.core.params import shorthand  # noqa: E402
from strata.experiment.load import _claimed, parse_spec  # noqa: E402
from strata.results import validity  # noqa: E402
from strata.stack.devices import REGISTRY as DEVICES  # noqa: E402
from strata.stack.runtimes import REGISTRY as RUNTIMES  # noqa: E402
from strata.stack.runtimes.native import Native  # noqa: E402

SPEC = {"name": "t", "devices": ["loop"], "filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"]}


def test_every_runtime_says_what_it_is():
    facts = {name: (rt.baseline, rt.isolation) for name, rt in RUNTIMES.items()}
    assert facts == {
        "native": (True, "process"),
        "docker": (False, "container"),
        "podman": (False, "container"),
        "vm": (False, "vm"),
        "kubernetes": (False, "container"),
    }


@pytest.fixture
def chroot(monkeypatch):
    """A second baseline runtime under another name: whatever compared names would miss it."""

    class Chroot(Native):
        name = "chroot"

    monkeypatch.setitem(RUNTIMES, "chroot", Chroot())


def _as(runtime: str, result: dict) -> dict:
    result["trial"]["runtime"] = {"type": runtime, "name": runtime}
    result["labels"]["runtime"] = runtime
    return result


def test_the_raw_baseline_is_the_baseline_plugins(chroot):
    raw = make_result(fs="raw")
    assert validity.is_raw_baseline(raw["trial"])
    assert validity.is_raw_baseline(_as("chroot", make_result(fs="raw"))["trial"])
    assert not validity.is_raw_baseline(_as("docker", make_result(fs="raw"))["trial"])
    assert not validity.is_raw_baseline(_as("gone", make_result(fs="raw"))["trial"])  # a plugin no longer registered


def test_the_analysis_asks_the_plugin(chroot):
    natives = [_as("chroot", make_result(rep=i, value=v)) for i, v in enumerate((100, 101, 99))]
    vms = [make_result(runtime="vm", rep=i, value=v) for i, v in enumerate((50, 52, 51))]
    gone = [_as("gone", make_result(rep=i, value=v, fs="ext4")) for i, v in enumerate((70, 71, 69))]
    cells = build_cells(natives + vms + gone)
    assert [c.runtime_type for c in select(cells, baseline=True)] == ["chroot"]
    assert [c.runtime_type for c in select(cells, isolation="vm")] == ["vm"]
    assert {c.isolation for c in cells} == {"process", "vm", ""}
    assert [(a.runtime_type, b.runtime_type) for a, b in native_pairs(cells)] == [("chroot", "vm")]


def test_a_plugin_claims_its_one_word_entries():
    assert shorthand("docker", "docker:btrfs", "storage_driver") == {"type": "docker", "storage_driver": "btrfs"}
    assert shorthand("docker", "docker", "storage_driver") == {"type": "docker"}
    assert shorthand("native", "native") == {"type": "native"}
    assert shorthand("native", "native:x") is None and shorthand("native", "docker") is None
    runtime, device = _claimed(RUNTIMES), _claimed(DEVICES)
    assert runtime("podman:vfs") == {"type": "podman", "storage_driver": "vfs"}
    assert runtime("vm") == {"type": "vm"} and runtime({"type": "vm"}) == {"type": "vm"}
    assert runtime("dockr") == {"type": "dockr"}  # unclaimed: validation names the unknown type
    assert device("/dev/sdz") == device("block:/dev/sdz") == {"type": "block", "path": "/dev/sdz"}
    assert device("zram") == {"type": "zram"} and device("remote") == {"type": "remote"}


def test_a_spec_reads_every_plugins_shorthands():
    spec = {**SPEC, "devices": ["loop", {"type": "block", "path": "/dev/sdz", "destroy": True}]}
    exp, _ = parse_spec({**spec, "runtimes": ["native", "podman:vfs", "vm", "kubernetes"], "workloads": ["rr"]})
    assert [r.name for r in exp.runtimes] == ["native", "podman:vfs", "vm", "kubernetes"]
    assert [d.type for d in exp.devices] == ["loop", "block"]
