//! The statement interpreter: executes a parsed script in order, as
//! Filebench's parser does while reducing (docs/filebench-language.md#execution-model, #running).
//!
//! Why in order: `set` after a `define` still takes effect (late binding),
//! `create files` populates with the values of that moment, and nothing after
//! `run`/`psrun` executes because the run ends the program.

mod populate;
mod statements;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

pub use populate::FilesetDef;

use crate::ast::{Attrs, Dialect, QuitMode, Script, Stmt, ThreadDef};
use crate::error::{Pos, Result, WmlError};
use crate::fileset::Fileset;
use crate::limits::Machine;
use crate::model::{CompositeDef, RunModel};
use crate::output::Output;
use crate::rng::{GlibcRand, MtState, Rand48};
use crate::runner::RunResult;
use crate::vars::{Avd, Vars};

/// Command-line options that change how a script runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--set '$name=value'`: these win over the script's own `set`s.
    pub sets: Vec<(String, Avd)>,
    /// `--runtime S`: overrides the length of `run`/`psrun`.
    pub runtime_s: Option<f64>,
    /// `check`: parse and validate, no I/O.
    pub check_only: bool,
    /// Memory the run may use instead of what this machine has (tests).
    pub memory_bytes: Option<u64>,
    /// `--ready-file F`: written (the wall clock, seconds) once the filesets exist, before the run.
    pub ready_file: Option<std::path::PathBuf>,
    /// `--go-file F`: the run starts only once F exists (a start barrier across instances).
    pub go_file: Option<std::path::PathBuf>,
}

/// How the script ended.
#[derive(Debug)]
pub struct Outcome {
    /// 0 ok, 1 stopped early or failed.
    pub exit_code: i32,
    pub model: Option<RunModel>,
    pub result: Option<RunResult>,
}

impl Outcome {
    /// Ops per flowop name over the whole run (for tests and summaries).
    pub fn ops_by_name(&self) -> HashMap<String, u64> {
        let mut m = HashMap::new();
        if let (Some(model), Some(r)) = (&self.model, &self.result) {
            for (i, (name, _)) in model.stats.iter().enumerate() {
                m.insert(name.clone(), r.totals[i].count);
            }
        }
        m
    }
}

/// Interpreter state: what Filebench keeps in its shared memory.
pub struct Interp {
    pub file: String,
    pub dialect: Dialect,
    pub vars: Vars,
    pub overridden: HashSet<String>,
    pub fileset_defs: Vec<FilesetDef>,
    pub filesets: Option<Vec<Arc<Fileset>>>,
    pub procs: Vec<(Attrs, Vec<ThreadDef>, Pos)>,
    pub composites: HashMap<String, CompositeDef>,
    pub mode: QuitMode,
    pub eventgen_rate: Option<Avd>,
    pub lathist: bool,
    pub debug: u64,
    pub rng_drand: Arc<Mutex<Rand48>>,
    pub rng_mt: Arc<Mutex<MtState>>,
    pub rng_rand: GlibcRand,
    pub out: Arc<Output>,
    pub opts: Options,
    /// `check`: no I/O, no run.
    pub dry_run: bool,
    /// What this machine lets the run take (`limits`).
    pub machine: Machine,
    /// Memory taken by the fileset trees populated so far.
    pub committed_bytes: u64,
}

impl Interp {
    /// A fresh interpreter for `script`.
    pub fn new(script: &Script, opts: Options, out: Arc<Output>) -> Self {
        let mut vars = Vars::default();
        let mut overridden = HashSet::new();
        for (k, v) in &opts.sets {
            vars.set(k, v.clone());
            overridden.insert(k.clone());
        }
        let mut machine = Machine::probe();
        if let Some(b) = opts.memory_bytes {
            machine.memory_bytes = b;
        }
        Interp {
            machine,
            committed_bytes: 0,
            file: script.file.clone(),
            dialect: script.dialect,
            vars,
            overridden,
            fileset_defs: Vec::new(),
            filesets: None,
            procs: Vec::new(),
            composites: HashMap::new(),
            mode: QuitMode::Timeout,
            eventgen_rate: None,
            lathist: false,
            debug: 0,
            rng_drand: Arc::new(Mutex::new(Rand48::default())),
            rng_mt: Arc::new(Mutex::new(MtState::default())),
            rng_rand: GlibcRand::default(),
            dry_run: opts.check_only,
            opts,
            out,
        }
    }

    /// Executes every statement before the first `run`/`psrun` and creates
    /// the filesets (`strata-wml create`).
    pub fn create_only(&mut self, script: &Script) -> Result<()> {
        for s in &script.stmts {
            if matches!(s.stmt, crate::ast::Stmt::Run(_) | crate::ast::Stmt::Psrun { .. } | crate::ast::Stmt::Quit) {
                break;
            }
            self.statement(&s.stmt, s.pos)?;
        }
        if self.filesets.is_none() {
            self.create_filesets()?;
        }
        Ok(())
    }

    /// One line per file entry: fileset, absolute path, size, exists (0/1).
    pub fn write_listing(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(w);
        for fs in self.filesets.iter().flatten() {
            for (i, p) in fs.file_paths.iter().enumerate() {
                let exists = fs.state().files.exists.get(i) as u8;
                writeln!(w, "{}\t{}\t{}\t{}", fs.name, p.to_string_lossy(), fs.file_size(i), exists)?;
            }
        }
        w.flush()
    }

    /// Executes the whole script (`check`: see `check`, first error only).
    pub fn execute(&mut self, script: &Script) -> Result<Outcome> {
        if self.dry_run {
            return match self.check(script).into_iter().next() {
                Some(e) => Err(e),
                None => Ok(Outcome { exit_code: 0, model: None, result: None }),
            };
        }
        if let Some(why) = &script.dialect_reason {
            self.out.warn(&format!("Filebench 1.4.9.1 dialect ({why}): `size` is a mean, sizes are gamma-distributed"));
        }
        for s in &script.stmts {
            if let Some(o) = self.statement(&s.stmt, s.pos)? {
                return Ok(o);
            }
        }
        let secs = self.opts.runtime_s.unwrap_or(60.0);
        self.out
            .warn(&format!("no run command in the WML script: running for {secs} s as if it ended with `run {secs}`"));
        self.do_run(Some(secs), None)
    }

    /// `check`: executes the statements without I/O up to the run, going on
    /// after a statement that fails, then validates everything a run would
    /// resolve (`validate_all`). Returns every error found.
    pub fn check(&mut self, script: &Script) -> Vec<WmlError> {
        let mut errors = Vec::new();
        for s in &script.stmts {
            if s.stmt == Stmt::Quit {
                return errors;
            }
            match self.statement(&s.stmt, s.pos) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        errors.extend(self.validate_all());
        errors
    }
}
