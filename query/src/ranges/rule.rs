//! Rules over monitoring metrics (`cpu_user + cpu_sys > 90 and runq > 2`):
//! the parser, the three-valued evaluation a range finder needs, and the
//! comparisons a plot draws as threshold lines.

use std::collections::BTreeSet;

use crate::error::{Error, Result};

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    Num(f64),
    /// A metric, optionally of one entity (`disk_util_pct[vda]`).
    Metric {
        name: String,
        entity: Option<String>,
    },
    Neg(Box<Rule>),
    Arith(char, Box<Rule>, Box<Rule>),
    Cmp(&'static str, Box<Rule>, Box<Rule>),
    And(Box<Rule>, Box<Rule>),
    Or(Box<Rule>, Box<Rule>),
    Not(Box<Rule>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String, Option<String>),
    Op(&'static str),
    LParen,
    RParen,
}

fn lex(s: &str) -> Result<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let err =
        |i: usize, what: &str| Error::Usage(format!("rule {s:?}: {what} at character {}", i + 1));
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let st = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let v: f64 = s[st..i].parse().map_err(|_| err(st, "bad number"))?;
            out.push(Tok::Num(v));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'%' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_%.".contains(&b[i])) {
                i += 1;
            }
            let word = &s[st..i];
            let mut entity = None;
            if i < b.len() && b[i] == b'[' {
                // The entity runs to the matching `]` (pidstat's
                // `name[pid]` has brackets of its own).
                let mut depth = 0;
                let st2 = i + 1;
                loop {
                    match b.get(i) {
                        None => return Err(err(st2 - 1, "unclosed [")),
                        Some(b'[') => depth += 1,
                        Some(b']') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                entity = Some(s[st2..i].to_string());
                i += 1;
            }
            match (word.to_ascii_lowercase().as_str(), &entity) {
                ("and", None) => out.push(Tok::Op("and")),
                ("or", None) => out.push(Tok::Op("or")),
                ("not", None) => out.push(Tok::Op("not")),
                _ => out.push(Tok::Ident(word.to_string(), entity)),
            }
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let (op, len): (&'static str, usize) = match two {
                ">=" => (">=", 2),
                "<=" => ("<=", 2),
                "!=" | "<>" => ("!=", 2),
                "==" => ("=", 2),
                "&&" => ("and", 2),
                "||" => ("or", 2),
                _ => match c {
                    b'>' => (">", 1),
                    b'<' => ("<", 1),
                    b'=' => ("=", 1),
                    b'+' => ("+", 1),
                    b'-' => ("-", 1),
                    b'*' => ("*", 1),
                    b'/' => ("/", 1),
                    b'(' => {
                        out.push(Tok::LParen);
                        i += 1;
                        continue;
                    }
                    b')' => {
                        out.push(Tok::RParen);
                        i += 1;
                        continue;
                    }
                    _ => return Err(err(i, &format!("unexpected {:?}", c as char))),
                },
            };
            i += len;
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    text: String,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn err(&self, what: &str) -> Error {
        Error::Usage(format!("rule {:?}: {what}", self.text))
    }
    fn or(&mut self) -> Result<Rule> {
        let mut l = self.and()?;
        while self.eat("or") {
            l = Rule::Or(Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Rule> {
        let mut l = self.not()?;
        while self.eat("and") {
            l = Rule::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Rule> {
        if self.eat("not") {
            return Ok(Rule::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Rule> {
        let l = self.sum()?;
        for op in [">=", "<=", "!=", ">", "<", "="] {
            if self.eat(op) {
                let r = self.sum()?;
                return Ok(Rule::Cmp(op, Box::new(l), Box::new(r)));
            }
        }
        Ok(l)
    }
    fn sum(&mut self) -> Result<Rule> {
        let mut l = self.product()?;
        loop {
            let op = if self.eat("+") {
                '+'
            } else if self.eat("-") {
                '-'
            } else {
                return Ok(l);
            };
            l = Rule::Arith(op, Box::new(l), Box::new(self.product()?));
        }
    }
    fn product(&mut self) -> Result<Rule> {
        let mut l = self.unary()?;
        loop {
            let op = if self.eat("*") {
                '*'
            } else if self.eat("/") {
                '/'
            } else {
                return Ok(l);
            };
            l = Rule::Arith(op, Box::new(l), Box::new(self.unary()?));
        }
    }
    fn unary(&mut self) -> Result<Rule> {
        if self.eat("-") {
            return Ok(Rule::Neg(Box::new(self.unary()?)));
        }
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                Ok(Rule::Num(v))
            }
            Some(Tok::Ident(name, entity)) => {
                self.pos += 1;
                Ok(Rule::Metric { name, entity })
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let e = self.or()?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err(self.err("missing )"));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(t) => Err(self.err(&format!("unexpected {t:?}"))),
            None => Err(self.err("ends early")),
        }
    }
}

impl Rule {
    /// Parses a rule: comparisons (`>`, `>=`, `<`, `<=`, `=`, `!=`) of
    /// sums, differences, products and quotients of metrics and numbers,
    /// combined with `and`, `or`, `not` and parentheses. A metric is its
    /// name as in `metric.metric`, optionally with an entity in brackets
    /// (`disk_util_pct[vda]`, `cpu_user[0]`).
    pub fn parse(text: &str) -> Result<Rule> {
        let mut p = Parser {
            toks: lex(text)?,
            pos: 0,
            text: text.to_string(),
        };
        let r = p.or()?;
        if p.pos != p.toks.len() {
            return Err(p.err(&format!("unexpected {:?}", p.toks[p.pos])));
        }
        if !r.is_bool() {
            return Err(
                p.err("is not a condition (compare a metric with a threshold, e.g. `runq > 2`)")
            );
        }
        r.check(&p)?;
        Ok(r)
    }

    fn is_bool(&self) -> bool {
        matches!(
            self,
            Rule::Cmp(..) | Rule::And(..) | Rule::Or(..) | Rule::Not(..)
        )
    }

    fn check(&self, p: &Parser) -> Result<()> {
        match self {
            Rule::Num(_) | Rule::Metric { .. } => Ok(()),
            Rule::Neg(a) | Rule::Arith(_, a, _) | Rule::Cmp(_, a, _) if a.is_bool() => {
                Err(p.err("a condition is used as a number"))
            }
            Rule::Arith(_, _, b) | Rule::Cmp(_, _, b) if b.is_bool() => {
                Err(p.err("a condition is used as a number"))
            }
            Rule::Neg(a) => a.check(p),
            Rule::Arith(_, a, b) | Rule::Cmp(_, a, b) => {
                a.check(p)?;
                b.check(p)
            }
            Rule::And(a, b) | Rule::Or(a, b) if !a.is_bool() || !b.is_bool() => {
                Err(p.err("`and`/`or` need conditions on both sides"))
            }
            Rule::Not(a) if !a.is_bool() => Err(p.err("`not` needs a condition")),
            Rule::And(a, b) | Rule::Or(a, b) => {
                a.check(p)?;
                b.check(p)
            }
            Rule::Not(a) => a.check(p),
        }
    }

    /// The metrics the rule reads: (name, entity).
    pub fn metrics(&self) -> BTreeSet<(String, Option<String>)> {
        let mut out = BTreeSet::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut BTreeSet<(String, Option<String>)>) {
        match self {
            Rule::Num(_) => {}
            Rule::Metric { name, entity } => {
                out.insert((name.clone(), entity.clone()));
            }
            Rule::Neg(a) | Rule::Not(a) => a.collect(out),
            Rule::Arith(_, a, b) | Rule::Cmp(_, a, b) | Rule::And(a, b) | Rule::Or(a, b) => {
                a.collect(out);
                b.collect(out)
            }
        }
    }

    pub(super) fn num(&self, v: &dyn Fn(&str, &Option<String>) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Rule::Num(x) => *x,
            Rule::Metric { name, entity } => v(name, entity)?,
            Rule::Neg(a) => -a.num(v)?,
            Rule::Arith(op, a, b) => {
                let (x, y) = (a.num(v)?, b.num(v)?);
                match op {
                    '+' => x + y,
                    '-' => x - y,
                    '*' => x * y,
                    _ if y == 0.0 => return None,
                    _ => x / y,
                }
            }
            _ => return None,
        })
    }

    /// Three-valued: None where a metric it needs has no value.
    pub(super) fn truth(&self, v: &dyn Fn(&str, &Option<String>) -> Option<f64>) -> Option<bool> {
        match self {
            Rule::Cmp(op, a, b) => {
                let (x, y) = (a.num(v)?, b.num(v)?);
                Some(match *op {
                    ">" => x > y,
                    ">=" => x >= y,
                    "<" => x < y,
                    "<=" => x <= y,
                    "=" => x == y,
                    _ => x != y,
                })
            }
            Rule::And(a, b) => match (a.truth(v), b.truth(v)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Rule::Or(a, b) => match (a.truth(v), b.truth(v)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Rule::Not(a) => a.truth(v).map(|x| !x),
            _ => None,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Num(x) => write!(f, "{x}"),
            Rule::Metric { name, entity: None } => write!(f, "{name}"),
            Rule::Metric {
                name,
                entity: Some(e),
            } => write!(f, "{name}[{e}]"),
            Rule::Neg(a) => write!(f, "-({a})"),
            Rule::Arith(op, a, b) => write!(f, "{a} {op} {b}"),
            Rule::Cmp(op, a, b) => write!(f, "{a} {op} {b}"),
            Rule::And(a, b) => write!(f, "({a}) and ({b})"),
            Rule::Or(a, b) => write!(f, "({a}) or ({b})"),
            Rule::Not(a) => write!(f, "not ({a})"),
        }
    }
}

/// One comparison of a rule, for plotting: the compared expression and
/// the threshold, when one side is a number.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub expr: Rule,
    pub op: &'static str,
    pub threshold: f64,
}

impl Rule {
    /// The comparisons with a number on one side.
    pub fn comparisons(&self) -> Vec<Comparison> {
        let mut out = Vec::new();
        self.cmps(&mut out);
        out
    }

    fn cmps(&self, out: &mut Vec<Comparison>) {
        match self {
            Rule::Cmp(op, a, b) => match (a.as_ref(), b.as_ref()) {
                (e, Rule::Num(x)) => out.push(Comparison {
                    expr: e.clone(),
                    op,
                    threshold: *x,
                }),
                (Rule::Num(x), e) => out.push(Comparison {
                    expr: e.clone(),
                    op,
                    threshold: *x,
                }),
                _ => {}
            },
            Rule::And(a, b) | Rule::Or(a, b) => {
                a.cmps(out);
                b.cmps(out)
            }
            Rule::Not(a) => a.cmps(out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_precedence_and_entities() {
        let r = Rule::parse("cpu_user+cpu_sys > 90 and runq > 2 or not disk_util_pct[vda] <= 50")
            .unwrap();
        let m: Vec<_> = r.metrics().into_iter().collect();
        assert_eq!(
            m,
            vec![
                ("cpu_sys".to_string(), None),
                ("cpu_user".to_string(), None),
                ("disk_util_pct".to_string(), Some("vda".to_string())),
                ("runq".to_string(), None),
            ]
        );
        assert!(matches!(r, Rule::Or(..)));
        assert!(Rule::parse("(cpu_user + cpu_sys) / 2 >= 45").is_ok());
        assert!(Rule::parse("proc_cpu_pct[phases[123]] > 50").is_ok());
        assert!(Rule::parse("cpu_user + 2").is_err());
        assert!(Rule::parse("runq > 2 and 3").is_err());
        assert!(Rule::parse("runq >").is_err());
        assert!(Rule::parse("runq > 2)").is_err());
    }
}
