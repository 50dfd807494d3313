//! The statistics output: Filebench's text block (docs/filebench-language.md#text-output) and the
//! JSON `interval`/`end` envelopes (engine/README.md, "JSON protocol").
//!
//! Why both from the same totals: the text is for people and tools that parse
//! Filebench output; the JSON adds what the text cannot carry (percentiles and
//! mergeable histograms) for strata's Python side.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::kind::Kind;
use crate::model::RunModel;
use crate::output::Output;
use crate::stats::Totals;

const MB: f64 = 1048576.0;

fn per_s(x: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        x as f64 / secs
    } else {
        0.0
    }
}

fn ms_per_op(t: &Totals) -> f64 {
    if t.count == 0 {
        0.0
    } else {
        t.lat_ns as f64 / (t.count as f64 * 1e6)
    }
}

/// One `Per-Operation Breakdown` line.
pub fn flowop_line(name: &str, t: &Totals, secs: f64, lathist: bool) -> String {
    let min = if t.count == 0 || t.min_ns == u64::MAX { 0.0 } else { t.min_ns as f64 / 1e6 };
    let mut s = format!(
        "{:<20} {}ops {:8.0}ops/s {:5.1}mb/s {:8.3}ms/op [{:.3}ms - {:5.3}ms]",
        name,
        t.count,
        per_s(t.count, secs),
        t.bytes as f64 / MB / secs.max(f64::MIN_POSITIVE),
        ms_per_op(t),
        min,
        t.max_ns as f64 / 1e6
    );
    if lathist {
        let b: Vec<String> = t.log2.iter().map(|x| x.to_string()).collect();
        s.push_str(&format!("\t[ {} ]", b.join(" ")));
    }
    s
}

/// The IO Summary totals: IO and AIO flowops only.
pub fn io_summary(model: &RunModel, totals: &[Totals]) -> Totals {
    let mut sum = Totals::default();
    for (i, (_, kind)) in model.stats.iter().enumerate() {
        if kind.in_summary() {
            sum.add(&totals[i]);
        }
    }
    sum
}

/// The `IO Summary:` line (without timestamp).
pub fn summary_line(s: &Totals, secs: f64) -> String {
    format!(
        "IO Summary: {:5} ops {:5.3} ops/s {:.0}/{:.0} rd/wr {:5.1}mb/s {:5.3}ms/op",
        s.count,
        per_s(s.count, secs),
        per_s(s.rcount, secs),
        per_s(s.wcount, secs),
        s.bytes as f64 / MB / secs.max(f64::MIN_POSITIVE),
        ms_per_op(s)
    )
}

/// Prints the whole statistics block (text mode only).
pub fn text_block(out: &Output, model: &RunModel, totals: &[Totals], secs: f64, lathist: bool) {
    if out.is_json() {
        return;
    }
    let mut block = format!("{:4.3}: Per-Operation Breakdown", out.elapsed_s());
    let zero = Totals::default();
    for row in model.rows.iter().rev() {
        let t = row.stat_id.map(|i| &totals[i]).unwrap_or(&zero);
        let t = if row.kind == Kind::Composite { &zero } else { t };
        block.push('\n');
        block.push_str(&flowop_line(&row.name, t, secs, lathist));
    }
    out.plain(&block);
    out.log(&summary_line(&io_summary(model, totals), secs));
}

/// `data` of the `begin` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Begin {
    pub protocol: u32,
    pub engine_version: String,
    pub file: String,
    pub runtime_s: Option<f64>,
}

/// `data` of an `interval` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    pub t_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
}

/// `summary` of the `end` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub ops: u64,
    pub ops_per_s: f64,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub mb_per_s: f64,
    pub ms_per_op: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Latency figures in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
    pub min: f64,
}

/// Non-empty HDR buckets: upper bound (ns) and count.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistogramOut {
    pub bucket_ns_upper: Vec<u64>,
    pub counts: Vec<u64>,
}

/// One flowop in the `end` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowopOut {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub ops: u64,
    pub ops_per_s: f64,
    pub bytes: u64,
    pub mb_per_s: f64,
    pub latency_us: Latency,
    pub histogram: HistogramOut,
    /// The threads that run it (each thread's instances times its process's): at most this many of its
    /// operations are under way at once (a sync's concurrency, which strata's flush check bounds by).
    #[serde(default)]
    pub threads: u64,
}

/// `data` of the `end` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Wall clock (Unix seconds) when the measured run started: after the filesets and the barrier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    pub runtime_s: f64,
    pub stopped_early: bool,
    pub reason: Option<String>,
    pub summary: Summary,
    pub flowops: Vec<FlowopOut>,
}

/// `data` of the `error` envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ErrorOut {
    pub kind: String,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub col: Option<u32>,
}

/// One error of `strata-wml check --json` (a JSON object per line).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CheckError {
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
    /// syntax | semantic | io | runtime
    pub kind: String,
}

/// Emits an `interval` envelope for a psrun period.
pub fn emit_interval(out: &Output, t_s: f64, interval: &[Totals], secs: f64, model: &RunModel) {
    let s = io_summary(model, interval);
    out.emit(
        "interval",
        &Interval {
            t_s,
            ops: s.count,
            ops_per_s: per_s(s.count, secs),
            mb_per_s: s.bytes as f64 / MB / secs.max(1e-9),
        },
    );
}

fn latency(t: &Totals, h: &Histogram<u64>, reset: bool) -> Latency {
    let q = |x: f64| if h.is_empty() { 0.0 } else { h.value_at_quantile(x) as f64 / 1e3 };
    if reset && !h.is_empty() {
        // psrun with a negative period restarted the exact extremes at each
        // interval; the histogram still covers the whole run.
        return Latency {
            mean: if t.count == 0 { 0.0 } else { t.lat_ns as f64 / t.count as f64 / 1e3 },
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            max: h.max() as f64 / 1e3,
            min: h.min() as f64 / 1e3,
        };
    }
    Latency {
        mean: if t.count == 0 { 0.0 } else { t.lat_ns as f64 / t.count as f64 / 1e3 },
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p99_9: q(0.999),
        max: t.max_ns as f64 / 1e3,
        min: if t.count == 0 || t.min_ns == u64::MAX { 0.0 } else { t.min_ns as f64 / 1e3 },
    }
}

fn histogram(h: &Histogram<u64>) -> HistogramOut {
    let mut out = HistogramOut { bucket_ns_upper: Vec::new(), counts: Vec::new() };
    for v in h.iter_recorded() {
        out.bucket_ns_upper.push(h.highest_equivalent(v.value_iterated_to()));
        out.counts.push(v.count_at_value());
    }
    out
}

/// Builds the `end` data from whole-run totals.
/// `extremes_reset`: min/max counters were restarted by psrun intervals.
pub fn end_data(
    model: &RunModel,
    totals: &[Totals],
    hists: &[Histogram<u64>],
    secs: f64,
    stopped: (bool, Option<String>),
    extremes_reset: bool,
) -> End {
    let s = io_summary(model, totals);
    let summary = Summary {
        ops: s.count,
        ops_per_s: per_s(s.count, secs),
        reads_per_s: per_s(s.rcount, secs),
        writes_per_s: per_s(s.wcount, secs),
        mb_per_s: s.bytes as f64 / MB / secs.max(1e-9),
        ms_per_op: ms_per_op(&s),
        read_bytes: s.rbytes,
        write_bytes: s.wbytes,
    };
    let zero = Totals::default();
    let flowops = model
        .rows
        .iter()
        .map(|row| {
            let id = row.stat_id.filter(|_| row.kind != Kind::Composite);
            let t = id.map(|i| &totals[i]).unwrap_or(&zero);
            let empty = crate::stats::merge_histograms(std::iter::empty());
            let h = id.map(|i| &hists[i]).unwrap_or(&empty);
            FlowopOut {
                name: row.name.clone(),
                kind: row.kind.name().to_string(),
                ops: t.count,
                ops_per_s: per_s(t.count, secs),
                bytes: t.bytes,
                mb_per_s: t.bytes as f64 / MB / secs.max(1e-9),
                latency_us: latency(t, h, extremes_reset),
                histogram: histogram(h),
                threads: id.map(|i| model.threads_of(i)).unwrap_or(0),
            }
        })
        .collect();
    End { started_unix_s: None, runtime_s: secs, stopped_early: stopped.0, reason: stopped.1, summary, flowops }
}
