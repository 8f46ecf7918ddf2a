//! Capture sources: pcap and pcapng files (or standard input) turned into a
//! stream of UDP datagrams with their timestamps and endpoints.
//!
//! Owns link-layer decoding (Ethernet with VLAN, Linux cooked v1/v2, raw IP,
//! BSD loopback), IPv4/IPv6 fragment reassembly in a bounded pool, and the
//! detection of packets cut by the snapshot length. Streaming: memory does not
//! grow with the file size.

use std::net::SocketAddr;
use std::time::Duration;

/// One UDP datagram taken from a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpDatagram {
    /// 1-based frame number in the capture (of the frame that completed it,
    /// for a reassembled IP datagram).
    pub frame: u64,
    /// Capture timestamp, since the Unix epoch.
    pub ts: Duration,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The UDP payload bytes present in the capture.
    pub payload: Vec<u8>,
    /// The payload length announced by the UDP header; larger than
    /// `payload.len()` when the snapshot length cut the packet.
    pub udp_len: usize,
}

impl UdpDatagram {
    /// True when the capture holds fewer payload bytes than the UDP header announced.
    pub fn truncated(&self) -> bool {
        self.payload.len() < self.udp_len
    }
}
