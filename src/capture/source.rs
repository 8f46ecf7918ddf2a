//! Capture files as a stream of packet records: format detection from the
//! magic number, pcap and pcapng through pcap-file, timestamps.
//!
//! pcap-file reads through a fixed buffer ([`READ_BUFFER`]) and never seeks,
//! so standard input works and memory stays constant. Packet records are
//! taken raw and decoded here, leniently: a pcap record whose fraction of a
//! second is out of range, or a pcapng packet block with a bad option, is
//! still read. Section and interface blocks are decoded by pcap-file, which
//! keeps the per-interface state (link type, `if_tsresol`, `if_tsoffset`).

use std::io::{self, Cursor, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pcap_file::pcap::{PcapReadError, PcapReader, PcapTsResolution};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
use pcap_file::pcapng::blocks::{
    ENHANCED_PACKET_BLOCK, INTERFACE_DESCRIPTION_BLOCK, PACKET_BLOCK, SECTION_HEADER_BLOCK,
    SIMPLE_PACKET_BLOCK,
};
use pcap_file::pcapng::{PcapNgReadError, PcapNgReader};
use pcap_file::Endianness;

use super::decode::Decoder;
pub(crate) use super::step::{Failure, Step};
use super::{CaptureError, CaptureFormat, Secrets};

/// Size of the read buffer: the largest record that can be read. Snapshot
/// lengths are at most 256 KiB (262,144 bytes) in practice; a buffer that
/// stays in the CPU's L2 cache reads about 15% faster than a 4 MiB one.
pub(crate) const READ_BUFFER: usize = 512 << 10;

const PCAP_MICRO: u32 = 0xa1b2_c3d4;
const PCAP_MICRO_SWAPPED: u32 = 0xd4c3_b2a1;
const PCAP_NANO: u32 = 0xa1b2_3c4d;
const PCAP_NANO_SWAPPED: u32 = 0x4d3c_b2a1;
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;

pub(crate) enum Source {
    Pcap(PcapSource),
    PcapNg(PcapNgSource),
    Live(Box<super::live::LiveSource>),
}

impl Source {
    /// Tells the format from the first four bytes, then reads the file header.
    pub(crate) fn open(
        mut r: Box<dyn Read + Send>,
        name: &str,
    ) -> Result<(Source, CaptureFormat), CaptureError> {
        let mut magic = [0u8; 4];
        let got = read_up_to(&mut r, &mut magic)
            .map_err(|source| CaptureError::Io { frame: 0, source })?;
        let not_a_capture = |reason: String| CaptureError::NotACapture {
            name: name.to_owned(),
            reason,
        };
        if got < magic.len() {
            return Err(not_a_capture(match got {
                0 => "empty".to_owned(),
                n => format!("only {n} bytes"),
            }));
        }
        let at_eof = Arc::new(AtomicBool::new(false));
        // The magic goes back in front: the source need not be seekable.
        let input = Tracked {
            inner: Box::new(Cursor::new(magic).chain(r)),
            at_eof: Arc::clone(&at_eof),
        };
        match u32::from_be_bytes(magic) {
            PCAP_MICRO | PCAP_MICRO_SWAPPED | PCAP_NANO | PCAP_NANO_SWAPPED => {
                let reader = PcapReader::with_capacity(input, READ_BUFFER)
                    .map_err(|e| pcap_failure(e, &at_eof, "the pcap file header").into_error(0))?;
                let header = reader.header();
                let source = PcapSource {
                    linktype: u32::from(header.datalink) & LINKTYPE_MASK,
                    nanos: header.ts_resolution == PcapTsResolution::NanoSecond,
                    reader,
                    at_eof,
                    offset: PCAP_HEADER_LEN,
                };
                Ok((Source::Pcap(source), CaptureFormat::Pcap))
            }
            PCAPNG_SHB => {
                let reader = PcapNgReader::with_capacity(input, READ_BUFFER).map_err(|e| {
                    pcapng_failure(e, &at_eof, "the first section header block").into_error(0)
                })?;
                let source = PcapNgSource {
                    reader,
                    at_eof,
                    interfaces: Vec::new(),
                    last_ts: Duration::ZERO,
                };
                Ok((Source::PcapNg(source), CaptureFormat::PcapNg))
            }
            other => Err(not_a_capture(describe_magic(other))),
        }
    }

    /// Reads one record and decodes it if it is a packet.
    pub(crate) fn step(&mut self, decoder: &mut Decoder) -> Step {
        match self {
            Source::Pcap(s) => s.step(decoder),
            Source::PcapNg(s) => s.step(decoder),
            Source::Live(s) => s.step(decoder),
        }
    }
}

fn describe_magic(magic: u32) -> String {
    let hint = match magic {
        0x1f8b_0000..=0x1f8b_ffff => ", gzip-compressed: decompress it first",
        0x28b5_2ffd => ", zstd-compressed: decompress it first",
        0xfd37_7a58 => ", xz-compressed: decompress it first",
        0xa1b2_cd34 | 0x34cd_b2a1 => ", modified pcap: convert it with editcap -F pcap",
        _ => "",
    };
    format!("magic 0x{magic:08x}{hint}")
}

/// Reads until `buf` is full or the input ends; how many bytes were read.
fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The input, remembering whether it reached its end: pcap-file reports both
/// a file cut short and a record larger than its buffer as `UnexpectedEof`.
struct Tracked {
    inner: Box<dyn Read + Send>,
    at_eof: Arc<AtomicBool>,
}

impl Read for Tracked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(0) if !buf.is_empty() => {
                    self.at_eof.store(true, Ordering::Relaxed);
                    return Ok(0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }
}

/// An `UnexpectedEof` from pcap-file: the file ends inside `what`, or `what`
/// does not fit in the read buffer.
fn unexpected_eof(at_eof: &AtomicBool, what: &str) -> Failure {
    if at_eof.load(Ordering::Relaxed) {
        Failure::CutShort(format!("the file ends inside {what}"))
    } else {
        Failure::Malformed(format!(
            "{what} is larger than the {} KiB read buffer",
            READ_BUFFER >> 10
        ))
    }
}

fn pcap_failure(e: PcapReadError, at_eof: &AtomicBool, what: &str) -> Failure {
    match e {
        PcapReadError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            unexpected_eof(at_eof, what)
        }
        PcapReadError::Io(e) => Failure::Io(e),
        PcapReadError::Validation(e) => Failure::Malformed(format!("{what}: {e}")),
    }
}

fn pcapng_failure(e: PcapNgReadError, at_eof: &AtomicBool, what: &str) -> Failure {
    match e {
        PcapNgReadError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            unexpected_eof(at_eof, what)
        }
        PcapNgReadError::Io(e) => Failure::Io(e),
        other => Failure::Malformed(format!("{what}: {}", error_chain(&other))),
    }
}

/// "outer: inner: innermost", as pcap-file's messages are terse alone.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/* ----- pcap ----- */

const PCAP_HEADER_LEN: u64 = 24;
const PCAP_RECORD_HEADER_LEN: u64 = 16;
/// The link type is the low 16 bits; the high bits may carry the FCS length.
const LINKTYPE_MASK: u32 = 0xffff;

pub(crate) struct PcapSource {
    reader: PcapReader<Tracked>,
    at_eof: Arc<AtomicBool>,
    linktype: u32,
    nanos: bool,
    /// Byte offset of the next record, for messages.
    offset: u64,
}

impl PcapSource {
    fn step(&mut self, decoder: &mut Decoder) -> Step {
        let packet = match self.reader.next_raw_packet() {
            None => return Step::End,
            Some(Ok(packet)) => packet,
            Some(Err(e)) => {
                let what = format!("the record at byte {}", self.offset);
                return Step::Failed(pcap_failure(e, &self.at_eof, &what));
            }
        };
        self.offset += PCAP_RECORD_HEADER_LEN + u64::from(packet.incl_len);
        let fraction = u64::from(packet.ts_frac);
        // Not validated: a fraction past one second carries into the seconds.
        let fraction = if self.nanos {
            Duration::from_nanos(fraction)
        } else {
            Duration::from_micros(fraction)
        };
        let ts = Duration::from_secs(u64::from(packet.ts_sec)).saturating_add(fraction);
        match decoder.decode(self.linktype, ts, &packet.data, packet.orig_len) {
            Some(datagram) => Step::Datagram(datagram),
            None => Step::Skipped,
        }
    }
}

/* ----- pcapng ----- */

/// What a packet block needs from its interface description.
struct Interface {
    linktype: u32,
    snaplen: u32,
    resolution: TsResolution,
    /// `if_tsoffset`, seconds added to every timestamp.
    offset: i64,
}

impl Interface {
    fn new(idb: &InterfaceDescriptionBlock<'_>) -> Self {
        let resolution = idb.ts_resolution();
        Interface {
            linktype: u32::from(idb.linktype),
            snaplen: idb.snaplen,
            resolution: TsResolution {
                binary: resolution.is_bin(),
                exponent: resolution.resolution(),
            },
            offset: idb.ts_offset(),
        }
    }

    fn timestamp(&self, high: u32, low: u32) -> Duration {
        let raw = (u64::from(high) << 32) | u64::from(low);
        let ts = self.resolution.to_duration(raw);
        let offset = Duration::from_secs(self.offset.unsigned_abs());
        if self.offset >= 0 {
            ts.saturating_add(offset)
        } else {
            ts.saturating_sub(offset)
        }
    }
}

/// `if_tsresol`: units of 10^-exponent or 2^-exponent seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TsResolution {
    pub(crate) binary: bool,
    pub(crate) exponent: u8,
}

impl TsResolution {
    /// Any exponent works, so that a resolution pcap-file might one day accept
    /// beyond 10^-9 or 2^-29 still decodes (rounded down to the nanosecond).
    pub(crate) fn to_duration(self, raw: u64) -> Duration {
        const NANOS_PER_SEC: u128 = 1_000_000_000;
        let raw = u128::from(raw);
        let exponent = u32::from(self.exponent);
        let nanos = if self.binary {
            // u64 * 10^9 fits in 94 bits; shifts of 128 or more give 0.
            (raw * NANOS_PER_SEC).checked_shr(exponent).unwrap_or(0)
        } else if exponent <= 9 {
            raw * 10u128.pow(9 - exponent)
        } else {
            10u128
                .checked_pow(exponent - 9)
                .map_or(0, |divisor| raw / divisor)
        };
        // At most u64::MAX seconds: raw is a u64 and units are at most 1 s.
        let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
        let subsec = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
        Duration::new(secs, subsec)
    }
}

pub(crate) struct PcapNgSource {
    reader: PcapNgReader<Tracked>,
    at_eof: Arc<AtomicBool>,
    /// The interfaces of the current section, by interface id.
    interfaces: Vec<Interface>,
    /// Simple packet blocks have no timestamp: they get the last one seen.
    last_ts: Duration,
}

impl PcapNgSource {
    fn step(&mut self, decoder: &mut Decoder) -> Step {
        let offset = self.reader.bytes_parsed();
        let (block, state) = match self.reader.next_raw_block() {
            None => return Step::End,
            Some(Ok(next)) => next,
            Some(Err(e)) => {
                let what = format!("the block at byte {offset}");
                return Step::Failed(pcapng_failure(e, &self.at_eof, &what));
            }
        };
        let big = state.endianness() == Endianness::Big;
        let body = &block.body[..];
        let record = match block.type_ {
            // pcap-file has already decoded these into its state.
            SECTION_HEADER_BLOCK => {
                self.interfaces.clear();
                return Step::Skipped;
            }
            INTERFACE_DESCRIPTION_BLOCK => {
                if let Some(idb) = state.interfaces().last() {
                    self.interfaces.push(Interface::new(idb));
                }
                return Step::Skipped;
            }
            ENHANCED_PACKET_BLOCK => enhanced_packet(&self.interfaces, body, big),
            PACKET_BLOCK => obsolete_packet(&self.interfaces, body, big),
            SIMPLE_PACKET_BLOCK => simple_packet(&self.interfaces, self.last_ts, body, big),
            Secrets::BLOCK => {
                return match secrets(body, big) {
                    Some(s) => Step::Secrets(s),
                    None => {
                        decoder.bad_record();
                        Step::Skipped
                    }
                };
            }
            _ => return Step::Skipped,
        };
        let Some(record) = record else {
            decoder.bad_record();
            return Step::Skipped;
        };
        self.last_ts = record.ts;
        match decoder.decode(record.linktype, record.ts, record.data, record.orig_len) {
            Some(datagram) => Step::Datagram(datagram),
            None => Step::Skipped,
        }
    }
}

/// Secrets type (u32), secrets length (u32), the secrets; `None` when the
/// length runs past the block.
fn secrets(body: &[u8], big: bool) -> Option<Secrets> {
    let kind = u32_at(body, 0, big)?;
    let len = usize::try_from(u32_at(body, 4, big)?).ok()?;
    let data = body.get(8..8usize.checked_add(len)?)?.to_vec();
    Some(Secrets { kind, data })
}

/// Interface id (u32), timestamp (high, low), captured and original length, data.
fn enhanced_packet<'b>(interfaces: &[Interface], body: &'b [u8], big: bool) -> Option<Record<'b>> {
    let interface = interfaces.get(usize::try_from(u32_at(body, 0, big)?).ok()?)?;
    packet(interface, body, 4, big)
}

/// Interface id (u16), drops count (u16), then as an enhanced packet block.
fn obsolete_packet<'b>(interfaces: &[Interface], body: &'b [u8], big: bool) -> Option<Record<'b>> {
    let id = u32_at(body, 0, big)?;
    let id = if big { id >> 16 } else { id & 0xffff };
    let interface = interfaces.get(usize::try_from(id).ok()?)?;
    packet(interface, body, 4, big)
}

fn packet<'b>(interface: &Interface, body: &'b [u8], at: usize, big: bool) -> Option<Record<'b>> {
    let high = u32_at(body, at, big)?;
    let low = u32_at(body, at + 4, big)?;
    let captured = usize::try_from(u32_at(body, at + 8, big)?).ok()?;
    let orig_len = u32_at(body, at + 12, big)?;
    let start = at + 16;
    let data = body.get(start..start.checked_add(captured)?)?;
    Some(Record {
        linktype: interface.linktype,
        ts: interface.timestamp(high, low),
        data,
        orig_len,
    })
}

/// Original length, data; always from the first interface, no timestamp.
fn simple_packet<'b>(
    interfaces: &[Interface],
    last_ts: Duration,
    body: &'b [u8],
    big: bool,
) -> Option<Record<'b>> {
    let interface = interfaces.first()?;
    let orig_len = u32_at(body, 0, big)?;
    let room = body.len().checked_sub(4)?;
    // The data is padded to 32 bits: the snapshot length tells how much is packet.
    let mut captured = usize::try_from(orig_len).unwrap_or(usize::MAX).min(room);
    if interface.snaplen != 0 {
        captured = captured.min(usize::try_from(interface.snaplen).unwrap_or(usize::MAX));
    }
    Some(Record {
        linktype: interface.linktype,
        ts: last_ts,
        data: body.get(4..4 + captured)?,
        orig_len,
    })
}

struct Record<'b> {
    linktype: u32,
    ts: Duration,
    data: &'b [u8],
    orig_len: u32,
}

fn u32_at(bytes: &[u8], at: usize, big: bool) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    let b = [b[0], b[1], b[2], b[3]];
    Some(if big {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(binary: bool, exponent: u8) -> TsResolution {
        TsResolution { binary, exponent }
    }

    #[test]
    fn decimal_resolutions() {
        let raw = 1_700_000_000_123_456_789u64;
        assert_eq!(
            res(false, 9).to_duration(raw),
            Duration::new(1_700_000_000, 123_456_789)
        );
        assert_eq!(
            res(false, 6).to_duration(1_700_000_000_123_456),
            Duration::new(1_700_000_000, 123_456_000)
        );
        assert_eq!(
            res(false, 3).to_duration(1_700_000_000_123),
            Duration::new(1_700_000_000, 123_000_000)
        );
        assert_eq!(res(false, 0).to_duration(7), Duration::from_secs(7));
        // Picoseconds round down to the nanosecond.
        assert_eq!(
            res(false, 12).to_duration(1_500_000_123_456_789),
            Duration::new(1_500, 123_456)
        );
        assert_eq!(res(false, 127).to_duration(u64::MAX), Duration::ZERO);
        assert_eq!(
            res(false, 0).to_duration(u64::MAX),
            Duration::from_secs(u64::MAX)
        );
    }

    #[test]
    fn binary_resolutions() {
        // 2^-10 s units: 1024 per second.
        assert_eq!(
            res(true, 10).to_duration(5 * 1024 + 512),
            Duration::new(5, 500_000_000)
        );
        assert_eq!(
            res(true, 20).to_duration((3 << 20) + (1 << 18)),
            Duration::new(3, 250_000_000)
        );
        assert_eq!(res(true, 0).to_duration(9), Duration::from_secs(9));
        assert_eq!(res(true, 127).to_duration(u64::MAX), Duration::ZERO);
        assert_eq!(
            res(true, 0).to_duration(u64::MAX),
            Duration::from_secs(u64::MAX)
        );
    }

    #[test]
    fn offsets_saturate() {
        let mut interface = Interface {
            linktype: 1,
            snaplen: 0,
            resolution: res(false, 0),
            offset: -10,
        };
        assert_eq!(interface.timestamp(0, 5), Duration::ZERO);
        assert_eq!(interface.timestamp(0, 15), Duration::from_secs(5));
        interface.offset = i64::MAX;
        assert_eq!(interface.timestamp(u32::MAX, u32::MAX), Duration::MAX);
        interface.offset = i64::MIN;
        assert_eq!(interface.timestamp(0, 1), Duration::ZERO);
    }

    #[test]
    fn magic_descriptions() {
        assert_eq!(describe_magic(0x1234_5678), "magic 0x12345678");
        assert!(describe_magic(0x1f8b_0800).contains("gzip"));
    }
}
