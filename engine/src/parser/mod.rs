//! Recursive-descent parser for WML (docs/filebench-language.md#grammar), both dialects (#dialects).
//!
//! Why parse the whole file first: Filebench executes each statement as soon
//! as it is reduced, so a syntax error on line 40 is only found after lines
//! 1-39 ran (and it then exits 0). We parse everything up front, so `check`
//! and `run` reject a bad file before any I/O, with `file:line:col`.

use crate::ast::*;
use crate::error::{Pos, Result, WmlError};
use crate::lexer::{canonical_entity, is_keyword, tokenize_all, QPart, Tok, Token};

mod define;
mod set;

pub(crate) const RV_ATTRS: &[&str] = &["name", "seed", "gamma", "mean", "min", "round", "type", "randsrc"];
pub(crate) const CV_ATTRS: &[&str] = &["type", "parameters", "min", "max", "round"];

/// Parses a whole script; the first error, if any.
pub fn parse(file: &str, src: &str) -> Result<Script> {
    let (script, errors) = parse_all(file, src);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(script),
    }
}

/// Words that start a statement: after a syntax error the parser skips to
/// the next one that begins a line, and goes on from there.
const COMMANDS: &[&str] = &[
    "define",
    "set",
    "run",
    "psrun",
    "create",
    "echo",
    "system",
    "usage",
    "eventgen",
    "sleep",
    "quit",
    "version",
    "debug",
    "list",
    "enable",
    "domultisync",
];

/// Parses a whole script and every syntax error in it: after an error the
/// parser resumes at the next line that starts with a command. The script
/// holds the statements that parsed.
pub fn parse_all(file: &str, src: &str) -> (Script, Vec<WmlError>) {
    let (toks, mut errors) = tokenize_all(file, src);
    let mut p = Parser { toks, i: 0, file, dialect_reason: None };
    let mut stmts = Vec::new();
    while p.peek() != &Tok::Eof {
        let start = p.i;
        let pos = p.pos();
        match p.command() {
            Ok(stmt) => stmts.push(Spanned { stmt, pos }),
            Err(e) => {
                // An error at unreadable text was reported by the lexer.
                if p.peek() != &Tok::Bad {
                    errors.push(e);
                }
                p.resync(start);
            }
        }
    }
    errors.sort_by_key(|e| e.pos().map(|q| (q.line, q.col)));
    let dialect = if p.dialect_reason.is_some() { Dialect::V14 } else { Dialect::V15 };
    (Script { file: file.to_string(), stmts, dialect, dialect_reason: p.dialect_reason }, errors)
}

pub(crate) struct Parser<'a> {
    toks: Vec<Token>,
    i: usize,
    file: &'a str,
    dialect_reason: Option<String>,
}

impl<'a> Parser<'a> {
    pub(crate) fn peek(&self) -> &Tok {
        &self.toks[self.i].tok
    }

    pub(crate) fn pos(&self) -> Pos {
        self.toks[self.i].pos
    }

    pub(crate) fn next(&mut self) -> Token {
        let t = self.toks[self.i].clone();
        if t.tok != Tok::Eof {
            self.i += 1;
        }
        t
    }

    pub(crate) fn err<T>(&self, expected: &str) -> Result<T> {
        let t = &self.toks[self.i];
        Err(WmlError::Syntax {
            file: self.file.to_string(),
            pos: t.pos,
            message: format!("expected {expected}, found {}", t.tok.describe()),
        })
    }

    /// Skips past the failed statement that began at token `start`: to the
    /// next command word that is the first token of its line.
    fn resync(&mut self, start: usize) {
        self.i = self.i.max(start + 1).min(self.toks.len() - 1);
        while self.peek() != &Tok::Eof {
            let t = &self.toks[self.i];
            let first_on_line = self.toks[self.i - 1].pos.line < t.pos.line;
            if first_on_line && matches!(&t.tok, Tok::Word(w) if COMMANDS.contains(&w.as_str())) {
                return;
            }
            self.i += 1;
        }
    }

    fn note_14(&mut self, what: &str) {
        if self.dialect_reason.is_none() {
            let p = self.pos();
            self.dialect_reason = Some(format!("{what} at line {}", p.line));
        }
    }

    /// The keyword at the cursor, canonicalised (`filesets` -> `fileset`).
    pub(crate) fn word(&self) -> Option<String> {
        match self.peek() {
            Tok::Word(w) => Some(canonical_entity(w).map(str::to_string).unwrap_or(w.clone())),
            _ => None,
        }
    }

    pub(crate) fn is_word(&self, w: &str) -> bool {
        self.word().as_deref() == Some(w)
    }

    pub(crate) fn expect_word(&mut self, w: &str) -> Result<()> {
        if self.is_word(w) {
            self.next();
            Ok(())
        } else {
            self.err(&format!("`{w}`"))
        }
    }

    pub(crate) fn is_punct(&self, c: char) -> bool {
        self.peek() == &Tok::Punct(c)
    }

    pub(crate) fn expect_punct(&mut self, c: char) -> Result<()> {
        if self.is_punct(c) {
            self.next();
            Ok(())
        } else {
            self.err(&format!("`{c}`"))
        }
    }

    pub(crate) fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.next();
            true
        } else {
            false
        }
    }

    fn command(&mut self) -> Result<Stmt> {
        let Some(w) = self.word() else {
            return self.err("a command (define, set, run, psrun, echo, ...)");
        };
        match w.as_str() {
            "define" => self.define(),
            "set" => self.set(),
            "run" => self.run(),
            "psrun" => self.psrun(),
            "create" => {
                self.next();
                if self.is_word("files") || self.is_word("fileset") || self.is_word("process") {
                    self.next();
                    return Ok(Stmt::CreateFiles);
                }
                self.err("`files`")
            }
            "echo" | "system" | "usage" => self.quoted_cmd(&w),
            "eventgen" => {
                self.next();
                Ok(Stmt::Eventgen(self.attr_list(&["rate"], &[])?))
            }
            "sleep" => {
                self.next();
                match self.next().tok {
                    Tok::Int(i) => Ok(Stmt::Sleep(Value::Int(i))),
                    Tok::Var(v) => Ok(Stmt::Sleep(Value::Var(v))),
                    _ => {
                        self.i -= 1;
                        self.err("an integer or a variable")
                    }
                }
            }
            "quit" => {
                self.next();
                Ok(Stmt::Quit)
            }
            "version" => {
                self.next();
                Ok(Stmt::Version)
            }
            "debug" => {
                self.next();
                match self.next().tok {
                    Tok::Int(i) => Ok(Stmt::Debug(i)),
                    _ => {
                        self.i -= 1;
                        self.err("an integer")
                    }
                }
            }
            "list" => {
                self.next();
                match self.word().as_deref() {
                    Some(k @ ("fileset" | "flowop")) => {
                        let k = k.to_string();
                        self.next();
                        Ok(Stmt::List(k))
                    }
                    _ => self.err("`filesets` or `flowop`"),
                }
            }
            "enable" => self.enable(),
            "domultisync" => {
                self.next();
                self.expect_word("value")?;
                self.expect_punct('=')?;
                Ok(Stmt::DomultiSync(self.value()?))
            }
            _ => self.err("a command (define, set, run, psrun, echo, ...)"),
        }
    }

    fn quoted_cmd(&mut self, w: &str) -> Result<Stmt> {
        if w == "usage" {
            self.note_14("`usage`");
        }
        self.next();
        let mut parts: Vec<QPart> = Vec::new();
        while let Tok::Quoted(q) = self.peek().clone() {
            self.next();
            parts.extend(q);
        }
        if parts.is_empty() {
            return self.err("a quoted string");
        }
        Ok(match w {
            "echo" => Stmt::Echo(parts),
            "system" => Stmt::System(parts),
            _ => Stmt::Usage(parts),
        })
    }

    fn enable(&mut self) -> Result<Stmt> {
        self.next();
        if self.is_word("lathist") {
            self.next();
            return Ok(Stmt::EnableLathist);
        }
        if self.is_word("multi") {
            self.next();
            return Ok(Stmt::EnableMulti(self.attr_list(&["master", "client"], &[])?));
        }
        self.err("`lathist` or `multi`")
    }

    /// A value after `=`: STRING | QUOTED | INT | BOOL | VAR.
    pub(crate) fn value(&mut self) -> Result<Value> {
        let v = match self.peek().clone() {
            Tok::Int(i) => Value::Int(i),
            Tok::Var(v) => Value::Var(v),
            Tok::Quoted(q) => {
                if q.iter().any(|p| matches!(p, QPart::Var(_))) {
                    return self.err("a value (a quoted value may not contain a $variable)");
                }
                Value::Quoted(q)
            }
            Tok::Word(w) if w == "true" => Value::Bool(true),
            Tok::Word(w) if w == "false" => Value::Bool(false),
            Tok::Word(w) if !is_keyword(&w) => Value::Str(w),
            _ => return self.err("a value (integer, string, boolean or $variable)"),
        };
        self.next();
        Ok(v)
    }

    /// `attr[=value] {, attr[=value]}` restricted to `allowed` (+ `allowed_14`).
    pub(crate) fn attr_list(&mut self, allowed: &[&str], allowed_14: &[&str]) -> Result<Attrs> {
        let mut attrs = Vec::new();
        loop {
            attrs.push(self.attr(allowed, allowed_14)?);
            if !self.eat_punct(',') {
                return Ok(Attrs(attrs));
            }
        }
    }

    pub(crate) fn attr(&mut self, allowed: &[&str], allowed_14: &[&str]) -> Result<Attr> {
        let pos = self.pos();
        let name = match self.word() {
            Some(w) if allowed.contains(&w.as_str()) => w,
            Some(w) if allowed_14.contains(&w.as_str()) => {
                self.note_14(&format!("1.4.9.1 attribute `{w}`"));
                w
            }
            _ => return self.err(&format!("an attribute ({})", allowed.join(", "))),
        };
        self.next();
        let name = match name.as_str() {
            "filesize" => "size".to_string(),
            "filesetname" => "filename".to_string(),
            "wss" => "workingset".to_string(),
            _ => name,
        };
        let value = if self.eat_punct('=') { self.value()? } else { Value::Bool(true) };
        Ok(Attr { name, value, pos })
    }

    fn run(&mut self) -> Result<Stmt> {
        self.next();
        match self.peek().clone() {
            Tok::Int(i) => {
                self.next();
                Ok(Stmt::Run(Some(Value::Int(i))))
            }
            Tok::Var(v) => {
                self.next();
                Ok(Stmt::Run(Some(Value::Var(v))))
            }
            _ => Ok(Stmt::Run(None)),
        }
    }

    fn psrun(&mut self) -> Result<Stmt> {
        self.next();
        let period = match self.peek().clone() {
            Tok::Int(i) => Some(i as i64),
            Tok::NegInt(i) => Some(i),
            _ => return Ok(Stmt::Psrun { period: None, runtime: None }),
        };
        self.next();
        let runtime = match self.peek().clone() {
            Tok::Int(i) => {
                self.next();
                Some(i)
            }
            _ => None,
        };
        Ok(Stmt::Psrun { period, runtime })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_as_value_is_rejected() {
        let e = parse("t.f", "define fileset name=size,path=/tmp").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.f:1:21: expected a value (integer, string, boolean or $variable), found keyword `size`"
        );
    }

    #[test]
    fn flowop_attrs_and_lvars() {
        let s = parse("t.f", "define flowop name=rmw, $lv=3 { flowop read name=r1, iosize=$lv }").unwrap();
        assert_eq!(s.stmts.len(), 1);
    }

    #[test]
    fn dialect_detection() {
        let s = parse("t.f", "define randvar name=$ab, type=gamma, mean=16k\n").unwrap();
        assert_eq!(s.dialect, Dialect::V14);
        let s = parse("t.f", "set $ab = randvar(type=gamma, mean=16k)\nrun 5").unwrap();
        assert_eq!(s.dialect, Dialect::V15);
    }

    #[test]
    fn every_syntax_error_is_reported_with_its_place() {
        let src = "set $dir=/tmp\ndefine fileset name=x,path=$dir,\n  entries=10 size=1k\n\
                   set $ok=1\nfrobnicate 3\ndefine process name=p { thread name=t { flowop read name=r, ~ } }\n\
                   set $x = 1\nrun 5\n";
        let (script, errors) = parse_all("t.f", src);
        let places: Vec<String> =
            errors.iter().map(|e| e.to_string().split(": ").next().unwrap().to_string()).collect();
        assert_eq!(places, ["t.f:3:14", "t.f:5:1", "t.f:6:61", "t.f:7:5"], "{errors:?}");
        // the statements between the errors still parsed
        assert!(script.stmts.iter().any(|s| matches!(&s.stmt, Stmt::Set { var, .. } if var == "$ok")));
        assert!(matches!(script.stmts.last().unwrap().stmt, Stmt::Run(_)));
    }

    #[test]
    fn psrun_forms() {
        let s = parse("t.f", "psrun -2 5").unwrap();
        assert_eq!(s.stmts[0].stmt, Stmt::Psrun { period: Some(-2), runtime: Some(5) });
    }
}
