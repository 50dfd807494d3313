//! One method per top-level command (docs/filebench-language.md#grammar, #other-commands).

use super::{Interp, Outcome};
use crate::ast::{Attrs, Dialect, QuitMode, SetValue, Stmt, TableRow, Value};
use crate::error::{Pos, Result, WmlError};
use crate::limits;
use crate::model::{compile, compile_all, CompositeDef, Ctx, RunModel};
use crate::random::{Cvar, RandKind, RandSpec, RandVar};
use crate::report;
use crate::runner::{self, RunParams, SIGNALED};
use crate::vars::Avd;
use crate::worker::StopKind;

impl Interp {
    fn sem(&self, pos: Option<Pos>, msg: String) -> WmlError {
        WmlError::semantic(&self.file, pos, msg)
    }

    fn resolve(&self, v: &Value, pos: Pos) -> Result<Avd> {
        self.vars.resolve(v).map_err(|n| self.sem(Some(pos), format!("Noninitialized variable {n}")))
    }

    fn attr_or(&self, a: &Attrs, name: &str, default: Avd) -> Result<Avd> {
        match a.get(name) {
            Some(v) => self.resolve(v, a.pos_of(name).unwrap_or_default()),
            None => Ok(default),
        }
    }

    /// Executes one statement; `Some` when the script ends here.
    pub fn statement(&mut self, stmt: &Stmt, pos: Pos) -> Result<Option<Outcome>> {
        match stmt {
            Stmt::Set { var, value } => self.set(var, value, pos)?,
            Stmt::DefineRandvar { attrs, table } => {
                let var = match attrs.get("name") {
                    Some(Value::Var(v)) => v.clone(),
                    _ => return Err(self.sem(Some(pos), "define randvar needs name=$variable".into())),
                };
                self.set_randvar(&var, attrs, table, pos)?;
            }
            Stmt::DefineFileset { is_file, attrs } => {
                if attrs.get("name").is_none() {
                    return Err(self.sem(Some(pos), "define fileset/file without a name".into()));
                }
                self.fileset_defs.push(super::FilesetDef { is_file: *is_file, attrs: attrs.clone(), pos });
            }
            Stmt::DefineProcess { attrs, threads } => self.procs.push((attrs.clone(), threads.clone(), pos)),
            Stmt::DefineComposite { attrs, lvars, flowops } => {
                let name = match attrs.get("name") {
                    Some(v) => self.resolve(v, pos)?.get_str(),
                    None => return Err(self.sem(Some(pos), "define flowop without a name".into())),
                };
                let def = CompositeDef { attrs: attrs.clone(), lvars: lvars.clone(), flowops: flowops.clone() };
                self.composites.insert(name, def);
            }
            Stmt::SetMode(m) => self.mode = *m,
            Stmt::SetNoUseStats => self.out.log("Disabling CPU usage statistics"),
            Stmt::Eventgen(attrs) => {
                if let Some(v) = attrs.get("rate") {
                    self.eventgen_rate = Some(self.resolve(v, pos)?);
                }
            }
            Stmt::Echo(parts) => {
                if !self.dry_run {
                    self.out.log(&self.vars.interpolate(parts));
                }
            }
            Stmt::System(parts) => self.system(&self.vars.interpolate(parts))?,
            Stmt::Usage(_) => {}
            Stmt::Debug(n) => self.debug = *n,
            Stmt::Version => {
                self.out.log(&format!("strata-wml {} (Filebench 1.5-alpha3 WML)", env!("CARGO_PKG_VERSION")))
            }
            Stmt::List(what) => self.list(what),
            Stmt::EnableLathist => self.lathist = true,
            Stmt::EnableMulti(_) | Stmt::DomultiSync(_) => {
                self.out.warn("multi-client synchronisation is not supported; ignored")
            }
            Stmt::CreateFiles => {
                if !self.dry_run {
                    self.create_filesets()?;
                }
            }
            Stmt::Sleep(v) => self.sleep(v, pos)?,
            Stmt::Quit => return Ok(Some(Outcome { exit_code: 0, model: None, result: None })),
            Stmt::Run(v) => {
                let secs = match v {
                    Some(v) => self.resolve(v, pos)?.get_int() as f64,
                    None => 60.0,
                };
                let secs = if secs == 0.0 && self.mode == QuitMode::Timeout { 60.0 } else { secs };
                return self.finish_or_run(Some(self.opts.runtime_s.unwrap_or(secs)), None).map(Some);
            }
            Stmt::Psrun { period, runtime } => {
                let period = period.unwrap_or(10);
                let rt = runtime.unwrap_or(0) as f64;
                let rt = match (rt, self.mode) {
                    (r, _) if r > 0.0 => Some(r),
                    (_, QuitMode::Timeout) => Some(60.0),
                    _ => None,
                };
                let rt = self.opts.runtime_s.or(rt);
                return self.finish_or_run(rt, Some(period)).map(Some);
            }
        }
        Ok(None)
    }

    fn finish_or_run(&mut self, secs: Option<f64>, period: Option<i64>) -> Result<Outcome> {
        if self.dry_run {
            return Ok(Outcome { exit_code: 0, model: None, result: None });
        }
        self.do_run(secs, period)
    }

    fn set(&mut self, var: &str, value: &SetValue, pos: Pos) -> Result<()> {
        if self.overridden.contains(var) {
            return Ok(());
        }
        match value {
            SetValue::Plain(v) => {
                let a = self.resolve(v, pos)?;
                self.vars.set(var, a);
            }
            SetValue::Randvar { attrs, table } => self.set_randvar(var, attrs, table, pos)?,
            SetValue::Cvar { attrs } => {
                let ty = self.attr_or(attrs, "type", Avd::Str(String::new()))?.get_str();
                let params = self.attr_or(attrs, "parameters", Avd::Str(String::new()))?.get_str();
                let min = attrs.get("min").map(|v| self.resolve(v, pos).map(|a| a.get_dbl())).transpose()?;
                let max = attrs.get("max").map(|v| self.resolve(v, pos).map(|a| a.get_dbl())).transpose()?;
                let round = self.attr_or(attrs, "round", Avd::Int(0))?.get_dbl();
                let cv = Cvar::new(&ty, &params, (min, max, round), self.rng_drand.clone())
                    .map_err(|m| self.sem(Some(pos), m))?;
                self.vars.set(var, Avd::Cvar(std::sync::Arc::new(cv)));
            }
        }
        Ok(())
    }

    fn set_randvar(&mut self, var: &str, attrs: &Attrs, table: &[TableRow], pos: Pos) -> Result<()> {
        if self.overridden.contains(var) {
            return Ok(());
        }
        let int = |s: &Self, n: &str| -> Result<Option<u64>> {
            attrs.get(n).map(|v| s.resolve(v, pos).map(|a| a.get_int())).transpose()
        };
        let kind = match attrs.get("type") {
            Some(Value::Str(t)) if t == "uniform" => Some(RandKind::Uniform),
            Some(Value::Str(t)) if t == "tabular" => Some(RandKind::Tabular),
            Some(Value::Str(_)) => Some(RandKind::Gamma),
            _ => None,
        };
        if kind == Some(RandKind::Tabular) && self.dialect == Dialect::V15 {
            self.out.warn("Table distribution type without prob table");
        }
        let mut rows = Vec::new();
        for r in table {
            let g = |v: &Value| self.resolve(v, pos).map(|a| a.get_int());
            rows.push((g(&r.percent)?, g(&r.min)?, g(&r.max)?));
        }
        let spec = RandSpec {
            kind,
            urandom: matches!(attrs.get("randsrc"), Some(Value::Str(s)) if s == "urandom"),
            seed: int(self, "seed")?.unwrap_or(0),
            gamma_x1000: int(self, "gamma")?,
            mean: attrs.get("mean").map(|v| self.resolve(v, pos).map(|a| a.get_dbl())).transpose()?,
            min: int(self, "min")?.unwrap_or(0),
            round: int(self, "round")?.unwrap_or(0),
            rows,
        };
        let (rv, warn) = RandVar::new(&spec, self.rng_mt.clone());
        if let Some(w) = warn {
            self.out.warn(&w);
        }
        self.vars.set(var, Avd::Rand(std::sync::Arc::new(rv)));
        Ok(())
    }

    fn system(&self, cmd: &str) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        self.out.log(&format!("Running '{cmd}'"));
        std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .status()
            .map_err(|e| WmlError::io(format!("system \"{cmd}\""), e))?;
        Ok(())
    }

    fn sleep(&self, v: &Value, pos: Pos) -> Result<()> {
        let n = self.resolve(v, pos)?.get_int();
        if self.dry_run {
            return Ok(());
        }
        self.out.log("Sleeping...");
        let end = std::time::Instant::now() + std::time::Duration::from_secs(n);
        while std::time::Instant::now() < end && SIGNALED.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.out.log(&format!("Slept for {n} seconds..."));
        Ok(())
    }

    fn list(&self, what: &str) {
        if what == "fileset" {
            for d in &self.fileset_defs {
                let name = self.fileset_name(d).unwrap_or_default();
                self.out.log(&format!("{} Name='{}'", if d.is_file { "File" } else { "Fileset" }, name));
            }
        } else {
            for (_, threads, _) in &self.procs {
                for t in threads {
                    for f in &t.flowops {
                        self.out.log(&format!("flowop {}", f.kind));
                    }
                }
            }
        }
    }

    /// Compiles the run model against the fileset names.
    pub fn model(&self) -> Result<RunModel> {
        let names: Vec<String> = self.fileset_defs.iter().map(|d| self.fileset_name(d)).collect::<Result<_>>()?;
        let cx = Ctx { file: &self.file, vars: &self.vars, filesets: &names, composites: &self.composites };
        compile(&cx, &self.procs)
    }

    /// Everything a run would resolve and allocate, without I/O: fileset
    /// attributes and sizes, processes, threads and flowops, and what they
    /// take from the machine (`limits`). Every error found.
    pub fn validate_all(&self) -> Vec<WmlError> {
        let mut errors = Vec::new();
        let mut fs_bytes = 0u64;
        for d in &self.fileset_defs {
            let before = errors.len();
            for a in &d.attrs.0 {
                if let Err(e) = self.resolve(&a.value, a.pos) {
                    errors.push(e);
                }
            }
            if errors.len() > before {
                continue;
            }
            match self.fileset_estimate(d, self.machine.memory_bytes.saturating_sub(fs_bytes)) {
                Ok(b) => fs_bytes = fs_bytes.saturating_add(b),
                Err(e) => errors.push(e),
            }
        }
        let names: Vec<String> = self.fileset_defs.iter().map(|d| self.fileset_name(d).unwrap_or_default()).collect();
        let cx = Ctx { file: &self.file, vars: &self.vars, filesets: &names, composites: &self.composites };
        let (model, errs) = compile_all(&cx, &self.procs);
        errors.extend(errs);
        errors.extend(limits::check_run(&self.file, &model, fs_bytes, &self.machine).1);
        errors
    }

    /// Memory of the fileset trees a run will have: populated ones as they
    /// are, the others estimated; the first that does not fit is an error.
    fn fileset_bytes(&self) -> Result<u64> {
        if self.filesets.is_some() {
            return Ok(self.committed_bytes);
        }
        let mut total = 0u64;
        for d in &self.fileset_defs {
            total = total.saturating_add(self.fileset_estimate(d, self.machine.memory_bytes.saturating_sub(total))?);
        }
        Ok(total)
    }

    /// `run` / `psrun`: create filesets, run, report.
    pub fn do_run(&mut self, secs: Option<f64>, period: Option<i64>) -> Result<Outcome> {
        let model = self.model()?;
        let fs_bytes = self.fileset_bytes()?;
        if let Some(e) = limits::check_run(&self.file, &model, fs_bytes, &self.machine).1.into_iter().next() {
            return Err(e);
        }
        self.out.emit(
            "begin",
            &report::Begin {
                protocol: 1,
                engine_version: env!("CARGO_PKG_VERSION").into(),
                file: self.file.clone(),
                runtime_s: secs,
            },
        );
        self.create_filesets()?;
        self.barrier()?;
        let started = unix_now();
        let params = RunParams {
            runtime_s: secs,
            psrun_period: period,
            mode: self.mode,
            eventgen_rate: self.eventgen_rate.clone(),
            lathist: self.lathist,
            indexed_v14: self.dialect == Dialect::V14,
            verbose: self.debug >= 2,
            max_io_bytes: limits::max_io_bytes(&self.machine),
        };
        let fs = self.filesets.clone().unwrap_or_default();
        let r = runner::run(&model, fs, &params, self.out.clone());
        self.report(&model, &r, period, started);
        let exit_code = match r.stop_kind {
            Some(StopKind::Norsc) | Some(StopKind::Error) => 1,
            _ if r.stopped_early && SIGNALED.load(std::sync::atomic::Ordering::Relaxed) != 0 => 1,
            _ => 0,
        };
        Ok(Outcome { exit_code, model: Some(model), result: Some(r) })
    }

    /// `--ready-file`/`--go-file`: say the filesets exist, then wait for the start of every instance, so
    /// that fileset creation stays outside the measured window of a multi-instance run.
    fn barrier(&self) -> Result<()> {
        if let Some(ready) = &self.opts.ready_file {
            std::fs::write(ready, format!("{:.6}\n", unix_now()))
                .map_err(|e| WmlError::io(format!("cannot write the ready file {}", ready.display()), e))?;
        }
        if let Some(go) = &self.opts.go_file {
            while !go.exists() {
                if SIGNALED.load(std::sync::atomic::Ordering::Relaxed) != 0 {
                    return Err(WmlError::Runtime("stopped by a signal while waiting at the start barrier".into()));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            // strata's `go` names the start (ns since the epoch, a little after it was written): wait for it,
            // so every instance starts then however late it saw the file; anything else starts at once
            let at = std::fs::read_to_string(go).ok().and_then(|t| t.trim().parse::<u64>().ok());
            if let Some(ahead) = at.map(|ns| ns as f64 / 1e9 - unix_now()).filter(|s| *s > 0.0 && *s < 60.0) {
                std::thread::sleep(std::time::Duration::from_secs_f64(ahead));
            }
        }
        Ok(())
    }

    fn report(&self, model: &RunModel, r: &runner::RunResult, period: Option<i64>, started: f64) {
        if let Some(reason) = &r.reason {
            let prefix = if r.stop_kind == Some(StopKind::Done) { "" } else { "WARNING! Run stopped early: " };
            self.out.warn(&format!("{prefix}{reason}"));
        }
        self.out.log(&format!("Run took {} seconds...", r.measured_s.round() as u64));
        match (&r.tail, period) {
            (Some((t, secs)), Some(_)) => report::text_block(&self.out, model, t, *secs, self.lathist),
            _ => report::text_block(&self.out, model, &r.totals, r.measured_s, self.lathist),
        }
        if r.stopped_early {
            self.out.log("Statistics above are from a run that stopped early");
        }
        self.out.log("Shutting down processes");
        let mut end = report::end_data(
            model,
            &r.totals,
            &r.hists,
            r.measured_s,
            (r.stopped_early, r.reason.clone()),
            r.tail.is_some(),
        );
        end.started_unix_s = Some(started);
        self.out.emit("end", &end);
    }
}

/// Seconds since the Unix epoch, as the wall clock says (comparable across instances on one host).
fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}
