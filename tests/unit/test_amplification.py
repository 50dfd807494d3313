"""Write amplification shown: `strata show`'s column, the report's tables, a figure per advice group, and the
advice line when the stacks compared differ in it beyond their noise (analysis/advice/amplification.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.advice.amplification import MIN_RATIO, advice, of_cell  # noqa: E402
from strata.analysis.analyse import analyse  # noqa: E402
from strata.cli.show import WA_LEGEND, table_text  # noqa: E402
from strata.report import build_report  # noqa: E402
from strata.report.figures import render  # noqa: E402
from strata.report.terminal import analysis_text  # noqa: E402


def reps(fs, values, amps, **kw):
    out = []
    for i, (v, amp) in enumerate(zip(values, amps)):
        r = make_result(fs=fs, rep=i, value=v, rw="randwrite", **kw)
        r["writes"] = {"workload_bytes": 1 << 30, "amplification": {"loop0": amp, "vda": amp * 1.5}}
        out.append(r)
    return out


def results(btrfs=(2.1, 2.12, 2.08), xfs=(1.0, 1.01, 0.99)):
    return (
        reps("raw", (2000, 2000, 2000), (1.0, 1.0, 1.0))
        + reps("xfs", (1000, 1010, 990), xfs)
        + reps("btrfs", (500, 505, 495), btrfs)
    )


def test_each_layer_over_the_repetitions():
    a = analyse(results())
    btrfs = next(c for c in a.cells if c.fs_type == "btrfs")
    dut, below = of_cell(btrfs)
    assert (dut.position, dut.name, dut.summary.n) == (0, "loop0", 3) and abs(dut.summary.mean - 2.1) < 1e-9
    assert below.name == "vda" and abs(below.summary.mean - 3.15) < 1e-9
    assert of_cell(next(c for c in analyse([make_result()]).cells)) == []  # stored before: none


def test_the_advice_says_it_when_stacks_differ_beyond_their_noise():
    a = analyse(results())
    (b,) = a.best
    assert b.amplification.endswith(
        "loop/btrfs/native/bind wrote 2.10x the workload's bytes, loop/xfs/native/bind 1.00x"
    )
    assert b.amplification.startswith("randwrite-4k at load")
    text = analysis_text(a)
    assert f"  - {b.text()}\n  - {b.amplification}" in text


def test_no_line_within_the_noise_below_the_ratio_or_without_intervals():
    (b,) = analyse(results(btrfs=(1.0, 3.0, 2.0), xfs=(1.0, 1.9, 0.5))).best
    assert b.amplification == ""  # the intervals overlap
    tight = MIN_RATIO * 0.99
    (b,) = analyse(results(btrfs=(tight,) * 3, xfs=(1.0,) * 3)).best
    assert b.amplification == ""  # decided, but too small to change a choice
    (b,) = analyse(results(btrfs=(MIN_RATIO * 1.01,) * 3, xfs=(1.0,) * 3)).best
    assert b.amplification
    one = reps("xfs", (1000,), (1.0,)) + reps("btrfs", (500,), (2.1,))
    assert advice(analyse(one).cells) == ""


def test_a_figure_per_advice_group_and_the_column_in_the_ratio_table():
    report = build_report(results() + [make_result(fs="xfs", rw="randread", rep=0)], "t")
    figs = [f for f in report.figures if f.kind == "amplification"]
    assert len(figs) == 1  # the reads wrote nothing: no figure for their group
    (fig,) = figs
    assert fig.table.columns[:5] == ["stack", "load", "layer", "disk", "write amplification"]
    layers = {(row[0], row[2]) for row in fig.table.rows}
    assert ("loop/raw/native/device", "device under test") in layers and (
        "loop/btrfs/native/bind",
        "the disk below",
    ) in layers
    svg, _ = render(fig)
    assert b"bytes written per workload byte" in svg and b"log scale" not in svg
    busy = build_report(reps("xfs", (1000, 1010, 990), (1.0, 1.0, 1.0)) + reps("ext4", (900,) * 3, (40.0,) * 3), "t")
    svg, _ = render(next(f for f in busy.figures if f.kind == "amplification"))
    assert b"(log scale)" in svg  # one stack at 40x and 60x, the other at 1x: the small bars stay readable
    ratio = next(f for f in report.figures if f.kind == "ratio" and "randwrite" in f.title)
    col = ratio.table.columns.index("write amplification")
    assert {row[0]: round(row[col], 2) for row in ratio.table.rows} == {
        "loop/xfs/native/bind": 1.0,
        "loop/btrfs/native/bind": 2.1,
    }


def test_strata_show_prints_the_device_under_tests_write_amplification():
    text = table_text(reps("btrfs", (500,), (2.1,)) + [make_result(fs="xfs", rw="randread")])
    head, _, *rows = text.splitlines()
    col = head.split().index("WA")
    assert [r.split()[col - 4] for r in rows[:2]] == ["2.10", "-"]  # the headings "lat mean us", "lat p99 us": 6 words
    assert WA_LEGEND in text
