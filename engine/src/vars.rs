//! Variables and attribute values (docs/filebench-language.md#variables).
//!
//! Why one value type: Filebench's AVD ("attribute value descriptor") is either
//! a constant or a pointer to a variable read at use time. At run start all
//! `set`s have executed, so we resolve `$var` to its final value once; random
//! variables stay shared (`Arc`) so each read draws a new sample (docs/filebench-language.md#when-attributes-are-read).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ast::Value;
use crate::lexer::QPart;
use crate::random::{Cvar, RandVar};

/// A resolved attribute value or variable value.
#[derive(Debug, Clone)]
pub enum Avd {
    Int(u64),
    Bool(bool),
    Str(String),
    Dbl(f64),
    Rand(Arc<RandVar>),
    Cvar(Arc<Cvar>),
}

impl Avd {
    /// `avd_get_int`: random values are sampled and truncated; a string
    /// yields 0 (Filebench logs `Attempt to get integer from string avd`).
    pub fn get_int(&self) -> u64 {
        match self {
            Avd::Int(i) => *i,
            Avd::Bool(b) => *b as u64,
            Avd::Str(_) => 0,
            Avd::Dbl(d) => dbl_to_u64(*d),
            Avd::Rand(r) => dbl_to_u64(r.sample()),
            Avd::Cvar(c) => dbl_to_u64(c.sample()),
        }
    }

    /// `avd_get_dbl`.
    pub fn get_dbl(&self) -> f64 {
        match self {
            Avd::Int(i) => *i as f64,
            Avd::Bool(b) => *b as u64 as f64,
            Avd::Str(_) => 0.0,
            Avd::Dbl(d) => *d,
            Avd::Rand(r) => r.sample(),
            Avd::Cvar(c) => c.sample(),
        }
    }

    /// `avd_get_bool`: non-zero integers are true.
    pub fn get_bool(&self) -> bool {
        match self {
            Avd::Bool(b) => *b,
            Avd::Str(s) => s == "true",
            other => other.get_int() != 0,
        }
    }

    /// The string form, for names and paths.
    pub fn get_str(&self) -> String {
        match self {
            Avd::Str(s) => s.clone(),
            other => other.interpolate(),
        }
    }

    /// True for randvars and cvars (values that change per read).
    pub fn is_random(&self) -> bool {
        matches!(self, Avd::Rand(_) | Avd::Cvar(_))
    }

    /// How `echo` prints a variable (docs/filebench-language.md#interpolation).
    pub fn interpolate(&self) -> String {
        match self {
            Avd::Int(i) => i.to_string(),
            Avd::Bool(b) => b.to_string(),
            Avd::Str(s) => s.clone(),
            Avd::Dbl(d) => format!("{d:.6}"),
            Avd::Rand(r) => format!("{} random var", r.type_name()),
            Avd::Cvar(_) => "custom variable".to_string(),
        }
    }
}

fn dbl_to_u64(d: f64) -> u64 {
    if d <= 0.0 {
        0
    } else {
        d as u64
    }
}

/// The global variable table.
#[derive(Debug, Default, Clone)]
pub struct Vars {
    map: HashMap<String, Avd>,
}

impl Vars {
    /// Creates or overwrites `$name`.
    pub fn set(&mut self, name: &str, v: Avd) {
        self.map.insert(name.to_string(), v);
    }

    /// Looks up `$name` (with the `$`).
    pub fn get(&self, name: &str) -> Option<&Avd> {
        self.map.get(name)
    }

    /// Resolves a written value; `Err(name)` for a never-set variable.
    pub fn resolve(&self, v: &Value) -> Result<Avd, String> {
        Ok(match v {
            Value::Int(i) => Avd::Int(*i),
            Value::Bool(b) => Avd::Bool(*b),
            Value::Str(s) => Avd::Str(s.clone()),
            Value::Quoted(q) => Avd::Str(self.interpolate(q)),
            Value::Var(name) => self.get(name).cloned().ok_or_else(|| name.clone())?,
        })
    }

    /// `echo`/`system` interpolation: unknown variables stay literal.
    pub fn interpolate(&self, parts: &[QPart]) -> String {
        let mut out = String::new();
        for p in parts {
            match p {
                QPart::Text(t) => out.push_str(t),
                QPart::Var(v) => match self.get(v) {
                    Some(a) => out.push_str(&a.interpolate()),
                    None => out.push_str(v),
                },
            }
        }
        out
    }
}

/// A shared uniform source (the unseeded libc `drand48()` or mtwist default
/// state), one per workload so that parallel tests stay deterministic.
pub type SharedSource<T> = Arc<Mutex<T>>;
