//! Finding RakNet in UDP and decoding each packet of it.
//!
//! A flow (an endpoint pair) becomes RakNet when an offline message is seen
//! on it (id plus magic), when one of its ports is forced with `-d`, or, with
//! heuristics on, when a datagram parses strictly to its end. Other UDP is
//! counted and skipped. Roles come from the messages only one side sends: a
//! ping, Open Connection Request 1 or 2, ConnectionRequest or
//! NewIncomingConnection comes from the client; a pong, Open Connection Reply
//! 1 or 2, a refusal or ConnectionRequestAccepted from the server. A flow
//! first seen mid-connection, before any of these, takes the lower port (or
//! a forced port) as the server until one of them says otherwise.
//!
//! The flow table is bounded: idle flows are evicted, and past `max_flows`
//! the least recently seen goes first.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::capture::UdpDatagram;

mod heuristic;
mod owned;
mod roles;
mod table;
mod types;
use crate::wire::datagram::FLAG_VALID;

use crate::wire::{Connected, Datagram, Offline, Reader, Spare, Trace};
pub use heuristic::{looks_like_raknet, parse_decode_as};
pub(crate) use owned::{OwnedPacket, Shell, SpentPackets};
pub use types::*;

use roles::{dir_of, is_internal, learn_offline, learn_roles, sender_is_client};
use table::{key, FlowHashBuilder, FlowKey};

/// What the dissector takes for RakNet, and how much it keeps.
#[derive(Debug, Clone)]
pub struct Options {
    /// Ports forced to RakNet (`-d`).
    pub ports: Vec<u16>,
    /// Take a flow for RakNet when a datagram of it parses strictly to its end.
    pub heuristics: bool,
    /// Build the `-V` field tree.
    pub trace: bool,
    /// Most flows held at once.
    pub max_flows: usize,
    /// A flow silent this long (capture time) is forgotten.
    pub idle_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ports: Vec::new(),
            heuristics: true,
            trace: false,
            max_flows: 65_536,
            idle_timeout: Duration::from_secs(600),
        }
    }
}

/// The RakNet flow table and packet decoder.
pub struct Dissector {
    opts: Options,
    flows: HashMap<FlowKey, Flow, FlowHashBuilder>,
    next_id: u32,
    stats: DissectStats,
    since_sweep: u32,
    /// Lists of packets handed back ([`Dissector::recycle`]), for the next.
    spare: Spare<'static>,
}

impl Dissector {
    /// An empty flow table.
    pub fn new(opts: Options) -> Self {
        Dissector {
            opts,
            flows: HashMap::default(),
            next_id: 1,
            stats: DissectStats::default(),
            since_sweep: 0,
            spare: Spare::default(),
        }
    }

    /// Hand a packet back when done with it: its lists are reused for the
    /// next one, which saves an allocation per datagram.
    pub(crate) fn recycle(&mut self, p: Packet<'_>) {
        if let Body::Datagram(Some(d)) = p.body {
            self.spare.keep(d);
        }
    }

    pub(crate) fn stats(&self) -> &DissectStats {
        &self.stats
    }

    /// The next flow id, for a flow of another transport (a NetherNet
    /// conversation): flow ids stay unique across transports.
    /// The highest flow id handed out (0: none).
    pub(crate) fn last_flow_id(&self) -> u32 {
        self.next_id.wrapping_sub(1)
    }

    pub(crate) fn new_flow_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    pub(crate) fn flow(&self, a: SocketAddr, b: SocketAddr) -> Option<&Flow> {
        self.flows.get(&key(a, b))
    }

    /// Flows currently held, by id.
    #[cfg(test)]
    pub(crate) fn flows(&self) -> Vec<&Flow> {
        let mut v: Vec<&Flow> = self.flows.values().collect();
        v.sort_by_key(|f| f.id);
        v
    }

    fn forced(&self, a: SocketAddr) -> bool {
        self.opts.ports.contains(&a.port())
    }

    /// Guess the server of a flow first seen mid-connection.
    fn guess_server(&self, src: SocketAddr, dst: SocketAddr) -> SocketAddr {
        match (self.forced(src), self.forced(dst)) {
            (true, false) => src,
            (false, true) => dst,
            _ if src.port() < dst.port() => src,
            _ => dst,
        }
    }

    /// Forget idle flows and, at the bound, the least recently seen eighth
    /// (evicting in batches keeps a stream of new flows linear).
    fn sweep(&mut self, now: Duration) {
        let idle = self.opts.idle_timeout;
        let max = self.opts.max_flows.max(1);
        let before = self.flows.len();
        self.flows
            .retain(|_, f| now.saturating_sub(f.last_seen) <= idle);
        if self.flows.len() >= max {
            let keep = max - max.div_ceil(8);
            // By (last seen, id): the same flows go whatever the table's
            // order, which its hasher's per-process keys change.
            let mut ages: Vec<(Duration, u32)> =
                self.flows.values().map(|f| (f.last_seen, f.id)).collect();
            let cut = ages.len() - keep;
            let (_, cutoff, _) = ages.select_nth_unstable(cut.saturating_sub(1));
            let cutoff = *cutoff;
            self.flows.retain(|_, f| (f.last_seen, f.id) > cutoff);
        }
        self.stats.flows_evicted += (before - self.flows.len()) as u64;
    }

    fn flow_mut(
        &mut self,
        d: &UdpDatagram,
        flow_key: FlowKey,
        client_is_src: Option<bool>,
    ) -> &mut Flow {
        // Sweep before taking the entry: the table may exceed its bound by the one flow added last.
        if self.flows.len() >= self.opts.max_flows.max(1) || self.since_sweep >= 4096 {
            self.since_sweep = 0;
            self.sweep(d.ts);
        }
        let guessed_server = self.guess_server(d.src, d.dst);
        let f = match self.flows.entry(flow_key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                self.since_sweep += 1;
                let (client, server) = match client_is_src {
                    Some(true) => (d.src, d.dst),
                    Some(false) => (d.dst, d.src),
                    None if guessed_server == d.src => (d.dst, d.src),
                    None => (d.src, d.dst),
                };
                let id = self.next_id;
                self.next_id = self.next_id.wrapping_add(1);
                self.stats.flows += 1;
                v.insert(Flow {
                    id,
                    client,
                    server,
                    roles_known: client_is_src.is_some(),
                    protocol: None,
                    mtu: None,
                    client_guid: None,
                    server_guid: None,
                    last_seen: d.ts,
                    packets: 0,
                })
            }
        };
        if let Some(c) = client_is_src {
            learn_roles(f, d, c);
        }
        f.last_seen = d.ts;
        f.packets += 1;
        f
    }

    /// Decode one UDP datagram; `None` when it is not RakNet.
    pub fn dissect<'a>(&mut self, d: &'a UdpDatagram) -> Option<Packet<'a>> {
        let p = &d.payload[..];
        let truncated = d.truncated();
        let trace = self.opts.trace;
        let reader = || {
            let r = Reader::new(p);
            if trace {
                r.traced()
            } else {
                r
            }
        };

        if let Some(id) = crate::wire::offline_id(p) {
            let mut r = reader();
            let parsed = Offline::parse(&mut r);
            let mut anomalies = Vec::new();
            let msg = match parsed {
                Ok(m) => {
                    if r.remaining() > 0 {
                        let n = r.remaining();
                        let at = r.offset();
                        r.rest_bytes("trailing bytes");
                        anomalies.push(Anomaly {
                            kind: "trailing_bytes",
                            detail: format!("{n} bytes after the message at byte {at}"),
                        });
                    }
                    Some(m)
                }
                Err(e) => {
                    anomalies.push(Anomaly::from_wire(&e, truncated));
                    None
                }
            };
            let flow = self.flow_mut(d, key(d.src, d.dst), sender_is_client(id));
            if let Some(m) = &msg {
                learn_offline(flow, m);
            }
            let (flow_id, dir) = (flow.id, dir_of(flow, d.src));
            return Some(self.finish(
                d,
                flow_id,
                dir,
                Body::Offline { id, msg },
                anomalies,
                r.take_trace(),
            ));
        }

        let flow_key = key(d.src, d.dst);
        // One lookup for a known flow: counted here, and its id and direction kept.
        let seen = self.flows.get_mut(&flow_key).map(|f| {
            f.last_seen = d.ts;
            f.packets += 1;
            (f.id, dir_of(f, d.src))
        });
        let known = seen.is_some();
        let forced = self.forced(d.src) || self.forced(d.dst);
        let detection = if known {
            Detection::Handshake
        } else if forced {
            Detection::Port
        } else if self.opts.heuristics && looks_like_raknet(p) {
            Detection::Heuristic
        } else {
            self.stats.not_raknet += 1;
            return None;
        };
        if p.first().is_none_or(|b| b & FLAG_VALID == 0) {
            // Not offline and not a datagram. On a RakNet flow it is shown (a
            // bare 0x15 is rust-raknet's close signal); elsewhere it is not RakNet.
            if detection != Detection::Handshake {
                self.stats.not_raknet += 1;
                return None;
            }
            let id = p.first().copied().unwrap_or(0);
            let anomaly = if p.len() <= 2 {
                Anomaly {
                    kind: "short_datagram",
                    detail: format!(
                        "{}-byte datagram, which the original library ignores (2 bytes or less)",
                        p.len()
                    ),
                }
            } else {
                Anomaly {
                    kind: "malformed",
                    detail: format!(
                        "malformed at byte 0: message id ({id:#04x} without the offline magic, and not a datagram)"
                    ),
                }
            };
            let (flow_id, dir) = match seen {
                Some(s) => s,
                None => {
                    let flow = self.flow_mut(d, flow_key, None);
                    (flow.id, dir_of(flow, d.src))
                }
            };
            let trace = trace.then(|| {
                let mut r = Reader::new(p).traced();
                r.rest_bytes("data");
                r.take_trace().unwrap_or_default()
            });
            return Some(self.finish(
                d,
                flow_id,
                dir,
                Body::Offline { id, msg: None },
                vec![anomaly],
                trace,
            ));
        }

        let mut r = reader();
        let lax = Datagram::parse_lax_in(&mut r, self.spare.take());
        let mut anomalies = Vec::new();
        if let Some(e) = &lax.error {
            anomalies.push(Anomaly::from_wire(e, truncated));
        }
        let mut trace = r.take_trace();
        let mut client_guid_seen = None;
        // A message only one role sends says who the client is.
        let mut client_is_src = None;
        if let Some(Datagram::Data(dd)) = &lax.value {
            let mut nested = Vec::with_capacity(if trace.is_some() {
                dd.capsules.len()
            } else {
                0
            });
            for c in &dd.capsules {
                if c.reliability.is_ack_receipt() {
                    anomalies.push(Anomaly {
                        kind: "ack_receipt_on_wire",
                        detail: format!(
                            "reliability {} {} is local and never sent by the original",
                            c.reliability.0,
                            c.reliability.name()
                        ),
                    });
                }
                let whole = c.split.is_none();
                let base = offset_in(p, c.payload);
                let id = c.payload.first().copied().unwrap_or(0);
                let t = if whole && is_internal(id) {
                    let mut cr = Reader::with_base(c.payload, base);
                    if trace.is_some() {
                        cr = cr.traced();
                    }
                    match Connected::parse(&mut cr) {
                        Err(e) => anomalies.push(Anomaly::from_wire(&e, truncated)),
                        Ok(Connected::ConnectionRequest { client_guid, .. }) => {
                            client_guid_seen = Some(client_guid);
                            client_is_src = Some(true);
                        }
                        Ok(Connected::NewIncomingConnection { .. }) => client_is_src = Some(true),
                        Ok(Connected::ConnectionRequestAccepted { .. }) => {
                            client_is_src = Some(false)
                        }
                        Ok(_) => {}
                    }
                    cr.take_trace()
                } else {
                    None
                };
                if trace.is_some() {
                    nested.push(t);
                }
            }
            if let Some(t) = trace.as_mut() {
                nest_messages(t, nested);
            }
        }
        let (flow_id, dir) = match (seen, client_is_src) {
            (Some(s), None) => s,
            (Some(s), Some(c)) => match self.flows.get_mut(&flow_key) {
                Some(flow) => {
                    learn_roles(flow, d, c);
                    (flow.id, dir_of(flow, d.src))
                }
                None => s,
            },
            (None, c) => {
                let flow = self.flow_mut(d, flow_key, c);
                (flow.id, dir_of(flow, d.src))
            }
        };
        if client_guid_seen.is_some() {
            if let Some(flow) = self.flows.get_mut(&flow_key) {
                flow.client_guid = client_guid_seen;
            }
        }
        Some(self.finish(d, flow_id, dir, Body::Datagram(lax.value), anomalies, trace))
    }

    fn finish<'a>(
        &mut self,
        d: &'a UdpDatagram,
        flow: u32,
        dir: Dir,
        body: Body<'a>,
        anomalies: Vec<Anomaly>,
        trace: Option<Trace>,
    ) -> Packet<'a> {
        self.stats.raknet_packets += 1;
        if anomalies.iter().any(|a| a.kind == "malformed") {
            self.stats.malformed += 1;
        }
        Packet {
            frame: d.frame,
            ts: d.ts,
            src: d.src,
            dst: d.dst,
            flow,
            dir,
            body,
            anomalies,
            trace,
            payload: &d.payload,
            udp_len: d.udp_len,
        }
    }
}

/// Offset of `inner` within `outer` (a subslice of it).
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

/// Insert each capsule's message trace after that capsule's `payload` field.
fn nest_messages(t: &mut Trace, nested: Vec<Option<Trace>>) {
    if nested.iter().all(Option::is_none) {
        return;
    }
    let mut out = Vec::with_capacity(t.fields.len());
    let mut it = nested.into_iter();
    for f in t.fields.drain(..) {
        let is_payload = f.name == "payload";
        let depth = f.depth;
        out.push(f);
        if is_payload {
            if let Some(Some(n)) = it.next() {
                for mut g in n.fields {
                    g.depth = g.depth.saturating_add(depth + 1);
                    out.push(g);
                }
            }
        }
    }
    t.fields = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ids::{CONNECTION_REQUEST, CONNECTION_REQUEST_ACCEPTED};

    #[test]
    fn decode_as_spellings() {
        assert_eq!(parse_decode_as("19132"), Ok(19132));
        assert_eq!(parse_decode_as("udp.port==7777,raknet"), Ok(7777));
        assert!(parse_decode_as("udp.port==53,dns").is_err());
        assert!(parse_decode_as("x").is_err());
    }

    use crate::wire::{AckList, AckRange};

    fn udp(src: &str, dst: &str, payload: Vec<u8>) -> UdpDatagram {
        UdpDatagram {
            frame: 1,
            ts: Duration::from_secs(1),
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            udp_len: payload.len(),
            payload,
            icmp: None,
            tcp: None,
        }
    }

    fn emit(o: &Offline<'_>) -> Vec<u8> {
        let mut v = Vec::new();
        o.emit(&mut v);
        v
    }

    #[test]
    fn handshake_makes_a_flow_and_sets_roles() {
        let mut d = Dissector::new(Options::default());
        let req = udp(
            "127.0.0.1:50000",
            "127.0.0.1:19132",
            emit(&Offline::OpenConnectionRequest1 {
                protocol: 6,
                mtu: 1492,
            }),
        );
        let p = d.dissect(&req).unwrap();
        assert_eq!((p.flow, p.dir, p.kind()), (1, Dir::C2s, "offline"));
        assert!(p.anomalies.is_empty());
        // A data datagram on that flow, from the server, is decoded.
        let data = udp(
            "127.0.0.1:19132",
            "127.0.0.1:50000",
            vec![0x84, 0, 0, 0, 0x00, 0x00, 0x08, 0x86],
        );
        let p = d.dissect(&data).unwrap();
        assert_eq!((p.flow, p.dir, p.kind()), (1, Dir::S2c, "data"));
    }

    #[test]
    fn a_bare_byte_on_a_raknet_flow_is_shown_not_malformed() {
        let mut d = Dissector::new(Options::default());
        let req = udp(
            "127.0.0.1:50000",
            "127.0.0.1:19132",
            emit(&Offline::OpenConnectionRequest1 {
                protocol: 11,
                mtu: 1400,
            }),
        );
        d.dissect(&req).unwrap();
        let bye = udp("127.0.0.1:50000", "127.0.0.1:19132", vec![0x15]);
        let p = d.dissect(&bye).unwrap();
        assert_eq!(p.anomalies[0].kind, "short_datagram");
    }

    #[test]
    fn the_start_up_datagram_is_not_raknet() {
        let mut d = Dissector::new(Options::default());
        let u = udp("127.0.0.1:19132", "127.0.0.1:19132", vec![0, 0, 0, 0]);
        assert!(d.dissect(&u).is_none());
        assert_eq!(d.stats().not_raknet, 1);
    }

    #[test]
    fn heuristic_finds_mid_connection_flows_and_can_be_turned_off() {
        let mut ack = Vec::new();
        Datagram::Ack(AckList {
            flags: 0xc0,
            arrival_rate: None,
            ranges: vec![AckRange { min: 3, max: 7 }],
        })
        .emit(&mut ack);
        let u = udp("10.0.0.2:60000", "10.0.0.1:19132", ack);
        let mut d = Dissector::new(Options::default());
        let p = d.dissect(&u).unwrap();
        assert_eq!((p.kind(), p.dir), ("ack", Dir::C2s));
        let mut d = Dissector::new(Options {
            heuristics: false,
            ..Options::default()
        });
        assert!(d.dissect(&u).is_none());
        let mut d = Dissector::new(Options {
            heuristics: false,
            ports: vec![19132],
            ..Options::default()
        });
        assert!(d.dissect(&u).is_some());
    }

    #[test]
    fn dns_is_not_raknet() {
        let dns = hex_bytes("abcd0100000100000000000003777777076578616d706c6503636f6d0000010001");
        let mut d = Dissector::new(Options::default());
        assert!(d
            .dissect(&udp("10.0.0.2:5353", "10.0.0.1:53", dns))
            .is_none());
    }

    #[test]
    fn malformed_capsule_is_reported_with_offset() {
        let mut d = Dissector::new(Options {
            ports: vec![19132],
            ..Options::default()
        });
        let u = udp(
            "127.0.0.1:50000",
            "127.0.0.1:19132",
            vec![0x84, 0, 0, 0, 0x60, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 40, 0x86],
        );
        let p = d.dissect(&u).unwrap();
        assert_eq!(p.anomalies[0].kind, "malformed");
        assert_eq!(
            p.anomalies[0].detail,
            "malformed at byte 13: order channel (40, at most 31)"
        );
    }

    #[test]
    fn snaplen_cut_is_truncated_not_malformed() {
        let mut d = Dissector::new(Options {
            ports: vec![19132],
            ..Options::default()
        });
        let mut u = udp(
            "127.0.0.1:50000",
            "127.0.0.1:19132",
            vec![0x84, 0, 0, 0, 0x00, 0x00, 0x40],
        );
        u.udp_len = 15;
        let p = d.dissect(&u).unwrap();
        assert_eq!(p.anomalies[0].kind, "truncated");
    }

    #[test]
    fn flow_table_is_bounded() {
        let mut d = Dissector::new(Options {
            max_flows: 8,
            ..Options::default()
        });
        for port in 0..100u16 {
            let u = udp(
                &format!("127.0.0.1:{}", 1000 + port),
                "127.0.0.1:19132",
                emit(&Offline::OpenConnectionRequest1 {
                    protocol: 6,
                    mtu: 576,
                }),
            );
            d.dissect(&u).unwrap();
            assert!(d.flows.len() <= 8);
        }
        assert_eq!(d.stats().flows, 100);
    }

    /// The UDP datagrams of `samples/handshake.pcap` (the original library;
    /// client 127.0.0.1:19141, server 127.0.0.1:19140) from the first data
    /// datagram on (the ConnectionRequest), skipping `skip` more, with the
    /// client moved to port 1141: below the server's. (Only the UDP ports
    /// change: the roles must come from the messages.)
    fn mid_session(skip: usize) -> Vec<UdpDatagram> {
        let mut v = crate::capture::testutil::handshake_with_client_below_server();
        let first_data = v.iter().position(|d| d.payload[0] >= 0x80).unwrap();
        v.split_off(first_data + skip)
    }

    fn dirs(d: &mut Dissector, datagrams: &[UdpDatagram]) -> Vec<Dir> {
        datagrams
            .iter()
            .map(|u| d.dissect(u).unwrap().dir)
            .collect()
    }

    fn true_dirs(datagrams: &[UdpDatagram]) -> Vec<Dir> {
        datagrams
            .iter()
            .map(|u| {
                if u.src.port() == 1141 {
                    Dir::C2s
                } else {
                    Dir::S2c
                }
            })
            .collect()
    }

    #[test]
    fn a_connection_request_from_the_lower_port_makes_it_the_client() {
        let v = mid_session(0);
        assert_eq!(
            v[0].payload[10], CONNECTION_REQUEST,
            "a datagram with a ConnectionRequest"
        );
        let mut d = Dissector::new(Options::default());
        assert_eq!(dirs(&mut d, &v), true_dirs(&v));
        let f = d.flows()[0];
        assert_eq!((f.client.port(), f.server.port()), (1141, 19140));
        assert!(f.roles_known);
        assert_eq!(f.client_guid, Some(0x0006_60d5_c342_be73));
    }

    #[test]
    fn roles_guessed_by_port_follow_the_first_message_that_tells() {
        // The server's ACK of the ConnectionRequest first: a guess by port
        // (the lower, the client's, taken as the server), wrong until
        // ConnectionRequestAccepted comes from the other side.
        let v = mid_session(1);
        assert_eq!(v[1].payload[14], CONNECTION_REQUEST_ACCEPTED);
        let mut d = Dissector::new(Options::default());
        let got = dirs(&mut d, &v);
        let want = true_dirs(&v);
        assert_eq!(got[0], want[0].reverse(), "the guess");
        assert_eq!(got[1..], want[1..], "corrected from the accept on");
        let f = d.flows()[0];
        assert_eq!((f.client.port(), f.server.port()), (1141, 19140));
        // A forced port does not outweigh the messages either.
        let mut d = Dissector::new(Options {
            ports: vec![1141],
            ..Options::default()
        });
        assert_eq!(dirs(&mut d, &mid_session(0)), true_dirs(&mid_session(0)));
    }

    #[test]
    fn roles_set_by_a_message_stay() {
        let v = mid_session(0);
        let mut d = Dissector::new(Options::default());
        d.dissect(&v[0]).unwrap();
        // The same ConnectionRequest from the server's side, as if it were the client.
        let mut reversed = v[0].clone();
        std::mem::swap(&mut reversed.src, &mut reversed.dst);
        assert_eq!(d.dissect(&reversed).unwrap().dir, Dir::S2c);
        assert_eq!(d.flows()[0].client.port(), 1141);
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
