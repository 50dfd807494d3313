//! The parsed form of a WML script (docs/filebench-language.md#grammar).
//!
//! Why keep values unresolved: Filebench binds `attr=$var` late
//! (docs/filebench-language.md#plain-variables, #when-attributes-are-read);
//! an attribute keeps the variable *name* and the interpreter looks it up
//! when the statement runs, or when the run starts for thread/flowop values.

use crate::error::Pos;
use crate::lexer::QPart;

/// An attribute value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Bool(bool),
    Str(String),
    Var(String),
    Quoted(Vec<QPart>),
}

/// `name[=value]`; without `=value` the attribute is boolean true.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub name: String,
    pub value: Value,
    pub pos: Pos,
}

/// A list of attributes with Filebench's "last one wins" lookup.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attrs(pub Vec<Attr>);

impl Attrs {
    /// The last value given for `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().rev().find(|a| a.name == name).map(|a| &a.value)
    }

    /// Position of the last attribute called `name`.
    pub fn pos_of(&self, name: &str) -> Option<Pos> {
        self.0.iter().rev().find(|a| a.name == name).map(|a| a.pos)
    }
}

/// A `flowop TYPE attrs` line inside a thread or composite.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowopDef {
    pub kind: String,
    pub attrs: Attrs,
    /// Local variable assignments (`$lv = value`) given to a composite.
    pub lvars: Vec<(String, Option<Value>)>,
    pub pos: Pos,
}

/// A `thread attrs { flowops }` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadDef {
    pub attrs: Attrs,
    pub flowops: Vec<FlowopDef>,
    pub pos: Pos,
}

/// One `{percent, min, max}` row of a randvar table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    pub percent: Value,
    pub min: Value,
    pub max: Value,
}

/// How a run ends when a thread cannot get a resource (docs/filebench-language.md#thread-loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuitMode {
    Timeout,
    AllDone,
    FirstDone,
}

/// Right-hand side of `set $v = ...`.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Plain(Value),
    Randvar { attrs: Attrs, table: Vec<TableRow> },
    Cvar { attrs: Attrs },
}

/// One top-level command.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    DefineFileset {
        is_file: bool,
        attrs: Attrs,
    },
    DefineProcess {
        attrs: Attrs,
        threads: Vec<ThreadDef>,
    },
    DefineComposite {
        attrs: Attrs,
        lvars: Vec<(String, Option<Value>)>,
        flowops: Vec<FlowopDef>,
    },
    /// 1.4.9.1: `define randvar name=$v, ...`.
    DefineRandvar {
        attrs: Attrs,
        table: Vec<TableRow>,
    },
    Set {
        var: String,
        value: SetValue,
    },
    SetMode(QuitMode),
    SetNoUseStats,
    Run(Option<Value>),
    Psrun {
        period: Option<i64>,
        runtime: Option<u64>,
    },
    CreateFiles,
    Echo(Vec<QPart>),
    System(Vec<QPart>),
    /// 1.4.9.1 `usage "..."`: accepted and ignored.
    Usage(Vec<QPart>),
    Eventgen(Attrs),
    Sleep(Value),
    Quit,
    Debug(u64),
    List(String),
    Version,
    EnableLathist,
    EnableMulti(Attrs),
    DomultiSync(Value),
}

/// A statement and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    pub stmt: Stmt,
    pub pos: Pos,
}

/// Which Filebench language a script was written in (docs/filebench-language.md#dialects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// 1.5-alpha3 (the default).
    V15,
    /// 1.4.9.1: detected from constructs only that version has.
    V14,
}

/// A whole parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    pub file: String,
    pub stmts: Vec<Spanned>,
    pub dialect: Dialect,
    /// Why the 1.4.9.1 dialect was chosen (first construct seen).
    pub dialect_reason: Option<String>,
}
