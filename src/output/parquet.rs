//! `export`: records written as a Parquet table, streaming.
//!
//! Each record becomes a row, handed over as a record ([`RecordSink`]), not
//! as its NDJSON text: its leaves ([`Keyed::leaves`], generated from the
//! record type's description) come with their dotted paths, as `-Y`/`-e`
//! name them (`c2s.lost`, `rtt_ms.median`, `fields.status`), and each goes
//! to the column of that name, the columns in the order of first
//! appearance (within a record, the order its JSON has its keys in); an
//! array is one column holding its JSON text as printed. The columns and
//! their types (BOOLEAN, INT64, DOUBLE, or UTF-8 text) come from the first
//! row group: a number column that also holds fractions is DOUBLE, one
//! that mixes kinds is text (the JSON of each value). A key first seen in
//! a later row group, or a value that does not fit its column, goes to the
//! `_extra` column, a JSON object per row, so nothing printed is lost.
//!
//! A leaf is appended to its column as a cell, its text (a string's, or
//! the JSON of a value in a text column) in the column's byte arena, which
//! the Parquet writer then reads without a copy; a row costs a comparison
//! per key (records of one type have their keys in the same order). Rows
//! are buffered one row group at a time (65,536 rows or 64 MiB of text,
//! whichever comes first), so memory stays bounded; pages are
//! zstd-compressed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::records::value::write_value;
use crate::records::walk::{Leaf, RecordSink};
use crate::records::{Keyed, Value};
use crate::wire::cursor::hex_extend;

/// Rows per row group, at most.
pub(crate) const ROW_GROUP: usize = 65_536;

/// Bytes of text buffered before a row group is written, at most (a row
/// group holds fewer rows when they are large, as messages' data can be).
pub(crate) const ROW_GROUP_BYTES: usize = 64 << 20;

/// The catch-all column.
pub(crate) const EXTRA: &str = "_extra";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Float,
    Text,
}

/// What a cell holds: a JSON leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Null,
    Bool,
    Int,
    Float,
    /// A string: the arena holds it unescaped.
    Str,
    /// An array: the arena holds its JSON text.
    Array,
}

impl Tag {
    fn kind(self) -> Option<Kind> {
        match self {
            Tag::Null => None,
            Tag::Bool => Some(Kind::Bool),
            Tag::Int => Some(Kind::Int),
            Tag::Float => Some(Kind::Float),
            Tag::Str | Tag::Array => Some(Kind::Text),
        }
    }
}

fn unify(a: Option<Kind>, b: Option<Kind>) -> Option<Kind> {
    match (a, b) {
        (None, k) | (k, None) => k,
        (Some(x), Some(y)) if x == y => Some(x),
        (Some(Kind::Int), Some(Kind::Float)) | (Some(Kind::Float), Some(Kind::Int)) => {
            Some(Kind::Float)
        }
        _ => Some(Kind::Text),
    }
}

/// Whether a cell of `tag` goes in a column of `kind` as it is.
fn fits(kind: Kind, tag: Tag) -> bool {
    match (kind, tag.kind()) {
        (_, None) | (Kind::Text, _) => true,
        (Kind::Float, Some(Kind::Int | Kind::Float)) => true,
        (k, Some(x)) => k == x,
    }
}

/// One leaf of one row. `num` is the bool, the i64 or the f64's bits;
/// `off..off + len` its text in the column's arena (the string, or the
/// JSON of anything else: what a text column holds).
#[derive(Debug, Clone, Copy)]
struct Cell {
    tag: Tag,
    num: u64,
    off: u32,
    len: u32,
}

const NULL: Cell = Cell {
    tag: Tag::Null,
    num: 0,
    off: 0,
    len: 0,
};

/// A column of the row group being filled.
struct Column {
    name: String,
    /// Fixed by the first row group.
    kind: Option<Kind>,
    cells: Vec<Cell>,
    arena: Vec<u8>,
}

impl Column {
    fn new(name: String) -> Self {
        Column {
            name,
            kind: None,
            cells: Vec::new(),
            arena: Vec::new(),
        }
    }
}

/// One table being written.
pub struct TableWriter {
    file: Option<File>,
    /// The columns, `_extra` not among them.
    columns: Vec<Column>,
    index: HashMap<String, usize>,
    /// `_extra`'s cells (a JSON object's text or null) and arena.
    extra: Column,
    /// The row being filled: its `_extra` object so far.
    row_extra: Vec<u8>,
    /// Rows in the row group being filled.
    rows: usize,
    /// Bytes in the arenas.
    bytes: usize,
    /// The column after the last one a leaf went to: records of one kind
    /// have their keys in the same order, so it is usually the next one.
    hint: usize,
    /// The leaves' dotted paths are built here (kept for its memory).
    path: String,
    /// The first error of the row being filled.
    error: Option<io::Error>,
    writer: Option<SerializedFileWriter<File>>,
    /// Rows written so far.
    pub(crate) rows_written: u64,
}

impl TableWriter {
    /// A table in a new file at `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(TableWriter {
            file: Some(File::create(path)?),
            columns: Vec::new(),
            index: HashMap::new(),
            extra: Column::new(EXTRA.into()),
            row_extra: Vec::new(),
            rows: 0,
            bytes: 0,
            hint: 0,
            path: String::new(),
            error: None,
            writer: None,
            rows_written: 0,
        })
    }

    /// One record: a row of its leaves ([`Keyed::leaves`]).
    pub(crate) fn push(&mut self, r: &dyn Keyed) -> io::Result<()> {
        self.hint = 0;
        self.row_extra.clear();
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        r.leaves(&mut path, &mut |p, leaf| self.leaf(p, leaf));
        self.path = path;
        if let Some(e) = self.error.take() {
            // The row is dropped: its cells so far are cut back.
            for c in &mut self.columns {
                c.cells.truncate(self.rows);
            }
            return Err(e);
        }
        self.rows += 1;
        for c in &mut self.columns {
            if c.cells.len() < self.rows {
                c.cells.push(NULL);
            }
        }
        let extra = if self.row_extra.is_empty() {
            NULL
        } else {
            self.row_extra.push(b'}');
            let off = self.extra.arena.len();
            self.extra.arena.extend_from_slice(&self.row_extra);
            self.bytes += self.row_extra.len();
            Cell {
                tag: Tag::Str,
                num: 0,
                off: off as u32,
                len: self.row_extra.len() as u32,
            }
        };
        self.extra.cells.push(extra);
        if self.rows >= ROW_GROUP || self.bytes >= ROW_GROUP_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// The column named `path`, if it is one (made while the first row
    /// group fills; after it, a new key is `_extra`'s).
    fn column(&mut self, path: &str) -> Option<usize> {
        if let Some(c) = self.columns.get(self.hint) {
            if c.name == path {
                self.hint += 1;
                return Some(self.hint - 1);
            }
        }
        let i = match self.index.get(path) {
            Some(&i) => i,
            None if self.writer.is_none() && path != EXTRA => {
                let i = self.columns.len();
                let mut c = Column::new(path.to_string());
                c.cells.resize(self.rows, NULL);
                self.columns.push(c);
                self.index.insert(path.to_string(), i);
                i
            }
            None => return None,
        };
        self.hint = i + 1;
        Some(i)
    }

    /// The leaf at `path`, to its column, or to `_extra` when it has none
    /// or does not fit it.
    fn leaf(&mut self, path: &str, leaf: Leaf<'_>) {
        let (tag, num) = tag(&leaf);
        let Some(i) = self.column(path) else {
            return self.put_extra(path, tag, &leaf);
        };
        let c = &mut self.columns[i];
        if c.kind.is_some_and(|k| !fits(k, tag)) {
            return self.put_extra(path, tag, &leaf);
        }
        let off = c.arena.len();
        match tag {
            Tag::Null => {}
            // A string's text, not its JSON.
            Tag::Str => text(&leaf, &mut c.arena),
            // A typed column keeps no text; a text column (or the first
            // row group, before the types are known) keeps the JSON.
            _ if matches!(c.kind, Some(Kind::Bool | Kind::Int | Kind::Float)) => {}
            _ => json(&leaf, &mut c.arena),
        }
        if c.arena.len() > u32::MAX as usize {
            c.arena.truncate(off);
            let e = io::Error::other("a value too large for a row group");
            self.error.get_or_insert(e);
            return;
        }
        let len = c.arena.len() - off;
        self.bytes += len;
        let cell = Cell {
            tag,
            num,
            off: off as u32,
            len: len as u32,
        };
        if c.cells.len() > self.rows {
            // A path twice in one record: the last one stands.
            c.cells[self.rows] = cell;
        } else {
            c.cells.push(cell);
        }
    }

    /// `path: leaf` into the row's `_extra` object (a null is left out).
    fn put_extra(&mut self, path: &str, tag: Tag, leaf: &Leaf<'_>) {
        if tag == Tag::Null {
            return;
        }
        self.row_extra.push(if self.row_extra.is_empty() {
            b'{'
        } else {
            b','
        });
        write_value(&Value::Str(path), &mut self.row_extra);
        self.row_extra.push(b':');
        json(leaf, &mut self.row_extra);
    }

    /// The buffered rows as one row group (the first fixes the columns).
    fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        if self.writer.is_none() {
            self.start()?;
        }
        let writer = self.writer.as_mut().expect("made above");
        let mut rg = writer.next_row_group().map_err(io::Error::other)?;
        let mut columns = self
            .columns
            .iter_mut()
            .chain(std::iter::once(&mut self.extra));
        while let Some(mut col) = rg.next_column().map_err(io::Error::other)? {
            let c = columns
                .next()
                .ok_or_else(|| io::Error::other("more columns than the schema's"))?;
            let kind = c.kind.unwrap_or(Kind::Text);
            let defs: Vec<i16> = c
                .cells
                .iter()
                .map(|x| i16::from(x.tag != Tag::Null))
                .collect();
            let present = c.cells.iter().filter(|x| x.tag != Tag::Null);
            let r = match (col.untyped(), kind) {
                (ColumnWriter::BoolColumnWriter(w), Kind::Bool) => {
                    let v: Vec<bool> = present.map(|x| x.num != 0).collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::Int64ColumnWriter(w), Kind::Int) => {
                    let v: Vec<i64> = present.map(|x| x.num as i64).collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::DoubleColumnWriter(w), Kind::Float) => {
                    let v: Vec<f64> = present
                        .map(|x| match x.tag {
                            Tag::Int => x.num as i64 as f64,
                            _ => f64::from_bits(x.num),
                        })
                        .collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::ByteArrayColumnWriter(w), _) => {
                    let arena = Bytes::from(std::mem::take(&mut c.arena));
                    let v: Vec<ByteArray> = present
                        .map(|x| {
                            let (a, n) = (x.off as usize, x.len as usize);
                            ByteArray::from(arena.slice(a..a + n))
                        })
                        .collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                _ => {
                    return Err(io::Error::other(
                        "a column of another type than its schema's",
                    ))
                }
            };
            r.map_err(io::Error::other)?;
            col.close().map_err(io::Error::other)?;
            c.cells.clear();
            c.arena.clear();
        }
        rg.close().map_err(io::Error::other)?;
        self.rows_written += self.rows as u64;
        self.rows = 0;
        self.bytes = 0;
        Ok(())
    }

    /// The schema, from the first row group: each column's kind.
    fn start(&mut self) -> io::Result<()> {
        let mut fields = Vec::with_capacity(self.columns.len() + 1);
        for c in &mut self.columns {
            let kind = c.cells.iter().fold(None, |k, x| unify(k, x.tag.kind()));
            c.kind = Some(kind.unwrap_or(Kind::Text));
        }
        self.extra.kind = Some(Kind::Text);
        for c in self.columns.iter().chain(std::iter::once(&self.extra)) {
            let (physical, logical) = match c.kind.unwrap_or(Kind::Text) {
                Kind::Bool => (Physical::BOOLEAN, None),
                Kind::Int => (Physical::INT64, None),
                Kind::Float => (Physical::DOUBLE, None),
                Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            let t = Type::primitive_type_builder(&c.name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map_err(io::Error::other)?;
            fields.push(Arc::new(t));
        }
        let schema = Type::group_type_builder("record")
            .with_fields(fields)
            .build()
            .map_err(io::Error::other)?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("the table is closed"))?;
        self.writer = Some(
            SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
                .map_err(io::Error::other)?,
        );
        Ok(())
    }

    /// The last row group and the footer. Returns the rows written; a table
    /// with no row is an empty file removed by the caller.
    pub fn finish(mut self) -> io::Result<u64> {
        self.flush()?;
        if let Some(w) = self.writer.take() {
            w.close().map_err(io::Error::other)?;
        }
        Ok(self.rows_written)
    }
}

/// What a leaf's cell holds: its tag, and its bool, i64 or f64's bits.
fn tag(leaf: &Leaf<'_>) -> (Tag, u64) {
    match *leaf {
        Leaf::Null => (Tag::Null, 0),
        Leaf::Json(_) => (Tag::Array, 0),
        Leaf::Value(v) => match v {
            Value::Bool(b) => (Tag::Bool, u64::from(b)),
            // As JSON readers take them: an integer past i64 is a float.
            Value::Int(i) => match i64::try_from(i) {
                Ok(i) => (Tag::Int, i as u64),
                Err(_) => (Tag::Float, (i as f64).to_bits()),
            },
            // JSON has no NaN or infinity: the line has `null`.
            Value::Float(x) if x.is_finite() => (Tag::Float, x.to_bits()),
            Value::Float(_) => (Tag::Null, 0),
            Value::Str(_) | Value::Guid(_) | Value::Bytes(_) | Value::Ip(_) => (Tag::Str, 0),
            // Walked into or handed as JSON by `Keyed::leaves`; as JSON if not.
            Value::Range(..) | Value::Object(_) => (Tag::Array, 0),
        },
    }
}

/// A string leaf's text (what its JSON string holds), appended to `out`.
fn text(leaf: &Leaf<'_>, out: &mut Vec<u8>) {
    match *leaf {
        Leaf::Value(Value::Str(s)) => out.extend_from_slice(s.as_bytes()),
        Leaf::Value(Value::Guid(g)) => {
            out.extend_from_slice(b"0x");
            hex_extend(out, &g.to_be_bytes());
        }
        Leaf::Value(Value::Bytes(b)) => hex_extend(out, b),
        Leaf::Value(Value::Ip(a)) => drop(write!(out, "{a}")),
        _ => json(leaf, out),
    }
}

/// A leaf's JSON, as the record's line has it, appended to `out`.
fn json(leaf: &Leaf<'_>, out: &mut Vec<u8>) {
    match leaf {
        Leaf::Null => out.extend_from_slice(b"null"),
        Leaf::Json(t) => out.extend_from_slice(t),
        Leaf::Value(v) => write_value(v, out),
    }
}

impl RecordSink for TableWriter {
    fn record(&mut self, r: &dyn Keyed) -> io::Result<()> {
        self.push(r)
    }
}

/// The output of a run whose records go to a [`RecordSink`]: any text
/// printed there is an error (a record that was not handed over).
pub struct NoText;

impl Write for NoText {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Err(io::Error::other(format!(
            "text where the records go to a table: {:?}",
            String::from_utf8_lossy(&buf[..buf.len().min(80)])
        )))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{walk, Described, Key, Obj, Ty, Value as V, With};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    /// A record that is a JSON object (its keys in serde_json's order).
    struct JsonRecord(Value);

    impl Keyed for JsonRecord {
        fn write_json(&self, out: &mut Vec<u8>) {
            crate::wire::json::write_value(out, &self.0);
        }
        fn visit(&self, _: &str, _: &mut dyn FnMut(V<'_>) -> bool) -> bool {
            false
        }
        fn visit_key(&self, _: &[u8], _: &mut dyn FnMut(V<'_>) -> bool) -> bool {
            false
        }
        fn leaves(&self, path: &mut String, f: &mut walk::Leaves<'_>) -> bool {
            match &self.0 {
                Value::Object(m) => walk::json_members(m, path, f, 0),
                _ => false,
            }
        }
    }

    /// A described record: a flow's, in miniature.
    struct Flow {
        flow: u32,
        c2s: Value,
        anomalies: Vec<Value>,
        ok: bool,
        late: Option<&'static str>,
    }

    impl Described for Flow {
        type Of<'a> = Flow;
        const KEYS: &'static [Key<Flow>] = &[
            Key::<Flow>::new("type", Ty::Str, "t", |_, f| f(V::Str("flow"))),
            Key::<Flow>::new("flow", Ty::Int, "f", |r, f| f(V::Int(r.flow.into()))),
            Key::<Flow>::new("c2s", Ty::Object, "c", |r, f| {
                f(V::Object(Obj::Json(&r.c2s)))
            }),
            Key::<Flow>::new("anomalies", Ty::Object, "a", |r, f| {
                r.anomalies.iter().any(|a| f(V::Object(Obj::Json(a))))
            })
            .many(),
            Key::<Flow>::new("ok", Ty::Bool, "o", |r, f| f(V::Bool(r.ok))),
            Key::<Flow>::new("late", Ty::Str, "l", |r, f| {
                r.late.is_some_and(|l| f(V::Str(l)))
            })
            .skip(),
        ];
    }

    #[test]
    fn records_become_rows_and_read_back() {
        let path = std::env::temp_dir().join(format!("rd-parquet-{}.parquet", std::process::id()));
        let mut w = TableWriter::create(&path).unwrap();
        let recs = [
            Flow {
                flow: 1,
                c2s: json!({"lost": 2, "rtt": 1.5}),
                anomalies: vec![],
                ok: true,
                late: None,
            },
            Flow {
                flow: 2,
                c2s: json!({"lost": null, "rtt": 3}),
                anomalies: vec![json!({"kind": "x"})],
                ok: false,
                late: Some("x"),
            },
        ];
        for r in &recs {
            w.record(&With::<Flow>(r)).unwrap();
        }
        assert_eq!(w.finish().unwrap(), 2);
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 2);
        let names: Vec<String> = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.path().string())
            .collect();
        // The keys in the order the first records have them, a later one
        // after them, `_extra` last.
        assert_eq!(
            names,
            [
                "type",
                "flow",
                "c2s.lost",
                "c2s.rtt",
                "anomalies",
                "ok",
                "late",
                "_extra"
            ]
        );
        let rows: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert!(
            rows[0].contains("c2s.rtt: 1.5") && rows[1].contains("c2s.rtt: 3.0"),
            "{rows:?}"
        );
        assert!(
            rows[0].contains(r#"anomalies: "[]""#)
                && rows[1].contains(r#"anomalies: "[{"kind":"x"}]""#),
            "{rows:?}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_later_key_or_misfit_goes_to_extra() {
        let path =
            std::env::temp_dir().join(format!("rd-parquet-x-{}.parquet", std::process::id()));
        let mut t = TableWriter::create(&path).unwrap();
        t.push(&JsonRecord(json!({"a": 1}))).unwrap();
        t.flush().unwrap();
        t.push(&JsonRecord(json!({"a": "text", "b": true, "c": null})))
            .unwrap();
        assert_eq!(t.finish().unwrap(), 2);
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let rows: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert!(
            rows[0].contains("a: 1") && rows[1].contains("a: null"),
            "{rows:?}"
        );
        assert!(
            rows[1].contains(r#"_extra: "{"a":"text","b":true}""#),
            "{rows:?}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn text_where_records_go_is_an_error() {
        assert!(NoText.write_all(b"").is_ok());
        assert!(NoText.write_all(b"{}\n").is_err());
    }

    /// The rows of the Parquet file at `path`, as JSON objects.
    fn read_back(path: &Path) -> Vec<Map<String, Value>> {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| {
                use parquet::record::Field;
                r.unwrap()
                    .get_column_iter()
                    .map(|(k, f)| {
                        let v = match f {
                            Field::Null => Value::Null,
                            Field::Bool(b) => json!(b),
                            Field::Long(i) => json!(i),
                            Field::Double(d) => json!(d),
                            Field::Str(s) => json!(s),
                            other => panic!("{k}: {other:?}"),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .collect()
    }

    /// What a record's row should hold: its leaves by dotted path (an
    /// array as its JSON, an empty object as null).
    fn leaves(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    leaves(&name, x, out);
                }
            }
            Value::Object(_) => {
                out.insert(prefix.into(), Value::Null);
            }
            Value::Array(_) => {
                out.insert(prefix.into(), Value::String(v.to_string()));
            }
            x => {
                out.insert(prefix.into(), x.clone());
            }
        }
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            (-1e9f64..1e9).prop_map(|f| json!(f)),
            // Escapes, quotes, brackets, non-ASCII and astral characters.
            r#"[a-z\\"\[\]{},:\n\t\x{e9}\x{1f600}\x{1}]{0,12}"#.prop_map(Value::String),
            prop::collection::vec(r#"[a-z"\\\[\]]{0,4}"#, 0..3).prop_map(|v| json!(v)),
        ]
    }

    fn record() -> impl Strategy<Value = Value> {
        let key = prop::sample::select(vec!["a", "b", "c", "d"]);
        let inner = prop::collection::btree_map(key.clone(), leaf(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
        prop::collection::btree_map(key, prop_oneof![3 => leaf(), 1 => inner], 0..4)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every leaf of every record comes back: in its column when it
        /// fits, else in `_extra` (the first `split` rows fix the columns).
        #[test]
        fn every_leaf_comes_back(recs in prop::collection::vec(record(), 1..40), split in 1usize..40) {
            let path = std::env::temp_dir().join(format!(
                "rd-parquet-p-{}-{:?}.parquet",
                std::process::id(),
                std::thread::current().id()
            ));
            let mut t = TableWriter::create(&path).unwrap();
            for (i, r) in recs.iter().enumerate() {
                t.push(&JsonRecord(r.clone())).unwrap();
                if i + 1 == split {
                    t.flush().unwrap();
                }
            }
            prop_assert_eq!(t.finish().unwrap(), recs.len() as u64);
            let rows = read_back(&path);
            let _ = std::fs::remove_file(&path);
            for (r, row) in recs.iter().zip(&rows) {
                let mut want = Map::new();
                leaves("", r, &mut want);
                let mut got = Map::new();
                let extra: Map<String, Value> = match row.get(EXTRA) {
                    Some(Value::String(x)) => serde_json::from_str(x).unwrap(),
                    _ => Map::new(),
                };
                for (k, v) in row {
                    if k != EXTRA && !v.is_null() {
                        got.insert(k.clone(), v.clone());
                    }
                }
                for (k, v) in extra {
                    // An array in _extra is itself, not its text.
                    let v = if v.is_array() { Value::String(v.to_string()) } else { v };
                    prop_assert!(got.insert(k.clone(), v).is_none(), "{} twice", k);
                }
                want.retain(|_, v| !v.is_null());
                for (k, w) in &want {
                    let g = got.get(k);
                    // A number in a text column is its JSON; an integer in
                    // a DOUBLE column a float. (serde_json, without its
                    // float_roundtrip feature, reads `_extra`'s floats a
                    // unit in the last place off.)
                    let near = |a: f64, b: f64| (a - b).abs() <= a.abs() * 1e-15;
                    let same = match (w, g) {
                        (w, Some(g)) if w == g => true,
                        (Value::Number(n), Some(Value::Number(m))) => {
                            near(n.as_f64().unwrap(), m.as_f64().unwrap())
                        }
                        (Value::Number(_) | Value::Bool(_), Some(Value::String(t))) => t.as_str() == w.to_string().as_str(),
                        _ => false,
                    };
                    prop_assert!(same, "{}: wrote {} read {:?} (row {:?})", k, w, g, row);
                }
                prop_assert_eq!(got.len(), want.len(), "{:?} for {:?}", got, want);
            }
        }
    }
}
