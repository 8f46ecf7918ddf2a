//! Display filters (`-Y EXPR`): which records to print, over the NDJSON key
//! names of [`super::fields`].
//!
//! ```text
//! expr    = or
//! or      = and { ("||" | "or") and }
//! and     = unary { ("&&" | "and") unary }
//! unary   = ("!" | "not") unary | "(" expr ")" | test
//! test    = FIELD [ OP VALUE | ["not"] "in" SET | ("matches" | "~") STRING ]
//! OP      = "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"   (also eq ne lt le gt ge)
//! SET     = "{" ITEM { [","] ITEM } "}"
//! ITEM    = VALUE [ ".." VALUE ]
//! VALUE   = NUMBER (decimal, 0x hex, or with a fraction) | STRING | WORD
//! STRING  = "TEXT" (escapes \" and \\) | r"TEXT" (no escapes)
//! ```
//!
//! A field alone holds when the record has it (a bool field: when it is
//! `true`; `anomalies`, `frames`: when there is at least one). A comparison
//! holds when it holds for any occurrence of the field, as in tshark;
//! `a != b` is `!(a == b)`, so it also holds when the field is absent, and
//! so is `a not in {…}`. `in` holds when an occurrence equals an item of the
//! set or lies in one of its ranges (`lo..hi`, both ends included).
//! `matches` is a regular expression (the `regex-lite` syntax, close to
//! tshark's PCRE2 for what filters use), case-insensitive as in tshark
//! (`(?-i)` turns that off), over a string field or over a bytes field's
//! bytes (each byte one character: `"\\x86"` is byte 0x86); patterns are
//! at most `MAX_PATTERN` characters and run in time linear in the input.

use std::fmt;
use std::net::IpAddr;

use super::fields::{check_closed, lookup, Field, FieldDef, Record, RecordType, Ty, Value};

/// A filter that does not parse: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// Character position in the expression, 1-based.
    pub(crate) column: usize,
    pub(crate) what: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.what)
    }
}

impl std::error::Error for FilterError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    /// A regular expression: compiled to [`Node::Matches`], never compared.
    Matches,
}

/// A literal, converted to the field's type when the filter is compiled.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
    Ip(IpAddr),
    /// A network, `10.0.0.0/8`: the address and the prefix length.
    Net(IpAddr, u8),
    /// For a field of any JSON value: the number the token spells, if it
    /// spells one, and its text.
    Json(Option<Box<Lit>>, String),
}

/// An item of an `in` set.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    One(Lit),
    /// `lo..hi`, both ends included.
    Range(Lit, Lit),
}

/// A compiled regular expression (equal when the text is).
#[derive(Debug, Clone)]
struct Pattern(regex_lite::Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Pattern {
    /// Whether the pattern matches in `b`, each byte taken as the character
    /// of the same number (Latin-1), so that `\x86` is byte 0x86 and `.` any
    /// one byte.
    fn is_match_bytes(&self, b: &[u8]) -> bool {
        match std::str::from_utf8(b) {
            Ok(s) if b.is_ascii() => self.0.is_match(s),
            _ => self
                .0
                .is_match(&b.iter().map(|&c| char::from(c)).collect::<String>()),
        }
    }
}

/// Longest regular expression, in characters: the cost of compiling and of
/// matching grows with it (linearly: regex-lite does not backtrack).
pub(crate) const MAX_PATTERN: usize = 512;

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    Present(Field),
    Cmp(Field, Op, Lit),
    In(Field, Vec<Item>),
    Matches(Field, Pattern),
}

/// A compiled display filter.
#[derive(Debug, Clone, PartialEq)]
pub struct DisplayFilter {
    root: Node,
}

impl DisplayFilter {
    /// Parse `text` for records of type `record`: field names are checked
    /// against that record's keys, and values against the field's type.
    pub fn parse(text: &str, record: RecordType) -> Result<Self, FilterError> {
        let tokens = tokenize(text)?;
        let mut p = Parser {
            tokens,
            i: 0,
            end: text.chars().count() + 1,
            record,
            depth: 0,
        };
        if p.tokens.is_empty() {
            return Err(FilterError {
                column: 1,
                what: "empty filter".into(),
            });
        }
        let root = p.or()?;
        if let Some(t) = p.tokens.get(p.i) {
            return Err(FilterError {
                column: t.column,
                what: format!("unexpected {}", t.tok),
            });
        }
        Ok(DisplayFilter { root })
    }

    /// Whether `r` passes.
    pub fn matches(&self, r: &dyn Record) -> bool {
        eval(&self.root, r)
    }
}

fn eval(n: &Node, r: &dyn Record) -> bool {
    match n {
        Node::Or(all) => all.iter().any(|n| eval(n, r)),
        Node::And(all) => all.iter().all(|n| eval(n, r)),
        Node::Not(a) => !eval(a, r),
        Node::Present(field) => r.visit(*field, &mut |v| !matches!(v, Value::Bool(false))),
        Node::Cmp(field, op, lit) => r.visit(*field, &mut |v| compare(&v, *op, lit)),
        Node::In(field, items) => r.visit(*field, &mut |v| items.iter().any(|i| member(&v, i))),
        Node::Matches(field, p) => r.visit(*field, &mut |v| match v {
            Value::Str(s) => p.0.is_match(s),
            Value::Bytes(b) => p.is_match_bytes(b),
            _ => false,
        }),
    }
}

/// Whether `v` is `item`, or lies in it.
fn member(v: &Value<'_>, item: &Item) -> bool {
    match (v, item) {
        (_, Item::One(lit)) => compare(v, Op::Eq, lit),
        // ACK ranges: some datagram number in both.
        (Value::Range(a, b), Item::Range(Lit::Int(lo), Lit::Int(hi))) => {
            i128::from(*a) <= *hi && *lo <= i128::from(*b)
        }
        (_, Item::Range(lo, hi)) => compare(v, Op::Ge, lo) && compare(v, Op::Le, hi),
    }
}

/// Whether `a` is in the network `net`/`len`.
fn in_network(a: IpAddr, net: IpAddr, len: u8) -> bool {
    fn prefix(bits: u128, len: u8, width: u8) -> u128 {
        match width - len.min(width) {
            0 => bits,
            n if n >= 128 => 0,
            n => bits >> n,
        }
    }
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            prefix(u32::from(a).into(), len, 32) == prefix(u32::from(n).into(), len, 32)
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            prefix(u128::from(a), len, 128) == prefix(u128::from(n), len, 128)
        }
        _ => false,
    }
}

fn order<T: PartialOrd>(a: T, op: Op, b: T) -> bool {
    match op {
        Op::Eq => a == b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Contains | Op::Matches => false,
    }
}

fn compare(v: &Value<'_>, op: Op, lit: &Lit) -> bool {
    match (v, lit) {
        (Value::Int(a), Lit::Int(b)) => order(*a, op, *b),
        (Value::Int(a), Lit::Float(b)) => order(*a as f64, op, *b),
        (Value::Float(a), Lit::Int(b)) => order(*a, op, *b as f64),
        (Value::Float(a), Lit::Float(b)) => order(*a, op, *b),
        (Value::Guid(a), Lit::Int(b)) => order(i128::from(*a), op, *b),
        (Value::Str(a), Lit::Str(b)) => match op {
            Op::Contains => a.contains(b.as_str()),
            _ => order(*a, op, b.as_str()),
        },
        (Value::Bytes(a), Lit::Bytes(b)) => match op {
            Op::Contains => b.is_empty() || a.windows(b.len()).any(|w| w == b.as_slice()),
            _ => order(*a, op, b.as_slice()),
        },
        (Value::Bool(a), Lit::Bool(b)) => order(*a, op, *b),
        (Value::Range(lo, hi), Lit::Int(n)) => i128::from(*lo) <= *n && *n <= i128::from(*hi),
        // Addresses of one family only: 127.0.0.1 is not ::ffff:127.0.0.1.
        (Value::Ip(a), Lit::Ip(b)) if a.is_ipv4() == b.is_ipv4() => order(*a, op, *b),
        (Value::Ip(a), Lit::Net(n, len)) => op == Op::Eq && in_network(*a, *n, *len),
        (Value::Int(_) | Value::Float(_), Lit::Json(Some(n), _)) => compare(v, op, n),
        (Value::Str(_), Lit::Json(_, t)) => compare(v, op, &Lit::Str(t.clone())),
        (Value::Bool(b), Lit::Json(_, t)) => op == Op::Eq && t == if *b { "true" } else { "false" },
        _ => false,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    Not,
    And,
    Or,
    /// A comparison; `!=` is kept apart, as it compiles to `!(==)`.
    Cmp(Op),
    Ne,
    In,
    LBrace,
    RBrace,
    Comma,
    Word(String),
    Number(String),
    Str(String),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::LParen => f.write_str("\"(\""),
            Tok::RParen => f.write_str("\")\""),
            Tok::Not => f.write_str("\"!\""),
            Tok::And => f.write_str("\"&&\""),
            Tok::Or => f.write_str("\"||\""),
            Tok::Cmp(op) => write!(f, "\"{}\"", op_str(*op)),
            Tok::Ne => f.write_str("\"!=\""),
            Tok::In => f.write_str("\"in\""),
            Tok::LBrace => f.write_str("\"{\""),
            Tok::RBrace => f.write_str("\"}\""),
            Tok::Comma => f.write_str("\",\""),
            Tok::Word(w) | Tok::Number(w) => write!(f, "{w:?}"),
            Tok::Str(s) => write!(f, "string {s:?}"),
        }
    }
}

fn op_str(op: Op) -> &'static str {
    match op {
        Op::Eq => "==",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::Contains => "contains",
        Op::Matches => "matches",
    }
}

struct Token {
    tok: Tok,
    /// 1-based character column.
    column: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>, FilterError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let next = chars.get(i + 1).copied();
        let two = |a: char, b: char| c == a && next == Some(b);
        let (tok, len) = if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == '(' {
            (Tok::LParen, 1)
        } else if c == ')' {
            (Tok::RParen, 1)
        } else if c == '{' {
            (Tok::LBrace, 1)
        } else if c == '}' {
            (Tok::RBrace, 1)
        } else if c == ',' {
            (Tok::Comma, 1)
        } else if c == '~' {
            (Tok::Cmp(Op::Matches), 1)
        } else if two('r', '"') {
            // A raw string, as tshark's: no escapes (for regular expressions).
            let Some(len) = chars[i + 2..].iter().position(|&ch| ch == '"') else {
                return Err(FilterError {
                    column,
                    what: "string not closed (a '\"' is missing)".into(),
                });
            };
            (
                Tok::Str(chars[i + 2..i + 2 + len].iter().collect()),
                len + 3,
            )
        } else if two('&', '&') {
            (Tok::And, 2)
        } else if two('|', '|') {
            (Tok::Or, 2)
        } else if two('=', '=') {
            (Tok::Cmp(Op::Eq), 2)
        } else if two('!', '=') {
            (Tok::Ne, 2)
        } else if two('<', '=') {
            (Tok::Cmp(Op::Le), 2)
        } else if two('>', '=') {
            (Tok::Cmp(Op::Ge), 2)
        } else if c == '<' {
            (Tok::Cmp(Op::Lt), 1)
        } else if c == '>' {
            (Tok::Cmp(Op::Gt), 1)
        } else if c == '!' {
            (Tok::Not, 1)
        } else if c == '"' {
            let mut s = String::new();
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => {
                        return Err(FilterError {
                            column,
                            what: "string not closed (a '\"' is missing)".into(),
                        })
                    }
                    Some('"') => break,
                    Some('\\') => match chars.get(j + 1) {
                        Some(e @ ('"' | '\\')) => {
                            s.push(*e);
                            j += 1;
                        }
                        _ => {
                            return Err(FilterError {
                                column: j + 1,
                                what: "only \\\" and \\\\ are escapes in strings \
                                       (r\"...\" has none, for regular expressions)"
                                    .into(),
                            })
                        }
                    },
                    Some(ch) => s.push(*ch),
                }
                j += 1;
            }
            (Tok::Str(s), j + 1 - i)
        } else if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ':') {
            // Words take what addresses are made of: `127.0.0.1:19132`,
            // `[::1]:19134`.
            let mut j = i;
            while chars.get(j).is_some_and(|ch| {
                ch.is_ascii_alphanumeric()
                    || matches!(ch, '_' | '.' | ':' | '-' | '+' | '[' | ']' | '/')
            }) {
                j += 1;
            }
            let w: String = chars[i..j].iter().collect();
            let tok = match w.as_str() {
                "and" => Tok::And,
                "or" => Tok::Or,
                "not" => Tok::Not,
                "eq" => Tok::Cmp(Op::Eq),
                "ne" => Tok::Ne,
                "lt" => Tok::Cmp(Op::Lt),
                "le" => Tok::Cmp(Op::Le),
                "gt" => Tok::Cmp(Op::Gt),
                "ge" => Tok::Cmp(Op::Ge),
                "contains" => Tok::Cmp(Op::Contains),
                "matches" => Tok::Cmp(Op::Matches),
                "in" => Tok::In,
                _ if c.is_ascii_digit() || c == '-' || c == '.' => Tok::Number(w),
                _ => Tok::Word(w),
            };
            (tok, j - i)
        } else if c == '=' {
            return Err(FilterError {
                column,
                what: "'=' is not an operator: write '=='".into(),
            });
        } else {
            return Err(FilterError {
                column,
                what: format!("unexpected character {c:?}"),
            });
        };
        out.push(Token { tok, column });
        i += len;
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    i: usize,
    /// Column just past the end, for "expected ... at the end".
    end: usize,
    record: RecordType,
    /// Parentheses and `!` open around the current token.
    depth: usize,
}

/// How deep parentheses and `!` may nest.
const MAX_DEPTH: usize = 64;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.i).map(|t| &t.tok)
    }

    fn column(&self) -> usize {
        self.tokens.get(self.i).map_or(self.end, |t| t.column)
    }

    fn err<T>(&self, what: impl Into<String>) -> Result<T, FilterError> {
        Err(FilterError {
            column: self.column(),
            what: what.into(),
        })
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(t) => format!("found {t}"),
            None => "found the end".into(),
        }
    }

    fn or(&mut self) -> Result<Node, FilterError> {
        let mut all = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            self.i += 1;
            all.push(self.and()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Node::Or(all)
        })
    }

    fn and(&mut self) -> Result<Node, FilterError> {
        let mut all = vec![self.unary()?];
        while self.peek() == Some(&Tok::And) {
            self.i += 1;
            all.push(self.unary()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Node::And(all)
        })
    }

    fn unary(&mut self) -> Result<Node, FilterError> {
        // Parentheses and `!` nest by recursion: bounded, so that no filter
        // can exhaust the stack.
        if matches!(self.peek(), Some(Tok::Not | Tok::LParen)) {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return self.err(format!("nested more than {MAX_DEPTH} deep"));
            }
        }
        let n = self.unary_inner();
        self.depth = self.depth.saturating_sub(1);
        n
    }

    fn unary_inner(&mut self) -> Result<Node, FilterError> {
        match self.peek() {
            Some(Tok::Not) => {
                self.i += 1;
                Ok(Node::Not(Box::new(self.unary()?)))
            }
            Some(Tok::LParen) => {
                self.i += 1;
                let n = self.or()?;
                if self.peek() != Some(&Tok::RParen) {
                    return self.err(format!("expected \")\", {}", self.found()));
                }
                self.i += 1;
                Ok(n)
            }
            Some(Tok::Word(_)) => self.test(),
            _ => self.err(format!("expected a field name, {}", self.found())),
        }
    }

    fn test(&mut self) -> Result<Node, FilterError> {
        let column = self.column();
        let Some(Tok::Word(name)) = self.peek().cloned() else {
            return self.err("expected a field name");
        };
        let def = lookup(&name, self.record).map_err(|what| FilterError { column, what })?;
        self.i += 1;
        let after = self.tokens.get(self.i + 1).map(|t| &t.tok);
        let (op, negate) = match self.peek() {
            Some(Tok::In) => return self.set(def),
            Some(Tok::Not) if after == Some(&Tok::In) => {
                self.i += 1;
                return Ok(Node::Not(Box::new(self.set(def)?)));
            }
            Some(Tok::Cmp(op)) => (*op, false),
            Some(Tok::Ne) => (Op::Eq, true),
            _ => return Ok(Node::Present(def.read)),
        };
        let op_column = self.column();
        self.i += 1;
        let value_column = self.column();
        let Some(tok) = self.tokens.get(self.i).map(|t| t.tok.clone()) else {
            return self.err(format!("expected a value after {}", op_str(op)));
        };
        self.i += 1;
        let at = |what: String| FilterError {
            column: if what.starts_with("operator") {
                op_column
            } else {
                value_column
            },
            what: what.replace("{field}", def.name),
        };
        if op == Op::Matches {
            return pattern(def.ty, &tok)
                .map(|p| Node::Matches(def.read, p))
                .map_err(at);
        }
        let lit = literal(def.ty, op, &tok).map_err(at)?;
        if let (Op::Eq, Lit::Str(v)) = (op, &lit) {
            check_closed(def, v).map_err(at)?;
        }
        let n = Node::Cmp(def.read, op, lit);
        Ok(if negate { Node::Not(Box::new(n)) } else { n })
    }

    /// `in { ITEM ... }`, the current token being `in`.
    fn set(&mut self, def: &FieldDef) -> Result<Node, FilterError> {
        self.i += 1;
        if self.peek() != Some(&Tok::LBrace) {
            return self.err(format!("expected \"{{\" after in, {}", self.found()));
        }
        self.i += 1;
        // The set's values and `..`, which the tokenizer leaves inside
        // words (`0x05..0x07`, `10.0.0.1..10.0.0.9`), with their columns.
        let mut pieces: Vec<(Option<Tok>, usize)> = Vec::new();
        let close = loop {
            let column = self.column();
            let Some(tok) = self.peek().cloned() else {
                return self.err("set not closed (a '}' is missing)");
            };
            self.i += 1;
            match tok {
                Tok::RBrace => break column,
                Tok::Comma => {}
                Tok::Str(_) => pieces.push((Some(tok), column)),
                Tok::Number(w) | Tok::Word(w) => split_ranges(&w, column, &mut pieces),
                other => {
                    return Err(FilterError {
                        column,
                        what: format!("expected a value or \"}}\" in the set, found {other}"),
                    })
                }
            }
        };
        let fail = |column: usize, what: String| FilterError {
            column,
            what: what.replace("{field}", def.name),
        };
        let mut items = Vec::new();
        let mut k = 0;
        while k < pieces.len() {
            let (Some(lo), column) = &pieces[k] else {
                return Err(fail(
                    pieces[k].1,
                    "a range needs a value before \"..\"".into(),
                ));
            };
            let one = literal(def.ty, Op::Eq, lo).map_err(|e| fail(*column, e))?;
            if !matches!(pieces.get(k + 1), Some((None, _))) {
                // A value (not a range's end) of a closed set must be one of it.
                if let Lit::Str(v) = &one {
                    check_closed(def, v).map_err(|e| fail(*column, e))?;
                }
                items.push(Item::One(one));
                k += 1;
                continue;
            }
            let Some((Some(hi), hi_column)) = pieces.get(k + 2) else {
                let at = pieces.get(k + 2).map_or(close, |p| p.1);
                return Err(fail(at, "a range needs a value after \"..\"".into()));
            };
            let ends = match def.ty {
                Ty::Ranges => literal(def.ty, Op::Eq, lo)
                    .and_then(|lo| Ok((lo, literal(def.ty, Op::Eq, hi)?))),
                Ty::Int | Ty::Float | Ty::Str | Ty::Guid | Ty::Ip | Ty::Any => {
                    literal(def.ty, Op::Le, lo)
                        .and_then(|lo| Ok((lo, literal(def.ty, Op::Le, hi)?)))
                }
                _ => Err(format!(
                    "{{field}} is {}: a set of it takes values, not ranges",
                    def.ty.as_str()
                )),
            };
            let (lo, hi) = ends.map_err(|e| fail(*hi_column, e))?;
            items.push(Item::Range(lo, hi));
            k += 3;
        }
        if items.is_empty() {
            return Err(fail(close, "empty set".into()));
        }
        Ok(Node::In(def.read, items))
    }
}

/// The parts of a word of a set: values, and `None` for each `..`.
fn split_ranges(w: &str, column: usize, out: &mut Vec<(Option<Tok>, usize)>) {
    let value = |v: &str| {
        if v.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.') {
            Tok::Number(v.to_string())
        } else {
            Tok::Word(v.to_string())
        }
    };
    let mut at = 0;
    for (k, part) in w.split("..").enumerate() {
        if k > 0 {
            out.push((None, column + at - 2));
        }
        if !part.is_empty() {
            out.push((Some(value(part)), column + at));
        }
        at += part.len() + 2;
    }
}

/// The regular expression of `field matches TOKEN`.
fn pattern(ty: Ty, tok: &Tok) -> Result<Pattern, String> {
    if !matches!(ty, Ty::Str | Ty::Bytes | Ty::Any) {
        return Err("operator matches needs a string or bytes field".into());
    }
    let Tok::Str(text) = tok else {
        return Err(format!(
            "matches takes a regular expression in double quotes (\"...\" or r\"...\"), not {tok}"
        ));
    };
    if text.chars().count() > MAX_PATTERN {
        return Err(format!(
            "regular expression longer than {MAX_PATTERN} characters"
        ));
    }
    regex_lite::RegexBuilder::new(text)
        .case_insensitive(true)
        .nest_limit(MAX_DEPTH as u32)
        .size_limit(1 << 20)
        .build()
        .map(Pattern)
        .map_err(|e| {
            let why = e.to_string();
            format!(
                "bad regular expression: {}",
                why.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
}

fn parse_int(w: &str) -> Option<i128> {
    let (neg, digits) = match w.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, w),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(h) => i128::from_str_radix(h, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

fn parse_number(w: &str) -> Option<Lit> {
    if let Some(i) = parse_int(w) {
        return Some(Lit::Int(i));
    }
    w.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Lit::Float)
}

fn parse_hex_bytes(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b':' | b' ' | b'-'))
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| {
            let h = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(h, 16).ok()
        })
        .collect()
}

/// The value token `tok`, as a literal for a field of type `ty` under `op`.
/// Errors name `{field}`, filled in by the caller.
fn literal(ty: Ty, op: Op, tok: &Tok) -> Result<Lit, String> {
    let ordered = !matches!(op, Op::Eq);
    let text = match tok {
        Tok::Number(w) | Tok::Word(w) | Tok::Str(w) => w.as_str(),
        other => return Err(format!("expected a value, found {other}")),
    };
    let bad = |want: &str| {
        Err(format!(
            "{{field}} is {} and takes {want}, not {tok}",
            ty.as_str()
        ))
    };
    match ty {
        Ty::Int | Ty::Float => {
            if op == Op::Contains {
                return Err("operator contains needs a string, bytes or ranges field".into());
            }
            match tok {
                Tok::Number(w) => parse_number(w).map_or_else(|| bad("a number"), Ok),
                _ => bad("a number"),
            }
        }
        Ty::Guid => {
            if op == Op::Contains {
                return Err("operator contains does not apply to a guid".into());
            }
            parse_int(text)
                .or_else(|| {
                    text.strip_prefix("0x")
                        .and_then(|h| u64::from_str_radix(h, 16).ok())
                        .map(i128::from)
                })
                .map_or_else(|| bad("a number or \"0x…\""), |v| Ok(Lit::Int(v)))
        }
        // A bare word or number is the string it spells (`dir == c2s`,
        // `src == 127.0.0.1:19132`).
        Ty::Str => Ok(Lit::Str(text.to_string())),
        Ty::Bytes => {
            if ordered && op != Op::Contains {
                return Err(
                    "operator {op} does not apply to bytes: use ==, != or contains"
                        .replace("{op}", op_str(op)),
                );
            }
            parse_hex_bytes(text)
                .map_or_else(|| bad("hex digits like \"86aa\""), |b| Ok(Lit::Bytes(b)))
        }
        Ty::Bool => {
            if ordered {
                return Err(format!("operator {} does not apply to a bool", op_str(op)));
            }
            match text {
                "true" | "1" => Ok(Lit::Bool(true)),
                "false" | "0" => Ok(Lit::Bool(false)),
                _ => bad("true or false"),
            }
        }
        Ty::Ranges => {
            if ordered && op != Op::Contains {
                return Err(format!(
                    "operator {} does not apply to ranges: use == N (covers N)",
                    op_str(op)
                ));
            }
            match parse_int(text) {
                Some(n) if matches!(tok, Tok::Number(_)) => Ok(Lit::Int(n)),
                _ => bad("a datagram number"),
            }
        }
        Ty::Ip => {
            if op == Op::Contains {
                return Err("operator contains does not apply to an address".into());
            }
            let (addr, len) = match text.split_once('/') {
                Some((a, l)) => (a, Some(l)),
                None => (text, None),
            };
            let addr = addr
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(addr);
            let Ok(ip) = addr.parse::<IpAddr>() else {
                return bad("an address like 127.0.0.1 or ::1, or a network like 10.0.0.0/8");
            };
            match len {
                None => Ok(Lit::Ip(ip)),
                Some(_) if ordered => Err(format!(
                    "operator {} does not apply to a network: use ==, != or in",
                    op_str(op)
                )),
                Some(l) => match l.parse::<u8>() {
                    Ok(n) if n <= if ip.is_ipv4() { 32 } else { 128 } => Ok(Lit::Net(ip, n)),
                    _ => bad("a prefix length of at most 32 (IPv4) or 128 (IPv6) after /"),
                },
            }
        }
        Ty::Any => Ok(Lit::Json(
            match tok {
                Tok::Number(w) => parse_number(w).map(Box::new),
                _ => None,
            },
            text.to_string(),
        )),
        Ty::Object => Err(format!(
            "operator {}: {{field}} can only be tested for presence",
            op_str(op)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoded game fields hold any JSON value: a number compares as a
    /// number, a string as a string, a bool with true or false.
    #[test]
    fn game_fields_compare_by_the_value_they_hold() {
        let rec = Fake(
            RecordType::Game,
            vec![
                ("login.protocol", Value::Int(2169)),
                ("login.display_name", Value::Str("Steve")),
                ("login.xuid", Value::Str("2535")),
                ("login.chain_verifies", Value::Bool(true)),
            ],
        );
        let on = |t: &str| {
            DisplayFilter::parse(t, RecordType::Game)
                .unwrap_or_else(|e| panic!("{t}: {e}"))
                .matches(&rec)
        };
        assert!(on("game.login.protocol == 2169 && login.protocol > 900"));
        assert!(on("login.protocol in {100..3000}"));
        assert!(!on("login.protocol == Steve"));
        assert!(on(
            "game.login.display_name == Steve && login.display_name contains tev"
        ));
        assert!(on("login.display_name matches \"^st\""));
        assert!(on("login.xuid == 2535 && login.xuid == \"2535\""));
        assert!(on("login.chain_verifies == true && login.chain_verifies"));
        assert!(!on("login.chain_verifies == false"));
        assert!(!on("disconnect.message"));
    }

    #[test]
    fn help_examples_parse_for_their_records() {
        for r in RecordType::ALL {
            for e in r.filter_examples() {
                assert!(DisplayFilter::parse(e, r).is_ok(), "{e} ({})", r.as_str());
            }
        }
    }

    /// A record of named values, for the evaluator's rules alone.
    struct Fake(RecordType, Vec<(&'static str, Value<'static>)>);

    impl Record for Fake {
        fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
            // Each value under the name whose field, resolved for the
            // record type, the filter reads.
            self.1
                .iter()
                .filter(|(k, _)| crate::display::fields::read_in(k, self.0) == field)
                .any(|(_, v)| f(*v))
        }
    }

    fn pkt(text: &str) -> Result<DisplayFilter, FilterError> {
        DisplayFilter::parse(text, RecordType::Packet)
    }

    fn sample() -> Fake {
        Fake(
            RecordType::Packet,
            vec![
                ("kind", Value::Str("data")),
                ("flow", Value::Int(2)),
                ("len", Value::Int(1456)),
                ("channel", Value::Int(0)),
                ("channel", Value::Int(3)),
                ("ts", Value::Float(1.5)),
                ("server_guid", Value::Guid(0x0006_60d5_fa1d_57ec)),
                ("ranges", Value::Range(3, 7)),
                ("security", Value::Bool(false)),
                ("payload", Value::Bytes(&[0x86, 0xaa, 0x01])),
                ("name", Value::Str("ID_CONNECTED_PING")),
                ("ip.src", Value::Ip(IpAddr::from([127, 0, 0, 1]))),
                ("ip.addr", Value::Ip(IpAddr::from([127, 0, 0, 1]))),
                ("ip.addr", Value::Ip("::1".parse().unwrap())),
                ("udp.dstport", Value::Int(19132)),
            ],
        )
    }

    fn holds(text: &str) -> bool {
        pkt(text).unwrap().matches(&sample())
    }

    #[test]
    fn forms() {
        assert!(holds("kind == \"data\""));
        assert!(holds("kind == data"));
        assert!(!holds("kind == \"nack\""));
        assert!(holds("kind != nack"));
        assert!(holds("flow == 2 && channel == 3"));
        assert!(holds("channel == 0 and channel == 3"));
        assert!(!holds("flow == 2 && !(channel == 3)"));
        assert!(holds("flow == 0x2 || flow == 9"));
        assert!(holds(
            "len > 1000 && len >= 1456 && len <= 1456 && len < 1457"
        ));
        assert!(holds("ts > 1.25 && ts < 2"));
        assert!(holds("server_guid == 0x000660d5fa1d57ec"));
        assert!(holds("server_guid == \"0x000660d5fa1d57ec\""));
        assert!(holds("ranges == 5 && !(ranges == 8)"));
        assert!(holds("payload contains \"aa:01\" && payload == 86aa01"));
        assert!(holds("kind contains at"));
        let addr = Fake(
            RecordType::Packet,
            vec![
                ("src", Value::Str("127.0.0.1:19132")),
                ("dst", Value::Str("[::1]:19134")),
            ],
        );
        let on = |t: &str| pkt(t).unwrap().matches(&addr);
        assert!(on("src == 127.0.0.1:19132 && dst == [::1]:19134"));
        assert!(on("src contains :19132 and dst contains [::1]"));
        assert!(!on("src == 127.0.0.1:1913"));
        assert!(holds("security == false"));
        assert!(!holds("security"), "a false bool is not a pass");
        assert!(!holds("frames"), "absent");
        assert!(holds("not anomalies"));
        assert!(holds("id != 5"), "!= holds for an absent field");
        assert!(!holds("id < 5"), "ordering fails for an absent field");
        assert!(holds("((flow == 2))"));
        assert!(!holds("channel != 3"), "!= is not any-not-equal");
    }

    #[test]
    fn sets_and_ranges() {
        assert!(holds("flow in {1 2 3}"));
        assert!(holds("flow in {1, 2}"));
        assert!(holds("flow in {3,2,}"));
        assert!(holds("flow in {0x01..0x03}"));
        assert!(holds("flow in {5, 1..2}"));
        assert!(holds("flow in {1 .. 2}") && holds("flow in {1.. 2}") && holds("flow in {1 ..2}"));
        assert!(!holds("flow in {3..9}"));
        assert!(holds("flow not in {3..9}") && !holds("flow not in {2}"));
        assert!(holds("id not in {5}"), "not in holds for an absent field");
        assert!(!holds("id in {0..255}"));
        assert!(holds("channel in {3}"), "any occurrence");
        assert!(holds("ts in {1.25..1.5}") && !holds("ts in {1.51..2}"));
        assert!(holds("kind in {ack data}") && !holds("kind in {ack, nack}"));
        assert!(holds("kind in {\"a\"..\"e\"}"), "byte order of strings");
        assert!(holds("ranges in {7..10}"), "a range that overlaps 3-7");
        assert!(!holds("ranges in {8..10}"));
        assert!(holds("ranges in {1 5}"));
        assert!(holds("server_guid in {1 0x000660d5fa1d57ec}"));
        assert!(holds("payload in {00 86aa01}"));
        assert!(holds("security in {true false}"));
        assert!(holds("udp.dstport in {19132 19133}") && !holds("udp.dstport in {1..19131}"));
        assert!(holds("(flow in {2}) && !(flow in {1})"));
    }

    #[test]
    fn addresses_and_ports() {
        assert!(holds("ip.src == 127.0.0.1") && holds("ip.src == \"127.0.0.1\""));
        assert!(holds("ip.src == 127.0.0.0/8") && holds("ip.src == 0.0.0.0/0"));
        assert!(!holds("ip.src == 10.0.0.0/8") && holds("ip.src != 10.0.0.0/8"));
        assert!(holds("ip.src == 127.0.0.1/32") && !holds("ip.src == 127.0.0.2/32"));
        assert!(!holds("ip.src == ::ffff:127.0.0.1"), "one family at a time");
        assert!(holds("ip.addr == ::1") && holds("ip.addr == [::1]") && holds("ip.addr == ::/0"));
        assert!(
            holds("ip.addr == 127.0.0.1 && ip.addr == ::1"),
            "either one"
        );
        assert!(!holds("ip.src == ::1"));
        assert!(holds("ip.src in {10.0.0.1 127.0.0.0..127.0.0.9}"));
        assert!(holds("ip.src in {::1, 127.0.0.0/24}"));
        assert!(!holds("ip.src in {127.0.0.2..127.0.0.9}"));
        assert!(holds("ip.src > 126.255.255.255 && ip.src <= 127.0.0.1"));
        assert!(holds("udp.dstport == 19132 && udp.dstport > 1024"));
        let e = |t: &str| pkt(t).unwrap_err().what;
        assert!(e("ip.src == 300.0.0.1").contains("ip.src is ip address"));
        assert!(e("ip.src < 10.0.0.0/8").contains("network"));
        assert!(e("ip.src contains 1").contains("contains"));
        assert!(e("ip.src == 10.0.0.0/33").contains("prefix"));
        assert!(e("ip.src == ::1/129").contains("prefix"));
    }

    #[test]
    fn regular_expressions() {
        assert!(holds("name matches \"connected_p\""), "case-insensitive");
        assert!(!holds("name matches \"(?-i)connected\""));
        assert!(holds("name matches \"(?-i)CONNECTED\""));
        assert!(holds("name ~ \"^ID_.*PING$\""));
        assert!(holds(r#"name matches r"^ID_\w+$""#));
        assert!(holds(r#"name matches "^ID_\\w+$""#), "\\\\ is \\");
        assert!(
            holds(r#"payload matches r"^\x86\xaa""#),
            "a byte, not UTF-8"
        );
        assert!(holds(r#"payload matches r"^\x86.\x01$""#), ". is one byte");
        assert!(!holds(r#"payload matches r"^\xaa""#));
        assert!(holds("kind matches \"a\" && !(kind matches \"z\")"));
        let ascii = Fake(
            RecordType::Packet,
            vec![("payload", Value::Bytes(b"\x1cMCPE;x"))],
        );
        assert!(pkt("payload matches \"mcpe;\"").unwrap().matches(&ascii));
        let e = |t: &str| pkt(t).unwrap_err();
        assert!(e("len matches \"1\"").what.contains("string or bytes"));
        assert_eq!(e("name matches ping").column, 14);
        assert!(e("name matches ping").what.contains("double quotes"));
        let bad = e("name matches \"(\"");
        assert_eq!(bad.column, 14);
        assert!(
            bad.what.starts_with("bad regular expression"),
            "{}",
            bad.what
        );
        assert!(!bad.what.contains('\n'));
        let long = format!("name matches \"{}\"", "a".repeat(MAX_PATTERN + 1));
        assert!(e(&long).what.contains("longer than"));
        let ok = format!("name matches \"{}\"", "a?".repeat(MAX_PATTERN / 2));
        assert!(pkt(&ok).is_ok(), "{MAX_PATTERN} characters compile");
        assert!(e("name ~ r\"x").what.contains("not closed"));
    }

    #[test]
    fn set_errors_say_where() {
        let e = |t: &str| pkt(t).unwrap_err();
        assert_eq!(e("flow in 1").column, 9);
        assert!(e("flow in 1").what.contains("expected \"{\""));
        assert_eq!(e("flow in {1 2").column, 13);
        assert!(e("flow in {1 2").what.contains("not closed"));
        assert_eq!(e("flow in {}").what, "empty set");
        assert_eq!(e("flow in { , } || flow == 1").column, 13);
        assert_eq!(e("flow in {1 ..  } || flow == 1").column, 16);
        assert_eq!(e("flow in {1 x}").column, 12);
        assert_eq!(e("flow in {1..}").column, 13);
        assert_eq!(e("flow in {..2}").column, 10);
        assert_eq!(e("flow in {1..x}").column, 13);
        assert!(e("flow in {(1)}").what.contains("in the set"));
        assert!(e("payload in {00..ff}").what.contains("not ranges"));
        assert!(e("security in {false..true}").what.contains("not ranges"));
        assert!(e("frames in {1}").what.contains("presence"));
        assert_eq!(e("flow in {1} 2").column, 13);
    }

    #[test]
    fn precedence_and_binds_tighter() {
        assert!(holds("flow == 9 && len > 0 || kind == data"));
        assert!(!holds("flow == 9 && (len > 0 || kind == data)"));
    }

    #[test]
    fn errors_say_where() {
        let e = |t: &str| pkt(t).unwrap_err();
        assert_eq!(e("kind = data").column, 6);
        assert_eq!(e("").what, "empty filter");
        let x = e("flow == 2 && chanel == 3");
        assert_eq!(x.column, 14);
        assert!(x.what.contains("did you mean channel"), "{}", x.what);
        assert_eq!(e("(flow == 2").column, 11);
        assert_eq!(e("flow == ").column, 9);
        assert_eq!(e("flow == \"x\"").column, 9);
        assert!(e("flow == \"x\"").what.contains("flow is integer"));
        assert_eq!(e("kind == \"data").column, 9);
        assert_eq!(e("flow == 2 2").column, 11);
        assert_eq!(e("data == 00").column, 1);
        assert!(e("frames == 1").what.contains("presence"));
        assert_eq!(e("flow == 1 && # ").column, 14);
        assert!(DisplayFilter::parse("data contains 86", RecordType::Message).is_ok());
        assert!(DisplayFilter::parse("seq == 1", RecordType::Message).is_err());
    }

    proptest::proptest! {
        /// Any text: a filter or an error whose column is inside it (or
        /// just past its end), never a panic.
        #[test]
        fn any_text_parses_or_says_where(text in "[ -~é]{0,40}") {
            if let Err(e) = pkt(&text) {
                proptest::prop_assert!(e.column >= 1 && e.column <= text.chars().count() + 1);
            }
        }

        /// Text made of the grammar's own pieces, evaluated on a record.
        #[test]
        fn grammar_pieces_never_panic(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "(", ")", "!", "&&", "||", "not", "and", "or", "==", "!=", "<", ">=",
                "contains", "flow", "channel", "ts", "payload", "ranges", "kind",
                "server_guid", "anomalies", "1", "0x86", "-3", "1.5", "\"data\"", "aa:01",
                "in", "{", "}", ",", "..", "1..3", "matches", "~", "\"^a.*\"", "r\"\\x86\"",
                "ip.src", "ip.addr", "udp.port", "127.0.0.1", "10.0.0.0/8", "::1", "name",
            ]), 0..12)) {
            let text = parts.join(" ");
            if let Ok(f) = pkt(&text) {
                let _ = f.matches(&sample());
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_and_long_chains_are_flat() {
        let deep = format!("{}flow == 1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(pkt(&deep).unwrap_err().column, MAX_DEPTH + 1);
        let nots = format!("{}kind", "!".repeat(100_000));
        assert!(pkt(&nots).unwrap_err().what.contains("nested"));
        let ok = format!(
            "{}flow == 2{}",
            "(".repeat(MAX_DEPTH),
            ")".repeat(MAX_DEPTH)
        );
        assert!(holds(&ok));
        let chain = vec!["flow == 2"; 100_000].join(" && ");
        assert!(holds(&chain));
        let chain = vec!["flow == 9"; 100_000].join(" || ");
        assert!(!holds(&chain));
    }

    #[test]
    fn never_panics_on_junk() {
        for t in [
            "!",
            "(",
            ")",
            "&&",
            "==",
            "\"",
            "\\",
            "flow ==",
            "flow == -",
            "ts > 1e999",
            "é == 1",
            "flow == 0x",
            "payload == 8",
            "((((((",
            "not not not kind",
            "flow in {",
            "flow in {..}",
            "flow in {....}",
            "flow not in",
            "ip.src == /",
            "ip.src == 1.2.3.4/",
            "name ~",
            "name ~ \"\\\\\"",
            "r\"",
            "payload matches \"[\"",
        ] {
            let _ = pkt(t);
        }
    }
}
