//! The one user-facing error type of the library.
//!
//! Why: the binary maps each kind to an exit code and to the `error` JSON
//! envelope (`kind` = syntax | semantic | io | runtime), so every error names
//! its kind and, where known, the script position.

use thiserror::Error;

/// A position in a WML script (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

/// Everything that can go wrong in parsing, checking or running a workload.
#[derive(Debug, Error)]
pub enum WmlError {
    /// The script does not follow the grammar (docs/filebench-language.md#lexical-structure, #grammar).
    #[error("{file}:{line}:{col}: {message}", line = pos.line, col = pos.col)]
    Syntax { file: String, pos: Pos, message: String },
    /// The script parses but means something impossible (unknown flowop type,
    /// missing name, fileset not found, ...).
    #[error("{}{message}", location(file, pos))]
    Semantic { file: String, pos: Option<Pos>, message: String },
    /// A file system operation failed outside a flowop (population, setup).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A run-time failure of a flowop (Filebench's FILEBENCH_ERROR).
    #[error("{0}")]
    Runtime(String),
}

fn location(file: &str, pos: &Option<Pos>) -> String {
    match pos {
        Some(p) => format!("{file}:{}:{}: ", p.line, p.col),
        None => String::new(),
    }
}

impl WmlError {
    /// The `kind` field of the JSON `error` envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            WmlError::Syntax { .. } => "syntax",
            WmlError::Semantic { .. } => "semantic",
            WmlError::Io { .. } => "io",
            WmlError::Runtime(_) => "runtime",
        }
    }

    /// Script position, if the error has one.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            WmlError::Syntax { pos, .. } => Some(*pos),
            WmlError::Semantic { pos, .. } => *pos,
            _ => None,
        }
    }

    /// The message without the `file:line:col: ` prefix.
    pub fn message(&self) -> String {
        match self {
            WmlError::Syntax { message, .. } | WmlError::Semantic { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// The error as one line that names its file, and its place when known.
    pub fn located(&self, file: &str) -> String {
        match self.pos() {
            Some(p) => format!("{file}:{}:{}: {}", p.line, p.col, self.message()),
            None => format!("{file}: {}", self.message()),
        }
    }

    /// Shorthand for an I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        WmlError::Io { context: context.into(), source }
    }

    /// Shorthand for a semantic error without position.
    pub fn semantic(file: &str, pos: Option<Pos>, message: impl Into<String>) -> Self {
        WmlError::Semantic { file: file.to_string(), pos, message: message.into() }
    }
}

pub type Result<T> = std::result::Result<T, WmlError>;
