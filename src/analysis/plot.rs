//! Each flow's time series, for `plot`: throughput each way (bytes of
//! RakNet UDP payload per bucket), the resent packets each way, the RTT
//! samples (a data datagram to the first ACK that covers it), and the loss
//! each way per bucket (datagrams NACKed by the receiver, and gaps in the
//! datagram numbers it received). `output::svg` draws them.
//!
//! Memory is bounded whatever the capture: time series live in at most
//! `MAX_BUCKETS` buckets whose width doubles as a flow goes on, RTT samples
//! and resend markers are thinned past a cap, and at most `MAX_TRACKED`
//! flows are followed (the first seen).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::dissect::{Body, Dir, Packet};
use crate::mirror::Observation;
use crate::nethernet::sctp::chunk;
use crate::records::nethernet::NethernetPacket;
use crate::wire::Datagram;

/// Buckets a flow's time series has at most; past them, their width doubles.
pub(crate) const MAX_BUCKETS: usize = 256;
/// The narrowest bucket, in microseconds.
pub(crate) const BASE_BUCKET_US: u64 = 1_000;
/// RTT points kept per flow and direction; past it, every other one goes.
pub(crate) const MAX_RTT_POINTS: usize = 1_000;
/// Resend markers kept per flow and direction; past it, every other one goes.
pub(crate) const MAX_RESEND_MARKS: usize = 1_000;
/// Flows followed at once: the first seen. Later ones are only counted.
pub(crate) const MAX_TRACKED: usize = 256;
/// Flows drawn at most: those with the most packets.
pub(crate) const MAX_DRAWN: usize = 16;
/// Flows named one by one on stderr when some are left out.
pub(crate) const MAX_LISTED: usize = 20;

/// Series of a flow's buckets: bytes, datagrams NACKed, gaps; each per direction.
pub(crate) const CH_BYTES: usize = 0;
pub(crate) const CH_NACKED: usize = 2;
pub(crate) const CH_GAPS: usize = 4;
pub(crate) const CHANNELS: usize = 6;

/// Time series in fixed-width buckets from time 0: at most `cap` buckets;
/// a time past the last doubles the width, merging buckets by pairs.
#[derive(Debug, Clone)]
pub(crate) struct Buckets {
    width_us: u64,
    cap: usize,
    bins: Vec<[u64; CHANNELS]>,
}

impl Buckets {
    /// Buckets `base_us` wide (at least 1 µs), at most `cap` of them (at least 2).
    pub(crate) fn new(base_us: u64, cap: usize) -> Self {
        Buckets {
            width_us: base_us.max(1),
            cap: cap.max(2),
            bins: Vec::new(),
        }
    }

    /// Add `v` to series `ch` at `t_us` (microseconds from the start).
    pub(crate) fn add(&mut self, t_us: u64, ch: usize, v: u64) {
        if ch >= CHANNELS {
            return;
        }
        let mut i = t_us / self.width_us;
        while i >= self.cap as u64 {
            self.widen();
            i = t_us / self.width_us;
        }
        // i < cap, so it fits a usize.
        let i = i as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, [0; CHANNELS]);
        }
        self.bins[i][ch] = self.bins[i][ch].saturating_add(v);
    }

    /// Make the buckets as wide again, summing them by pairs.
    fn widen(&mut self) {
        let merged: Vec<[u64; CHANNELS]> = self
            .bins
            .chunks(2)
            .map(|pair| {
                let mut m = pair[0];
                if let Some(b) = pair.get(1) {
                    for (x, y) in m.iter_mut().zip(b) {
                        *x = x.saturating_add(*y);
                    }
                }
                m
            })
            .collect();
        self.bins = merged;
        self.width_us = self.width_us.saturating_mul(2);
    }

    /// Width of a bucket, in microseconds.
    pub(crate) fn width_us(&self) -> u64 {
        self.width_us
    }

    /// Buckets in use: up to the last one that something fell in.
    pub(crate) fn len(&self) -> usize {
        self.bins.len()
    }

    /// Series `ch`, one value per bucket (`len()` values).
    pub(crate) fn series(&self, ch: usize) -> Vec<u64> {
        self.bins
            .iter()
            .map(|b| b.get(ch).copied().unwrap_or(0))
            .collect()
    }
}

/// A sample of at most `cap` items spread evenly over all pushed: every
/// `stride`-th item is kept; at the cap, every other kept item goes and the
/// stride doubles.
#[derive(Debug, Clone)]
pub(crate) struct Thinned<T> {
    cap: usize,
    stride: u64,
    seen: u64,
    items: Vec<T>,
}

impl<T> Thinned<T> {
    /// At most `cap` items (at least 2; rounded up to even, so that the
    /// kept items stay evenly spaced).
    pub(crate) fn new(cap: usize) -> Self {
        Thinned {
            cap: cap.max(2).next_multiple_of(2),
            stride: 1,
            seen: 0,
            items: Vec::new(),
        }
    }

    /// Offer an item.
    pub(crate) fn push(&mut self, x: T) {
        let n = self.seen;
        self.seen += 1;
        if !n.is_multiple_of(self.stride) {
            return;
        }
        if self.items.len() >= self.cap {
            let mut k = 0usize;
            self.items.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            self.stride = self.stride.saturating_mul(2);
            if !n.is_multiple_of(self.stride) {
                return;
            }
        }
        self.items.push(x);
    }

    /// The items kept, in the order pushed.
    pub(crate) fn items(&self) -> &[T] {
        &self.items
    }

    /// Items offered, kept or not.
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// One item kept for every `stride()` offered.
    #[cfg(test)]
    pub(crate) fn stride(&self) -> u64 {
        self.stride
    }
}

/// Datagram numbers an ACK/NACK range covers (24-bit numbers, so at most 2^24).
pub(crate) fn range_len(min: u32, max: u32) -> u64 {
    u64::from(max.wrapping_sub(min) & 0xff_ffff) + 1
}

/// What the picture needs of one flow.
pub struct FlowPlot {
    pub(crate) id: u32,
    pub(crate) client: SocketAddr,
    pub(crate) server: SocketAddr,
    pub(crate) start: Duration,
    /// With `--from`/`--to`: `start` in seconds since the capture's first
    /// packet, added to the time axes' labels.
    pub(crate) axis_offset: Option<f64>,
    /// The latest time seen, in µs from `start`.
    pub(crate) end_us: u64,
    pub(crate) packets: [u64; 2],
    /// Connected datagrams (data, ACK, NACK) each way: none for a flow
    /// of unconnected messages only (pings and pongs, a refused handshake).
    pub(crate) datagrams: [u64; 2],
    pub(crate) bytes: [u64; 2],
    pub(crate) buckets: Buckets,
    /// RTT points (µs from start, ms), by the direction of the acknowledged datagrams.
    pub(crate) rtt: [Thinned<(u64, f64)>; 2],
    pub(crate) rtt_min: f64,
    pub(crate) rtt_max: f64,
    /// Times (µs from start) of the packets with a `resend` finding, by direction.
    pub(crate) resends: [Thinned<u64>; 2],
    pub(crate) nacked: [u64; 2],
    pub(crate) gaps: [u64; 2],
    /// A NetherNet flow's SCTP state; `None` for RakNet.
    pub(crate) sctp: Option<Box<SctpPlot>>,
}

/// What a NetherNet flow's picture follows in its SCTP chunks (once
/// decrypted), by the direction of the DATA.
#[derive(Debug, Default)]
pub(crate) struct SctpPlot {
    rtt: crate::nethernet::rtt::SctpRtt,
    /// The highest TSN seen.
    highest: [Option<u32>; 2],
    /// The highest TSN a SACK has reported missing.
    reported: [Option<u32>; 2],
}

/// What a flow's picture calls its series, by transport.
pub(crate) struct Words {
    pub(crate) transport: &'static str,
    pub(crate) throughput: &'static str,
    pub(crate) resent: &'static str,
    pub(crate) rtt: &'static str,
    pub(crate) rtt_keys: [&'static str; 2],
    pub(crate) no_rtt: &'static str,
    pub(crate) nacked: [&'static str; 2],
    pub(crate) gaps: [&'static str; 2],
    pub(crate) loss: &'static str,
    pub(crate) no_loss: &'static str,
    pub(crate) loss_unit: &'static str,
}

pub(crate) static RAKNET_WORDS: Words = Words {
    transport: "raknet",
    throughput: "RakNet UDP payload",
    resent: "Resent packets: ▲ a data datagram carrying a reliable message again",
    rtt: "RTT: a data datagram to the first ACK that covers it, as seen at the capture point",
    rtt_keys: [
        "c2s datagrams, ACKed by the server",
        "s2c datagrams, ACKed by the client",
    ],
    no_rtt: "no RTT samples: no ACK covered a data datagram of the capture",
    nacked: ["c2s datagrams NACKed", "s2c datagrams NACKed"],
    gaps: ["c2s gaps (numbers skipped)", "s2c gaps (numbers skipped)"],
    loss: "Loss: datagrams the receiver NACKed, and gaps in the numbers it got",
    no_loss: "no loss seen: no NACK, no gap",
    loss_unit: "datagrams per bucket",
};

pub(crate) static NETHERNET_WORDS: Words = Words {
    transport: "nethernet",
    throughput: "NetherNet UDP payload (STUN, DTLS)",
    resent: "Resent packets: ▲ a datagram carrying an SCTP DATA chunk its receiver had seen",
    rtt: "RTT: an SCTP DATA chunk to the first SACK that covers it (Karn's rule), as seen at the capture point",
    rtt_keys: [
        "c2s DATA, SACKed by the server",
        "s2c DATA, SACKed by the client",
    ],
    no_rtt: "no RTT samples: no SACK covered a DATA chunk (without a key log, none is seen)",
    nacked: ["c2s TSNs a SACK reported missing", "s2c TSNs a SACK reported missing"],
    gaps: ["c2s gaps (TSNs skipped)", "s2c gaps (TSNs skipped)"],
    loss: "Loss: TSNs the receiver's SACKs reported missing, and TSNs skipped in arrival order",
    no_loss: "no loss seen: no TSN reported missing, none skipped",
    loss_unit: "TSNs per bucket",
};

/// Whether TSN `a` comes after `b`, in serial arithmetic.
fn after(a: u32, b: u32) -> bool {
    (1..1 << 31).contains(&a.wrapping_sub(b))
}

impl FlowPlot {
    pub(crate) fn new(p: &Packet<'_>) -> Self {
        let mut f = FlowPlot::blank(p.flow, (p.src, p.dst), p.ts);
        f.roles(p.dir, (p.src, p.dst));
        f
    }

    /// A NetherNet flow's, from its first datagram.
    pub(crate) fn of_nethernet(p: &NethernetPacket) -> Self {
        let mut f = FlowPlot::blank(p.flow, (p.src, p.dst), p.ts);
        f.sctp = Some(Box::default());
        f
    }

    fn blank(id: u32, (client, server): (SocketAddr, SocketAddr), start: Duration) -> Self {
        FlowPlot {
            id,
            client,
            server,
            start,
            axis_offset: None,
            end_us: 0,
            packets: [0; 2],
            datagrams: [0; 2],
            bytes: [0; 2],
            buckets: Buckets::new(BASE_BUCKET_US, MAX_BUCKETS),
            rtt: [Thinned::new(MAX_RTT_POINTS), Thinned::new(MAX_RTT_POINTS)],
            rtt_min: f64::INFINITY,
            rtt_max: 0.0,
            resends: [
                Thinned::new(MAX_RESEND_MARKS),
                Thinned::new(MAX_RESEND_MARKS),
            ],
            nacked: [0; 2],
            gaps: [0; 2],
            sctp: None,
        }
    }

    /// A NetherNet datagram: its UDP payload as throughput; once
    /// decrypted, its SCTP chunks: DATA sent again (resends), SACKs timing
    /// the DATA they cover (RTT, Karn's rule), TSNs a SACK newly reports
    /// missing (as NACKed, each TSN once) and TSNs skipped in arrival
    /// order (gaps).
    pub(crate) fn nethernet(&mut self, p: &NethernetPacket) {
        self.roles(p.dir, (p.src, p.dst));
        let t = u64::try_from(p.ts.saturating_sub(self.start).as_micros()).unwrap_or(u64::MAX);
        self.end_us = self.end_us.max(t);
        let (d, o) = (p.dir.index(), p.dir.reverse().index());
        self.packets[d] += 1;
        self.datagrams[d] += 1;
        self.bytes[d] += p.len as u64;
        self.buckets.add(t, CH_BYTES + d, p.len as u64);
        if p.resent > 0 {
            self.resends[d].push(t);
        }
        let s = self.sctp.get_or_insert_with(Box::default);
        if let Some(ms) = s.rtt.chunks(d, p.ts, &p.chunks) {
            // A SACK times DATA sent the other way.
            self.rtt_min = self.rtt_min.min(ms);
            self.rtt_max = self.rtt_max.max(ms);
            self.rtt[o].push((t, ms));
        }
        for c in &p.chunks {
            if let (chunk::DATA | chunk::I_DATA, Some(tsn)) = (c.kind, c.tsn) {
                match s.highest[d] {
                    Some(h) if after(tsn, h) => {
                        let skipped = u64::from(tsn.wrapping_sub(h) - 1);
                        if skipped > 0 {
                            self.gaps[d] += skipped;
                            self.buckets.add(t, CH_GAPS + d, skipped);
                        }
                        s.highest[d] = Some(tsn);
                    }
                    Some(_) => {}
                    None => s.highest[d] = Some(tsn),
                }
            }
            for &(first, last) in &c.holes {
                let from = match s.reported[o] {
                    Some(r) if !after(first, r) => r.wrapping_add(1),
                    _ => first,
                };
                if from == last || after(last, from) {
                    let n = u64::from(last.wrapping_sub(from)) + 1;
                    self.nacked[o] += n;
                    self.buckets.add(t, CH_NACKED + o, n);
                    s.reported[o] = Some(last);
                }
            }
        }
    }

    /// Client and server as the packet from `src` to `dst`, `dir`, says
    /// them now (a handshake can settle them late).
    fn roles(&mut self, dir: Dir, (src, dst): (SocketAddr, SocketAddr)) {
        (self.client, self.server) = match dir {
            Dir::C2s => (src, dst),
            Dir::S2c => (dst, src),
        };
    }

    pub(crate) fn observe(&mut self, p: &Packet<'_>, obs: &Observation) {
        self.roles(p.dir, (p.src, p.dst));
        let t = u64::try_from(p.ts.saturating_sub(self.start).as_micros()).unwrap_or(u64::MAX);
        self.end_us = self.end_us.max(t);
        let d = p.dir.index();
        self.packets[d] += 1;
        let len = p.payload.len() as u64;
        self.bytes[d] += len;
        self.buckets.add(t, CH_BYTES + d, len);
        let mut findings = p.anomalies.iter().chain(&obs.anomalies);
        if matches!(p.body, Body::Datagram(_)) {
            self.datagrams[d] += 1;
        }
        match &p.body {
            Body::Datagram(Some(Datagram::Nack(l))) => {
                // A NACK covers datagrams sent the other way.
                let n: u64 = l.ranges.iter().map(|r| range_len(r.min, r.max)).sum();
                let o = p.dir.reverse().index();
                self.nacked[o] += n;
                self.buckets.add(t, CH_NACKED + o, n);
            }
            Body::Datagram(Some(Datagram::Ack(_))) => {
                // Samples of datagrams sent the other way.
                let o = p.dir.reverse().index();
                for &ms in &obs.rtt_ms {
                    if ms.is_finite() {
                        self.rtt_min = self.rtt_min.min(ms);
                        self.rtt_max = self.rtt_max.max(ms);
                        self.rtt[o].push((t, ms));
                    }
                }
            }
            Body::Datagram(_) => {
                let mut resent = false;
                for a in findings.by_ref() {
                    match a.kind {
                        "resend" => resent = true,
                        "gap" => {
                            self.gaps[d] += 1;
                            self.buckets.add(t, CH_GAPS + d, 1);
                        }
                        _ => {}
                    }
                }
                if resent {
                    self.resends[d].push(t);
                }
            }
            Body::Offline { .. } => {}
        }
    }

    /// What the picture calls things, by transport.
    pub(crate) fn words(&self) -> &'static Words {
        if self.sctp.is_some() {
            &NETHERNET_WORDS
        } else {
            &RAKNET_WORDS
        }
    }

    pub(crate) fn total_packets(&self) -> u64 {
        self.packets[0] + self.packets[1]
    }
}

/// The flows followed while reading, and what was only counted.
#[derive(Default)]
pub struct Collector {
    /// `--flow`: only this flow.
    pub(crate) only: Option<u32>,
    /// `--from`, `--to`: the part of the capture drawn, from its first packet.
    pub(crate) window: Option<(Duration, Duration)>,
    pub(crate) flows: HashMap<u32, FlowPlot>,
    /// The highest flow id seen (the dissector numbers flows in sequence).
    pub(crate) max_id: u32,
    /// Flows seen, and the first [`MAX_LISTED`] of their ids.
    pub(crate) seen_flows: u64,
    pub(crate) first_ids: Vec<u32>,
    /// The latest packet's time since the capture's first.
    pub(crate) span: Duration,
    /// Flows (and their packets) in the window but past [`MAX_TRACKED`].
    pub(crate) untracked_flows: u64,
    pub(crate) untracked_packets: u64,
    /// One bit per flow id: left out for [`MAX_TRACKED`] (an eighth of a
    /// byte per flow of the capture).
    untracked: Vec<u64>,
}

impl Collector {
    /// Only flow `only` when given; only the packets between `from` and
    /// `to` (seconds since the capture's first packet) when either is.
    pub fn new(only: Option<u32>, from: Option<Duration>, to: Option<Duration>) -> Self {
        let window = match (from, to) {
            (None, None) => None,
            (from, to) => Some((from.unwrap_or_default(), to.unwrap_or(Duration::MAX))),
        };
        Collector {
            only,
            window,
            ..Collector::default()
        }
    }

    /// `since`: the capture's first packet's time.
    pub fn observe(&mut self, p: &Packet<'_>, obs: &Observation, since: Duration) {
        if let Some(f) = self.follow((p.flow, p.ts), since, || FlowPlot::new(p)) {
            f.observe(p, obs);
        }
    }

    /// A NetherNet datagram (`since`: the capture's first packet's time).
    pub fn nethernet(&mut self, p: &NethernetPacket, since: Duration) {
        if let Some(f) = self.follow((p.flow, p.ts), since, || FlowPlot::of_nethernet(p)) {
            f.nethernet(p);
        }
    }

    /// The plot of flow `id`, whose packet at `ts` is in the picture
    /// (made by `new` for its first), or `None` when it is left out.
    fn follow(
        &mut self,
        (id, ts): (u32, Duration),
        since: Duration,
        new: impl FnOnce() -> FlowPlot,
    ) -> Option<&mut FlowPlot> {
        if id > self.max_id {
            self.max_id = id;
            self.seen_flows += 1;
            if self.first_ids.len() < MAX_LISTED {
                self.first_ids.push(id);
            }
        }
        let rel = ts.saturating_sub(since);
        self.span = self.span.max(rel);
        if self.only.is_some_and(|n| n != id) {
            return None;
        }
        if self.window.is_some_and(|(from, to)| rel < from || rel > to) {
            return None;
        }
        if !self.flows.contains_key(&id) && self.flows.len() < MAX_TRACKED {
            let mut f = new();
            if let Some((from, _)) = self.window {
                // Every flow's axis starts at --from, on the capture's clock.
                f.start = since + from;
                f.axis_offset = Some(from.as_secs_f64());
            }
            self.flows.insert(id, f);
        }
        if self.flows.contains_key(&id) {
            return self.flows.get_mut(&id);
        }
        self.untracked_packets += 1;
        let (word, bit) = ((id / 64) as usize, id % 64);
        if self.untracked.len() <= word {
            self.untracked.resize(word + 1, 0);
        }
        if self.untracked[word] & (1 << bit) == 0 {
            self.untracked[word] |= 1 << bit;
            self.untracked_flows += 1;
        }
        None
    }

    /// The flows to draw (at most [`MAX_DRAWN`]: those with the most
    /// packets) and those left out, each in id order.
    pub(crate) fn choose(&self) -> (Vec<&FlowPlot>, Vec<&FlowPlot>) {
        let mut chosen: Vec<&FlowPlot> = self.flows.values().collect();
        // The most packets first; ties by id.
        chosen.sort_by_key(|f| (std::cmp::Reverse(f.total_packets()), f.id));
        let mut left = chosen.split_off(chosen.len().min(MAX_DRAWN));
        chosen.sort_by_key(|f| f.id);
        left.sort_by_key(|f| f.id);
        (chosen, left)
    }

    /// Why there is nothing to draw, when `--flow` or `--from`/`--to` left
    /// no packet: the flow the capture does not have, or the part of the
    /// capture that has no packet, and how long the capture lasts.
    pub(crate) fn nothing_drawn(&self) -> Option<String> {
        if !self.flows.is_empty() || (self.window.is_none() && self.only.is_none()) {
            return None;
        }
        let secs = |d: Duration| d.as_secs_f64();
        let part = self.window.map(|(from, to)| match (from, to) {
            (f, Duration::MAX) => format!("from {} s on", secs(f)),
            (Duration::ZERO, t) => format!("up to {} s", secs(t)),
            (f, t) => format!("between {} s and {} s", secs(f), secs(t)),
        });
        let lasts = format!("the capture lasts {:.6} s", secs(self.span));
        Some(match (self.only, part) {
            (Some(n), _) if n == 0 || n > self.max_id => {
                format!("no flow {n} in the capture ({})", self.flow_list())
            }
            (Some(n), Some(part)) => format!("flow {n} has no packet {part}: {lasts}"),
            (None, Some(part)) if self.seen_flows > 0 => format!("no packet {part}: {lasts}"),
            _ => return None,
        })
    }

    /// "it has 3 flows: 1, 2, 3" or "it has no RakNet flow".
    pub(crate) fn flow_list(&self) -> String {
        let count = self.seen_flows;
        if count == 0 {
            return "it has no RakNet flow".to_string();
        }
        let ids: Vec<String> = self.first_ids.iter().map(u32::to_string).collect();
        let more = if count > self.first_ids.len() as u64 {
            ", ..."
        } else {
            ""
        };
        let s = if count == 1 { "" } else { "s" };
        format!("it has {count} flow{s}: {}{more}", ids.join(", "))
    }

    /// What the picture leaves out, a sentence each: the flows past
    /// [`MAX_DRAWN`] (`left`, from [`Collector::choose`]) and past
    /// [`MAX_TRACKED`].
    pub(crate) fn left_out(&self, drawn: usize, left: &[&FlowPlot]) -> Vec<String> {
        let mut notes = Vec::new();
        if !left.is_empty() {
            let names: Vec<String> = left
                .iter()
                .take(MAX_LISTED)
                .map(|f| format!("{} ({} packets)", f.id, f.total_packets()))
                .collect();
            let more = match left.len().saturating_sub(MAX_LISTED) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            notes.push(format!(
                "drew the {drawn} flows with the most packets; left out flows {}{more} (--flow N draws one)",
                names.join(", ")
            ));
        }
        if self.untracked_flows > 0 {
            notes.push(format!(
                "{} flows ({} packets) after the first {MAX_TRACKED} were not followed and are left out (--flow N draws one)",
                self.untracked_flows, self.untracked_packets
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nethernet::association::ChunkSeen;

    #[test]
    fn what_is_said_when_nothing_is_drawn() {
        let mut c = Collector::new(None, Some(Duration::from_secs(20)), None);
        assert_eq!(c.flow_list(), "it has no RakNet flow");
        assert_eq!(
            c.nothing_drawn(),
            None,
            "no flow at all: the picture says so"
        );
        (c.seen_flows, c.max_id, c.first_ids) = (3, 3, vec![1, 2]);
        c.span = Duration::from_millis(10_752);
        assert_eq!(c.flow_list(), "it has 3 flows: 1, 2, ...");
        assert_eq!(
            c.nothing_drawn().as_deref(),
            Some("no packet from 20 s on: the capture lasts 10.752000 s")
        );
        c.only = Some(7);
        assert_eq!(
            c.nothing_drawn().as_deref(),
            Some("no flow 7 in the capture (it has 3 flows: 1, 2, ...)")
        );
        c.only = Some(2);
        c.window = Some((Duration::from_secs(1), Duration::from_secs(2)));
        assert_eq!(
            c.nothing_drawn().as_deref(),
            Some("flow 2 has no packet between 1 s and 2 s: the capture lasts 10.752000 s")
        );
        assert_eq!(Collector::new(None, None, None).nothing_drawn(), None);
    }

    /// A NetherNet datagram of flow 1, `dir`, at `ms`, with `chunks`.
    fn nethernet(dir: Dir, ms: u64, resent: u32, chunks: Vec<ChunkSeen>) -> NethernetPacket {
        let (a, b): (SocketAddr, SocketAddr) = (
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
        );
        let (src, dst) = if dir == Dir::C2s { (a, b) } else { (b, a) };
        let at = (1, Duration::from_millis(ms));
        let mut p = NethernetPacket::empty(at, (src, dst), (1, dir), 100, "dtls");
        (p.chunks, p.resent) = (chunks, resent);
        p
    }

    #[test]
    fn a_nethernet_flows_chunks_tell_resends_rtt_and_loss() {
        let data = |tsn| ChunkSeen {
            kind: chunk::DATA,
            tsn: Some(tsn),
            ..ChunkSeen::default()
        };
        let sack = |cum, holes: Vec<(u32, u32)>| ChunkSeen {
            kind: chunk::SACK,
            cumulative_tsn: Some(cum),
            holes,
            ..ChunkSeen::default()
        };
        let mut c = Collector::new(None, None, None);
        let since = Duration::ZERO;
        // 10, 11, then 14: 12 and 13 skipped.
        c.nethernet(&nethernet(Dir::C2s, 0, 0, vec![data(10), data(11)]), since);
        c.nethernet(&nethernet(Dir::C2s, 1, 0, vec![data(14)]), since);
        // The server's SACK: 11 covered (a sample: 5 ms), 12-13 missing.
        c.nethernet(
            &nethernet(Dir::S2c, 5, 0, vec![sack(11, vec![(12, 13)])]),
            since,
        );
        // Reported again, then with 15 missing too: 15 counts, once.
        c.nethernet(
            &nethernet(Dir::S2c, 6, 0, vec![sack(11, vec![(12, 13)])]),
            since,
        );
        c.nethernet(&nethernet(Dir::C2s, 7, 0, vec![data(16)]), since);
        c.nethernet(
            &nethernet(Dir::S2c, 8, 0, vec![sack(11, vec![(12, 13), (15, 15)])]),
            since,
        );
        // 12 and 13 sent again; 11 again, seen by its receiver.
        c.nethernet(
            &nethernet(Dir::C2s, 20, 1, vec![data(12), data(13), data(11)]),
            since,
        );
        let f = &c.flows[&1];
        assert_eq!(f.packets, [4, 3]);
        assert_eq!(f.bytes, [400, 300]);
        assert_eq!(f.nacked, [3, 0]);
        assert_eq!(f.gaps, [3, 0]);
        assert_eq!(f.resends[0].seen(), 1);
        assert_eq!(f.rtt[0].items(), [(5_000, 5.0)]);
        assert_eq!(f.words().transport, "nethernet");
        assert_eq!(
            FlowPlot::blank(2, (f.client, f.server), since)
                .words()
                .transport,
            "raknet"
        );
    }

    #[test]
    fn buckets_fill_without_widening() {
        let mut b = Buckets::new(1_000, 8);
        b.add(0, CH_BYTES, 10);
        b.add(999, CH_BYTES, 5);
        b.add(1_000, CH_BYTES + 1, 7);
        b.add(7_999, CH_GAPS, 1);
        assert_eq!(b.width_us(), 1_000);
        assert_eq!(b.len(), 8);
        assert_eq!(b.series(CH_BYTES), vec![15, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_BYTES + 1), vec![0, 7, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_GAPS)[7], 1);
    }

    #[test]
    fn buckets_widen_by_pairs_and_keep_sums() {
        let mut b = Buckets::new(1_000, 8);
        for t in 0..8u64 {
            b.add(t * 1_000, CH_BYTES, t + 1);
        }
        // 8 ms: past 8 buckets of 1 ms, so 2 ms wide, then 4 ms.
        b.add(8_000, CH_BYTES, 100);
        assert_eq!(b.width_us(), 2_000);
        assert_eq!(b.series(CH_BYTES), vec![3, 7, 11, 15, 100]);
        b.add(31_999, CH_NACKED, 2);
        assert_eq!(b.width_us(), 4_000);
        assert_eq!(b.len(), 8);
        assert_eq!(b.series(CH_BYTES), vec![10, 26, 100, 0, 0, 0, 0, 0]);
        assert_eq!(b.series(CH_NACKED)[7], 2);
        let total: u64 = b.series(CH_BYTES).iter().sum();
        assert_eq!(total, 36 + 100);
    }

    #[test]
    fn buckets_stay_bounded_for_any_time() {
        let mut b = Buckets::new(1_000, MAX_BUCKETS);
        b.add(0, CH_BYTES, 1);
        b.add(u64::MAX, CH_BYTES, 1);
        b.add(u64::MAX / 2, CH_BYTES + 1, u64::MAX);
        b.add(u64::MAX / 2, CH_BYTES + 1, 5);
        assert!(b.len() <= MAX_BUCKETS);
        assert_eq!(b.series(CH_BYTES).iter().sum::<u64>(), 2);
        assert_eq!(b.series(CH_BYTES + 1).iter().sum::<u64>(), u64::MAX);
        // An unknown series is ignored.
        b.add(5, 99, 1);
        assert_eq!(b.series(99).iter().sum::<u64>(), 0);
    }

    #[test]
    fn buckets_for_a_ten_second_flow() {
        // lossy.pcap lasts 10.752436 s: 64 ms buckets, 169 of them.
        let mut b = Buckets::new(BASE_BUCKET_US, MAX_BUCKETS);
        b.add(0, CH_BYTES, 1);
        b.add(10_752_436, CH_BYTES, 1);
        assert_eq!(b.width_us(), 64_000);
        assert_eq!(b.len(), 169);
    }

    #[test]
    fn thinning_keeps_every_item_under_the_cap() {
        let mut t = Thinned::new(10);
        for i in 0..10 {
            t.push(i);
        }
        assert_eq!(t.items(), &(0..10).collect::<Vec<_>>()[..]);
        assert_eq!(t.stride(), 1);
    }

    #[test]
    fn thinning_is_bounded_and_even() {
        let mut t = Thinned::new(10);
        for i in 0..1_000u64 {
            t.push(i);
            assert!(t.items().len() <= 10);
        }
        assert_eq!(t.seen(), 1_000);
        let s = t.stride();
        assert!(s >= 100, "stride {s}");
        // Evenly spaced from the first, every `stride`-th.
        for (k, &v) in t.items().iter().enumerate() {
            assert_eq!(v, k as u64 * s);
        }
        // Still covers the whole run, not just its start.
        assert!(*t.items().last().unwrap() >= 1_000 - 2 * s);
    }

    #[test]
    fn thinning_an_odd_cap_rounds_up() {
        let mut t = Thinned::new(3);
        for i in 0..9u64 {
            t.push(i);
        }
        assert!(t.items().len() <= 4);
        assert_eq!(t.items(), &[0, 4, 8]);
    }

    #[test]
    fn nack_range_lengths() {
        assert_eq!(range_len(5, 5), 1);
        assert_eq!(range_len(5, 9), 5);
        // 24-bit numbers wrap.
        assert_eq!(range_len(0xff_fffe, 1), 4);
        assert_eq!(range_len(1, 0), 1 << 24);
    }
}
