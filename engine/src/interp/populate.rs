//! Turning `define fileset`/`define file` into populated, created filesets
//! (docs/filebench-language.md#filesets, #fileset-trees). Attributes are read here, at population time, which
//! is what late binding means for filesets (docs/filebench-language.md#when-attributes-are-read).

use std::sync::Arc;

use super::Interp;
use crate::ast::{Attrs, Dialect};
use crate::error::{Result, WmlError};
use crate::fileset::tree::{c_int, c_int_of_u64};
use crate::fileset::{create::create, populate, CreateOpts, Fileset, TreeParams};
use crate::limits;
use crate::vars::Avd;

/// A fileset definition as written.
#[derive(Debug, Clone)]
pub struct FilesetDef {
    pub is_file: bool,
    pub attrs: Attrs,
    pub pos: crate::error::Pos,
}

impl Interp {
    fn fs_attr(&self, d: &FilesetDef, name: &str, default: Avd) -> Result<Avd> {
        match d.attrs.get(name) {
            None => Ok(default),
            Some(v) => self.vars.resolve(v).map_err(|n| {
                WmlError::semantic(&self.file, d.attrs.pos_of(name), format!("Noninitialized variable {n}"))
            }),
        }
    }

    /// The name of a fileset definition (for resolving `filesetname`).
    pub fn fileset_name(&self, d: &FilesetDef) -> Result<String> {
        Ok(self.fs_attr(d, "name", Avd::Str(String::new()))?.get_str())
    }

    fn tree_params(&self, d: &FilesetDef) -> Result<TreeParams> {
        let f = d.is_file;
        let mut dirwidth = self.fs_attr(d, "dirwidth", Avd::Int(if f { 10 } else { 0 }))?;
        if !f && d.attrs.get("dirwidth").is_none() {
            self.out.warn("Fileset has no directory width");
        }
        if f {
            dirwidth = Avd::Int(10);
        }
        let v14 = self.dialect == Dialect::V14;
        let size_gamma_14 = if v14 {
            let g = if d.attrs.get("filesizegamma").is_some() { "filesizegamma" } else { "sizegamma" };
            Some(self.fs_attr(d, g, Avd::Int(1500))?.get_int() as f64 / 1000.0)
        } else {
            None
        };
        Ok(TreeParams {
            entries: if f { 1 } else { self.fs_attr(d, "entries", Avd::Int(0))?.get_int() },
            leafdirs: if f { 0 } else { self.fs_attr(d, "leafdirs", Avd::Int(0))?.get_int() },
            size: self.fs_attr(d, "size", Avd::Int(1024))?,
            dirwidth,
            dirgamma: if f { 0.0 } else { self.fs_attr(d, "dirgamma", Avd::Int(1500))?.get_int() as f64 / 1000.0 },
            dirdepthrv: d.attrs.get("dirdepthrv").map(|_| self.fs_attr(d, "dirdepthrv", Avd::Int(0))).transpose()?,
            size_gamma_14: if f { None } else { size_gamma_14 },
        })
    }

    fn create_opts(&self, d: &FilesetDef) -> Result<CreateOpts> {
        let prealloc = match self.fs_attr(d, "prealloc", Avd::Int(0))? {
            Avd::Bool(true) => 100,
            a => a.get_int().min(100),
        };
        let trusttree = self.fs_attr(d, "trusttree", Avd::Bool(false))?.get_bool();
        Ok(CreateOpts {
            prealloc_pct: prealloc,
            paralloc: self.fs_attr(d, "paralloc", Avd::Bool(false))?.get_bool(),
            reuse: trusttree || self.fs_attr(d, "reuse", Avd::Bool(false))?.get_bool(),
            trusttree,
        })
    }

    /// The absolute root `<path>/<name>` of a fileset definition.
    fn fileset_root(&self, d: &FilesetDef) -> Result<(String, String)> {
        let name = self.fileset_name(d)?;
        let path = self.fs_attr(d, "path", Avd::Str(String::new()))?.get_str();
        if name.is_empty() || path.is_empty() {
            return Err(WmlError::semantic(&self.file, Some(d.pos), "fileset needs both name and path"));
        }
        Ok((name, path))
    }

    /// Memory the fileset's tree will take, estimated from its declaration
    /// (`limits::fileset_bytes`); an error when it exceeds what is left.
    pub fn fileset_estimate(&self, d: &FilesetDef, left_bytes: u64) -> Result<u64> {
        let (name, path) = self.fileset_root(d)?;
        let p = self.tree_params(d)?;
        let width = match &p.dirwidth {
            Avd::Rand(r) => c_int(r.mean) as i64,
            other => c_int_of_u64(other.get_int()),
        };
        let bytes = limits::fileset_bytes(p.entries, p.leafdirs, width, path.len() + name.len() + 1);
        if bytes > left_bytes {
            let attr = if p.leafdirs > p.entries { "leafdirs" } else { "entries" };
            let value = if attr == "leafdirs" { p.leafdirs } else { p.entries };
            let from = match d.attrs.get(attr) {
                Some(crate::ast::Value::Var(v)) => format!(" (from {v})"),
                _ => String::new(),
            };
            let (figure, pos) = (format!("{attr}={value}{from}"), d.attrs.pos_of(attr));
            let figure = if width < 2 { format!("{figure} with dirwidth={width}") } else { figure };
            return Err(limits::fileset_error(&self.file, pos.or(Some(d.pos)), &name, &figure, bytes, &self.machine));
        }
        Ok(bytes)
    }

    /// Populates one fileset's tree (no I/O), within the memory left.
    pub fn populate_one(&mut self, d: &FilesetDef) -> Result<Fileset> {
        let (name, path) = self.fileset_root(d)?;
        let left = self.machine.memory_bytes.saturating_sub(self.committed_bytes);
        self.fileset_estimate(d, left)?;
        let p = self.tree_params(d)?;
        let root_len = path.len() + name.len() + 1;
        let tree = populate(&p, &self.rng_drand, root_len, left).map_err(|e| {
            limits::fileset_error(
                &self.file,
                Some(d.pos),
                &name,
                &format!("the tree (after {} entries, dirwidth={:?})", e.entries, p.dirwidth.get_str()),
                e.bytes,
                &self.machine,
            )
        })?;
        self.committed_bytes = self.committed_bytes.saturating_add(tree.mem_bytes);
        if !d.is_file {
            self.out.log(&format!(
                "{} populated: {} files, avg. dir. width = {}, avg. dir. depth = {:.1}, {} leafdirs, {:.3}MB total size",
                name,
                p.entries,
                tree.meanwidth,
                tree.meandepth,
                p.leafdirs,
                tree.total_bytes as f64 / 1048576.0
            ));
        }
        let flags = (
            self.fs_attr(d, "readonly", Avd::Bool(false))?.get_bool(),
            self.fs_attr(d, "writeonly", Avd::Bool(false))?.get_bool(),
        );
        let default_size = match &p.size {
            a if a.is_random() => 0,
            a => a.get_int(),
        };
        Ok(Fileset::new(&name, &path, d.is_file, flags, default_size, tree))
    }

    /// `create files`: populate and create every fileset once, in reverse
    /// order of definition.
    pub fn create_filesets(&mut self) -> Result<()> {
        if self.filesets.is_some() {
            self.out.log("Attempting to create fileset more than once, ignoring");
            return Ok(());
        }
        self.out.log("Populating and pre-allocating filesets");
        let defs = self.fileset_defs.clone();
        let mut made: Vec<Option<Arc<Fileset>>> = vec![None; defs.len()];
        for (i, d) in defs.iter().enumerate().rev() {
            let fs = self.populate_one(d)?;
            let opts = self.create_opts(d)?;
            if !self.dry_run {
                let out = self.out.clone();
                create(&fs, &opts, &mut self.rng_mt.lock().unwrap(), &mut self.rng_rand, &|m| out.log(m))?;
            }
            made[i] = Some(Arc::new(fs));
        }
        self.out.log("Waiting for pre-allocation to finish (in case of a parallel pre-allocation)");
        self.out.log("Population and pre-allocation of filesets completed");
        self.filesets = Some(made.into_iter().flatten().collect());
        Ok(())
    }
}
