"""The sampled per-transaction log (workloads/pgbench/sampling.py): the `log_sampling` key and its errors, the rate
`auto` chooses from the warm-up's throughput, `--sampling-rate` on the measured run only, the log's check against
the summary scaled by the rate (on runs captured with `--sampling-rate`: tests/data/pgbench/15/README.md), the
rate and the transactions logged stored with the trial, a sample's percentiles withheld when too few samples lie
beyond them, and a record of an older strata (no rate: the whole log)."""

import json
import math
import random
import shutil
from pathlib import Path

import pytest

from strata.core.errors import SpecErrors, TrialFailure
from strata.core.params import Load
from strata.workloads import REGISTRY, hdr
from strata.workloads.pgbench import parse, sampling
from strata.workloads.pgbench.params import PgbenchParams

from .test_pgbench_parse import _observed, _outputs, _trial
from .test_pgbench_workload import spec

DATA = Path(__file__).parents[1] / "data" / "pgbench" / "15"
PGBENCH = REGISTRY["pgbench"]


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("STRATA_LOOPBACK", raising=False)


# ---- the key ----------------------------------------------------------------------------------


def test_log_sampling_is_auto_by_default_or_a_rate_named_in_the_default_name(tmp_path):
    assert PgbenchParams().log_sampling == "auto" and "-ls" not in PgbenchParams().name
    assert PgbenchParams(log_sampling="AUTO").log_sampling == "auto"
    p = PgbenchParams(script="select-only", log_sampling=0.1)
    assert p.log_sampling == 0.1 and p.name == "pgbench-select-only-s10-c1-ls0.1"
    assert PgbenchParams(log_sampling=1).log_sampling == 1.0 and PgbenchParams(log_sampling="0.5").log_sampling == 0.5
    _, wls = spec(tmp_path, {"log_sampling": ["auto", 0.1]})
    assert [w.log_sampling for w in wls] == ["auto", 0.1]  # a list is a sweep


@pytest.mark.parametrize("value", [0, -0.5, 1.5, 0.00001, "often", True, "nan", "inf", [0.1, [1]]])
def test_log_sampling_outside_0_0001_to_1_is_an_error_naming_the_key(tmp_path, value):
    with pytest.raises(SpecErrors) as e:
        spec(tmp_path, {"log_sampling": value})
    (path, problem, fix) = next(err for err in e.value.errors if "log_sampling" in err[0])
    assert path.startswith("workloads[0].pgbench.log_sampling") and fix
    assert "auto, or the share of the transactions pgbench logs, 0.0001 to 1" in problem, problem


# ---- the rate and the measured run's argv ---------------------------------------------------------


def test_auto_logs_about_2000_a_second_from_the_warm_ups_throughput_and_the_whole_log_below():
    fast = sampling.choose("auto", 30_000.0, None)
    assert fast["sampling_rate"] == 0.067 and fast["from"] == "warm-up" and fast["throughput_tps"] == 30_000.0
    assert sampling.choose("auto", 1_500.0, None)["sampling_rate"] == 1.0  # tpcb-like's speeds: the whole log
    assert sampling.choose("auto", 2_000.0, None)["sampling_rate"] == 1.0
    # without a warm-up: the offered rate bounds the throughput; with neither, the whole log
    assert sampling.choose("auto", None, 8_000.0) | {"from": ""} == {
        "chosen": "auto",
        "logged_per_s": 2000,
        "from": "",
        "throughput_tps": 8000.0,
        "sampling_rate": 0.25,
    }
    assert sampling.choose("auto", None, None)["sampling_rate"] == 1.0
    assert sampling.choose("auto", 1e9, None)["sampling_rate"] == sampling.MIN_RATE  # never below pgbench's least
    assert sampling.choose(0.123456, 30_000.0, None) == {"sampling_rate": 0.12, "chosen": "spec"}


def test_the_warm_ups_throughput_is_its_second_half_added_over_the_servers():
    # the first half warms the caches; a server without progress lines gives its summary's tps
    assert sampling.warmup_tps([[100.0, 200.0, 300.0, 300.0], []], [250.0, 500.0]) == 800.0
    assert sampling.warmup_tps([[5000.0]], [4000.0]) == 5000.0
    assert sampling.warmup_tps([[]], [None]) is None


def test_only_the_measured_run_logs_and_its_sampling_rate_is_the_one_chosen(tmp_path):
    p = PgbenchParams(script="select-only", clients=4, threads=2, warmup=5)
    (warm,) = PGBENCH.clients("warmup", p, Load(), tmp_path, {})
    assert "--progress" in warm.argv and "--log" not in warm.argv and "--sampling-rate" not in warm.argv
    (run,) = PGBENCH.clients("run", p, Load(), tmp_path, {"log": {"sampling_rate": 0.067}})
    a = run.argv
    assert a[a.index("--sampling-rate") + 1] == "0.067" and a.index("--log") < a.index("--sampling-rate")
    (whole,) = PGBENCH.clients("run", p, Load(), tmp_path, {"log": {"sampling_rate": 1.0}})
    assert "--sampling-rate" not in whole.argv and "--log" in whole.argv
    # no warm-up: auto chooses as the run starts, from the offered rate of both servers, and stores its choice
    record: dict = {}
    r = p.model_copy(update={"warmup": 0, "rate": 4000})
    runs = PGBENCH.clients("run", r, Load(containers=2), tmp_path, record)
    assert record["log"]["sampling_rate"] == 0.25 and record["log"]["from"] == "offered rate"
    assert all(c.argv[c.argv.index("--sampling-rate") + 1] == "0.25" for c in runs)
    record = {}
    (spec_rate,) = PGBENCH.clients("run", p.model_copy(update={"log_sampling": 0.5}), Load(), tmp_path, record)
    assert record["log"]["chosen"] == "spec" and "0.5" in spec_rate.argv


def test_after_the_warm_up_auto_reads_its_progress_lines(tmp_path):
    class Ctx:
        art = tmp_path

    d = tmp_path / "pgbench" / "warmup" / "server-0"
    shutil.copytree(DATA / "sampled", d)  # 15,039, 15,104.3, 13,672.2 tx/s: the last two seconds' mean
    record = {"phases": {"warmup": {"clients": [str(d.relative_to(tmp_path))]}}}
    PGBENCH.after_phase("warmup", PgbenchParams(script="select-only", warmup=3), Load(), Ctx(), record)
    assert record["log"]["throughput_tps"] == pytest.approx((15104.3 + 13672.2) / 2, abs=0.1)
    assert record["log"]["sampling_rate"] == 0.14 and record["log"]["from"] == "warm-up"


# ---- the log against the summary ------------------------------------------------------------------


def test_a_sampled_log_is_whole_when_it_holds_the_summarys_count_times_the_rate():
    run = parse.read_run(DATA / "sampled", lag=False, retries=False, sampling_rate=0.1)
    assert run.summary.processed == 53897 and run.logs.completed == 5390 and run.sampling_rate == 0.1
    # the same logs read as the whole log: cut short
    with pytest.raises(TrialFailure, match="hold 5390 transactions, its summary 53897: its output was cut short"):
        parse.read_run(DATA / "sampled", lag=False, retries=False)
    # at another rate: cut short, the rate in the words
    with pytest.raises(TrialFailure, match=r"its summary 53897 \(about 10779 at its sampling rate 0.2\)"):
        parse.read_run(DATA / "sampled", lag=False, retries=False, sampling_rate=0.2)


def test_skipped_transactions_under_a_latency_limit_are_sampled_and_counted_as_the_summary_counts_them():
    run = parse.read_run(DATA / "sampled-limit", lag=True, retries=False, sampling_rate=0.25)
    s, logs = run.summary, run.logs
    assert (s.processed, s.skipped, s.late) == (9064, 2864, 2500)
    assert logs.completed + logs.skipped == 2973 and logs.skipped == 677  # about a quarter of each
    assert logs.lag.total == logs.completed


def test_a_log_cut_short_by_more_than_the_draws_spread_fails(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "sampled", run)
    (run / "tx.27978.1").unlink()  # a thread's log lost: 2,836 of the 5,390
    with pytest.raises(TrialFailure, match="hold 2836 transactions"):
        parse.read_run(run, lag=False, retries=False, sampling_rate=0.1)


def test_the_check_allows_the_binomial_draws_spread_and_no_more():
    rng = random.Random(20261128)
    for n, rate in ((53897, 0.1), (600_000, 0.0034), (1000, 0.5), (10, 0.3)):
        drawn = [sum(rng.random() <= rate for _ in range(n)) for _ in range(3)] if n < 100_000 else []
        assert all(sampling.whole(k, n, rate) for k in drawn)
        sd = math.sqrt(n * rate * (1 - rate))
        assert sampling.whole(round(n * rate + 5 * sd), n, rate)
        assert not sampling.whole(round(n * rate - 7 * sd) - 2, n, rate)
    assert sampling.whole(100, 100, 1.0) and not sampling.whole(99, 100, 1.0)


# ---- the trial: the rate stored, the percentiles' precision ----------------------------------------


def _sampled_trial(tmp_path: Path, runs: list[str], rate: float | None) -> Path:
    art = _trial(tmp_path, runs, _observed(len(runs), 0, reads=10))
    path = art / "pgbench" / "clients.json"
    record = json.loads(path.read_text())
    if rate is not None:
        record["log"] = sampling.choose(rate, None, None)
    path.write_text(json.dumps(record))
    return art


def test_the_rate_and_the_transactions_logged_are_stored_with_the_trial(tmp_path):
    p = PgbenchParams(script="select-only", clients=4, threads=2, runtime=4, log_sampling=0.1)
    m = PGBENCH.parse(p, _outputs(_sampled_trial(tmp_path, ["sampled"], 0.1), 1)).metrics
    log, lat = m["log"], m["read"]["lat_ns"]
    assert (log["sampling_rate"], log["sampled"], log["logged"], log["weighted"]) == (0.1, True, 5390, False)
    assert log["chosen"] == {"sampling_rate": 0.1, "chosen": "spec"}
    assert m["servers"][0]["logged"] == 5390 and m["servers"][0]["sampling_rate"] == 0.1
    # throughput and counts: pgbench's summary's, not the sample's
    assert m["tps"] == pytest.approx(13513.333940) and m["transactions"]["processed"] == 53897
    # 5,390 samples: 5 beyond p99.9 (withheld: fewer than 20), 53 beyond p99 (kept)
    assert lat["n"] == 5390 and log["samples_beyond"]["p99_9"] < 20 <= log["samples_beyond"]["p99"]
    assert log["withheld"] == ["p99_9"] and lat["p99_9"] is None and lat["p50"] <= lat["p95"] <= lat["p99"]


def test_the_whole_log_keeps_every_percentile_and_an_older_record_is_the_whole_log(tmp_path):
    p = PgbenchParams(script="select-only", clients=2, threads=2, rate=2000, runtime=3)
    m = PGBENCH.parse(p, _outputs(_sampled_trial(tmp_path, ["select"], None), 1)).metrics  # no `log`: an older one
    log, lat = m["log"], m["read"]["lat_ns"]
    assert (log["sampling_rate"], log["sampled"], log["logged"], log["chosen"]) == (1.0, False, 5953, None)
    assert log["withheld"] == [] and log["lag_withheld"] == [] and lat["p99_9"] is not None
    assert log["samples_beyond"]["p99_9"] < 20  # few, yet the run's own p99.9 (every transaction), so kept


def test_hosts_that_sampled_at_different_rates_merge_weighted():
    a, b = hdr.Histogram(), hdr.Histogram()
    a.record(100, 10)  # a tenth of 100 transactions of 100 us
    b.record(1000, 50)  # half of 100 transactions of 1000 us
    merged, weighted = sampling.merge([(a, 0.1), (b, 0.5)])
    assert weighted and merged is not None and merged.total == 100 and merged.value_at_percentile(50) == 100
    same, weighted = sampling.merge([(a, 0.1), (a, 0.1)])
    assert not weighted and same is not None and same.total == 20


def test_seeded_values_of_log_sampling_are_a_rate_auto_or_a_spec_error_never_a_traceback(tmp_path):
    """The key's fuzz: numbers around its bounds and words; each answer is a rate in bounds, auto, or an error
    that names the key."""
    rng = random.Random(20261128)
    answers = {"rate": 0, "error": 0}
    for _ in range(60):
        value = rng.choice(
            [rng.uniform(-1, 2), rng.uniform(0, 0.001), rng.randint(-3, 3), str(rng.uniform(0, 1.5)), "Auto ", "1e-9"]
        )
        try:
            _, (w,) = spec(tmp_path, {"log_sampling": value})
            assert w.log_sampling == "auto" or sampling.MIN_RATE <= w.log_sampling <= 1, value
            answers["rate"] += 1
        except SpecErrors as e:
            assert any("log_sampling" in path for path, _, _ in e.errors), (value, e.errors)
            answers["error"] += 1
    assert answers["rate"] > 5 and answers["error"] > 5, answers


def test_seeded_mutants_of_a_sampled_run_are_a_run_or_a_trial_failure(tmp_path):
    rng = random.Random(20261129)
    for i in range(40):
        run = tmp_path / f"m{i}"
        shutil.copytree(DATA / "sampled", run)
        f = rng.choice(sorted(p for p in run.iterdir() if p.name != "rc.txt"))
        data = bytearray(f.read_bytes())
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at : at + rng.randint(1, 40)] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3)))
        f.write_bytes(bytes(data))
        try:
            parse.read_run(run, lag=False, retries=False, sampling_rate=0.1)
        except TrialFailure as e:
            assert e.category in ("parse", "tool_error") and str(e)
        shutil.rmtree(run)
