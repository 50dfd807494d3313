//! Tokenizer for WML, following Filebench's `parser_lex.l` (docs/filebench-language.md#lexical-structure).
//!
//! Why a hand-written lexer: we need line *and column* for every token so that
//! a syntax error reads `file:line:col: expected ..., found ...`, which
//! Filebench cannot say. Keyword recognition follows flex's longest match: a
//! word is a keyword only if the whole word is one (`bigfileset` is a string).

use crate::error::{Pos, Result, WmlError};

/// One piece of a quoted string: literal text or a `$variable` reference.
#[derive(Debug, Clone, PartialEq)]
pub enum QPart {
    Text(String),
    Var(String),
}

/// Token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A bare word: keyword or string (`[/A-Za-z-][/A-Za-z0-9._:;-]*`).
    Word(String),
    /// `$name` (stored with the `$`).
    Var(String),
    /// Integer with optional k/m/g suffix already applied.
    Int(u64),
    /// `-123` (only psrun accepts it).
    NegInt(i64),
    /// `"..."` split into text and variables.
    Quoted(Vec<QPart>),
    /// One of `{ } ( ) = ,`.
    Punct(char),
    /// Text the lexer could not read (already reported by `tokenize_all`).
    Bad,
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is named in "found ..." messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Word(w) if is_keyword(w) => format!("keyword `{w}`"),
            Tok::Word(w) => format!("`{w}`"),
            Tok::Var(v) => format!("variable `{v}`"),
            Tok::Int(i) => format!("integer `{i}`"),
            Tok::NegInt(i) => format!("integer `{i}`"),
            Tok::Quoted(_) => "quoted string".to_string(),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Bad => "invalid text".to_string(),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// A token with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

const KEYWORDS: &[&str] = &[
    "create",
    "define",
    "debug",
    "domultisync",
    "echo",
    "enable",
    "eventgen",
    "quit",
    "list",
    "run",
    "psrun",
    "set",
    "sleep",
    "system",
    "version",
    "file",
    "files",
    "thread",
    "flowop",
    "randvar",
    "mode",
    "multi",
    "cvar",
    "alldone",
    "blocking",
    "client",
    "dirwidth",
    "dirdepthrv",
    "directio",
    "dirgamma",
    "dsync",
    "entries",
    "fd",
    "filename",
    "filesetname",
    "filesize",
    "firstdone",
    "gamma",
    "highwater",
    "indexed",
    "instances",
    "iosize",
    "iters",
    "leafdirs",
    "master",
    "mean",
    "memsize",
    "ioprio",
    "min",
    "max",
    "name",
    "nice",
    "opennext",
    "paralloc",
    "parameters",
    "path",
    "prealloc",
    "random",
    "randsrc",
    "randtable",
    "rate",
    "readonly",
    "writeonly",
    "reuse",
    "round",
    "seed",
    "size",
    "srcfd",
    "target",
    "timeout",
    "trusttree",
    "type",
    "useism",
    "value",
    "workingset",
    "nousestats",
    "lathist",
    "noreadahead",
    "uniform",
    "tabular",
    "urandom",
    "rand48",
    "true",
    "false",
    "in",
];

/// True if `w` is a WML keyword (so it cannot be a bare string value).
pub fn is_keyword(w: &str) -> bool {
    KEYWORDS.contains(&w) || canonical_entity(w).is_some()
}

/// `fileset[s]*` and `process[es]*` are single keywords in the flex rules.
pub fn canonical_entity(w: &str) -> Option<&'static str> {
    if let Some(rest) = w.strip_prefix("fileset") {
        if rest.chars().all(|c| c == 's') {
            return Some("fileset");
        }
    }
    if let Some(rest) = w.strip_prefix("process") {
        if rest.chars().all(|c| c == 'e' || c == 's') {
            return Some("process");
        }
    }
    None
}

struct Lexer<'a> {
    src: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
    file: &'a str,
}

/// Splits a script into tokens (the last one is `Tok::Eof`); the first
/// error if any text cannot be read.
pub fn tokenize(file: &str, src: &str) -> Result<Vec<Token>> {
    let (toks, errors) = tokenize_all(file, src);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(toks),
    }
}

/// Splits a script into tokens, going on after text it cannot read: such
/// text becomes a `Tok::Bad` token and an error.
pub fn tokenize_all(file: &str, src: &str) -> (Vec<Token>, Vec<WmlError>) {
    let mut lx = Lexer { src: src.as_bytes(), i: 0, line: 1, col: 1, file };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    loop {
        lx.skip_blank();
        let pos = lx.pos();
        let Some(c) = lx.peek() else {
            out.push(Token { tok: Tok::Eof, pos });
            return (out, errors);
        };
        let at = lx.i;
        match lx.token(c, pos) {
            Ok(tok) => out.push(Token { tok, pos }),
            Err(e) => {
                errors.push(e);
                if lx.i == at {
                    lx.bump();
                }
                out.push(Token { tok: Tok::Bad, pos });
            }
        }
    }
}

impl<'a> Lexer<'a> {
    fn pos(&self) -> Pos {
        Pos { line: self.line, col: self.col }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.src.get(self.i + k).copied()
    }

    fn bump(&mut self) -> u8 {
        let c = self.src[self.i];
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        c
    }

    fn skip_blank(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    self.bump();
                }
                b'#' => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                _ => break,
            }
        }
    }

    fn err(&self, pos: Pos, message: String) -> WmlError {
        WmlError::Syntax { file: self.file.to_string(), pos, message }
    }

    fn token(&mut self, c: u8, pos: Pos) -> Result<Tok> {
        match c {
            b'{' | b'}' | b'(' | b')' | b'=' | b',' => {
                self.bump();
                Ok(Tok::Punct(c as char))
            }
            b'"' => self.quoted(pos),
            b'$' => self.var(pos),
            b'0'..=b'9' => Ok(Tok::Int(self.int())),
            b'-' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => {
                self.bump();
                Ok(Tok::NegInt(-(self.int() as i64)))
            }
            c if is_word_start(c) => Ok(Tok::Word(self.word())),
            other => Err(self.err(pos, format!("illegal character `{}`", other as char))),
        }
    }

    fn int(&mut self) -> u64 {
        let mut v: u64 = 0;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            self.bump();
            v = v.wrapping_mul(10).wrapping_add((d - b'0') as u64);
        }
        let mult = match self.peek() {
            Some(b'k') => 1u64 << 10,
            Some(b'm') => 1 << 20,
            Some(b'g') => 1 << 30,
            _ => 1,
        };
        if mult > 1 {
            self.bump();
        }
        v.wrapping_mul(mult)
    }

    fn word(&mut self) -> String {
        let start = self.i;
        while self.peek().is_some_and(is_word_char) {
            self.bump();
        }
        String::from_utf8_lossy(&self.src[start..self.i]).into_owned()
    }

    /// `$` + `[({A-Za-z][A-Za-z0-9_]*[A-Za-z0-9][)}]*`.
    fn var_name(&mut self) -> Option<String> {
        let start = self.i;
        let mut k = 1;
        while matches!(self.peek_at(k), Some(b'(') | Some(b'{')) {
            k += 1;
        }
        if !self.peek_at(k).is_some_and(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        let mut end = k + 1;
        let mut last_ok = None;
        while let Some(c) = self.peek_at(end) {
            if c.is_ascii_alphanumeric() {
                last_ok = Some(end);
            } else if c != b'_' {
                break;
            }
            end += 1;
        }
        let mut stop = last_ok? + 1;
        while matches!(self.peek_at(stop), Some(b')') | Some(b'}')) {
            stop += 1;
        }
        for _ in 0..stop {
            self.bump();
        }
        Some(String::from_utf8_lossy(&self.src[start..self.i]).into_owned())
    }

    fn var(&mut self, pos: Pos) -> Result<Tok> {
        match self.var_name() {
            Some(v) => Ok(Tok::Var(v)),
            None => Err(self.err(
                pos,
                "illegal variable name (a variable needs at least two characters, \
                 starting with a letter and not ending with `_`)"
                    .to_string(),
            )),
        }
    }

    fn quoted(&mut self, pos: Pos) -> Result<Tok> {
        self.bump();
        let mut parts = Vec::new();
        let mut text = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(pos, "unterminated quoted string".to_string()));
            };
            match c {
                b'"' => {
                    self.bump();
                    break;
                }
                b'\\' => {
                    self.bump();
                    match self.peek() {
                        Some(b'n') => {
                            self.bump();
                            text.push('\n');
                        }
                        // `\$v` is still expanded by echo (seen in psrun-misc.out;
                        // docs/filebench-language.md#lexical-structure).
                        Some(b'$') => {}
                        Some(b'"') | Some(b'\\') => text.push(self.bump() as char),
                        _ => text.push('\\'),
                    }
                }
                b'$' => match self.var_name() {
                    Some(v) => {
                        if !text.is_empty() {
                            parts.push(QPart::Text(std::mem::take(&mut text)));
                        }
                        parts.push(QPart::Var(v));
                    }
                    None => text.push(self.bump() as char),
                },
                _ => {
                    let start = self.i;
                    self.bump();
                    while self.peek().is_some_and(|c| (0x80..0xC0).contains(&c)) {
                        self.bump();
                    }
                    text.push_str(&String::from_utf8_lossy(&self.src[start..self.i]));
                }
            }
        }
        if !text.is_empty() || parts.is_empty() {
            parts.push(QPart::Text(text));
        }
        Ok(Tok::Quoted(parts))
    }
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'/' || c == b'-'
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'/' | b'.' | b'_' | b':' | b';' | b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize("t.f", s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn sizes_and_words() {
        assert_eq!(
            toks("set $dir=/tmp 10m"),
            vec![
                Tok::Word("set".into()),
                Tok::Var("$dir".into()),
                Tok::Punct('='),
                Tok::Word("/tmp".into()),
                Tok::Int(10 << 20),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn short_variable_is_illegal() {
        assert!(tokenize("t.f", "set $x = 1").is_err());
    }

    #[test]
    fn quoted_parts() {
        let t = toks(r#"echo "a $dir and \$dir""#);
        assert_eq!(
            t[1],
            Tok::Quoted(vec![
                QPart::Text("a ".into()),
                QPart::Var("$dir".into()),
                QPart::Text(" and ".into()),
                QPart::Var("$dir".into())
            ])
        );
    }

    #[test]
    fn positions_are_tracked() {
        let t = tokenize("t.f", "# c\n  run 5").unwrap();
        assert_eq!(t[0].pos, Pos { line: 2, col: 3 });
    }
}
