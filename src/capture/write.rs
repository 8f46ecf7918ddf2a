//! Writing pcapng (one raw-IP interface, nanosecond timestamps): IP packets
//! as captured live (`live -w`), or UDP datagrams a peer sends and receives
//! with their IP and UDP headers made up (`replay --record`), so that either
//! can be dissected like any capture.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etherparse::{IpHeaders, PacketBuilder, PacketBuilderStep};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption, InterfaceTsResolution,
};
use pcap_file::pcapng::blocks::RawBlock;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;

/// A pcapng file being written, one raw-IP interface.
pub struct Recorder {
    writer: PcapNgWriter<BufWriter<Box<dyn Write + Send>>>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

/// Whether `-w PATH` writes the capture to standard output (`-`), which
/// then carries nothing else.
pub fn writes_stdout(path: Option<&Path>) -> bool {
    path.is_some_and(|p| p.as_os_str() == "-")
}

fn io_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// The IP header of a packet from `src` to `dst` (both IPv4 or both IPv6).
fn ip(src: SocketAddr, dst: SocketAddr) -> io::Result<PacketBuilderStep<IpHeaders>> {
    match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            Ok(PacketBuilder::ipv4(s.ip().octets(), d.ip().octets(), 64))
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            Ok(PacketBuilder::ipv6(s.ip().octets(), d.ip().octets(), 64))
        }
        _ => Err(io_error("an IPv4 and an IPv6 endpoint in one packet")),
    }
}

/// `packet`, stamped `ts`, as a block of the file's one interface
/// (`orig_len`: its length on the wire, at least its own).
fn block(
    writer: &mut PcapNgWriter<BufWriter<Box<dyn Write + Send>>>,
    ts: Duration,
    packet: &[u8],
    orig_len: u32,
) -> io::Result<()> {
    writer
        .write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: ts,
            original_len: orig_len.max(packet.len() as u32),
            data: Cow::Borrowed(packet),
            options: Vec::new(),
        })
        .map_err(io_error)?;
    Ok(())
}

impl Recorder {
    /// A new file at `path` (`-` is standard output), with its header written.
    pub fn create(path: &Path) -> io::Result<Recorder> {
        Self::create_for(path, DataLink::RAW)
    }

    /// A file whose one interface has `linktype` (what libpcap captured);
    /// `-` is standard output (as tshark's `-w -`).
    pub(crate) fn create_for(path: &Path, linktype: DataLink) -> io::Result<Recorder> {
        let sink: Box<dyn Write + Send> = if writes_stdout(Some(path)) {
            Box::new(io::stdout())
        } else {
            Box::new(File::create(path)?)
        };
        let file = BufWriter::new(sink);
        let mut writer = PcapNgWriter::new(file).map_err(io_error)?;
        writer
            .write_pcapng_block(InterfaceDescriptionBlock {
                linktype,
                snaplen: 0,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Borrowed("raknet-dissect")),
                    InterfaceDescriptionOption::IfTsResol(InterfaceTsResolution::NANO),
                ],
            })
            .map_err(io_error)?;
        Ok(Recorder {
            writer,
            buf: Vec::new(),
        })
    }

    /// One UDP datagram from `src` to `dst`, stamped now.
    pub(crate) fn record(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
    ) -> io::Result<()> {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        self.record_at(ts, src, dst, payload)
    }

    /// One UDP datagram from `src` to `dst`, stamped `ts` (since the Unix epoch).
    pub fn record_at(
        &mut self,
        ts: Duration,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
    ) -> io::Result<()> {
        self.buf.clear();
        ip(src, dst)?
            .udp(src.port(), dst.port())
            .write(&mut self.buf, payload)
            .map_err(io_error)?;
        block(&mut self.writer, ts, &self.buf, 0)
    }

    /// One TCP segment from `src` to `dst`, stamped `ts`: its sequence
    /// number and SYN/FIN/RST flags as read (the acknowledgement number is
    /// not kept: 0, without the ACK flag), `payload` after the header.
    pub fn record_tcp_at(
        &mut self,
        ts: Duration,
        src: SocketAddr,
        dst: SocketAddr,
        seg: super::TcpSegment,
        payload: &[u8],
    ) -> io::Result<()> {
        self.buf.clear();
        let b = ip(src, dst)?.tcp(src.port(), dst.port(), seg.seq, 65535);
        let b = if seg.syn { b.syn() } else { b };
        let b = if seg.fin { b.fin() } else { b };
        let b = if seg.rst { b.rst() } else { b };
        let b = if payload.is_empty() { b } else { b.psh() };
        b.write(&mut self.buf, payload).map_err(io_error)?;
        block(&mut self.writer, ts, &self.buf, 0)
    }

    /// One packet as captured, of the file's link type (`orig_len`: its
    /// length on the wire).
    pub(crate) fn write_ip(
        &mut self,
        ts: Duration,
        packet: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        block(&mut self.writer, ts, packet, orig_len)
    }

    /// A Decryption Secrets Block (pcapng section 4.7): keys of type
    /// `kind` ([`super::Secrets::TLS_KEY_LOG`]: key-log lines) for the
    /// packets written after it.
    pub fn secrets(&mut self, kind: u32, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(io_error)?;
        let big = self.writer.section().endianness == pcap_file::Endianness::Big;
        let bytes = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut body = Vec::with_capacity(8 + data.len().next_multiple_of(4));
        body.extend(bytes(kind));
        body.extend(bytes(len));
        body.extend(data);
        body.resize(body.len().next_multiple_of(4), 0);
        let block_len = u32::try_from(body.len() + 12).map_err(io_error)?;
        self.writer
            .write_raw_block(&RawBlock {
                type_: super::Secrets::BLOCK,
                initial_len: block_len,
                body: Cow::Owned(body),
                trailer_len: block_len,
            })
            .map_err(io_error)?;
        Ok(())
    }

    /// Write out what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.get_mut().flush()
    }
}
