//! `set` and the random-variable forms of WML (docs/filebench-language.md#grammar,
//! #random-variables, #custom-variables), shared by `set $v = randvar(...)` and 1.4.9.1's `define randvar`.

use super::{Parser, CV_ATTRS, RV_ATTRS};
use crate::ast::*;
use crate::error::Result;
use crate::lexer::Tok;

impl<'a> Parser<'a> {
    pub(crate) fn set(&mut self) -> Result<Stmt> {
        self.next();
        if self.is_word("mode") {
            self.next();
            if self.is_word("nousestats") {
                self.next();
                return Ok(Stmt::SetNoUseStats);
            }
            self.expect_word("quit")?;
            let mode = match self.word().as_deref() {
                Some("timeout") => QuitMode::Timeout,
                Some("alldone") => QuitMode::AllDone,
                Some("firstdone") => QuitMode::FirstDone,
                _ => return self.err("`timeout`, `alldone` or `firstdone`"),
            };
            self.next();
            return Ok(Stmt::SetMode(mode));
        }
        let var = match self.peek().clone() {
            Tok::Var(v) => v,
            _ => return self.err("a $variable or `mode`"),
        };
        self.next();
        self.expect_punct('=')?;
        let value = if self.is_word("randvar") {
            self.next();
            self.expect_punct('(')?;
            let (attrs, table) = self.randvar_attrs()?;
            self.expect_punct(')')?;
            SetValue::Randvar { attrs, table }
        } else if self.is_word("cvar") {
            self.next();
            self.expect_punct('(')?;
            let attrs = self.attr_list(CV_ATTRS, &[])?;
            self.expect_punct(')')?;
            SetValue::Cvar { attrs }
        } else {
            // `set $a = $b` is not in the 1.5 grammar, but shipped files
            // (createdelete-swing.f) use it: copy the value.
            SetValue::Plain(self.value()?)
        };
        Ok(Stmt::Set { var, value })
    }

    /// randvar attributes, with keyword values for `type` and `randsrc`, and
    /// an optional trailing `randtable = {{p, lo, hi}, ...}`.
    pub(crate) fn randvar_attrs(&mut self) -> Result<(Attrs, Vec<TableRow>)> {
        let mut attrs = Vec::new();
        let mut table = Vec::new();
        loop {
            if self.is_word("randtable") {
                self.next();
                self.expect_punct('=')?;
                table = self.randtable()?;
            } else if self.is_word("type") || self.is_word("randsrc") {
                let pos = self.pos();
                let name = self.word().unwrap_or_default();
                self.next();
                self.expect_punct('=')?;
                let ok: &[&str] =
                    if name == "type" { &["uniform", "tabular", "gamma"] } else { &["urandom", "rand48"] };
                match self.word() {
                    Some(w) if ok.contains(&w.as_str()) => {
                        self.next();
                        attrs.push(Attr { name, value: Value::Str(w), pos });
                    }
                    _ => return self.err(&ok.join(" or ")),
                }
            } else {
                attrs.push(self.attr(RV_ATTRS, &[])?);
            }
            if !self.eat_punct(',') {
                return Ok((Attrs(attrs), table));
            }
        }
    }

    fn randtable(&mut self) -> Result<Vec<TableRow>> {
        self.expect_punct('{')?;
        let mut rows = Vec::new();
        loop {
            self.expect_punct('{')?;
            let percent = self.table_num()?;
            self.expect_punct(',')?;
            let min = self.table_num()?;
            self.expect_punct(',')?;
            let max = self.table_num()?;
            self.expect_punct('}')?;
            rows.push(TableRow { percent, min, max });
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct('}')?;
        Ok(rows)
    }

    fn table_num(&mut self) -> Result<Value> {
        match self.peek().clone() {
            Tok::Int(i) => {
                self.next();
                Ok(Value::Int(i))
            }
            Tok::Var(v) => {
                self.next();
                Ok(Value::Var(v))
            }
            _ => self.err("an integer or a variable"),
        }
    }
}
