//! `export`: NDJSON records written as a Parquet table, streaming.
//!
//! Each record (a JSON object, as `--json` prints it) becomes a row; nested
//! objects are flattened into columns named by their dotted path, as
//! `-Y`/`-e` name them (`c2s.lost`, `rtt_ms.median`, `fields.status`), in
//! the order of first appearance (each record's keys sorted); an array is
//! one column holding its JSON text. The columns and their types
//! (BOOLEAN, INT64, DOUBLE, or UTF-8 text) come from the first row group
//! (65,536 rows): a number column that also holds fractions is DOUBLE, one
//! that mixes kinds is text (the JSON of each value). A key first seen in a
//! later row group, or a value that does not fit its column, goes to the
//! `_extra` column, a JSON object per row, so nothing printed is lost.
//! Rows are buffered one row group at a time, so memory stays bounded;
//! pages are zstd-compressed.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::{Map, Value};

/// Rows per row group.
pub const ROW_GROUP: usize = 65_536;

/// The catch-all column.
pub const EXTRA: &str = "_extra";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Float,
    Text,
}

fn kind_of(v: &Value) -> Option<Kind> {
    match v {
        Value::Null => None,
        Value::Bool(_) => Some(Kind::Bool),
        Value::Number(n)
            if n.is_i64() || n.is_u64() && n.as_u64().is_some_and(|u| u <= i64::MAX as u64) =>
        {
            Some(Kind::Int)
        }
        Value::Number(_) => Some(Kind::Float),
        _ => Some(Kind::Text),
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

/// `record`'s leaves: `prefix.key` for nested objects, arrays as JSON text.
/// The leaves are moved, not copied (a message's data is most of a row).
fn flatten(prefix: &str, v: Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let name = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                match x {
                    Value::Object(inner) if !inner.is_empty() => {
                        flatten(&name, Value::Object(inner), out)
                    }
                    Value::Object(_) => out.push((name, Value::Null)),
                    x => out.push((name, x)),
                }
            }
        }
        other => out.push((prefix.to_string(), other)),
    }
}

/// One table being written.
pub struct TableWriter {
    file: Option<File>,
    rows: Vec<Vec<(String, Value)>>,
    columns: Vec<(String, Kind)>,
    writer: Option<SerializedFileWriter<File>>,
    /// Rows written so far.
    pub rows_written: u64,
}

impl TableWriter {
    /// A table in a new file at `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(TableWriter {
            file: Some(File::create(path)?),
            rows: Vec::new(),
            columns: Vec::new(),
            writer: None,
            rows_written: 0,
        })
    }

    /// One record (a JSON object).
    pub fn push(&mut self, record: Value) -> io::Result<()> {
        let mut row = Vec::new();
        flatten("", record, &mut row);
        self.rows.push(row);
        if self.rows.len() >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// The buffered rows as one row group (the first fixes the columns).
    fn flush(&mut self) -> io::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        if self.writer.is_none() {
            let mut cols: Vec<(String, Option<Kind>)> = Vec::new();
            for row in &self.rows {
                for (k, v) in row {
                    match cols.iter_mut().find(|(n, _)| n == k) {
                        Some((_, kind)) => *kind = unify(*kind, kind_of(v)),
                        None => cols.push((k.clone(), kind_of(v))),
                    }
                }
            }
            self.columns = cols
                .into_iter()
                .filter(|(n, _)| n != EXTRA)
                .map(|(n, k)| (n, k.unwrap_or(Kind::Text)))
                .collect();
            let mut fields = Vec::with_capacity(self.columns.len() + 1);
            for (name, kind) in self
                .columns
                .iter()
                .chain(std::iter::once(&(EXTRA.to_string(), Kind::Text)))
            {
                let (physical, logical) = match kind {
                    Kind::Bool => (Physical::BOOLEAN, None),
                    Kind::Int => (Physical::INT64, None),
                    Kind::Float => (Physical::DOUBLE, None),
                    Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                };
                let t = Type::primitive_type_builder(name, physical)
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
        }
        let rows = std::mem::take(&mut self.rows);
        // Each row's values by column; what does not fit goes to _extra.
        let n = self.columns.len();
        let mut cells: Vec<Vec<Option<Value>>> = vec![Vec::with_capacity(rows.len()); n + 1];
        for row in rows {
            let mut placed = vec![None; n];
            let mut extra = Map::new();
            for (k, v) in row {
                match self.columns.iter().position(|(c, _)| *c == k) {
                    Some(i) if v.is_null() => placed[i] = None,
                    Some(i) if fits(self.columns[i].1, &v) => placed[i] = Some(v),
                    _ if v.is_null() => {}
                    _ => {
                        extra.insert(k, v);
                    }
                }
            }
            for (i, p) in placed.into_iter().enumerate() {
                cells[i].push(p);
            }
            cells[n]
                .push((!extra.is_empty()).then(|| Value::String(Value::Object(extra).to_string())));
        }
        let writer = self.writer.as_mut().expect("made above");
        let mut rg = writer.next_row_group().map_err(io::Error::other)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(io::Error::other)? {
            let kind = self.columns.get(i).map_or(Kind::Text, |c| c.1);
            let column = &cells[i];
            let defs: Vec<i16> = column.iter().map(|c| i16::from(c.is_some())).collect();
            let present = column.iter().flatten();
            let r = match (col.untyped(), kind) {
                (ColumnWriter::BoolColumnWriter(w), Kind::Bool) => {
                    let v: Vec<bool> = present.map(|x| x.as_bool().unwrap_or(false)).collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::Int64ColumnWriter(w), Kind::Int) => {
                    let v: Vec<i64> = present.map(|x| x.as_i64().unwrap_or(0)).collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::DoubleColumnWriter(w), Kind::Float) => {
                    let v: Vec<f64> = present.map(|x| x.as_f64().unwrap_or(0.0)).collect();
                    w.write_batch(&v, Some(&defs), None)
                }
                (ColumnWriter::ByteArrayColumnWriter(w), _) => {
                    let v: Vec<ByteArray> = present
                        .map(|x| match x {
                            Value::String(s) => ByteArray::from(s.as_str()),
                            other => ByteArray::from(other.to_string().as_str()),
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
            i += 1;
        }
        rg.close().map_err(io::Error::other)?;
        self.rows_written += cells.first().map_or(0, |c| c.len() as u64);
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

/// Whether `v` goes in a column of `kind` as it is.
fn fits(kind: Kind, v: &Value) -> bool {
    match (kind, kind_of(v)) {
        (_, None) => true,
        (Kind::Text, _) => true,
        (Kind::Float, Some(Kind::Int | Kind::Float)) => true,
        (k, Some(x)) => k == x,
    }
}

/// A [`Write`] that takes NDJSON lines and writes each record as a row.
pub struct NdjsonToParquet {
    pub table: TableWriter,
    pending: Vec<u8>,
}

impl NdjsonToParquet {
    pub fn new(table: TableWriter) -> Self {
        NdjsonToParquet {
            table,
            pending: Vec::new(),
        }
    }

    /// The rows written, once every line is in.
    pub fn finish(mut self) -> io::Result<u64> {
        if !self.pending.iter().all(u8::is_ascii_whitespace) {
            let line = std::mem::take(&mut self.pending);
            self.line(&line)?;
        }
        self.table.finish()
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let v: Value = serde_json::from_slice(line).map_err(io::Error::other)?;
        self.table.push(v)
    }
}

impl Write for NdjsonToParquet {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if self.pending.is_empty() {
                self.line(&rest[..i])?;
            } else {
                self.pending.extend_from_slice(&rest[..i]);
                let mut line = std::mem::take(&mut self.pending);
                self.line(&line)?;
                // The buffer kept for the next piece.
                line.clear();
                self.pending = line;
            }
            rest = &rest[i + 1..];
        }
        self.pending.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use serde_json::json;

    #[test]
    fn records_become_rows_and_read_back() {
        let path = std::env::temp_dir().join(format!("rd-parquet-{}.parquet", std::process::id()));
        let mut w = NdjsonToParquet::new(TableWriter::create(&path).unwrap());
        let recs = [
            json!({"type": "flow", "flow": 1, "c2s": {"lost": 2, "rtt": 1.5}, "anomalies": [], "ok": true}),
            json!({"type": "flow", "flow": 2, "c2s": {"lost": null, "rtt": 3}, "anomalies": [{"kind": "x"}], "ok": false, "late": "x"}),
        ];
        for r in &recs {
            // In two pieces, as a writer may be called.
            let line = format!("{r}\n");
            let (a, b) = line.split_at(line.len() / 2);
            w.write_all(a.as_bytes()).unwrap();
            w.write_all(b.as_bytes()).unwrap();
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
        // The keys in the order the first records give them (serde_json's
        // maps are sorted), a later one after them, `_extra` last.
        assert_eq!(
            names,
            [
                "anomalies",
                "c2s.lost",
                "c2s.rtt",
                "flow",
                "ok",
                "type",
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
            rows[1].contains(r#"anomalies: "[{"kind":"x"}]""#),
            "{rows:?}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_later_key_or_misfit_goes_to_extra() {
        let path =
            std::env::temp_dir().join(format!("rd-parquet-x-{}.parquet", std::process::id()));
        let mut t = TableWriter::create(&path).unwrap();
        t.push(json!({"a": 1})).unwrap();
        t.flush().unwrap();
        t.push(json!({"a": "text", "b": true})).unwrap();
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
}
