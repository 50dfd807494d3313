"""strata prepare: what a spec builds once per machine (from the plugins' declarations), and what it says
of each item: its time, whether the cache held it, its cache key; a failed build names what is missing."""

from pathlib import Path

import pytest

from strata.cli import prepare
from strata.core.errors import StrataError
from strata.core.instances import Build
from strata.experiment.load import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def names(example: str) -> list[str]:
    return [b.name for b in prepare.builds(*load_spec(EXAMPLES / example))]


def test_each_example_builds_what_its_plugins_declare():
    assert names("quick.yaml") == ["image fio"]  # native needs nothing; docker the workload's image
    vm = names("shirinbab-runtimes.yaml")  # a VM guest of each workload's image, and the probe's bare guest
    assert vm[0] == "VM guest (bare, for the accelerator's probe)" and {
        "VM guest (fio)",
        "VM guest (filebench)",
    } <= set(vm)
    assert names("kubernetes.yaml") == ["Kubernetes test bed binaries", "image fio"]
    ycsb = names("shirinbab-cluster-hosts.yaml")
    assert ycsb[:2] == ["Cassandra 5.0.8 jars", "YCSB 0.17.0 and its Cassandra binding"]  # before the images
    assert ycsb[-1] == "image agent (ycsb)"  # hosts: the agent image, with the workload's host-side tools


def test_an_excluded_stack_builds_nothing(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkdir: /tmp/x\ndevices: [{type: loop, size: 1GiB}]\nfilesystems: [xfs]\n"
        "runtimes: [native, docker:overlay2]\npaths: [bind, volume]\n"
        "workloads: [{fio: {preset: rr, size: 64MiB, runtime: 2}}]\nloads: [low]\n"
        "exclude: [{runtime: 'docker:*'}]\n"
    )
    assert prepare.builds(*load_spec(spec)) == []


def item(name: str, cached: bool, log: list, fail: bool = False) -> Build:
    def make():
        log.append(name)
        if fail:
            raise StrataError("debootstrap of the image base failed: could not resolve deb.example", "check the mirror")

    return Build(name, lambda: f"key-{name}", lambda: cached, make, image=name.startswith("image"))


def test_it_says_time_cache_and_key_and_builds_only_what_is_missing(monkeypatch, capsys):
    built: list[str] = []
    items = [item("jars", True, built), item("image x", False, built)]
    monkeypatch.setattr(prepare, "builds", lambda exp, wl: items)
    assert prepare.main(_args(check=False)) == 0
    out = capsys.readouterr().out
    assert built == ["image x"]
    assert "jars: cached in 0.0 s (cache key key-jars)" in out and "image x: built in" in out
    assert "(cache key key-image x)" in out and "2 items (1 built, 1 cached)" in out


def test_check_builds_nothing_and_does_not_look_into_images_made_of_what_is_missing(monkeypatch, capsys):
    built: list[str] = []
    items = [item("jars", False, built), item("image y", False, built)]
    monkeypatch.setattr(prepare, "builds", lambda exp, wl: items)
    assert prepare.main(_args(check=True)) == 1
    out = capsys.readouterr().out
    assert built == [] and "jars: missing" in out and "image y: not checked" in out


def test_a_failed_build_names_what_is_missing_and_the_others_go_on(monkeypatch, capsys):
    built: list[str] = []
    items = [item("image a", False, built, fail=True), item("image b", False, built)]
    monkeypatch.setattr(prepare, "builds", lambda exp, wl: items)
    assert prepare.main(_args(check=False)) == 1
    out = capsys.readouterr().out
    assert built == ["image a", "image b"]
    assert "image a: FAILED" in out and "deb.example" in out and "fix: check the mirror" in out
    assert "1 failed" in out


def _args(check: bool):
    import argparse

    return argparse.Namespace(specs=[str(EXAMPLES / "quick.yaml")], check=check)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_plans_its_builds(example):
    assert all(b.name for b in prepare.builds(*load_spec(EXAMPLES / example)))


def test_what_builds_apart_goes_on_beside_the_rest(monkeypatch, capsys):
    import threading

    started = threading.Event()
    built: list[str] = []

    def slow():
        started.set()
        built.append("kube")

    def after():  # runs while the apart item may still build: it does not wait for it
        assert started.wait(5)
        built.append("image")

    items = [
        Build("kube", lambda: "v1", lambda: False, slow, apart=True),
        Build("image z", lambda: "k", lambda: False, after),
    ]
    monkeypatch.setattr(prepare, "builds", lambda exp, wl: items)
    assert prepare.main(_args(check=False)) == 0
    assert sorted(built) == ["image", "kube"] and "2 items (2 built)" in capsys.readouterr().out
