//! Field export (`-T fields -e NAME ... -E OPTION=VALUE`): one line per
//! record with the chosen fields, tshark's way of making CSV and TSV.

use std::fmt::Write as _;

use super::fields::{lookup, FieldDef, Record, RecordType, Value};
use crate::output::json::hex;

/// Which occurrences of a repeated field to print (`-E occurrence=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occurrence {
    All,
    First,
    Last,
}

/// The fields to print and how (`-e`, `-E`).
#[derive(Debug)]
pub struct FieldExport {
    fields: Vec<&'static FieldDef>,
    header: bool,
    separator: String,
    aggregator: String,
    occurrence: Occurrence,
    quote: Option<char>,
}

/// `/t` is a tab and `/s` a space, as in tshark; anything else is itself.
fn unescape(s: &str) -> String {
    match s {
        "/t" => "\t".into(),
        "/s" => " ".into(),
        _ => s.into(),
    }
}

impl FieldExport {
    /// The export of `names` from `record`s, with tshark's `-E` options:
    /// `header=y|n`, `separator=/t|/s|TEXT`, `aggregator=,|/s|TEXT`,
    /// `occurrence=a|f|l`, `quote=d|s|n`.
    pub fn new(names: &[String], options: &[String], record: RecordType) -> Result<Self, String> {
        if names.is_empty() {
            return Err("-T fields needs at least one -e FIELD".into());
        }
        let fields = names
            .iter()
            .map(|n| lookup(n, record).map_err(|e| format!("-e: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut x = FieldExport {
            fields,
            header: false,
            separator: "\t".into(),
            aggregator: ",".into(),
            occurrence: Occurrence::All,
            quote: None,
        };
        for o in options {
            let Some((k, v)) = o.split_once('=') else {
                return Err(format!("-E {o:?}: expected OPTION=VALUE"));
            };
            let bad = || format!("-E {o:?}: {v:?} is not a value of {k}");
            match k {
                "header" => {
                    x.header = match v {
                        "y" | "yes" | "true" => true,
                        "n" | "no" | "false" => false,
                        _ => return Err(bad()),
                    }
                }
                "separator" if !v.is_empty() => x.separator = unescape(v),
                "aggregator" if !v.is_empty() => x.aggregator = unescape(v),
                "occurrence" => {
                    x.occurrence = match v {
                        "a" => Occurrence::All,
                        "f" => Occurrence::First,
                        "l" => Occurrence::Last,
                        _ => return Err(bad()),
                    }
                }
                "quote" => {
                    x.quote = match v {
                        "d" => Some('"'),
                        "s" => Some('\''),
                        "n" => None,
                        _ => return Err(bad()),
                    }
                }
                "separator" | "aggregator" => return Err(bad()),
                _ => {
                    return Err(format!(
                        "-E {o:?}: options are header, separator, aggregator, occurrence, quote"
                    ))
                }
            }
        }
        Ok(x)
    }

    /// The header line (`-E header=y`), with its newline; empty otherwise.
    pub fn header(&self) -> String {
        if !self.header {
            return String::new();
        }
        let mut line = String::new();
        for (i, d) in self.fields.iter().enumerate() {
            if i > 0 {
                line.push_str(&self.separator);
            }
            self.push_quoted(&mut line, d.name);
        }
        line.push('\n');
        line
    }

    fn push_quoted(&self, line: &mut String, s: &str) {
        match self.quote {
            Some(q) => {
                line.push(q);
                for c in s.chars() {
                    if c == q {
                        line.push(q);
                    }
                    line.push(c);
                }
                line.push(q);
            }
            None => line.push_str(s),
        }
    }

    /// Append `r`'s line, with its newline, to `line`.
    pub fn push_row(&self, r: &dyn Record, line: &mut String) {
        let mut cell = String::new();
        for (i, d) in self.fields.iter().enumerate() {
            if i > 0 {
                line.push_str(&self.separator);
            }
            cell.clear();
            let mut n = 0usize;
            r.visit(d.read, &mut |v| {
                if self.occurrence == Occurrence::Last {
                    cell.clear();
                } else if n > 0 {
                    cell.push_str(&self.aggregator);
                }
                push_value(&mut cell, &v);
                n += 1;
                self.occurrence == Occurrence::First
            });
            if n > 0 || self.quote.is_some() {
                self.push_quoted(line, &cell);
            }
        }
        line.push('\n');
    }
}

/// A value as `-T fields` prints it: as in NDJSON, without quotes.
fn push_value(s: &mut String, v: &Value<'_>) {
    let _ = match v {
        Value::Int(i) => write!(s, "{i}"),
        Value::Float(f) => write!(s, "{f}"),
        Value::Str(t) => {
            s.push_str(t);
            Ok(())
        }
        Value::Guid(g) => write!(s, "{g:#018x}"),
        Value::Bytes(b) => {
            s.push_str(&hex(b));
            Ok(())
        }
        Value::Bool(b) => write!(s, "{b}"),
        Value::Range(lo, hi) => write!(s, "[{lo},{hi}]"),
        Value::Ip(a) => write!(s, "{a}"),
        Value::Object(o) => {
            s.push_str(&o.to_json());
            Ok(())
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::fields::{Field, Value};

    struct Two;

    impl Record for Two {
        fn visit(&self, field: Field, f: &mut dyn FnMut(Value<'_>) -> bool) -> bool {
            // The fields as a packet export reads them (resolved to keys).
            let read = |k: &str| crate::display::fields::read_in(k, RecordType::Packet);
            match field {
                _ if field == read("flow") => f(Value::Int(1)),
                _ if field == read("channel") => f(Value::Int(0)) || f(Value::Int(3)),
                _ if field == read("name") => f(Value::Str("a\"b")),
                _ => false,
            }
        }
    }

    fn row(names: &[&str], opts: &[&str]) -> String {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
        let x = FieldExport::new(&names, &opts, RecordType::Packet).unwrap();
        let mut line = x.header();
        x.push_row(&Two, &mut line);
        line
    }

    #[test]
    fn separators_occurrences_quotes() {
        assert_eq!(row(&["flow", "channel", "seq"], &[]), "1\t0,3\t\n");
        assert_eq!(
            row(
                &["flow", "channel"],
                &["separator=,", "header=y", "aggregator=/s"]
            ),
            "flow,channel\n1,0 3\n"
        );
        assert_eq!(row(&["channel"], &["occurrence=f"]), "0\n");
        assert_eq!(row(&["channel"], &["occurrence=l"]), "3\n");
        assert_eq!(row(&["name", "seq"], &["quote=d"]), "\"a\"\"b\"\t\"\"\n");
    }

    #[test]
    fn bad_options() {
        let e = |names: &[&str], o: &str| {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            FieldExport::new(&names, &[o.to_string()], RecordType::Packet).unwrap_err()
        };
        assert!(e(&["flow"], "header=maybe").contains("header"));
        assert!(e(&["flow"], "colour=1").contains("options are"));
        assert!(e(&["data"], "header=y").contains("not in packet records"));
        assert!(FieldExport::new(&[], &[], RecordType::Packet).is_err());
    }
}
