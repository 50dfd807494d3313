//! `define`: file sets, processes with their threads and flowops, composite flowops and 1.4.9.1's
//! `define randvar` (docs/filebench-language.md#grammar), with the attributes each may take.

use super::Parser;
use crate::ast::*;
use crate::error::Result;
use crate::lexer::Tok;

/// A flowop's local `$variable` and its value, if given.
type LocalVar = (String, Option<Value>);

const FILESET_ATTRS: &[&str] = &[
    "name",
    "path",
    "entries",
    "leafdirs",
    "size",
    "filesize",
    "dirwidth",
    "dirdepthrv",
    "dirgamma",
    "prealloc",
    "paralloc",
    "reuse",
    "trusttree",
    "readonly",
    "writeonly",
];
const FILESET_ATTRS_14: &[&str] = &["cached", "filesizegamma", "sizegamma", "namelength"];
const PROC_ATTRS: &[&str] = &["name", "instances", "nice"];
const THREAD_ATTRS: &[&str] = &["name", "memsize", "useism", "instances", "ioprio"];
const FLOWOP_ATTRS: &[&str] = &[
    "workingset",
    "filename",
    "filesetname",
    "name",
    "random",
    "fd",
    "srcfd",
    "opennext",
    "dsync",
    "directio",
    "indexed",
    "target",
    "iters",
    "value",
    "blocking",
    "highwater",
    "iosize",
    "noreadahead",
];
const FLOWOP_ATTRS_14: &[&str] = &["wss", "rotatefd"];
const COMP_ATTRS: &[&str] = &["name", "iters"];

impl<'a> Parser<'a> {
    pub(super) fn define(&mut self) -> Result<Stmt> {
        self.next();
        match self.word().as_deref() {
            Some("fileset") | Some("file") => {
                let is_file = self.is_word("file");
                self.next();
                let attrs = self.attr_list(FILESET_ATTRS, FILESET_ATTRS_14)?;
                Ok(Stmt::DefineFileset { is_file, attrs })
            }
            Some("process") => self.define_process(),
            Some("flowop") => self.define_composite(),
            Some("randvar") => {
                self.note_14("`define randvar`");
                self.next();
                let (attrs, table) = self.randvar_attrs()?;
                Ok(Stmt::DefineRandvar { attrs, table })
            }
            _ => self.err("`file`, `fileset`, `process`, `flowop` or `randvar`"),
        }
    }

    fn define_process(&mut self) -> Result<Stmt> {
        self.next();
        let attrs = self.attr_list(PROC_ATTRS, &[])?;
        self.expect_punct('{')?;
        let mut threads = Vec::new();
        loop {
            let pos = self.pos();
            self.expect_word("thread")?;
            let tattrs = self.attr_list(THREAD_ATTRS, &[])?;
            let flowops = self.flowop_block()?;
            threads.push(ThreadDef { attrs: tattrs, flowops, pos });
            if self.eat_punct('}') {
                return Ok(Stmt::DefineProcess { attrs, threads });
            }
        }
    }

    fn flowop_block(&mut self) -> Result<Vec<FlowopDef>> {
        self.expect_punct('{')?;
        let mut flowops = Vec::new();
        loop {
            flowops.push(self.flowop()?);
            if self.eat_punct('}') {
                return Ok(flowops);
            }
        }
    }

    fn flowop(&mut self) -> Result<FlowopDef> {
        let pos = self.pos();
        self.expect_word("flowop")?;
        let kind = match self.peek().clone() {
            Tok::Word(w) => w,
            _ => return self.err("a flowop type"),
        };
        self.next();
        let (attrs, lvars) = if matches!(self.peek(), Tok::Word(_)) && !self.is_word("flowop") {
            self.attrs_and_lvars(FLOWOP_ATTRS, FLOWOP_ATTRS_14)?
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(FlowopDef { kind, attrs: Attrs(attrs), lvars, pos })
    }

    fn define_composite(&mut self) -> Result<Stmt> {
        self.next();
        let (attrs, lvars) = self.attrs_and_lvars(COMP_ATTRS, &[])?;
        let flowops = self.flowop_block()?;
        Ok(Stmt::DefineComposite { attrs: Attrs(attrs), lvars, flowops })
    }

    /// A comma-separated list of attributes and local `$variables` (`$v` or `$v = value`), as a flowop
    /// and a composite flowop take them.
    fn attrs_and_lvars(&mut self, known: &[&str], known_14: &[&str]) -> Result<(Vec<Attr>, Vec<LocalVar>)> {
        let mut attrs = Vec::new();
        let mut lvars = Vec::new();
        loop {
            if let Tok::Var(v) = self.peek().clone() {
                self.next();
                let val = if self.eat_punct('=') { Some(self.value()?) } else { None };
                lvars.push((v, val));
            } else {
                attrs.push(self.attr(known, known_14)?);
            }
            if !self.eat_punct(',') {
                return Ok((attrs, lvars));
            }
        }
    }
}
