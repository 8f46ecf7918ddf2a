//! A bounds-checked reader over borrowed bytes, the writer helpers that mirror
//! it, and the optional field trace that feeds the `-V` tree.
//!
//! Every read names its field; a read past the end returns a [`WireError`]
//! with that name and the absolute byte offset, so no decoder can panic.

use std::fmt;

/// What went wrong while decoding, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// Absolute byte offset in the UDP payload where the field starts.
    pub offset: usize,
    /// The field that could not be decoded, in RakNet's words.
    pub field: &'static str,
    /// Too short, or invalid and why.
    pub kind: WireErrorKind,
}

/// The two ways a field fails to decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireErrorKind {
    /// The field needs more bytes than are left.
    TooShort {
        /// Bytes the field needs.
        need: usize,
        /// Bytes left in the buffer.
        have: usize,
    },
    /// The bytes are there but the value is not allowed.
    Invalid(String),
}

impl WireError {
    /// True when the error is only a lack of bytes (a snapshot-length cut can explain it).
    pub(crate) fn is_too_short(&self) -> bool {
        matches!(self.kind, WireErrorKind::TooShort { .. })
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed at byte {}: {}", self.offset, self.field)?;
        match &self.kind {
            WireErrorKind::TooShort { need, have } => {
                write!(f, " (needs {need} bytes, {have} left)")
            }
            WireErrorKind::Invalid(why) => write!(f, " ({why})"),
        }
    }
}

impl std::error::Error for WireError {}

pub(crate) type Result<T> = std::result::Result<T, WireError>;

/// One decoded field, for the `-V` tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceField {
    /// Nesting level, 0 at the top.
    pub depth: u8,
    /// The field's name (or a heading's).
    pub name: &'static str,
    /// Absolute byte offset of the field.
    pub offset: usize,
    /// Length in bytes (a heading's covers the fields under it).
    pub len: usize,
    /// The value as shown (empty when there is none).
    pub value: String,
}

/// The fields a decoder read, in order, with their nesting depth.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    /// The fields in the order read.
    pub fields: Vec<TraceField>,
    depth: u8,
    /// Indices of the headings opened and not yet closed.
    open: Vec<usize>,
}

impl Trace {
    pub(crate) fn push(&mut self, name: &'static str, offset: usize, len: usize, value: String) {
        self.fields.push(TraceField {
            depth: self.depth,
            name,
            offset,
            len,
            value,
        });
    }
}

/// A cursor over `buf`; offsets reported are `base + position`.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    trace: Option<Trace>,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`, offsets counted from 0, not tracing.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            base: 0,
            trace: None,
        }
    }

    /// A reader whose reported offsets start at `base` (for a message inside a capsule).
    pub(crate) fn with_base(buf: &'a [u8], base: usize) -> Self {
        Reader {
            buf,
            pos: 0,
            base,
            trace: None,
        }
    }

    /// Record every field read from now on.
    pub fn traced(mut self) -> Self {
        self.trace = Some(Trace::default());
        self
    }

    /// The fields recorded so far, when tracing; tracing stops.
    pub fn take_trace(&mut self) -> Option<Trace> {
        self.trace.take()
    }

    pub(crate) fn is_tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Position relative to the start of this reader's buffer.
    #[cfg(test)]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Absolute offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// An error for `field` at the current position.
    pub(crate) fn invalid(&self, field: &'static str, why: impl Into<String>) -> WireError {
        WireError {
            offset: self.offset(),
            field,
            kind: WireErrorKind::Invalid(why.into()),
        }
    }

    /// An error for `field` starting at absolute offset `offset`.
    pub(crate) fn invalid_at(
        offset: usize,
        field: &'static str,
        why: impl Into<String>,
    ) -> WireError {
        WireError {
            offset,
            field,
            kind: WireErrorKind::Invalid(why.into()),
        }
    }

    /// Take `n` bytes; the field is not traced (the caller traces it).
    pub(crate) fn raw(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(WireError {
                offset: self.offset(),
                field,
                kind: WireErrorKind::TooShort {
                    need: n,
                    have: self.remaining(),
                },
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Record a field that ended at the current position and was `len` bytes long.
    pub(crate) fn record(
        &mut self,
        name: &'static str,
        len: usize,
        value: impl FnOnce() -> String,
    ) {
        let offset = self.offset() - len;
        if let Some(t) = self.trace.as_mut() {
            t.push(name, offset, len, value());
        }
    }

    /// Record a field at an explicit absolute offset (bit fields, derived values).
    pub(crate) fn record_at(
        &mut self,
        name: &'static str,
        offset: usize,
        len: usize,
        value: impl FnOnce() -> String,
    ) {
        if let Some(t) = self.trace.as_mut() {
            t.push(name, offset, len, value());
        }
    }

    /// Replace the displayed value of the last recorded field.
    pub(crate) fn describe(&mut self, value: impl FnOnce() -> String) {
        if let Some(f) = self.trace.as_mut().and_then(|t| t.fields.last_mut()) {
            f.value = value();
        }
    }

    /// Nest the following fields one level deeper, under a heading recorded now.
    pub(crate) fn open(&mut self, name: &'static str, value: impl FnOnce() -> String) {
        let offset = self.offset();
        if let Some(t) = self.trace.as_mut() {
            t.open.push(t.fields.len());
            t.push(name, offset, 0, value());
            t.depth = t.depth.saturating_add(1);
        }
    }

    /// Close the level opened by [`Reader::open`], fixing the heading's length.
    pub(crate) fn close(&mut self) {
        self.close_with(None::<fn() -> String>);
    }

    /// Close the level and set the heading's value, known only now.
    pub(crate) fn close_with(&mut self, value: Option<impl FnOnce() -> String>) {
        let end = self.offset();
        if let Some(t) = self.trace.as_mut() {
            t.depth = t.depth.saturating_sub(1);
            if let Some(h) = t.open.pop().and_then(|i| t.fields.get_mut(i)) {
                h.len = end.saturating_sub(h.offset);
                if let Some(v) = value {
                    h.value = v();
                }
            }
        }
    }

    /// Append the fields of a nested trace one level below the current one.
    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8> {
        let v = self.raw(1, field)?[0];
        self.record(field, 1, || v.to_string());
        Ok(v)
    }

    pub(crate) fn u16_be(&mut self, field: &'static str) -> Result<u16> {
        let b = self.raw(2, field)?;
        let v = u16::from_be_bytes([b[0], b[1]]);
        self.record(field, 2, || v.to_string());
        Ok(v)
    }

    /// RakNet's `uint24_t`: three bytes, little-endian.
    pub(crate) fn u24_le(&mut self, field: &'static str) -> Result<u32> {
        let b = self.raw(3, field)?;
        let v = u32::from_le_bytes([b[0], b[1], b[2], 0]);
        self.record(field, 3, || v.to_string());
        Ok(v)
    }

    pub(crate) fn u32_be(&mut self, field: &'static str) -> Result<u32> {
        let b = self.raw(4, field)?;
        let v = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        self.record(field, 4, || v.to_string());
        Ok(v)
    }

    pub(crate) fn u64_be(&mut self, field: &'static str) -> Result<u64> {
        let b = self.raw(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        let v = u64::from_be_bytes(a);
        self.record(field, 8, || v.to_string());
        Ok(v)
    }

    /// A GUID: 8 bytes big-endian, shown in hex.
    pub(crate) fn guid(&mut self, field: &'static str) -> Result<u64> {
        let v = self.u64_be(field)?;
        self.describe(|| format!("{v:#018x}"));
        Ok(v)
    }

    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        let s = self.raw(n, field)?;
        self.record(field, n, || short_hex(s));
        Ok(s)
    }

    /// Everything left, as one field.
    pub(crate) fn rest_bytes(&mut self, field: &'static str) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        if !s.is_empty() {
            self.record(field, s.len(), || short_hex(s));
        }
        s
    }

    /// The 16-byte offline message magic.
    pub(crate) fn magic(&mut self) -> Result<()> {
        let at = self.offset();
        let m = self.raw(16, "magic")?;
        if m != super::MAGIC {
            return Err(Reader::invalid_at(
                at,
                "magic",
                "not the offline message magic",
            ));
        }
        self.record("magic", 16, || "00ffff00fefefefefdfdfdfd12345678".into());
        Ok(())
    }
}

/// Lowercase hex of `b`, appended to `out` (`const-hex` picks AVX2 or
/// SSSE3 at run time: `--json` writes 1,400-byte messages whole).
pub(crate) fn hex_extend(out: &mut Vec<u8>, b: &[u8]) {
    let at = out.len();
    out.resize(at + 2 * b.len(), 0);
    const_hex::encode_to_slice(b, &mut out[at..]).expect("two hex digits a byte");
}

/// Lowercase hex of `b`.
/// 16 bytes as a UUID's text in the order given: `8-4-4-4-12` lowercase hex.
pub(crate) fn uuid_text(b: &[u8; 16]) -> String {
    let h = hex(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A binary UUID as the game, gophertunnel, PocketMine and CloudburstMC
/// write it (two little-endian 64-bit halves, most significant first), as
/// text.
pub(crate) fn uuid_le_halves(b: &[u8; 16]) -> String {
    let mut x = *b;
    x[..8].reverse();
    x[8..].reverse();
    uuid_text(&x)
}

/// A UUID's text read in byte order (as bedrock-protocol reads a binary
/// UUID) turned into the game's reading (each half reversed), or the other
/// way; `None` when `s` is not a UUID.
pub(crate) fn uuid_turned(s: &str) -> Option<String> {
    if s.len() != 36 || s.as_bytes()[8] != b'-' {
        return None;
    }
    let h: String = s.chars().filter(|c| *c != '-').collect();
    let b: [u8; 16] = parse_hex(&h).ok()?.try_into().ok()?;
    Some(uuid_le_halves(&b))
}

/// `b` as lowercase hex, two digits a byte, no separators.
pub fn hex(b: &[u8]) -> String {
    let mut v = Vec::with_capacity(2 * b.len());
    hex_extend(&mut v, b);
    String::from_utf8(v).expect("hex digits are ASCII")
}

/// Bytes written in hex; spaces and colons between them are allowed.
pub fn parse_hex(s: &str) -> std::result::Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{s:?} is not hex"))?;
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{s:?}: odd number of hex digits"));
    }
    Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

/// Up to 32 bytes in hex, then an ellipsis and the length.
pub(crate) fn short_hex(s: &[u8]) -> String {
    const MAX: usize = 32;
    let mut out = hex(&s[..s.len().min(MAX)]);
    if s.len() > MAX {
        out.push_str(&format!("… ({} bytes)", s.len()));
    }
    out
}

/// The writer side: append network-order fields to a byte vector.
pub(crate) trait WriteExt {
    fn put_u8(&mut self, v: u8);
    fn put_u16_be(&mut self, v: u16);
    fn put_u24_le(&mut self, v: u32);
    fn put_u32_be(&mut self, v: u32);
    fn put_u64_be(&mut self, v: u64);
    fn put_magic(&mut self);
}

impl WriteExt for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16_be(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u24_le(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes()[..3]);
    }
    fn put_u32_be(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u64_be(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_magic(&mut self) {
        self.extend_from_slice(&super::MAGIC);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_as_text_in_both_readings() {
        let b: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(uuid_text(&b), "00010203-0405-0607-0809-0a0b0c0d0e0f");
        assert_eq!(uuid_le_halves(&b), "07060504-0302-0100-0f0e-0d0c0b0a0908");
        let t = uuid_text(&b);
        assert_eq!(
            uuid_turned(&t).as_deref(),
            Some("07060504-0302-0100-0f0e-0d0c0b0a0908")
        );
        assert_eq!(uuid_turned(&uuid_turned(&t).unwrap()), Some(t));
        assert_eq!(uuid_turned("not a uuid"), None);
    }

    #[test]
    fn hex_of_every_byte_at_every_length_and_offset() {
        // Every byte value in every lane of the SIMD blocks (16 and 32
        // bytes), lengths that end inside, at and past a block, after text
        // already there.
        let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for start in 0..33 {
            for len in (0..70).chain([255, 256, 257, 511 - start]) {
                let b = &bytes[start..start + len];
                let mut out = b"x".to_vec();
                super::hex_extend(&mut out, b);
                let want: String = b.iter().map(|x| format!("{x:02x}")).collect();
                assert_eq!(&out[1..], want.as_bytes(), "start {start} len {len}");
                assert_eq!(out[0], b'x');
            }
        }
    }

    #[test]
    fn hex_parses_back_and_never_panics_on_odd_input() {
        assert_eq!(super::parse_hex("86 aa:BB"), Ok(vec![0x86, 0xaa, 0xbb]));
        assert_eq!(super::parse_hex(&super::hex(&[0, 255])), Ok(vec![0, 255]));
        assert!(super::parse_hex("8").unwrap_err().contains("odd number"));
        // A multi-byte character between digits is an error, not a panic.
        for bad in ["aéa", "éé", "zz", "a\u{1F600}b"] {
            assert!(super::parse_hex(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn u24_is_little_endian() {
        let mut r = Reader::new(&[0xef, 0xcd, 0xab]);
        assert_eq!(r.u24_le("n").unwrap(), 0xabcdef);
        let mut v = Vec::new();
        v.put_u24_le(0xabcdef);
        assert_eq!(v, [0xef, 0xcd, 0xab]);
    }

    #[test]
    fn short_read_names_field_and_offset() {
        let mut r = Reader::with_base(&[1, 2], 10);
        r.u8("a").unwrap();
        let e = r.u16_be("length").unwrap_err();
        assert_eq!(e.offset, 11);
        assert_eq!(e.field, "length");
        assert_eq!(
            e.to_string(),
            "malformed at byte 11: length (needs 2 bytes, 1 left)"
        );
    }

    #[test]
    fn trace_nests_and_sizes_headings() {
        let mut r = Reader::new(&[1, 2, 3, 4]).traced();
        r.u8("id").unwrap();
        r.open("body", String::new);
        r.u8("a").unwrap();
        r.u16_be("b").unwrap();
        r.close();
        let t = r.take_trace().unwrap();
        let got: Vec<_> = t
            .fields
            .iter()
            .map(|f| (f.depth, f.name, f.offset, f.len))
            .collect();
        assert_eq!(
            got,
            [
                (0, "id", 0, 1),
                (0, "body", 1, 3),
                (1, "a", 1, 1),
                (1, "b", 2, 2)
            ]
        );
    }
}
