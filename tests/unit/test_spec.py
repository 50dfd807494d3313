import pytest
import yaml

from strata.core.errors import SpecErrors
from strata.experiment.load import load_spec, parse_spec

MINIMAL = {
    "name": "t",
    "devices": ["loop"],
    "filesystems": ["xfs"],
    "runtimes": ["native"],
    "paths": ["bind"],
    "workloads": ["rr"],
}


def test_shorthands_resolve():
    exp, wls = parse_spec({**MINIMAL, "runtimes": ["native", "docker:btrfs", "docker"], "loads": ["low", "high"]})
    assert [r.name for r in exp.runtimes] == ["native", "docker:btrfs", "docker:overlay2"]
    assert [(ld.numjobs, ld.iodepth) for ld in exp.loads] == [(1, 1), (32, 32)]
    assert wls[0].rw == "randread" and wls[0].bs == 4096 and wls[0].direct == 1 and wls[0].ioengine == "libaio"


def test_presets_follow_the_study():
    _, wls = parse_spec({**MINIMAL, "workloads": ["rr", "rw", "sr", "sw"]})
    assert [(w.rw, w.bs) for w in wls] == [("randread", 4096), ("randwrite", 4096), ("read", 131072), ("write", 131072)]


def test_every_error_at_once_with_key_paths():
    bad = {
        "name": "t",
        "devices": [{"type": "loop", "size": "12Q"}],
        "filesystems": ["zfs"],
        "runtimes": [{"type": "docker", "storage_driver": "overlay3"}],
        "paths": ["layer", "nowhere"],
        "workloads": [{"fio": {"preset": "rr", "bogus": 1}}],
        "loads": ["medium"],
        "colour": "red",
    }
    with pytest.raises(SpecErrors) as e:
        parse_spec(bad)
    paths = [p for p, _, _ in e.value.errors]
    text = e.value.message()
    for expected in (
        "devices[0].size",
        "filesystems[0].type",
        "runtimes[0].storage_driver",
        "paths[1]",
        "workloads[0].fio.bogus",
        "loads[0]",
        "colour",
    ):
        assert any(p == expected for p in paths), (expected, paths)
    assert "unknown key" in text and "fix:" in text


def test_sweep_expands_list_values():
    _, wls = parse_spec({**MINIMAL, "workloads": [{"fio": {"preset": "rr", "bs": ["4k", "16k", "64k"]}}]})
    assert [w.bs for w in wls] == [4096, 16384, 65536]
    assert len({w.name for w in wls}) == 3
    exp, _ = parse_spec({**MINIMAL, "loads": [{"numjobs": [1, 8, 32], "iodepth": 32}]})
    assert [ld.numjobs for ld in exp.loads] == [1, 8, 32]


def test_fio_job_file_is_read_relative_to_the_spec(tmp_path):
    (tmp_path / "my.fio").write_text("[global]\ndirect=1\n[job]\nrw=randread\nsize=16m\n")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**MINIMAL, "workloads": [{"fio": {"file": "my.fio"}}]}))
    _, wls = load_spec(tmp_path / "s.yaml")
    assert wls[0].file == str(tmp_path / "my.fio") and wls[0].name == "my"


def test_fio_job_file_missing_is_an_error(tmp_path):
    with pytest.raises(SpecErrors, match="no fio job file"):
        parse_spec({**MINIMAL, "workloads": [{"fio": {"file": "nope.fio"}}]}, base_dir=tmp_path)


def test_job_file_and_params_are_exclusive(tmp_path):
    (tmp_path / "j.fio").write_text("[j]\nrw=read\n")
    with pytest.raises(SpecErrors, match="job file brings its own"):
        parse_spec({**MINIMAL, "workloads": [{"fio": {"file": "j.fio", "bs": "4k"}}]}, base_dir=tmp_path)


def test_loop_size_must_be_whole_mib():
    with pytest.raises(SpecErrors, match="whole number of MiB"):
        parse_spec({**MINIMAL, "devices": [{"type": "loop", "size": 1000}]})


def test_duplicate_names_rejected():
    with pytest.raises(SpecErrors, match="two entries are named"):
        parse_spec({**MINIMAL, "devices": ["loop", "loop"]})


def test_bad_yaml_and_missing_file(tmp_path):
    (tmp_path / "b.yaml").write_text("name: [unclosed\n")
    with pytest.raises(SpecErrors, match="not valid YAML"):
        load_spec(tmp_path / "b.yaml")
    with pytest.raises(SpecErrors, match="no experiment file"):
        load_spec(tmp_path / "missing.yaml")


def test_block_device_destroy_flag():
    exp, _ = parse_spec({**MINIMAL, "devices": [{"type": "block", "path": "/dev/sdz", "destroy": True}]})
    assert exp.devices[0].name == "sdz" and exp.devices[0].destroy


def test_examples_parse():
    import pathlib

    root = pathlib.Path(__file__).parents[2] / "examples"
    specs = sorted(root.glob("*.yaml"))
    assert specs, "examples/ has specs"
    for p in specs:
        load_spec(p)


def test_spec_reference_is_up_to_date():
    import pathlib

    from strata.experiment.reference import generate

    ref = pathlib.Path(__file__).parents[2] / "docs" / "spec-reference.md"
    assert ref.read_text() == generate(), (
        "regenerate docs/spec-reference.md from strata.experiment.reference.generate()"
    )


def test_a_device_parameter_sweeps_like_any_list():
    exp, _ = parse_spec({**MINIMAL, "devices": [{"type": "remote", "latency": [0, "50us", "0.2ms"], "rate": "10gbit"}]})
    assert [d.latency for d in exp.devices] == [0.0, 50.0, 200.0]
    assert len({d.name for d in exp.devices}) == 3 and all(d.rate == 10**10 for d in exp.devices)
