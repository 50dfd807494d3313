"""examples/xu2017-remote.yaml says what it runs (issue 54): its header claimed "every storage option" and ran
native and overlay2 on xfs only. The stacks its header lists, and the trial counts it states, are its spec's
expansion; its commented lines, swapped in, run the study's other storage options, as the header says."""

import re
from pathlib import Path

from strata.experiment.expand import expand
from strata.experiment.load import load_spec

SPEC = Path(__file__).resolve().parents[2] / "examples" / "xu2017-remote.yaml"
TEXT = SPEC.read_text()


def _header() -> str:
    return " ".join(" ".join(line[2:] for line in TEXT.split("\nname:")[0].splitlines()).split())


def _expanded(path: Path, scale: str = "full") -> tuple[list[str], dict[str, set[str]]]:
    """The spec's trials' labels, and the stacks (file system/runtime/path) it runs on each device."""
    exp, wls = load_spec(path, scale)
    trials, _ = expand(exp, wls)
    stacks: dict[str, set[str]] = {}
    for t in trials:
        device, stack = t.label.split(" ")[0].split("/", 1)
        stacks.setdefault(device, set()).add(stack)
    return [t.label for t in trials], stacks


def _swapped(tmp_path: Path) -> Path:
    """The spec with its `filesystems:`, `runtimes:` and `exclude:` lines swapped for the commented ones."""
    text = re.sub(r"^(filesystems|runtimes): .*\n", "", TEXT, flags=re.M)
    text = re.sub(r"^exclude:\n(  - .*\n)+", "", text, flags=re.M)
    text = re.sub(r"^# (filesystems:|runtimes:|exclude:)", r"\1", text, flags=re.M)
    text = re.sub(r"^#   - ", "  - ", text, flags=re.M)
    out = tmp_path / "xu2017-remote-all.yaml"
    out.write_text(text)
    return out


def test_the_header_lists_exactly_the_stacks_the_spec_runs_on_each_device():
    header = _header()
    said = re.search(r"Runs, on the local device and on the remote one: (.*?) \(one stack", header)
    assert said, "the header says which stacks it runs"
    listed = {s.strip() for s in said.group(1).split(",")}
    for scale in ("full", "smoke"):
        _, stacks = _expanded(SPEC, scale)
        assert set(stacks) == {"local", "remote"} and all(s == listed for s in stacks.values()), (scale, stacks)
    assert not re.search(r"every (storage option|stack)", header + TEXT.split("description:")[1].split("\n")[0])


def test_the_trial_counts_the_header_states_are_the_expansions(tmp_path):
    header = _header()
    runs = re.search(
        r"These run (\d+) trials .*?; (\d+) at smoke scale\); every option of the study's that strata builds, (\d+) "
        r".*?; (\d+) at smoke",
        header,
    )
    assert runs, header
    full, smoke, every, every_smoke = map(int, runs.groups())
    assert (full, smoke) == (len(_expanded(SPEC)[0]), len(_expanded(SPEC, "smoke")[0]))
    swapped = _swapped(tmp_path)
    assert (every, every_smoke) == (len(_expanded(swapped)[0]), len(_expanded(swapped, "smoke")[0]))


def test_the_commented_lines_run_the_studys_other_storage_options_remote_too(tmp_path):
    _, stacks = _expanded(_swapped(tmp_path))
    wanted = {"ext4/native/bind", "btrfs/native/bind", "xfs/docker:aufs/layer", "xfs/docker:devicemapper/volume"}
    wanted |= {f"btrfs/docker:btrfs/{p}" for p in ("layer", "volume", "bind")}
    assert wanted <= stacks["remote"] and stacks["remote"] == stacks["local"]
    _, here = _expanded(SPEC)
    assert here["remote"] < stacks["remote"]
