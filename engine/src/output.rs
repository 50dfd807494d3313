//! Where messages go: Filebench-style log lines, and the JSON Lines protocol.
//!
//! Why one sink: in text mode the log lines (`%4.3f: message`) and the
//! statistics block go to stdout exactly as Filebench prints them; with
//! `--json` stdout carries only JSON envelopes (engine/README.md, "JSON protocol") and the log
//! lines move to stderr, so a consumer can read stdout line by line.

use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

/// The output sink of one engine invocation.
#[derive(Debug)]
pub struct Output {
    start: Instant,
    json: bool,
    quiet: bool,
    lock: Mutex<()>,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Output { start: Instant::now(), json, quiet: false, lock: Mutex::new(()) }
    }

    /// An output that prints nothing but JSON (for `check` and tests).
    pub fn quiet() -> Self {
        Output { start: Instant::now(), json: true, quiet: true, lock: Mutex::new(()) }
    }

    /// True with `--json`.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Seconds since the engine started.
    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// An INFO line: `%4.3f: msg`.
    pub fn log(&self, msg: &str) {
        self.plain(&format!("{:4.3}: {msg}", self.elapsed_s()));
    }

    /// A line without timestamp (stdout in text mode, stderr with --json).
    pub fn plain(&self, text: &str) {
        if self.quiet {
            return;
        }
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.json {
            let _ = writeln!(std::io::stderr(), "{text}");
        } else {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{text}");
            let _ = o.flush();
        }
    }

    /// An error or warning line on stderr (both modes).
    pub fn warn(&self, msg: &str) {
        if self.quiet {
            return;
        }
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(std::io::stderr(), "{:4.3}: {msg}", self.elapsed_s());
    }

    /// One JSON envelope `{"type": ..., "data": ...}` on stdout (JSON mode only).
    pub fn emit<T: Serialize>(&self, kind: &str, data: &T) {
        if !self.json || self.quiet {
            return;
        }
        #[derive(Serialize)]
        struct Envelope<'a, T> {
            #[serde(rename = "type")]
            kind: &'a str,
            data: &'a T,
        }
        let line = serde_json::to_string(&Envelope { kind, data }).unwrap_or_default();
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}
