//! The expression language of `\set`, `\if` and `\elif`: a lexer with pgbench's tokens
//! and a precedence-climbing parser with the precedence and associativity of pgbench's
//! grammar (lowest first): OR, AND, NOT, IS/ISNULL/NOTNULL, comparisons (non-associative),
//! bit operators `| # & << >> ~`, `+ -`, `* / %`, unary `+ -`.

use super::ast::{Arity, Expr, FUNCTIONS, Func};
use super::error::ExprError;
use super::lex::{Lexer, Tok};
use crate::value::Value;
use crate::vars::Symbols;

const L_OR: u8 = 1;
const L_AND: u8 = 2;
const L_NOT: u8 = 3;
const L_IS: u8 = 4;
const L_CMP: u8 = 5;
const L_BIT: u8 = 6;
const L_ADD: u8 = 7;
const L_MUL: u8 = 8;
const L_UNARY: u8 = 9;

struct Parser<'a, 's> {
    lex: Lexer<'a>,
    tok: Tok,
    /// Offset of the last byte of `tok`, and of the token before it.
    tok_last: usize,
    prev_last: usize,
    depth: usize,
    symbols: &'s mut Symbols,
}

/// Deeper nesting is refused (pgbench's parser stack is bounded too).
const MAX_DEPTH: usize = 256;

/// Parses the expression in `line[start..]` up to the end of the line.
pub fn parse_expr(line: &str, start: usize, symbols: &mut Symbols) -> Result<Expr, ExprError> {
    let mut lex = Lexer {
        s: line.as_bytes(),
        pos: start,
        last: start,
    };
    let tok = lex.next()?;
    let tok_last = lex.last;
    let mut p = Parser {
        lex,
        tok,
        tok_last,
        prev_last: start,
        depth: 0,
        symbols,
    };
    let e = p.expr(0)?;
    if p.tok != Tok::Eof {
        return Err(p.syntax_error());
    }
    Ok(e)
}

fn call(f: Func, args: Vec<Expr>) -> Expr {
    Expr::Call(f, args)
}

impl Parser<'_, '_> {
    fn bump(&mut self) -> Result<Tok, ExprError> {
        let next = self.lex.next()?;
        self.prev_last = self.tok_last;
        self.tok_last = self.lex.last;
        Ok(std::mem::replace(&mut self.tok, next))
    }

    fn syntax_error(&self) -> ExprError {
        self.error("syntax error", None)
    }

    fn error(&self, msg: &str, more: Option<String>) -> ExprError {
        ExprError {
            msg: msg.into(),
            more,
            offset: self.tok_last,
        }
    }

    fn expect(&mut self, t: &Tok) -> Result<(), ExprError> {
        if &self.tok != t {
            return Err(self.syntax_error());
        }
        self.bump()?;
        Ok(())
    }

    fn infix(&self) -> Option<(u8, bool)> {
        // (level, non-associative)
        Some(match &self.tok {
            Tok::Or => (L_OR, false),
            Tok::And => (L_AND, false),
            Tok::Is | Tok::IsNull | Tok::NotNull => (L_IS, true),
            Tok::Op("<" | ">" | "=" | "<=" | ">=" | "<>") => (L_CMP, true),
            Tok::Op("|" | "#" | "&" | "<<" | ">>") => (L_BIT, false),
            Tok::Op("+" | "-") => (L_ADD, false),
            Tok::Op("*" | "/" | "%") => (L_MUL, false),
            _ => return None,
        })
    }

    fn expr(&mut self, min: u8) -> Result<Expr, ExprError> {
        let mut lhs = self.prefix()?;
        let mut nonassoc_at = None;
        while let Some((level, nonassoc)) = self.infix() {
            if level < min {
                break;
            }
            if nonassoc_at == Some(level) {
                return Err(self.syntax_error());
            }
            let tok = self.bump()?;
            lhs = match tok {
                Tok::IsNull => is(lhs, Value::Null, false),
                Tok::NotNull => is(lhs, Value::Null, true),
                Tok::Is => {
                    let negate = self.tok == Tok::Not;
                    if negate {
                        self.bump()?;
                    }
                    let v = match self.tok {
                        Tok::Null => Value::Null,
                        Tok::Bool(b) => Value::Bool(b),
                        _ => return Err(self.syntax_error()),
                    };
                    self.bump()?;
                    is(lhs, v, negate)
                }
                Tok::Or | Tok::And => {
                    let f = if tok == Tok::Or { Func::Or } else { Func::And };
                    call(f, vec![lhs, self.expr(level + 1)?])
                }
                Tok::Op(op) => {
                    let rhs = self.expr(level + 1)?;
                    match op {
                        ">" => call(Func::Lt, vec![rhs, lhs]),
                        ">=" => call(Func::Le, vec![rhs, lhs]),
                        _ => call(binary(op), vec![lhs, rhs]),
                    }
                }
                _ => unreachable!("infix() only accepts operators"),
            };
            nonassoc_at = nonassoc.then_some(level);
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("expression too deeply nested", None));
        }
        let e = self.prefix_inner();
        self.depth -= 1;
        e
    }

    fn prefix_inner(&mut self) -> Result<Expr, ExprError> {
        let tok = self.bump()?;
        Ok(match tok {
            Tok::Op("(") => {
                let e = self.expr(0)?;
                self.expect(&Tok::Op(")"))?;
                e
            }
            Tok::Op("+") => self.expr(L_UNARY + 1)?,
            Tok::Op("-") if self.tok == Tok::MaxIntPlusOne => {
                self.bump()?;
                Expr::Const(Value::Int(i64::MIN))
            }
            Tok::Op("-") => call(
                Func::Sub,
                vec![Expr::Const(Value::Int(0)), self.expr(L_UNARY + 1)?],
            ),
            Tok::Op("~") => call(
                Func::BitXor,
                vec![Expr::Const(Value::Int(!0)), self.expr(L_BIT + 1)?],
            ),
            Tok::Not => call(Func::Not, vec![self.expr(L_NOT + 1)?]),
            Tok::Null => Expr::Const(Value::Null),
            Tok::Bool(b) => Expr::Const(Value::Bool(b)),
            Tok::Int(i) => Expr::Const(Value::Int(i)),
            Tok::Double(d) => Expr::Const(Value::Double(d)),
            Tok::Var(name) => Expr::Var(self.symbols.intern(&name)),
            Tok::Func(name) => self.function(&name)?,
            Tok::Case => self.case()?,
            _ => return Err(self.syntax_error()),
        })
    }

    fn function(&mut self, name: &str) -> Result<Expr, ExprError> {
        let Some(&(fname, f, arity)) = FUNCTIONS
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        else {
            // Reported at the name, before its argument list is read.
            let mut e = self.error("unexpected function name", Some(name.into()));
            e.offset = self.prev_last;
            return Err(e);
        };
        if self.tok != Tok::Op("(") {
            return Err(self.syntax_error());
        }
        self.bump()?;
        let mut args = Vec::new();
        if self.tok != Tok::Op(")") {
            loop {
                args.push(self.expr(0)?);
                if self.tok != Tok::Op(",") {
                    break;
                }
                self.bump()?;
            }
        }
        if self.tok != Tok::Op(")") {
            return Err(self.syntax_error());
        }
        let n = args.len();
        let bad = |p: &Self| Err(p.error("unexpected number of arguments", Some(fname.into())));
        match arity {
            Arity::Exactly(k) if n != k => return bad(self),
            Arity::AtLeastOne if n == 0 => {
                return Err(self.error("at least one argument expected", Some(fname.into())));
            }
            Arity::Hash if !(1..=2).contains(&n) => return bad(self),
            Arity::Permute if !(2..=3).contains(&n) => return bad(self),
            Arity::Hash | Arity::Permute if n == 1 || n == 2 && arity == Arity::Permute => {
                args.push(Expr::Var(self.symbols.intern("default_seed")));
            }
            _ => {}
        }
        self.bump()?;
        Ok(call(f, args))
    }

    fn case(&mut self) -> Result<Expr, ExprError> {
        let mut args = Vec::new();
        if self.tok != Tok::When {
            return Err(self.syntax_error());
        }
        while self.tok == Tok::When {
            self.bump()?;
            args.push(self.expr(0)?);
            self.expect(&Tok::Then)?;
            args.push(self.expr(0)?);
        }
        if self.tok == Tok::Else {
            self.bump()?;
            args.push(self.expr(0)?);
        } else {
            args.push(Expr::Const(Value::Null));
        }
        self.expect(&Tok::End)?;
        Ok(call(Func::Case, args))
    }
}

fn is(e: Expr, v: Value, negate: bool) -> Expr {
    let t = call(Func::Is, vec![e, Expr::Const(v)]);
    if negate { call(Func::Not, vec![t]) } else { t }
}

fn binary(op: &str) -> Func {
    match op {
        "+" => Func::Add,
        "-" => Func::Sub,
        "*" => Func::Mul,
        "/" => Func::Div,
        "%" => Func::Mod,
        "<" => Func::Lt,
        "<=" => Func::Le,
        "=" => Func::Eq,
        "<>" => Func::Ne,
        "&" => Func::BitAnd,
        "|" => Func::BitOr,
        "#" => Func::BitXor,
        "<<" => Func::Shl,
        _ => Func::Shr,
    }
}
