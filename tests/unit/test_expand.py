from strata.core.params import Load
from strata.experiment.expand import expand, impossible
from strata.experiment.load import parse_spec
from strata.stack.filesystems import FilesystemParams as Filesystem
from strata.stack.runtimes.docker.runtime import DockerParams
from strata.stack.runtimes.native import NativeParams

BASE = {"name": "t", "devices": ["loop"], "workloads": ["rr"]}


def test_impossible_combinations_have_reasons():
    raw, xfs, ext4 = Filesystem(type="raw"), Filesystem(type="xfs"), Filesystem(type="ext4")
    native, btrfs_drv = NativeParams(), DockerParams(storage_driver="btrfs")
    low = Load()
    assert "needs filesystem raw" in impossible(xfs, native, "device", low, None)
    assert "no directory" in impossible(raw, native, "bind", low, None)
    assert "has no layer path" in impossible(xfs, native, "layer", low, None)
    assert "runs one" in impossible(xfs, native, "bind", Load(containers=2), None)
    assert "data-root on a btrfs" in impossible(ext4, btrfs_drv, "layer", low, None)
    assert impossible(Filesystem(type="btrfs"), btrfs_drv, "layer", low, None) is None


def test_expansion_orders_raw_first_and_ids_are_stable():
    spec = {
        **BASE,
        "filesystems": ["xfs", "raw"],
        "runtimes": ["native", "docker"],
        "paths": ["layer", "volume", "bind", "device"],
        "repetitions": 2,
    }
    trials, skipped = expand(*parse_spec(spec))
    assert trials[0].filesystem.type == "raw"
    ids = [t.id for t in trials]
    assert len(set(ids)) == len(ids)
    again, _ = expand(*parse_spec(spec))
    assert [t.id for t in again] == ids
    # native: bind on xfs, device on raw; docker: layer/volume/bind on xfs, device on raw -> 6 stacks x 2 reps
    assert len(trials) == 12
    assert skipped and all(s.reason for s in skipped)


def test_trial_id_changes_with_any_option():
    a, _ = expand(*parse_spec({**BASE, "filesystems": ["xfs"], "runtimes": ["native"], "paths": ["bind"]}))
    b, _ = expand(
        *parse_spec(
            {
                **BASE,
                "filesystems": [{"type": "xfs", "mount_options": ["noatime"]}],
                "runtimes": ["native"],
                "paths": ["bind"],
            }
        )
    )
    assert a[0].id != b[0].id


def test_exclude_by_glob():
    spec = {
        **BASE,
        "filesystems": ["raw", "xfs"],
        "runtimes": ["native", "docker:overlay2", "docker:vfs"],
        "paths": ["device", "bind"],
        "exclude": [{"filesystem": "raw", "runtime": "docker:*"}],
    }
    trials, skipped = expand(*parse_spec(spec))
    assert not [t for t in trials if t.filesystem.type == "raw" and t.runtime.type == "docker"]
    assert any("exclude[0]" in s.reason for s in skipped)


def test_a_workload_that_needs_a_directory_is_never_given_a_block_device():
    from strata.stack.vm.params import VmRuntime
    from strata.workloads.filebench import FilebenchParams
    from strata.workloads.fio import FioParams

    raw, xfs, low = Filesystem(type="raw"), Filesystem(type="xfs"), Load()
    fb, fio = FilebenchParams(personality="varmail"), FioParams(preset="rr")
    assert "needs a directory" in impossible(raw, NativeParams(), "device", low, fb)
    assert impossible(raw, NativeParams(), "device", low, fio) is None
    why = impossible(xfs, VmRuntime(), "image", low, fb)
    assert "needs a directory" in why and "guest_filesystem" in why
    assert impossible(xfs, VmRuntime(guest_filesystem="ext4"), "image", low, fb) is None
    assert impossible(xfs, VmRuntime(), "bind", low, fb) is None


QUICK = {
    **BASE,
    "filesystems": ["raw", "xfs", "ext4"],
    "runtimes": ["native", "docker:overlay2"],
    "paths": ["device", "volume", "bind"],
    "workloads": ["rr", "rw"],
    "loads": ["low", "high"],
    "exclude": [{"filesystem": "raw", "runtime": "docker:*"}, {"filesystem": "ext4", "runtime": "docker:*"}],
    "repetitions": 3,
}


def _rounds(trials):
    out = {}
    for t in trials:
        out.setdefault(t.repetition, []).append(t.label.rsplit(" #", 1)[0])
    return out


def test_each_round_runs_in_its_own_random_order_and_the_same_seed_gives_the_same_order():
    """Issue 41: the order within a round was the spec's, raw first and ext4 always last; now each round has its
    own random order, drawn from the experiment's seed (stored in the run document, printed by `strata
    validate`), with each stack's trials together (a stack is built once per round)."""
    trials, _ = expand(*parse_spec(QUICK))
    rounds = _rounds(trials)
    assert rounds[1] != rounds[2] and sorted(rounds[1]) == sorted(rounds[2])
    again, _ = expand(*parse_spec(QUICK))
    assert [t.id for t in again] == [t.id for t in trials]  # the same seed: the same order
    other, _ = expand(*parse_spec({**QUICK, "seed": 7}))
    assert [t.id for t in other] != [t.id for t in trials] and sorted(t.id for t in other) == sorted(
        t.id for t in trials
    )
    for rep in (0, 1, 2):  # a stack's trials together: as many stack changes as stacks
        stacks = [t.stack_key for t in trials if t.repetition == rep]
        changes = 1 + sum(a != b for a, b in zip(stacks, stacks[1:]))
        assert changes == len(set(stacks)) == 4
    assert trials[0].filesystem.type == "raw"  # the baselines first in the first round (the run-time check)
    firsts = {tuple(t.stack_key for t in trials if t.repetition == rep)[0] for rep in range(3)}
    assert len(firsts) > 1  # no stack always first


def test_auto_runs_the_raw_baseline_in_its_first_rounds_only():
    """Issue 41: a fifth of the quickstart's trials repeated the raw baseline, which is no candidate; with
    `repetitions: auto` it runs in the first two rounds (an interval for its ratios and flags)."""
    spec = {**QUICK, "repetitions": "auto", "min_repetitions": 3, "max_repetitions": 6}
    trials, _ = expand(*parse_spec(spec))
    raw = [t for t in trials if t.raw_baseline]
    assert sorted({t.repetition for t in raw}) == [0, 1] and len(trials) == 56
    fixed, _ = expand(*parse_spec(QUICK))
    assert len([t for t in fixed if t.raw_baseline]) == 12  # a fixed design runs what it says


def test_the_spec_order_keeps_raw_first_and_the_spec_order_in_every_round():
    """`order: spec`: the order before issue 41 (bench/order_cost.py measures the random order against it)."""
    trials, _ = expand(*parse_spec({**QUICK, "order": "spec"}))
    rounds = _rounds(trials)
    assert rounds[0] == rounds[1] == rounds[2] and trials[0].filesystem.type == "raw"
    assert [t.filesystem.type for t in trials if t.repetition == 0][-1] == "ext4"  # ext4 always last


def test_validate_prints_the_seed_and_each_rounds_order(capsys):
    """Issue 41: `strata validate` prints the order each planned round runs in (its stacks; `-v`, every
    trial in run order), with the seed, and the looks the budget pays for."""
    from strata.cli.validate import print_plan
    from strata.experiment.plan import Plan

    exp, wls = parse_spec({**QUICK, "repetitions": "auto", "max_repetitions": 6, "budget": "9m", "seed": 11})
    trials, skipped = expand(exp, wls)
    print_plan(exp, Plan(trials, skipped), verbose=True)
    out = capsys.readouterr().out
    assert "order within each round: random, seed 11" in out and "looking at 3 (what the budget pays for" in out
    for rep in (0, 1, 2):
        stacks = []
        for t in trials:
            if t.repetition == rep and (not stacks or stacks[-1] != "/".join(t.stack_key)):
                stacks.append("/".join(t.stack_key))
        assert f"  round {rep}: {', '.join(stacks)}" in out
    assert out.index(trials[0].id) < out.index(trials[-1].id)  # -v lists the trials in run order
