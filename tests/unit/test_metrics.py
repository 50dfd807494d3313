"""Workloads describe their metrics (strata/core/metrics.py): every registered workload's declaration is complete
and matches what its parser writes, and the export, the sweeps, `strata show` and the latency figures are
made from the declarations, so a workload registered here appears in all of them without a change there."""

import sys
from pathlib import Path
from typing import Literal

import pytest

from strata.analysis.analyse import analyse
from strata.analysis.cells.cells import build_cells
from strata.analysis.cells.query import select
from strata.cli.show import table_text
from strata.core.metrics import KINDS, Axis, Metric, MetricSchema, Show, export_columns
from strata.core.params import Strict
from strata.report.model import build
from strata.results.export import columns, flatten, to_csv
from strata.results.result import Result
from strata.workloads import REGISTRY
from strata.workloads.base import ToolWorkload
from strata.workloads.fio import FioParams
from strata.workloads.fio_output import aggregate
from strata.workloads.latency import PERCENTILES
from strata.workloads.null import NULL, NullParams
from strata.workloads.ycsb import metrics as ycsb_metrics
from strata.workloads.ycsb.params import YcsbParams

from .test_filebench import _outputs
from .test_fio import _doc
from .test_ycsb_workload import _captured_trial

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

WORKLOADS = sorted(REGISTRY.items())
STATS = {"n", "mean", "min", "max", *PERCENTILES, "p95"}  # pgbench's summaries hold p95 too (pgbench/metrics.py)

# The export's columns: a change of them is a change of every user's tables. pgbench added its parameters
# (clients, scale, script) and its headline (tps); its latency shares fio's columns.
EXPORT_COLUMNS = (
    "trial_id experiment status stack device filesystem runtime path workload load repetition numjobs iodepth "
    "containers rw bs direct clients scale script tables table_size iops bw_bytes ops_per_s mb_per_s tps qps read_iops "
    "write_iops "
    "read_bw_bytes write_bw_bytes "
    "read_clat_mean_ns read_clat_p99_ns read_lat_mean_ns read_lat_p99_ns read_slat_mean_ns write_clat_mean_ns "
    "write_clat_p99_ns write_lat_mean_ns write_lat_p99_ns write_slat_mean_ns sync_lat_mean_ns sync_lat_p99_ns "
    "cache_suspect sync_suspect "
    "flush_suspect absorbed_suspect saturated_suspect failed_category failed_message duration_s started_at kernel "
    "hostname write_amplification"
).split()


@pytest.mark.parametrize("name,w", WORKLOADS, ids=[n for n, _ in WORKLOADS])
def test_each_declaration_is_complete(name, w):
    s = w.metrics
    assert [m for m in s.fields if m.headline], f"{name}: no headline among its fields"
    for m in s.fields:
        assert m.kind in KINDS, (name, m)
        if m.kind == "parameter":
            assert m.name in w.params.model_fields, f"{name}: parameter {m.name} is not in its params model"
            assert m.better is None and not m.headline and not m.show
        else:
            assert m.unit and m.better in ("higher", "lower"), f"{name}: {m.name} without a unit or direction"
            assert m.axis is None and not m.context, f"{name}: {m.name} is no parameter, so no axis"
        if m.kind == "latency":
            assert m.unit == "ns" and m.better == "lower" and m.stats and set(m.stats) <= STATS, (name, m)
        if m.axis is not None:
            assert m.axis.label and m.axis.min_points >= 2 and m.axis.scale > 0, (name, m)
    assert all(s.field("latency", k) is not None for k in s.breakdown), f"{name}: its breakdown names no latency"
    assert len({(m.kind, m.name) for m in s.fields}) == len(s.fields), f"{name}: a field declared twice"


def test_workloads_sharing_a_column_store_it_in_one_place():
    """Columns are merged by name: two workloads may share one only where its value is the same field."""
    seen = {}
    for w in REGISTRY.values():
        for col, m, d, stat in export_columns([w.metrics]):
            other = seen.setdefault(col, (m.path(d or "read"), m.type, stat))
            assert other == (m.path(d or "read"), m.type, stat), f"{w.name}: column {col} differs from another's"


def _all_present(schema: MetricSchema, result: dict, skip=()) -> None:
    for m in schema.fields:
        if m.name in skip:
            continue
        stats = m.stats or (None,)
        assert all(m.value(result, "read", s) is not None for s in stats), f"{m.name} not where it is declared"
    primary = result["metrics"]["primary"]["metric"]
    assert primary in [m.name for m in schema.fields if m.headline], f"headline {primary} not declared"


def test_fio_declares_what_its_parser_writes():
    params = FioParams(preset="rr")
    result = {
        "trial": {"workload": params.model_dump()},
        "metrics": aggregate([_doc("randread-loop-jsonplus.json")]).metrics,
    }
    _all_present(REGISTRY["fio"].metrics, result, skip=("sync_lat",))  # a job that asked for no sync has none
    synced = {"metrics": aggregate([_doc("etcd-fdatasync-jsonplus.json")]).metrics}
    sync_lat = REGISTRY["fio"].metrics.field("latency", "sync_lat")
    assert all(sync_lat.value(synced, "write", s) is not None for s in sync_lat.stats)


def test_ycsb_declares_what_its_parser_writes(tmp_path):
    parsed = ycsb_metrics.parse_trial(YcsbParams(), _captured_trial(tmp_path, ["db0-c0"]))
    result = {"trial": {"workload": YcsbParams(target=1000).model_dump()}, "metrics": parsed.metrics}
    _all_present(REGISTRY["ycsb"].metrics, result, skip=("target_share",))  # an absolute rate has no share
    relative = {"trial": {"workload": YcsbParams(target="40%").model_dump()}, "metrics": parsed.metrics}
    _all_present(REGISTRY["ycsb"].metrics, relative, skip=("target",))


def test_filebench_declares_what_its_parser_writes(tmp_path):
    fb = REGISTRY["filebench"]
    params = fb.parse_params({"type": "filebench", "personality": "varmail"}, Path("."))
    parsed = fb.parse(params, _outputs(tmp_path, ["varmail-instance0.jsonl"]))
    _all_present(fb.metrics, {"trial": {"workload": params.model_dump()}, "metrics": parsed.metrics})


def test_null_declares_what_its_parser_writes(tmp_path):
    (tmp_path / "null.json").write_text('{"iops": 5.0}')
    from strata.core.instances import InstanceOutput

    parsed = NULL.parse(NullParams(), [InstanceOutput(0, tmp_path, 0, "")])
    _all_present(NULL.metrics, {"trial": {"workload": NullParams().model_dump()}, "metrics": parsed.metrics})


def test_export_columns_stay_as_they_were():
    assert [c.name for c in columns()] == EXPORT_COLUMNS
    assert to_csv([]).decode().strip().split(",") == EXPORT_COLUMNS


# --- a workload strata has never seen (MySQL under mysqlslap), registered here only: its fields reach every output ---


class SlapParams(Strict):
    type: Literal["mysqlslap"] = "mysqlslap"
    name: str = "mysqlslap"
    clients: int = 1
    scale: int = 10


class Slap(ToolWorkload):
    name = "mysqlslap"
    params = SlapParams
    metrics = MetricSchema(
        fields=(
            Metric("clients", "parameter", type="int", axis=Axis("clients", 2)),
            Metric("scale", "parameter", type="int", context=True, text=lambda v: f"scale {v}"),
            Metric("tps", "total", "tx/s", "higher", headline=True, show=Show("TPS", digits=0)),
            Metric("transactions", "per_direction", "tx/s", "higher"),
            Metric("wait", "latency", "ns", "lower", label="queue", stats=("mean",)),
            Metric("tx", "latency", "ns", "lower", label="transaction", stats=("mean", "p99")),
        ),
        breakdown=("wait", "tx"),
    )


@pytest.fixture
def slap(monkeypatch):
    monkeypatch.setitem(REGISTRY, "mysqlslap", Slap())


def _summary(mean_ns: float) -> dict:
    return {"n": 100, "mean": mean_ns, "p99": 3 * mean_ns}


def sb_result(fs="xfs", clients=1, rep=0, tps=500.0) -> dict:
    r = make_result(fs=fs, rep=rep, value=tps, workload=f"mysqlslap-c{clients}", load="one")
    r["trial"]["workload"] = {"type": "mysqlslap", "name": f"mysqlslap-c{clients}", "clients": clients, "scale": 10}
    r["trial_id"] = f"sb-{fs}-{clients}-{rep}"
    tx = {"transactions": tps, "wait_ns": _summary(2e5), "tx_ns": _summary(1e6 * clients)}
    r["metrics"] = {
        "kind": "mysqlslap",
        "primary": {"value": tps, "unit": "tx/s", "metric": "tps", "series": None, "tps": tps},
        "read": tx,
        "write": {"transactions": 0.0},
    }
    return r


def sb_results() -> list[dict]:
    return [
        sb_result(fs, n, rep, tps * n * (1 + 0.01 * rep))
        for fs, tps in (("xfs", 500.0), ("ext4", 400.0))
        for n in (1, 2, 4)
        for rep in range(3)
    ]


def test_a_new_workloads_fields_are_export_columns(slap):
    names = [c.name for c in columns()]
    assert names[:17] == EXPORT_COLUMNS[:17]  # the others' columns keep their places
    for col in ("clients", "scale", "tps", "read_transactions", "write_transactions", "read_wait_mean_ns"):
        assert col in names
    assert "read_wait_p99_ns" not in names and "write_tx_p99_ns" in names
    row = flatten(Result.from_stored(sb_result(clients=4, tps=2000.0)))
    assert (row["clients"], row["scale"], row["tps"], row["read_tx_p99_ns"]) == (4, 10, 2000.0, 12e6)
    assert row["iops"] is None and row["rw"] is None
    assert to_csv([Result.from_stored(sb_result())]).decode().splitlines()[0].split(",") == names


def test_a_new_workloads_axis_is_a_sweep(slap):
    a = analyse(sb_results())
    (s,) = [s for s in a.sweeps if s.dim == "clients"]
    assert s.title == "clients sweep: scale 10, 1 numjobs, 1 iodepth"
    assert [ln.xs for ln in s.lines] == [[1, 2, 4], [1, 2, 4]] and s.unit == "tx/s"


def test_a_new_workloads_latencies_are_its_breakdown(slap):
    cells = build_cells(sb_results())
    assert cells[0].latency(None, "mean").mean == pytest.approx(cells[0].latency("tx", "mean").mean)
    assert cells[0].latency("lat", "mean").n == 0  # fio's name means nothing here
    rep = build(analyse(sb_results()), "t")
    lat = [f for f in rep.figures if f.kind == "latency"]
    assert lat and all(f.data["kinds"] == ["wait", "tx"] for f in lat)
    assert lat[0].caption.startswith("Queue (wait) and transaction (tx) latency, mean (bars)")
    assert {row[2] for row in lat[0].table.rows} == {"wait", "tx"}
    sweep = next(f for f in rep.figures if f.kind == "sweep")
    assert sweep.data["xlabel"] == "clients" and sweep.table.columns[1] == "clients"


def test_a_new_workloads_fields_are_shown(slap):
    text = table_text([sb_result(clients=2, tps=1234.4)])
    head, _, row = text.splitlines()
    # only the columns some row has a value in: the other workloads' headings are left out
    assert head.split()[5:] == ["TPS", "WA", "flags"]
    assert row.split()[5:] == ["1234", "-"]


def test_show_prints_each_workloads_own_fields():
    fio = make_result(value=1000.0, lat_us=100.0)
    fb = make_result(kind="filebench", value=42.0, fs="ext4")
    text = table_text([fio, fb]).splitlines()
    assert text[0].split()[:9] == ["stack", "workload", "load", "rep", "status", "IOPS", "MiB/s", "lat", "mean"]
    fio_row, fb_row = (next(t for t in text if name in t).split() for name in ("randread", "fileserver"))
    assert fio_row[5:9] == ["1000", "3.9", "100.0", "300.0"]  # IOPS, MiB/s, lat mean us, lat p99 us
    assert fb_row[5:9] == ["1680", "42.0", "-", "-"]


def test_show_prints_a_ycsb_trials_operations_per_second(tmp_path):
    parsed = ycsb_metrics.parse_trial(YcsbParams(), _captured_trial(tmp_path, ["db0-c0"]))
    r = make_result(kind="ycsb", value=1.0, workload="ycsb-a")
    r["trial"]["workload"] = {"type": "ycsb", "name": "ycsb-a", "workload": "a", "target": None}
    r["metrics"] = parsed.metrics
    head, _, row, *legend = table_text([r]).splitlines()
    ops = row.split()[head.split().index("IOPS")]
    assert ops == f"{parsed.metrics['throughput_ops_s']:.0f}", (head, row)
    # Cassandra's default commit log acknowledges a write before its sync: said in its own column, with its legend
    assert head.split()[-1] == "durability" and row.endswith("NOT durable: commitlog_sync=periodic every 10000ms")
    assert any(line.startswith("durability = ") for line in legend), legend


def test_ycsb_latency_breakdown_is_its_own():
    rs = []
    for fs in ("xfs", "ext4"):
        for n in (1, 4):
            for rep in range(2):
                r = make_result(fs=fs, rep=rep, value=900.0 * n, numjobs=n, lat_us=500.0, workload="ycsb-a")
                r["trial"]["workload"] = {"type": "ycsb", "name": "ycsb-a", "workload": "a", "target": None}
                lat = r["metrics"]["read"]["lat_ns"]
                r["metrics"] = {
                    "kind": "ycsb",
                    "primary": {"value": 900.0 * n, "unit": "ops/s", "metric": "throughput_ops_s", "series": None},
                    "throughput_ops_s": 900.0 * n,
                    "read": {"iops": 450.0 * n, "lat_ns": lat},
                    "write": {"iops": 450.0 * n, "lat_ns": lat},
                }
                rs.append(r)
    (fig,) = [f for f in build(analyse(rs), "t").figures if f.kind == "latency"]
    assert fig.data["kinds"] == ["lat"] and fig.caption.startswith("Total (lat) latency, mean (bars)")
    assert {row[2] for row in fig.table.rows} == {"lat"}  # no submission or completion rows it never had
    assert all(p["outstanding"] is None for p in fig.data["panels"]), "YCSB's threads are not the load's I/Os"


def test_cells_select_by_any_workload_parameter():
    cells = build_cells([make_result(rw="randread"), make_result(rw="randwrite"), make_result(kind="filebench")])
    assert [c.param("rw") for c in cells if c.kind == "fio"] == ["randread", "randwrite"]
    assert [c.param("rw") for c in select(cells, params={"rw": ("randwrite",)})] == ["randwrite"]
    assert len(select(cells, params={"rw": ("randread", "randwrite"), "bs": (4096,)})) == 2


def test_fio_latency_panels_say_the_ios_in_flight():
    rs = [make_result(fs=fs, rep=rep, value=900.0, lat_us=100.0) for fs in ("xfs", "ext4") for rep in range(2)]
    (fig,) = [f for f in build(analyse(rs), "t").figures if f.kind == "latency"]
    assert [p["outstanding"] for p in fig.data["panels"]] == [1]
