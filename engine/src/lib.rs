//! strata-wml: a Filebench-compatible workload engine (docs/filebench-language.md).
//!
//! Why a new engine: Filebench 1.5-alpha3 shares raw pointers between
//! fork+exec'd processes (ASLR crashes), caps filesets and entries in a fixed
//! shared-memory region, exits 0 on syntax errors and prints no statistics
//! when a run stops early (docs/filebench-language.md#known-bugs). This crate runs
//! the same language with the same semantics on threads.

pub mod ast;
pub mod clock;
pub mod error;
pub mod fileset;
pub mod interp;
pub mod kind;
pub mod lexer;
pub mod limits;
pub mod model;
pub mod output;
pub mod parser;
pub mod procs;
pub mod random;
pub mod report;
pub mod rng;
pub mod runner;
pub mod shm;
pub mod stats;
pub mod vars;
pub mod worker;

pub use error::{Pos, Result, WmlError};
