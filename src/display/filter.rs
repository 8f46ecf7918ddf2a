//! Display filters (`-Y EXPR`): which records to print, over the NDJSON key
//! names of [`super::fields`].
//!
//! ```text
//! expr    = or
//! or      = and { ("||" | "or") and }
//! and     = unary { ("&&" | "and") unary }
//! unary   = ("!" | "not") unary | "(" expr ")" | test
//! test    = FIELD [ OP VALUE ]
//! OP      = "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"   (also eq ne lt le gt ge)
//! VALUE   = NUMBER (decimal, 0x hex, or with a fraction) | "STRING" | WORD
//! ```
//!
//! A field alone holds when the record has it (a bool field: when it is
//! `true`; `anomalies`, `frames`: when there is at least one). A comparison
//! holds when it holds for any occurrence of the field, as in tshark;
//! `a != b` is `!(a == b)`, so it also holds when the field is absent.

use std::fmt;

use super::fields::{lookup, Field, Record, RecordType, Ty, Value};

/// A filter that does not parse: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// Character position in the expression, 1-based.
    pub column: usize,
    pub what: String,
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
}

/// A literal, converted to the field's type when the filter is compiled.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    Present(Field),
    Cmp(Field, Op, Lit),
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
    }
}

fn order<T: PartialOrd>(a: T, op: Op, b: T) -> bool {
    match op {
        Op::Eq => a == b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Contains => false,
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
                                what: "only \\\" and \\\\ are escapes in strings".into(),
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
                ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | ':' | '-' | '+' | '[' | ']')
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
        let (op, negate) = match self.peek() {
            Some(Tok::Cmp(op)) => (*op, false),
            Some(Tok::Ne) => (Op::Eq, true),
            _ => return Ok(Node::Present(def.field)),
        };
        let op_column = self.column();
        self.i += 1;
        let value_column = self.column();
        let Some(tok) = self.tokens.get(self.i).map(|t| t.tok.clone()) else {
            return self.err(format!("expected a value after {}", op_str(op)));
        };
        self.i += 1;
        let lit = literal(def.ty, op, &tok).map_err(|what| FilterError {
            column: if what.starts_with("operator") {
                op_column
            } else {
                value_column
            },
            what: what.replace("{field}", def.name),
        })?;
        let n = Node::Cmp(def.field, op, lit);
        Ok(if negate { Node::Not(Box::new(n)) } else { n })
    }
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
    if digits.len() % 2 != 0 {
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
        Ty::Object => Err(format!(
            "operator {}: {{field}} can only be tested for presence",
            op_str(op)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of named values, for the evaluator's rules alone.
    struct Fake(Vec<(Field, Value<'static>)>);

    impl Record for Fake {
        fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
            self.0
                .iter()
                .filter(|(k, _)| *k == field)
                .any(|(_, v)| f(*v))
        }
    }

    fn pkt(text: &str) -> Result<DisplayFilter, FilterError> {
        DisplayFilter::parse(text, RecordType::Packet)
    }

    fn sample() -> Fake {
        Fake(vec![
            (Field::Kind, Value::Str("data")),
            (Field::Flow, Value::Int(2)),
            (Field::Len, Value::Int(1456)),
            (Field::Channel, Value::Int(0)),
            (Field::Channel, Value::Int(3)),
            (Field::Ts, Value::Float(1.5)),
            (Field::ServerGuid, Value::Guid(0x0006_60d5_fa1d_57ec)),
            (Field::Ranges, Value::Range(3, 7)),
            (Field::Security, Value::Bool(false)),
            (Field::Payload, Value::Bytes(&[0x86, 0xaa, 0x01])),
        ])
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
        let addr = Fake(vec![
            (Field::Src, Value::Str("127.0.0.1:19132")),
            (Field::Dst, Value::Str("[::1]:19134")),
        ]);
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
        ] {
            let _ = pkt(t);
        }
    }
}
