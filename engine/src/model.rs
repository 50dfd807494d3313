//! The run model: processes, threads and flowops with their attributes
//! resolved against the variables as they are when `run` executes
//! (docs/filebench-language.md#when-attributes-are-read, #processes-and-threads, #flowop-attributes, #composite-flowops).
//!
//! Why compile: attributes that Filebench reads "once at init" become plain
//! numbers here, those read "every call" stay `Avd`s, and names (filesets,
//! stats keys) become indexes, so the worker hot path does no lookups.

use std::collections::HashMap;

use crate::ast::{Attrs, FlowopDef, ThreadDef, Value};
use crate::error::{Pos, Result, WmlError};
use crate::kind::Kind;
use crate::vars::{Avd, Vars};

/// A composite flowop definition (`define flowop`).
#[derive(Debug, Clone)]
pub struct CompositeDef {
    pub attrs: Attrs,
    pub lvars: Vec<(String, Option<Value>)>,
    pub flowops: Vec<FlowopDef>,
}

/// One flowop ready to run.
#[derive(Debug, Clone)]
pub struct FlowopSpec {
    pub name: String,
    pub kind: Kind,
    pub stat_id: usize,
    pub fileset: Option<usize>,
    pub fd: usize,
    pub srcfd: usize,
    pub opennext: Avd,
    pub iosize: Avd,
    pub workingset: u64,
    pub random: Avd,
    pub dsync: Avd,
    pub directio: Avd,
    pub noreadahead: Avd,
    pub indexed: Option<Avd>,
    pub iters: Avd,
    pub value: Avd,
    pub const_value: u64,
    pub target: String,
    pub blocking: Avd,
    pub highwater: u64,
    pub inner: Vec<FlowopSpec>,
}

/// A thread definition.
#[derive(Debug, Clone)]
pub struct ThreadSpec {
    pub name: String,
    /// Where the thread is defined, and its `instances` / `memsize` attributes.
    pub pos: Pos,
    pub instances_pos: Option<Pos>,
    pub memsize_pos: Option<Pos>,
    pub instances: u64,
    pub memsize: u64,
    pub ioprio: u64,
    pub flowops: Vec<FlowopSpec>,
}

/// A process definition.
#[derive(Debug, Clone)]
pub struct ProcSpec {
    pub name: String,
    /// Where the process is defined, and its `instances` attribute.
    pub pos: Pos,
    pub instances_pos: Option<Pos>,
    pub instances: u64,
    pub nice: u64,
    pub threads: Vec<ThreadSpec>,
}

/// One line of the report: a flowop as defined in the script.
#[derive(Debug, Clone)]
pub struct ReportRow {
    pub name: String,
    pub kind: Kind,
    /// The stats this row shows; `None` for a duplicate name (Filebench
    /// credits all same-named instances to the last definition, docs/filebench-language.md#statistics).
    pub stat_id: Option<usize>,
}

/// Everything a run needs besides the filesets.
#[derive(Debug, Clone, Default)]
pub struct RunModel {
    pub procs: Vec<ProcSpec>,
    /// Stat ids -> (name, kind).
    pub stats: Vec<(String, Kind)>,
    /// Definition order.
    pub rows: Vec<ReportRow>,
}

impl RunModel {
    /// The threads that run the flowops of stats id `id` (a composite's inner ones too): the sum over
    /// processes and threads of process instances x thread instances.
    pub fn threads_of(&self, id: usize) -> u64 {
        fn runs(f: &FlowopSpec, id: usize) -> bool {
            f.stat_id == id || f.inner.iter().any(|i| runs(i, id))
        }
        self.procs
            .iter()
            .flat_map(|p| p.threads.iter().map(move |t| (p.instances, t)))
            .filter(|(_, t)| t.flowops.iter().any(|f| runs(f, id)))
            .map(|(n, t)| n * t.instances)
            .sum()
    }
}

/// Inputs for compiling.
pub struct Ctx<'a> {
    pub file: &'a str,
    pub vars: &'a Vars,
    pub filesets: &'a [String],
    pub composites: &'a HashMap<String, CompositeDef>,
}

/// Flowops a run may have once composites are expanded (Filebench: 16,384).
pub const MAX_FLOWOPS: usize = 100_000;
/// Composite flowops nested deeper than this contain themselves, or nearly.
pub const MAX_COMPOSITE_DEPTH: usize = 32;

struct Builder<'a> {
    cx: &'a Ctx<'a>,
    stat_ids: HashMap<String, usize>,
    model: RunModel,
    /// Errors of the definitions skipped so far (`compile_all`).
    errors: Vec<WmlError>,
    flowops: usize,
    depth: usize,
}

/// Compiles the process definitions into a run model; the first error.
pub fn compile(cx: &Ctx, procs: &[(Attrs, Vec<ThreadDef>, Pos)]) -> Result<RunModel> {
    let (model, errors) = compile_all(cx, procs);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(model),
    }
}

/// Compiles what it can and returns every error (a thread or flowop with an
/// error is left out of the model).
pub fn compile_all(cx: &Ctx, procs: &[(Attrs, Vec<ThreadDef>, Pos)]) -> (RunModel, Vec<WmlError>) {
    let mut b =
        Builder { cx, stat_ids: HashMap::new(), model: RunModel::default(), errors: Vec::new(), flowops: 0, depth: 0 };
    for (attrs, threads, pos) in procs {
        match b.process(attrs, threads, *pos) {
            Ok(p) => b.model.procs.push(p),
            Err(e) => b.errors.push(e),
        }
    }
    // Filebench's master list is head-inserted and looked up by first match:
    // the last definition of a name gets the stats.
    let mut seen = std::collections::HashSet::new();
    for row in b.model.rows.iter_mut().rev() {
        if !seen.insert(row.name.clone()) {
            row.stat_id = None;
        }
    }
    (b.model, b.errors)
}

impl<'a> Builder<'a> {
    fn err(&self, pos: Option<Pos>, msg: String) -> WmlError {
        WmlError::semantic(self.cx.file, pos, msg)
    }

    fn resolve(&self, v: &Value, locals: &HashMap<String, Value>, pos: Option<Pos>) -> Result<Avd> {
        let v = match v {
            Value::Var(n) => locals.get(n).unwrap_or(v),
            _ => v,
        };
        self.cx.vars.resolve(v).map_err(|n| self.err(pos, format!("Noninitialized variable {n}")))
    }

    fn attr(&self, a: &Attrs, name: &str, default: Avd, locals: &HashMap<String, Value>) -> Result<Avd> {
        match a.get(name) {
            Some(v) => self.resolve(v, locals, a.pos_of(name)),
            None => Ok(default),
        }
    }

    fn process(&mut self, attrs: &Attrs, threads: &[ThreadDef], pos: Pos) -> Result<ProcSpec> {
        let none = HashMap::new();
        let name = self.attr(attrs, "name", Avd::Str(String::new()), &none)?.get_str();
        if name.is_empty() {
            return Err(self.err(Some(pos), "process definition without a name".into()));
        }
        let mut out = ProcSpec {
            name,
            pos,
            instances_pos: attrs.pos_of("instances"),
            instances: self.attr(attrs, "instances", Avd::Int(1), &none)?.get_int(),
            nice: self.attr(attrs, "nice", Avd::Int(0), &none)?.get_int(),
            threads: Vec::new(),
        };
        for t in threads {
            match self.thread(t) {
                Ok(ts) => out.threads.push(ts),
                Err(e) => self.errors.push(e),
            }
        }
        Ok(out)
    }

    fn thread(&mut self, t: &ThreadDef) -> Result<ThreadSpec> {
        let none = HashMap::new();
        let name = self.attr(&t.attrs, "name", Avd::Str(String::new()), &none)?.get_str();
        if name.is_empty() {
            return Err(self.err(Some(t.pos), "thread definition without a name".into()));
        }
        let mut flowops = Vec::new();
        for f in &t.flowops {
            match self.flowop(f, None, &none) {
                Ok(fo) => flowops.push(fo),
                Err(e) => self.errors.push(e),
            }
        }
        Ok(ThreadSpec {
            name,
            pos: t.pos,
            instances_pos: t.attrs.pos_of("instances"),
            memsize_pos: t.attrs.pos_of("memsize"),
            instances: self.attr(&t.attrs, "instances", Avd::Int(1), &none)?.get_int(),
            memsize: self.attr(&t.attrs, "memsize", Avd::Int(0), &none)?.get_int(),
            ioprio: self.attr(&t.attrs, "ioprio", Avd::Int(8), &none)?.get_int(),
            flowops,
        })
    }

    fn stat_id(&mut self, name: &str, kind: Kind) -> usize {
        if let Some(&id) = self.stat_ids.get(name) {
            return id;
        }
        let id = self.model.stats.len();
        self.model.stats.push((name.to_string(), kind));
        self.stat_ids.insert(name.to_string(), id);
        id
    }

    fn flowop(&mut self, f: &FlowopDef, outer: Option<&str>, locals: &HashMap<String, Value>) -> Result<FlowopSpec> {
        let a = &f.attrs;
        let base = match a.get("name") {
            Some(v) => self.resolve(v, locals, a.pos_of("name"))?.get_str(),
            None => return Err(self.err(Some(f.pos), format!("flowop {} has no name", f.kind))),
        };
        let name = match outer {
            Some(o) => format!("{o}.{base}"),
            None => base,
        };
        let kind = match Kind::from_name(&f.kind) {
            Some(k) => k,
            None if self.cx.composites.contains_key(&f.kind) => Kind::Composite,
            None => return Err(self.err(Some(f.pos), format!("unknown flowop type `{}`", f.kind))),
        };
        self.flowops += 1;
        if self.flowops > MAX_FLOWOPS {
            return Err(
                self.err(Some(f.pos), format!("more than {MAX_FLOWOPS} flowops once composite flowops are expanded"))
            );
        }
        let stat_id = self.stat_id(&name, kind);
        self.model.rows.push(ReportRow { name: name.clone(), kind, stat_id: Some(stat_id) });
        let mut spec = self.flowop_attrs(f, name, kind, stat_id, locals)?;
        if kind == Kind::Composite {
            self.composite(f, &mut spec, locals)?;
        }
        Ok(spec)
    }

    fn flowop_attrs(
        &self,
        f: &FlowopDef,
        name: String,
        kind: Kind,
        stat_id: usize,
        l: &HashMap<String, Value>,
    ) -> Result<FlowopSpec> {
        let a = &f.attrs;
        let f_ = Avd::Bool(false);
        let fileset = match a.get("filename") {
            None => None,
            Some(v) => {
                let n = self.resolve(v, l, a.pos_of("filename"))?.get_str();
                let idx = self.cx.filesets.iter().rposition(|x| *x == n);
                Some(idx.ok_or_else(|| self.err(a.pos_of("filename"), format!("flowop {name}: file {n} not found")))?)
            }
        };
        let fd = self.attr(a, "fd", Avd::Int(0), l)?.get_int();
        let srcfd = self.attr(a, "srcfd", Avd::Int(0), l)?.get_int();
        if fd > 128 || srcfd > 128 {
            return Err(self.err(Some(f.pos), format!("flowop {name}: fd must be 0..128")));
        }
        let value = self.attr(a, "value", Avd::Int(0), l)?;
        Ok(FlowopSpec {
            name,
            kind,
            stat_id,
            fileset,
            fd: fd as usize,
            srcfd: srcfd as usize,
            opennext: self.attr(a, "opennext", f_.clone(), l)?,
            iosize: self.attr(a, "iosize", Avd::Int(0), l)?,
            workingset: self.attr(a, "workingset", Avd::Int(0), l)?.get_int(),
            random: self.attr(a, "random", f_.clone(), l)?,
            dsync: self.attr(a, "dsync", f_.clone(), l)?,
            directio: self.attr(a, "directio", f_.clone(), l)?,
            noreadahead: self.attr(a, "noreadahead", f_.clone(), l)?,
            indexed: a.get("indexed").map(|v| self.resolve(v, l, a.pos_of("indexed"))).transpose()?,
            iters: self.attr(a, "iters", Avd::Int(1), l)?,
            const_value: if value.is_random() { 0 } else { value.get_int() },
            value,
            target: self.attr(a, "target", Avd::Str(String::new()), l)?.get_str(),
            blocking: self.attr(a, "blocking", f_, l)?,
            highwater: self.attr(a, "highwater", Avd::Int(1), l)?.get_int(),
            inner: Vec::new(),
        })
    }

    /// Expands a composite invocation: inner flowops named `outer.inner`,
    /// local variables from the definition's defaults and the invocation.
    fn composite(&mut self, f: &FlowopDef, spec: &mut FlowopSpec, outer_locals: &HashMap<String, Value>) -> Result<()> {
        let def = self.cx.composites[&f.kind].clone();
        let mut locals: HashMap<String, Value> = HashMap::new();
        for (n, v) in def.lvars.iter().chain(f.lvars.iter()) {
            if let Some(v) = v {
                let v = match v {
                    Value::Var(x) => outer_locals.get(x).cloned().unwrap_or_else(|| v.clone()),
                    _ => v.clone(),
                };
                locals.insert(n.clone(), v);
            }
        }
        if f.attrs.get("iters").is_none() {
            if let Some(v) = def.attrs.get("iters") {
                spec.iters = self.resolve(v, &locals, def.attrs.pos_of("iters"))?;
            }
        }
        if self.depth >= MAX_COMPOSITE_DEPTH {
            return Err(self.err(
                Some(f.pos),
                format!(
                    "composite flowop {} is nested more than {MAX_COMPOSITE_DEPTH} deep (does it contain itself?)",
                    f.kind
                ),
            ));
        }
        let outer = spec.name.clone();
        self.depth += 1;
        let mut result = Ok(());
        for inner in &def.flowops {
            match self.flowop(inner, Some(&outer), &locals) {
                Ok(s) => spec.inner.push(s),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.depth -= 1;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Stmt;

    fn model_of(src: &str) -> RunModel {
        let script = crate::parser::parse("t.f", src).unwrap();
        let procs: Vec<_> = script
            .stmts
            .iter()
            .filter_map(|s| match &s.stmt {
                Stmt::DefineProcess { attrs, threads } => Some((attrs.clone(), threads.clone(), s.pos)),
                _ => None,
            })
            .collect();
        let vars = Vars::default();
        let names = vec!["fs".to_string()];
        let composites = HashMap::new();
        compile(&Ctx { file: "t.f", vars: &vars, filesets: &names, composites: &composites }, &procs).unwrap()
    }

    fn compile_src(src: &str) -> (RunModel, Vec<WmlError>) {
        let script = crate::parser::parse("t.f", src).unwrap();
        let mut composites = HashMap::new();
        let mut procs = Vec::new();
        for s in &script.stmts {
            match &s.stmt {
                Stmt::DefineProcess { attrs, threads } => procs.push((attrs.clone(), threads.clone(), s.pos)),
                Stmt::DefineComposite { attrs, lvars, flowops } => {
                    let Some(Value::Str(n)) = attrs.get("name") else { panic!() };
                    composites.insert(
                        n.clone(),
                        CompositeDef { attrs: attrs.clone(), lvars: lvars.clone(), flowops: flowops.clone() },
                    );
                }
                _ => {}
            }
        }
        let vars = Vars::default();
        let names = vec!["fs".to_string()];
        compile_all(&Ctx { file: "t.f", vars: &vars, filesets: &names, composites: &composites }, &procs)
    }

    #[test]
    fn a_composite_that_contains_itself_is_an_error_not_a_stack_overflow() {
        let (_, errors) = compile_src(
            "define flowop name=loop { flowop loop name=again }\n\
             define process name=p { thread name=t { flowop loop name=l1 } }",
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].to_string().contains("nested more than 32 deep"), "{}", errors[0]);
    }

    #[test]
    fn exponential_composites_stop_at_the_flowop_limit() {
        let mut src = String::from("define flowop name=c0 { flowop statfile name=s,filesetname=fs }\n");
        for i in 1..12 {
            let inner: Vec<String> = (0..10).map(|k| format!("flowop c{} name=x{k}", i - 1)).collect();
            src.push_str(&format!("define flowop name=c{i} {{ {} }}\n", inner.join("\n")));
        }
        src.push_str("define process name=p { thread name=t { flowop c11 name=top } }");
        let (_, errors) = compile_src(&src);
        assert!(errors.iter().any(|e| e.to_string().contains("more than 100000 flowops")), "{errors:?}");
    }

    #[test]
    fn every_bad_flowop_is_reported() {
        let (m, errors) = compile_src(
            "define process name=p { thread name=t { flowop frob name=a\n flowop statfile name=ok,filesetname=fs\n\
             flowop statfile name=b,filesetname=nope } }",
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(m.procs[0].threads[0].flowops.len(), 1);
    }

    #[test]
    fn same_name_is_credited_to_the_last_definition() {
        let m = model_of(
            "define process name=p { thread name=a { flowop statfile name=st,filesetname=fs } \
             thread name=b { flowop statfile name=st,filesetname=fs } }",
        );
        assert_eq!(m.stats.len(), 1);
        assert_eq!(m.rows[0].stat_id, None);
        assert_eq!(m.rows[1].stat_id, Some(0));
    }

    #[test]
    fn threads_of_a_flowop_count_every_instance_that_runs_it() {
        let m = model_of(
            "define process name=p,instances=2 { thread name=a,instances=3 { flowop fsync name=fs1,fd=1 } \
             thread name=b,instances=5 { flowop statfile name=st,filesetname=fs } } \
             define process name=q { thread name=c,instances=4 { flowop fsync name=fs1,fd=1 } }",
        );
        let id = |name: &str| m.rows.iter().filter(|r| r.name == name).find_map(|r| r.stat_id).unwrap();
        assert_eq!(m.threads_of(id("fs1")), 2 * 3 + 4); // one stats entry for the same name, in two threads
        assert_eq!(m.threads_of(id("st")), 2 * 5);
    }

    #[test]
    fn unknown_fileset_is_a_semantic_error() {
        let script = crate::parser::parse(
            "t.f",
            "define process name=p { thread name=t { flowop statfile name=s,filesetname=nope } }",
        )
        .unwrap();
        let Stmt::DefineProcess { attrs, threads } = &script.stmts[0].stmt else { panic!() };
        let vars = Vars::default();
        let composites = HashMap::new();
        let cx = Ctx { file: "t.f", vars: &vars, filesets: &[], composites: &composites };
        let e = compile(&cx, &[(attrs.clone(), threads.clone(), script.stmts[0].pos)]).unwrap_err();
        assert!(e.to_string().contains("file nope not found"), "{e}");
    }
}
