"""Every kind of figure and table, chosen from what synthetic results contain: scaling with the peak,
sweeps with bands, 004-style tables for Filebench, time series, compare; each SVG has axes and labels."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.analysis.compare import compare  # noqa: E402
from strata.report import compare as compare_report  # noqa: E402
from strata.report import csv as csv_out  # noqa: E402
from strata.report import figures, html, terminal  # noqa: E402
from strata.report.model import build  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def reps(value, n=3, **kw):
    return [make_result(rep=i, value=value * (1 + 0.01 * i), **kw) for i in range(n)]


def mixed_results():
    rs = []
    for fs, f in (("raw", 1.0), ("xfs", 0.95), ("ext4", 0.8)):
        for bs in (4096, 16384, 65536):
            rs += reps(1000 * f * 4096 / bs, fs=fs, bs=bs, numjobs=4, iodepth=8)
        rs += reps(300 * f, fs=fs, bs=4096, numjobs=1, iodepth=1, lat_us=80)
    for n, v in zip(range(1, 6), (100, 170, 220, 240, 190)):
        rs += reps(v, fs="xfs", runtime="docker", driver="overlay2", path="volume", containers=n)
    for fs, v in (("ext4", 168.0), ("xfs", 108.2), ("btrfs", 79.7)):
        for path in ("volume", "bind"):
            for n in (1, 2, 3):
                rs += reps(
                    v,
                    fs=fs,
                    runtime="docker",
                    driver="overlay2",
                    path=path,
                    kind="filebench",
                    workload="fileserver",
                    containers=n,
                )
    return rs


@pytest.fixture(scope="module")
def report():
    return build(analyse(mixed_results()), "synthetic")


def svg_texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_figure_kinds_chosen_from_the_results(report):
    kinds = {f.kind for f in report.figures}
    assert {"ratio", "latency", "sweep", "scaling", "throughput"} <= kinds
    assert any(f.data.get("dim") == "bs" for f in report.figures if f.kind == "sweep")


def test_every_figure_renders_with_axes_and_labels(report):
    for f in report.figures:
        svg, png = figures.render(f, png=True)
        root = ET.fromstring(svg)
        axes = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("axes_")]
        assert axes, f.id
        texts = svg_texts(svg)
        assert any(f.title[:20] in t for t in texts), f.id
        assert len(texts) >= 6, f.id
        assert png is not None and png.startswith(b"\x89PNG")
        assert figures.render(f) == (svg, None)  # the PNG only on request, the SVG the same


def test_scaling_marks_the_peak(report):
    (f,) = [f for f in report.figures if f.kind == "scaling" and f.data["unit"] == "IOPS"]
    (line,) = f.data["lines"]
    assert line["peak"] == 4 and line["falls_after"]
    assert "peak 4" in svg_texts(figures.render(f)[0])
    peak_rows = [r for r in f.table.rows if r[6]]
    assert [r[1] for r in peak_rows] == [4]


def test_004_tables_by_filesystem_path_containers(report):
    (t,) = [t for t in report.tables if t.id.startswith("table-") and "fileserver" in t.title]
    assert t.columns == [
        "containers",
        "btrfs bind",
        "btrfs volume",
        "ext4 bind",
        "ext4 volume",
        "xfs bind",
        "xfs volume",
    ]
    assert [r[0] for r in t.rows] == [1, 2, 3]
    assert t.rows[0][3] == pytest.approx(168.0 * 1.01)
    assert t.rows[1][3] == pytest.approx(168.0 * 1.01 / 2)


def test_html_has_every_section_and_no_external_resource(report):
    svgs = {f.id: figures.render(f)[0] for f in report.figures if f.drawn}
    page = html.render(report, svgs).decode()
    for section in ("warnings", "advice", "findings", "figures", "tables"):
        assert f'id="{section}"' in page
    assert page.count("<svg") == len(svgs)
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert "<script src" not in page and "<link" not in page
    ids = [x for x in page.split('id="')[1:]]
    ids = [x.split('"')[0] for x in ids]
    assert len(ids) == len(set(ids)), "ids of inline SVGs must not clash"


def test_csv_and_terminal(report):
    out = csv_out.render(report)
    assert {"findings.csv", "advice.csv", "warnings.csv"} <= set(out)
    assert all(f"{f.id}.csv" in out for f in report.figures)
    text = terminal.render(report)
    assert "advice:" in text and "findings of the seed studies" in text
    assert "4 container(s) per host give the most aggregate throughput" in text


def test_cache_flagged_drawn_apart():
    rs = reps(1000, fs="raw") + reps(900, fs="xfs") + reps(5000, fs="xfs", cache=True)[:1]
    rep = build(analyse(rs), "t")
    (f,) = [f for f in rep.figures if f.kind == "ratio"]
    cached = [b for b in f.data["bars"] if b["apart"] == "cache"]
    assert len(cached) == 1 and cached[0]["value"] == pytest.approx(5.0, rel=0.02)
    assert "cache" in svg_texts(figures.render(f)[0])


def test_unconfirmed_drawn_apart_from_cache_and_whiskers_only_with_an_interval():
    """Issue 12: above the raw device with the bytes moved is its own category, apart from cache; a bar
    without an interval gets no whisker."""
    rs = reps(1000, fs="raw") + reps(2000, fs="xfs") + reps(900, fs="ext4")[:1]
    rep = build(analyse(rs), "t")
    (f,) = [f for f in rep.figures if f.kind == "ratio"]
    apart = {b["apart"] for b in f.data["bars"]}
    assert "unconfirmed" in apart and "cache" not in apart
    texts = svg_texts(figures.render(f)[0])
    assert "unconfirmed" in texts and "cache" not in texts
    one = next(b for b in f.data["bars"] if b["label"].endswith("ext4") or "ext4" in b["label"])
    assert one["low"] is None  # n = 1: no interval, so no whisker is drawn for it


def test_compare_figure_and_table():
    a = reps(100, fs="xfs") + reps(100, fs="ext4")
    b = reps(120, fs="xfs") + reps(100.5, fs="ext4")
    out = compare_report.generate(compare(a, b), "A", "B", png=True)
    assert {"compare.csv", "compare.svg", "compare.png", "compare.html", "compare.txt"} == set(out)
    assert set(compare_report.generate(compare(a, b), "A", "B")) == set(out) - {"compare.png"}
    txt = out["compare.txt"].decode()
    assert "higher" in txt and "same" in txt  # xfs decidedly higher, ext4 within the 5% margin
    assert any("change of B relative to A" in t for t in svg_texts(out["compare.svg"]))


def test_filebench_flowop_table(report):
    (t,) = [t for t in report.tables if t.id.startswith("flowops-fileserver")]
    assert t.columns[:3] == ["stack", "load", "flowop"]
    assert {r[2] for r in t.rows} == {"openfile", "readfile", "appendfile", "closefile"}
    assert all(r[-1] == 3 for r in t.rows)


def test_terminal_shows_004_tables(report):
    text = terminal.render(report)
    assert "fileserver: MB/s per container" in text and "ext4 volume" in text


def test_figure_ids_are_unique_when_contexts_repeat():
    rs = []
    for size in (1 << 30, 2 << 30):
        for bs in (4096, 16384, 65536):
            rs += reps(1000, fs="xfs", bs=bs, size=size, experiment=f"e{size}")
    rep = build(analyse(rs), "t")
    ids = [f.id for f in rep.figures]
    assert len(ids) == len(set(ids)) and any(i.endswith("-2") for i in ids)


def test_series_with_containers(tmp_path):
    import json

    from strata.report.model import series_data
    from strata.results.result import Result

    r = make_result(runtime="docker", path="volume", containers=2)
    d = tmp_path / "trials" / r["trial_id"]
    d.mkdir(parents=True)
    stored = Result.from_stored(r, str(tmp_path / "trials" / f"{r['trial_id']}.json"))
    (d / "series.json").write_text(
        json.dumps(
            {
                "t": [0, 1, 2, 3],
                "host": {},
                "diskstats": {},
                "cgroups": {
                    "0": {"read_bytes": [1e6, 2e6, 3e6], "write_bytes": [0, 0, 0]},
                    "1": {"read_bytes": [2e6, 2e6, 2e6], "write_bytes": [0, 0, 0]},
                },
            }
        )
    )
    data = series_data(stored)
    assert data["container I/O MB/s"]["container 1"] == [(1, 2.0), (2, 2.0), (3, 2.0)]
    from strata.report.model import Figure, Table

    fig = Figure("s", "series", "series with containers", "", Table("s", "", [], []), {"series": data})
    assert "container 0" in svg_texts(figures.render(fig)[0])


def test_grid_columns_are_unique_when_runtimes_share_a_file_system_and_path():
    from strata.analysis.measured.grid import Grid

    g = Grid(
        "w",
        "c",
        "MB/s",
        [("ext4", "native", "bind"), ("ext4", "docker:overlay2", "bind"), ("xfs", "docker:overlay2", "volume")],
    )
    labels = g.column_labels
    assert len(set(labels)) == 3 and labels[2] == "xfs volume"
    assert labels[0] == "ext4 bind (native)" and labels[1] == "ext4 bind (docker:overlay2)"


def test_long_stack_labels_stay_inside_the_latency_figure():
    from strata.report.model import Figure, Table

    label = "a-very-long-device-name/ext4-dioread_nolock/docker:fuse-overlayfs/volume"
    stack = {"label": label, **{f"{k}_{s}_us": 10.0 for k in ("slat", "clat", "lat") for s in ("mean", "p99")}}
    fig = Figure(
        "x",
        "latency",
        "t",
        "c",
        Table("x", "t", [], []),
        {
            "panels": [
                {"load": "low", "outstanding": 1, "stacks": [stack, dict(stack, label="b")]},
                {"load": "high", "outstanding": 64, "stacks": [stack, dict(stack, label="b")]},
            ],
            "kinds": ["slat", "clat", "lat"],
        },
    )
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    mpl = figures.DRAW["latency"](fig)
    canvas = FigureCanvasAgg(mpl)
    canvas.draw()
    renderer = canvas.get_renderer()
    width = mpl.bbox.width
    for ax in mpl.axes:
        for t in ax.get_xticklabels():
            box = t.get_window_extent(renderer)
            assert box.x0 >= -1 and box.x1 <= width + 1, (t.get_text(), box)


def test_detail_figure_against_the_container_count(report):
    """p99 and mean latency, host CPU and device MB/s against the count (003 Figures 6b-6d)."""
    details = [f for f in report.figures if f.kind == "detail" and f.data["xlabel"] == "containers"]
    (f,) = [f for f in details if len(f.data["lines"][0]["points"]) == 5]  # the fio sweep; filebench's have 3
    (line,) = f.data["lines"]
    assert [x for x, _ in line["points"]] == [1, 2, 3, 4, 5]
    assert all(d["p99_ms"] is not None and d["mean_ms"] is not None for _, d in line["points"])
    texts = svg_texts(figures.render(f)[0])
    assert "p99 latency (ms)" in texts and "host CPU busy (%)" in texts


def test_placement_over_hosts_from_the_scaling_curve(report):
    a = analyse(mixed_results())
    (adv,) = [c for c in a.containers if c.unit == "IOPS"]
    one, two = adv.placement[0], adv.placement[1]
    assert one["per_host"] == [5] and two["per_host"] == [3, 2]
    assert two["aggregate"] == pytest.approx(one["aggregate"] / 190 * (220 + 170), rel=0.05)
    assert "placing 5 instances" in adv.text() and "3+2 on 2 hosts" in adv.text()


def remote_results():
    rs = []
    for fs in ("raw", "xfs"):
        for (jobs, qd), local, remote, lat_local, lat_remote in (
            ((1, 1), 8800, 2600, 110, 380),
            ((4, 32), 30000, 2700, 4200, 47000),
        ):
            rs += reps(local, fs=fs, numjobs=jobs, iodepth=qd, lat_us=lat_local)
            rs += reps(remote, fs=fs, numjobs=jobs, iodepth=qd, lat_us=lat_remote, device="nbd", device_type="remote")
    return rs


def test_remote_against_local_figures():
    rep = build(analyse(remote_results()), "remote")
    rel = [f for f in rep.figures if f.id.startswith("remote-") and f.kind == "compare"]
    lat = [f for f in rep.figures if f.id.startswith("remote-latency")]
    assert len(rel) == 1 and len(lat) == 1
    rows = rel[0].table.rows
    assert len(rows) == 4 and all(r[2] == "loop" and r[9] == "lower" for r in rows)
    qd1 = next(r for r in rows if r[0].startswith("nbd/raw") and r[1] == "j1xqd1")
    assert qd1[6] == pytest.approx(2600 / 8800 - 1, rel=1e-6)
    # the added latency: remote minus local mean clat, per stack at low and high load
    added = {(r[0].split("/")[1], r[1]): r[5] for r in lat[0].table.rows}
    assert set(added) == {("raw", "j1xqd1"), ("xfs", "j1xqd1"), ("raw", "j4xqd32"), ("xfs", "j4xqd32")}
    assert added[("raw", "j1xqd1")] > 0 and "adds" in lat[0].caption
    labels = [e["label"] for e in lat[0].data["panels"][0]["stacks"]]
    assert any(x.endswith(" local") for x in labels) and any(x.endswith(" remote") for x in labels)
    for f in rel + lat:
        svg, _ = figures.render(f)
        assert any("remote relative" in t for t in svg_texts(svg)) or f.kind == "latency"


def test_no_remote_figures_without_a_remote_device(report):
    assert not [f for f in report.figures if f.id.startswith("remote")]


def test_emulated_vm_is_drawn_apart_and_kept_out_of_findings():
    rs = reps(1000, fs="raw") + reps(950, fs="xfs") + reps(30, fs="xfs", runtime="vm", path="bind")
    rs += reps(28, fs="xfs", runtime="vm", path="bind", device="nbd", device_type="remote")
    for r in rs:
        if r["trial"]["runtime"]["type"] == "vm":
            r["flags"]["emulated"] = {"suspect": True, "accel": "tcg"}
    a = analyse(rs)
    fig = next(f for f in build(a, "vm").figures if f.kind == "ratio" and f.id.endswith("on-loop"))
    vm = [b for b in fig.data["bars"] if "vm" in b["label"]]
    assert vm and all(b["apart"] == "emulated" and b["low"] is None for b in vm)
    assert "emulation" in fig.caption
    figures.render(fig)
    # remote against local would compare two emulated VMs: no claim about storage
    assert dict((f.id, o.status) for f, o in a.findings)["remote-near-local"] == "not measured"


def test_containers_and_vms_relative_to_native():
    rs = reps(1000, fs="xfs", lat_us=100) + reps(
        960, fs="xfs", runtime="docker", driver="overlay2", path="volume", lat_us=104
    )
    rs += reps(700, fs="xfs", runtime="vm", path="image", lat_us=140)
    rs += reps(20, fs="xfs", runtime="vm", path="bind", lat_us=5000)  # under TCG: left out
    for r in rs:
        if r["trial"]["path"] == "bind" and r["trial"]["runtime"]["type"] == "vm":
            r["flags"]["emulated"] = {"suspect": True, "accel": "tcg"}
    figs = [f for f in build(analyse(rs), "runtimes").figures if f.id.startswith("runtimes-")]
    thr = next(f for f in figs if f.id.startswith("runtimes-throughput"))
    lat = next(f for f in figs if f.id.startswith("runtimes-latency"))
    by_stack = {r[0]: r for r in thr.table.rows}
    assert set(by_stack) == {"loop/xfs/docker:overlay2/volume", "loop/xfs/vm/image"}
    assert (
        by_stack["loop/xfs/vm/image"][5] == pytest.approx(-0.3, abs=0.01)
        and by_stack["loop/xfs/vm/image"][8] == "lower"
    )
    assert "1 configuration(s) measured under emulation" in thr.caption
    assert {r[0]: r[8] for r in lat.table.rows}["loop/xfs/vm/image"] == "higher" and lat.data["lower_is_better"]
    for f in (thr, lat):
        figures.render(f)


def test_every_figure_names_what_its_rows_leave_out():
    """Issue 25: one container runtime on xfs: the rows say `bind`, `volume`; the title says the rest."""
    from strata.report.names import shared, with_shared

    rs = reps(1000, fs="xfs", lat_us=100)
    rs += reps(960, fs="xfs", runtime="docker", driver="overlay2", path="volume", lat_us=104)
    rs += reps(950, fs="xfs", runtime="docker", driver="overlay2", path="bind", lat_us=105)
    figs = [f for f in build(analyse(rs), "runtimes").figures if f.id.startswith("runtimes-")]
    assert figs
    for f in figs:
        labels = {row["label"] for row in f.data["rows"]}
        assert all(not lab.startswith("loop/") for lab in labels)  # the rows carry only what differs
        assert "runtime docker:overlay2" in f.title and "file system xfs" in f.title, f.title
    assert shared(["loop/xfs/native/bind", "loop/ext4/native/bind"]) == "device loop, runtime native, path bind"
    assert shared(["loop/xfs/native/bind"]) == "" and with_shared("t", ["a/b"]) == "t"


def test_one_stack_is_named_in_the_title_and_rows_name_their_loads():
    """Issue 25 item 3: with one container stack the rows said the whole stack on every row; now the title
    says it once, the rows say their loads, a row of one repetition says why it has no interval, and the
    spec's own margin decides and is named (not a fixed 5%)."""
    design = {"repetitions": 3, "min": 3, "max": 3, "margin": 0.1}
    rs, docker = [], {"runtime": "docker", "driver": "overlay2", "path": "volume", "design": design}
    for load, (nj, qd) in (("low", (1, 1)), ("high", (4, 16))):
        rs += reps(1000, fs="xfs", numjobs=nj, iodepth=qd, load=load, lat_us=100, design=design)
        rs += reps(930, fs="xfs", numjobs=nj, iodepth=qd, load=load, **docker)
    rs += [make_result(value=900, fs="xfs", numjobs=2, iodepth=2, load="lone", **docker)]
    rs += [make_result(value=1000, fs="xfs", numjobs=2, iodepth=2, load="lone", design=design)]
    thr = next(f for f in build(analyse(rs), "one").figures if f.id.startswith("runtimes-throughput"))
    assert "device loop, file system xfs, runtime docker:overlay2, path volume" in thr.title, thr.title
    labels = [row["label"] for row in thr.data["rows"]]
    assert all("/" not in lab for lab in labels), labels
    assert "lone (1 repetition: no interval)" in labels
    # -7% with 1% spread: beyond a 5% margin, but the same within the spec's 10%
    assert {row["label"]: row["status"] for row in thr.data["rows"]}["low"] == "same"
    assert "+-10%" in thr.caption
    figures.render(thr)


def test_a_detail_panel_without_samples_says_so():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from strata.report.model import Figure, Table

    pts = [(n, {"p99_ms": 1.0 + n, "mean_ms": 0.5 * n}) for n in (1, 2, 4)]
    panels = [("p99_ms", "p99"), ("mean_ms", "mean"), ("cpu", "host CPU"), ("mbps", "device MB/s")]
    fig = Figure("detail-x", "detail", "t", "c", Table("detail-x", "t", [], []), {})
    fig.data.update(panels=panels, lines=[{"label": "s", "points": pts}], xlabel="containers")
    mpl = figures.DRAW["detail"](fig)
    FigureCanvasAgg(mpl).draw()
    texts = [t.get_text() for ax in mpl.axes for t in ax.texts]
    assert texts.count("not sampled in these trials") == 2
