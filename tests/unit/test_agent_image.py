"""The agent image of a test host holds what the experiment's workloads declare they run on the host
(`HostTools`), and the bandwidth probe's tools only when a load's preset is sized by it: no workload's
tool is in the agent's own package list (issue 33)."""

import pytest

from strata.core.instances import ImageSpec
from strata.experiment import presets
from strata.experiment.load import parse_spec
from strata.hosts.agentimage import for_experiment, with_workloads
from strata.hosts.deploy import AGENT_PACKAGES
from strata.workloads import REGISTRY
from strata.workloads.base import DeviceProbe, HostTools
from strata.workloads.ycsb import jars

TOOLS = ImageSpec("agent-tools", packages=AGENT_PACKAGES)


@pytest.fixture(autouse=True)
def no_jars(tmp_path, monkeypatch):
    """ycsb's host-side trees without building its jars."""
    (tmp_path / "jars").mkdir()
    monkeypatch.setattr(jars, "agent_trees", lambda: (("/opt/strata/jars/x", str(tmp_path / "jars")),))


def experiment(*workloads, loads=None):
    doc = {
        "name": "t",
        "workdir": "/tmp/strata-agent-image-test",
        "devices": ["loop"],
        "filesystems": ["xfs"],
        "runtimes": ["native"],
        "paths": ["bind"],
        "workloads": list(workloads),
    }
    if loads:
        doc["loads"] = loads
    exp, _ = parse_spec(doc)
    return exp


YCSB = {"ycsb": {"workload": "a", "records": 1000}}
PGBENCH = {"pgbench": {}}
FIO = {"fio": {"preset": "rr", "size": "64MiB", "runtime": 2}}


def test_no_workload_tool_is_in_the_agents_own_packages():
    declared = {p for wl in REGISTRY.values() if isinstance(wl, HostTools) for p in wl.agent_image().packages}
    assert "fio" in declared and "openjdk-17-jre-headless" in declared
    assert declared.isdisjoint(AGENT_PACKAGES)


@pytest.mark.parametrize("workload", [YCSB, PGBENCH], ids=["ycsb", "pgbench"])
def test_a_database_experiment_without_a_bandwidth_preset_gets_no_fio(workload):
    image = for_experiment(TOOLS, experiment(workload, loads=[{"name": "m", "limits": "MEM"}]))
    assert "fio" not in image.packages
    wl = REGISTRY[next(iter(workload))]
    assert isinstance(wl, HostTools) and set(wl.agent_image().packages) <= set(image.packages)


def test_a_fio_experiment_gets_fio():
    assert "fio" in for_experiment(TOOLS, experiment(FIO)).packages
    assert "fio" in with_workloads(TOOLS, ["fio"]).packages


def test_a_preset_sized_by_the_probe_adds_the_probes_tools():
    probe = presets.probe()
    assert isinstance(probe, DeviceProbe) and isinstance(probe, HostTools)
    plain = for_experiment(TOOLS, experiment(YCSB, loads=[{"name": "c", "limits": "CPU"}]))
    sized = for_experiment(TOOLS, experiment(YCSB, loads=[{"name": "b", "limits": "BW"}]))
    assert "fio" not in plain.packages
    assert set(probe.agent_image().packages) <= set(sized.packages)
    assert set(sized.packages) - set(plain.packages) == set(probe.agent_image().packages)
    all_preset = for_experiment(TOOLS, experiment(PGBENCH, loads=[{"name": "a", "limits": {"preset": "ALL"}}]))
    assert set(probe.agent_image().packages) <= set(all_preset.packages)


def test_a_probe_that_declares_no_host_tools_adds_nothing(monkeypatch):
    class Probe:
        probe_words = "reads of {path}"

        def read_bps(self, device_path: str) -> int:
            return 1

    monkeypatch.setattr(presets, "WORKLOADS", {"probe": Probe()})
    assert with_workloads(TOOLS, [], probe=True) == TOOLS


def test_the_image_key_does_not_depend_on_the_order_of_the_declarations():
    a = for_experiment(TOOLS, experiment(FIO, YCSB, PGBENCH))
    b = for_experiment(TOOLS, experiment(PGBENCH, YCSB, FIO))
    assert a.packages != b.packages and a.key() == b.key()
    assert a.key() != TOOLS.key()


def test_grown_keeps_the_first_file_of_a_name_and_each_package_once(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("1")
    two.write_text("2")
    base = ImageSpec("agent", packages=("python3",), files=(("tool", str(one)),))
    grown = base.grown([ImageSpec(packages=("python3", "x"), files=(("tool", str(two)), ("other", str(two))))])
    assert grown.name == "agent" and grown.packages == ("python3", "x")
    assert dict(grown.files) == {"tool": str(one), "other": str(two)}
    assert base.grown([]) == base
