//! `export`: NDJSON records written as a Parquet table, streaming.
//!
//! Each record (a JSON object, as `--json` prints it) becomes a row; nested
//! objects are flattened into columns named by their dotted path, as
//! `-Y`/`-e` name them (`c2s.lost`, `rtt_ms.median`, `fields.status`), in
//! the order of first appearance (within a record, the order it prints its
//! keys in); an array is one column holding its JSON text as printed. The
//! columns and their types (BOOLEAN, INT64, DOUBLE, or UTF-8 text) come from
//! the first row group: a number column that also holds fractions is
//! DOUBLE, one that mixes kinds is text (the JSON of each value). A key
//! first seen in a later row group, or a value that does not fit its
//! column, goes to the `_extra` column, a JSON object per row, so nothing
//! printed is lost.
//!
//! The lines are not parsed into `serde_json` values: a scanner walks each
//! line once and appends every leaf to its column (a cell, and the text in
//! the column's byte arena), so a row costs a few comparisons per key and
//! the strings are copied once, into the arena that the Parquet writer then
//! reads without a copy. Rows are buffered one row group at a time (65,536
//! rows or 64 MiB of text, whichever comes first), so memory stays bounded;
//! pages are zstd-compressed.

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

/// Rows per row group, at most.
pub const ROW_GROUP: usize = 65_536;

/// Bytes of text buffered before a row group is written, at most (a row
/// group holds fewer rows when they are large, as messages' data can be).
pub const ROW_GROUP_BYTES: usize = 64 << 20;

/// The catch-all column.
pub const EXTRA: &str = "_extra";

/// Nesting deeper than this is an error (the records nest a few levels).
const MAX_DEPTH: usize = 64;

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
    /// print their keys in the same order, so it is usually the next one.
    hint: usize,
    path: String,
    writer: Option<SerializedFileWriter<File>>,
    /// Rows written so far.
    pub rows_written: u64,
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
            writer: None,
            rows_written: 0,
        })
    }

    /// One record: a JSON object on one line.
    pub fn push_line(&mut self, line: &[u8]) -> io::Result<()> {
        let mut s = Scanner { b: line, pos: 0 };
        s.ws();
        if s.peek() != Some(b'{') {
            return Err(s.error("a record is not a JSON object"));
        }
        self.path.clear();
        self.hint = 0;
        self.row_extra.clear();
        if let Err(e) = self.object(&mut s, 0) {
            // The row is dropped: its cells so far are cut back.
            for c in &mut self.columns {
                c.cells.truncate(self.rows);
            }
            return Err(e);
        }
        s.ws();
        if s.pos != line.len() {
            for c in &mut self.columns {
                c.cells.truncate(self.rows);
            }
            return Err(s.error("text after the record"));
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

    /// The members of the object at `s` (at its `{`), under `self.path`.
    fn object(&mut self, s: &mut Scanner, depth: usize) -> io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(s.error("nested too deep"));
        }
        s.pos += 1;
        s.ws();
        if s.peek() == Some(b'}') {
            s.pos += 1;
            return Ok(());
        }
        let base = self.path.len();
        loop {
            s.ws();
            self.path.truncate(base);
            if base > 0 {
                self.path.push('.');
            }
            s.string_into_path(&mut self.path)?;
            s.ws();
            if s.next() != Some(b':') {
                return Err(s.error("expected ':'"));
            }
            s.ws();
            match s.peek() {
                Some(b'{')
                    if s.b
                        .get(s.pos + 1..)
                        .is_some_and(|r| r.trim_ascii_start().first() == Some(&b'}')) =>
                {
                    // An empty object is a null leaf of its own name.
                    s.pos += 1;
                    s.ws();
                    s.pos += 1;
                    let col = self.column();
                    self.leaf(s, col, Tag::Null, 0, s.pos..s.pos, None)?;
                }
                Some(b'{') => self.object(s, depth + 1)?,
                _ => self.value(s)?,
            }
            s.ws();
            match s.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                _ => return Err(s.error("expected ',' or '}'")),
            }
        }
        self.path.truncate(base);
        Ok(())
    }

    /// A leaf value at `s`, to the column `self.path`.
    fn value(&mut self, s: &mut Scanner) -> io::Result<()> {
        let start = s.pos;
        let col = self.column();
        match s.peek() {
            Some(b'"') => {
                // Unescaped into the column's arena (for `_extra`, only
                // passed over: its JSON text goes there).
                let mark = col.map(|i| self.columns[i].arena.len());
                s.string_into(col.map(|i| &mut self.columns[i].arena))?;
                self.leaf(s, col, Tag::Str, 0, start..s.pos, mark)
            }
            Some(b'[') => {
                s.skip_array()?;
                self.leaf(s, col, Tag::Array, 0, start..s.pos, None)
            }
            Some(b't') => {
                s.literal(b"true")?;
                self.leaf(s, col, Tag::Bool, 1, start..s.pos, None)
            }
            Some(b'f') => {
                s.literal(b"false")?;
                self.leaf(s, col, Tag::Bool, 0, start..s.pos, None)
            }
            Some(b'n') => {
                s.literal(b"null")?;
                self.leaf(s, col, Tag::Null, 0, start..s.pos, None)
            }
            Some(b'-' | b'0'..=b'9') => {
                let (tag, num) = s.number()?;
                self.leaf(s, col, tag, num, start..s.pos, None)
            }
            _ => Err(s.error("expected a value")),
        }
    }

    /// The column named `self.path`, if it is one (made while the first
    /// row group fills; after it, a new key is `_extra`'s).
    fn column(&mut self) -> Option<usize> {
        if let Some(c) = self.columns.get(self.hint) {
            if c.name == self.path {
                self.hint += 1;
                return Some(self.hint - 1);
            }
        }
        let i = match self.index.get(self.path.as_str()) {
            Some(&i) => i,
            None if self.writer.is_none() && self.path != EXTRA => {
                let i = self.columns.len();
                let mut c = Column::new(self.path.clone());
                c.cells.resize(self.rows, NULL);
                self.columns.push(c);
                self.index.insert(self.path.clone(), i);
                i
            }
            None => return None,
        };
        self.hint = i + 1;
        Some(i)
    }

    /// A leaf of column `col` (`None`: `_extra`): `text` is its JSON in
    /// the line; for a string already in the column's arena, `unescaped`
    /// is where it starts there.
    fn leaf(
        &mut self,
        s: &Scanner,
        col: Option<usize>,
        tag: Tag,
        num: u64,
        text: std::ops::Range<usize>,
        unescaped: Option<usize>,
    ) -> io::Result<()> {
        let json = &s.b[text];
        let Some(i) = col else {
            return self.put_extra(json);
        };
        let c = &mut self.columns[i];
        if c.kind.is_some_and(|k| !fits(k, tag)) {
            if let Some(m) = unescaped {
                c.arena.truncate(m);
            }
            return self.put_extra(json);
        }
        let (off, len) = match unescaped {
            Some(m) => (m, c.arena.len() - m),
            // A typed column keeps no text; a text column (or the first
            // row group, before the types are known) keeps the JSON.
            None if tag == Tag::Null
                || matches!(c.kind, Some(Kind::Bool | Kind::Int | Kind::Float)) =>
            {
                (c.arena.len(), 0)
            }
            None => {
                c.arena.extend_from_slice(json);
                (c.arena.len() - json.len(), json.len())
            }
        };
        if c.arena.len() > u32::MAX as usize {
            return Err(io::Error::other("a value too large for a row group"));
        }
        self.bytes += len;
        let cell = Cell {
            tag,
            num,
            off: off as u32,
            len: len as u32,
        };
        if c.cells.len() > self.rows {
            // A key twice in one record: the last one stands.
            c.cells[self.rows] = cell;
        } else {
            c.cells.push(cell);
        }
        Ok(())
    }

    /// `self.path: json` into the row's `_extra` object (a null is left out).
    fn put_extra(&mut self, json: &[u8]) -> io::Result<()> {
        if json == b"null" || json.is_empty() {
            return Ok(());
        }
        self.row_extra.push(if self.row_extra.is_empty() {
            b'{'
        } else {
            b','
        });
        serde_json::to_writer(&mut self.row_extra, &self.path).map_err(io::Error::other)?;
        self.row_extra.push(b':');
        self.row_extra.extend_from_slice(json);
        Ok(())
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

/// A cursor over one NDJSON line.
struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn error(&self, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a record's JSON at byte {}: {what}", self.pos),
        )
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> io::Result<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.error("expected true, false or null"))
        }
    }

    /// A number: an Int when it is an integer that fits an i64, else a
    /// Float (as serde_json reads them).
    fn number(&mut self) -> io::Result<(Tag, u64)> {
        let start = self.pos;
        let mut integer = true;
        while let Some(c) = self.peek() {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => integer = false,
                _ => break,
            }
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.pos]).expect("ASCII");
        if integer {
            if let Ok(i) = text.parse::<i64>() {
                return Ok((Tag::Int, i as u64));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok((Tag::Float, f.to_bits())),
            _ => Err(self.error("not a number")),
        }
    }

    /// A string at `"`, unescaped into `out` (or only passed over).
    fn string_into(&mut self, mut out: Option<&mut Vec<u8>>) -> io::Result<()> {
        if self.next() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        loop {
            let rest = &self.b[self.pos..];
            let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                return Err(self.error("a string without its end"));
            };
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&rest[..i]);
            }
            self.pos += i + 1;
            if rest[i] == b'"' {
                return Ok(());
            }
            let c = self
                .next()
                .ok_or_else(|| self.error("an escape at the end"))?;
            let ch = match c {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let hi = self.hex4()?;
                    if (0xd800..0xdc00).contains(&hi) && self.b[self.pos..].starts_with(b"\\u") {
                        self.pos += 2;
                        let lo = self.hex4()?;
                        let c = 0x10000 + ((hi - 0xd800) << 10) + lo.wrapping_sub(0xdc00);
                        char::from_u32(c).unwrap_or('\u{fffd}')
                    } else {
                        char::from_u32(hi).unwrap_or('\u{fffd}')
                    }
                }
                _ => return Err(self.error("an unknown escape")),
            };
            if let Some(o) = out.as_deref_mut() {
                let mut buf = [0u8; 4];
                o.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
        }
    }

    /// A key, unescaped onto the end of `path`.
    fn string_into_path(&mut self, path: &mut String) -> io::Result<()> {
        let rest = &self.b[self.pos + 1..];
        if let Some(i) = memchr::memchr2(b'"', b'\\', rest) {
            if rest[i] == b'"' {
                // No escape: the common case.
                let k = std::str::from_utf8(&rest[..i])
                    .map_err(|_| self.error("a key that is not UTF-8"))?;
                path.push_str(k);
                self.pos += i + 2;
                return Ok(());
            }
        }
        let mut buf = Vec::new();
        self.string_into(Some(&mut buf))?;
        let k = String::from_utf8(buf).map_err(|_| self.error("a key that is not UTF-8"))?;
        path.push_str(&k);
        Ok(())
    }

    fn hex4(&mut self) -> io::Result<u32> {
        let h = self
            .b
            .get(self.pos..self.pos + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.error("a bad \\u escape"))?;
        self.pos += 4;
        Ok(h)
    }

    /// Past the array at `[` (nested arrays and objects, strings with
    /// brackets in them).
    fn skip_array(&mut self) -> io::Result<()> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err(self.error("an array without its end")),
                Some(b'"') => self.string_into(None)?,
                Some(b'[' | b'{') => {
                    depth += 1;
                    self.pos += 1;
                }
                Some(b']' | b'}') => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Some(_) => self.pos += 1,
            }
        }
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
        let line = std::mem::take(&mut self.pending);
        self.line(&line)?;
        self.table.finish()
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        self.table.push_line(line)
    }
}

impl Write for NdjsonToParquet {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
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
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    #[test]
    fn records_become_rows_and_read_back() {
        let path = std::env::temp_dir().join(format!("rd-parquet-{}.parquet", std::process::id()));
        let mut w = NdjsonToParquet::new(TableWriter::create(&path).unwrap());
        let recs = [
            r#"{"type":"flow","flow":1,"c2s":{"lost":2,"rtt":1.5},"anomalies":[],"ok":true}"#,
            r#"{"type":"flow","flow":2,"c2s":{"lost":null,"rtt":3},"anomalies":[{"kind":"x"}],"ok":false,"late":"x"}"#,
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
        // The keys in the order the first records print them, a later one
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
        t.push_line(br#"{"a": 1}"#).unwrap();
        t.flush().unwrap();
        t.push_line(br#"{"a": "text", "b": true, "c": null}"#)
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
                t.push_line(r.to_string().as_bytes()).unwrap();
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

    #[test]
    fn bad_lines_are_errors_and_leave_no_row() {
        let path =
            std::env::temp_dir().join(format!("rd-parquet-bad-{}.parquet", std::process::id()));
        let mut t = TableWriter::create(&path).unwrap();
        for bad in [
            &b"[1]"[..],
            b"{\"a\":1",
            b"{\"a\":\"x}",
            b"{\"a\":1} 2",
            b"{\"a\":tru}",
            b"{\"a\":-}",
            b"{\"a\":\"\\q\"}",
        ] {
            assert!(
                t.push_line(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        t.push_line(br#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(t.finish().unwrap(), 1);
        let rows = read_back(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(rows[0]["a"], json!(2), "{rows:?}");
    }
}
