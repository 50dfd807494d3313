//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use strata_wml::interp::{Interp, Options, Outcome};
use strata_wml::output::Output;
use strata_wml::parser;
use strata_wml::report::{Begin, End, ErrorOut, Interval};
use strata_wml::vars::Avd;

/// A reference file: `personalities/…` from strata's package data, the rest under tests/data/filebench/.
pub fn data(rel: &str) -> PathBuf {
    // The personalities have one home: strata's package data.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match rel.strip_prefix("personalities/") {
        Some(p) => root.join("../src/strata/workloads/personalities").join(p),
        None => root.join("tests/data/filebench").join(rel),
    }
}

/// A file under tests/wml/.
pub fn wml(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wml").join(rel)
}

/// `--set` pairs from `("$x", "value")` with integers recognised.
pub fn sets(pairs: &[(&str, &str)]) -> Vec<(String, Avd)> {
    pairs
        .iter()
        .map(|(k, v)| {
            let a = match v.parse::<u64>() {
                Ok(n) => Avd::Int(n),
                Err(_) if *v == "true" || *v == "false" => Avd::Bool(*v == "true"),
                Err(_) => Avd::Str(v.to_string()),
            };
            (k.to_string(), a)
        })
        .collect()
}

/// Runs a script in-process, quietly.
pub fn run(path: &Path, sets: Vec<(String, Avd)>, runtime_s: f64) -> Outcome {
    let src = std::fs::read_to_string(path).unwrap();
    let script = parser::parse(&path.to_string_lossy(), &src).unwrap();
    let opts = Options { sets, runtime_s: Some(runtime_s), check_only: false, ..Default::default() };
    let mut i = Interp::new(&script, opts, Arc::new(Output::quiet()));
    i.execute(&script).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Executes a script's definitions (no run) and populates its filesets in
/// memory only.
pub fn populate_only(path: &Path, sets: Vec<(String, Avd)>) -> Interp {
    let src = std::fs::read_to_string(path).unwrap();
    let script = parser::parse(&path.to_string_lossy(), &src).unwrap();
    let opts = Options { sets, runtime_s: None, check_only: true, ..Default::default() };
    let mut i = Interp::new(&script, opts, Arc::new(Output::quiet()));
    for s in &script.stmts {
        if matches!(s.stmt, strata_wml::ast::Stmt::Run(_) | strata_wml::ast::Stmt::Psrun { .. }) {
            break;
        }
        i.statement(&s.stmt, s.pos).unwrap();
    }
    i.create_filesets().unwrap();
    i
}

/// Ops per flowop name in a Filebench output block (the last one).
pub fn reference_ops(out: &str) -> Vec<(String, u64)> {
    let mut rows = Vec::new();
    for line in out.lines() {
        if line.contains("Per-Operation Breakdown") {
            rows.clear();
            continue;
        }
        let mut it = line.split_whitespace();
        if let (Some(name), Some(ops)) = (it.next(), it.next()) {
            if let Some(n) = ops.strip_suffix("ops").and_then(|n| n.parse().ok()) {
                rows.push((name.to_string(), n));
            }
        }
    }
    rows
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("strata-wml-test").tempdir().unwrap()
}

/// One line of the JSON Lines protocol, deserialized strictly.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "lowercase", deny_unknown_fields)]
pub enum Envelope {
    Begin(Begin),
    Interval(Interval),
    End(End),
    Error(ErrorOut),
}

/// Every line of `stdout` as an envelope (a line that is not one fails).
pub fn envelopes(stdout: &[u8]) -> Vec<Envelope> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Envelope>(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}
