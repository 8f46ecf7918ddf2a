//! One NetherNet connection's UDP 5-tuple as a capture shows it, read in
//! the sans-IO manner of `session`: fed each datagram with its sender, it
//! yields what happened ([`Event`]): STUN checks, the DTLS handshake in the
//! clear and its alerts, the data channels DCEP opened, every message each
//! side's SCTP stack delivered, and the NetherNet batches reassembled from
//! the reliable channel's segments, in the order each application got
//! them. The DTLS records open when a key log names the association's
//! ClientHello random; without one, the handshake and the counts are all
//! there is.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::{classify, dcep, delivery, dtls, framing, sctp, stun, Demux};

/// The two directions of an association, by the DTLS role of the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// Sent by the DTLS client (the SDP's `setup:active` side).
    DtlsClient,
    /// Sent by the DTLS server.
    DtlsServer,
}

/// A data channel DCEP opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// The stream it runs on (both directions use it).
    pub stream: u16,
    /// Its label.
    pub label: String,
    /// Whether its messages are delivered in order.
    pub ordered: bool,
    /// How reliable it is.
    pub reliability: dcep::Reliability,
    /// Who opened it (the NetherNet client, normally).
    pub opened_by: SocketAddr,
}

/// The data channel a message came on, as its records name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataChannel {
    /// The SCTP stream.
    pub stream: u16,
    /// The channel's label (`ReliableDataChannel`), when DCEP opened it.
    pub label: Option<String>,
    /// The message's payload protocol identifier (53: binary).
    pub ppid: u32,
}

/// What a datagram showed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A STUN message: its class, USERNAME, whether it nominates the pair.
    Stun {
        /// Request, indication or response.
        class: stun::Class,
        /// USERNAME, when it has one.
        username: Option<String>,
        /// Whether it nominates the pair (USE-CANDIDATE).
        use_candidate: bool,
        /// Whether FINGERPRINT holds (`None` without one).
        fingerprint_ok: Option<bool>,
        /// Whether MESSAGE-INTEGRITY verifies with the ice-pwd the
        /// signaling gave its key's owner (a request's receiver, a
        /// response's sender); `None` without one or without that SDP.
        integrity_ok: Option<bool>,
        /// An error response's ERROR-CODE: code and reason phrase.
        error: Option<(u16, String)>,
    },
    /// A DTLS record of the datagram, in order (before what it held).
    Record(RecordSeen),
    /// The chunks of a decrypted SCTP packet, in order.
    Chunks(Vec<ChunkSeen>),
    /// A whole handshake message in the clear.
    Handshake {
        /// The side that sent it.
        from: SocketAddr,
        /// Its type ([`dtls::handshake_name`]).
        kind: u8,
    },
    /// The DTLS version and cipher suite the ServerHello chose.
    Negotiated {
        /// The version (0xFEFD: DTLS 1.2).
        version: u16,
        /// The suite's number ([`dtls::suite_name`]).
        suite: u16,
    },
    /// The SHA-256 fingerprint of a side's certificate.
    Certificate {
        /// The side that sent it.
        from: SocketAddr,
        /// Its SHA-256, as an SDP writes it.
        fingerprint: String,
    },
    /// An alert: in the clear, or decrypted (`level`, `description`); an
    /// encrypted one without keys is `None`.
    Alert {
        /// The side that sent it.
        from: SocketAddr,
        /// `(level, description)`: 1 warning, 2 fatal; [`dtls::alert_name`].
        alert: Option<(u8, u8)>,
    },
    /// The key log opened the association: its line (`CLIENT_RANDOM
    /// <client random> <master secret>`, hex), for a capture written with
    /// its secrets.
    Keyed(String),
    /// A DATA chunk whose TSN its receiver had seen: sent again.
    Resent(u32),
    /// A channel opened.
    ChannelOpen(Channel),
    /// A message a side's stack delivered to a channel.
    Message {
        /// The side that received it.
        to: SocketAddr,
        /// Its stream.
        stream: u16,
        /// Its payload protocol identifier.
        ppid: u32,
        /// Its bytes (with NetherNet's segment count first).
        data: Vec<u8>,
    },
    /// A NetherNet batch, reassembled on the reliable channel or whole on
    /// the unreliable one (a Bedrock batch without 0xFE: the compression
    /// byte first, after the first one each way).
    Batch {
        /// The side that received it.
        to: SocketAddr,
        /// The channel's stream.
        stream: u16,
        /// The batch's bytes.
        data: Vec<u8>,
    },
    /// Something wrong with the traffic: what, and in words.
    Anomaly {
        /// What kind of thing.
        kind: Problem,
        /// In words.
        detail: String,
    },
}

/// A DTLS record, as a datagram's line shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSeen {
    /// Its content type ([`dtls::content`]).
    pub content: u8,
    /// Its epoch.
    pub epoch: u16,
    /// Its sequence number within the epoch.
    pub seq: u64,
    /// Its length, sealed or not.
    pub len: usize,
    /// Whether it was read: in the clear, or opened with the key log.
    pub opened: bool,
    /// A handshake record in the clear: the type of each handshake
    /// message (or fragment of one) it holds.
    pub handshakes: Vec<u8>,
}

/// An SCTP chunk, as a datagram's line shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkSeen {
    /// Its type ([`sctp::chunk`]).
    pub kind: u8,
    /// Its flags.
    pub flags: u8,
    /// DATA, I-DATA: its TSN.
    pub tsn: Option<u32>,
    /// DATA, I-DATA: its stream.
    pub stream: Option<u16>,
    /// DATA: the stream sequence number; I-DATA: the message id.
    pub message: Option<u32>,
    /// DATA, I-DATA: the payload protocol identifier, when it carries one.
    pub ppid: Option<u32>,
    /// DATA, I-DATA: the bytes of the fragment.
    pub len: Option<usize>,
    /// SACK, FORWARD-TSN, SHUTDOWN: the cumulative TSN.
    pub cumulative_tsn: Option<u32>,
    /// SACK: its gap blocks and duplicate TSNs.
    pub gaps: Option<usize>,
    /// SACK: duplicate TSNs reported.
    pub duplicates: Option<usize>,
    /// SACK: the TSNs its gap blocks say are missing, as inclusive ranges
    /// (between the cumulative TSN and the last block).
    pub holes: Vec<(u32, u32)>,
}

impl ChunkSeen {
    /// What a line shows of `c`.
    fn of(c: &sctp::Chunk<'_>) -> ChunkSeen {
        let mut s = ChunkSeen {
            kind: c.kind,
            flags: c.flags,
            ..ChunkSeen::default()
        };
        match &c.body {
            sctp::Body::Data(d) => {
                (s.tsn, s.stream, s.message) = (Some(d.tsn), Some(d.stream), Some(d.message));
                (s.ppid, s.len) = (d.ppid, Some(d.payload.len()));
            }
            sctp::Body::Sack(k) => {
                s.cumulative_tsn = Some(k.cumulative_tsn);
                (s.gaps, s.duplicates) = (Some(k.gaps.len()), Some(k.duplicates.len()));
                // Offsets are from the cumulative TSN; the missing run
                // before each block starts after the last one seen.
                let mut next = 1u16;
                for &(start, end) in &k.gaps {
                    if start > next {
                        let tsn = |o: u16| k.cumulative_tsn.wrapping_add(u32::from(o));
                        s.holes.push((tsn(next), tsn(start - 1)));
                    }
                    next = next.max(end.saturating_add(1));
                }
            }
            sctp::Body::ForwardTsn(f) => s.cumulative_tsn = Some(f.new_cumulative_tsn),
            sctp::Body::Shutdown(t) => s.cumulative_tsn = Some(*t),
            sctp::Body::Init(_) | sctp::Body::Other(_) => {}
        }
        s
    }
}

/// What kind of thing went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A datagram on the 5-tuple that is neither STUN nor DTLS.
    NotWebrtc,
    /// Bytes that do not parse as what they claim to be.
    Malformed,
    /// A record that did not open (no key, or the wrong one), or a suite
    /// this tool does not decrypt.
    Undecryptable,
    /// An SCTP packet whose CRC-32C does not match.
    Checksum,
    /// Messages the sender gave up on (FORWARD-TSN).
    Abandoned,
    /// A bound was reached and something held was let go.
    Bounded,
    /// NetherNet segments that do not follow each other.
    Framing,
}

impl Problem {
    /// Its name, as a record would say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::NotWebrtc => "not_webrtc",
            Problem::Malformed => "malformed",
            Problem::Undecryptable => "undecryptable",
            Problem::Checksum => "checksum",
            Problem::Abandoned => "abandoned",
            Problem::Bounded => "bound_exceeded",
            Problem::Framing => "framing",
        }
    }
}

/// Counts of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// STUN messages sent.
    pub stun: u64,
    /// DTLS records sent.
    pub dtls_records: u64,
    /// Records after the handshake, sealed.
    pub encrypted: u64,
    /// Of those, opened with the key log.
    pub decrypted: u64,
    /// SCTP packets sent (decrypted).
    pub sctp_packets: u64,
    /// DATA chunks sent again.
    pub retransmitted: u64,
    /// Messages received.
    pub messages: u64,
    /// NetherNet batches received.
    pub batches: u64,
}

/// The label of NetherNet's reliable channel, which splits batches into
/// segments.
pub const RELIABLE: &str = "ReliableDataChannel";
/// The label of its unreliable channel (unordered, not resent), whose
/// messages are whole batches, their segment count always 0.
pub const UNRELIABLE: &str = "UnreliableDataChannel";

/// One UDP 5-tuple: ICE, DTLS, SCTP and the channels on it.
#[derive(Debug)]
pub struct Association {
    /// The DTLS client's address (who sent the ClientHello).
    pub dtls_client: Option<SocketAddr>,
    client_random: Option<[u8; 32]>,
    /// The cipher suite the ServerHello chose.
    pub suite: Option<u16>,
    /// The DTLS version it chose (0xFEFD 1.2, 0xFEFC 1.3).
    pub version: Option<u16>,
    keys: Option<dtls::Keys>,
    /// The ServerHello's random, while no key opens the records: a key
    /// that comes later (a capture's Decryption Secrets Block written
    /// when the key became known, after the hellos) still opens them.
    server_random: Option<[u8; 32]>,
    /// Whether the key log lacked this association's random (said once).
    missing_key_said: bool,
    flights: BTreeMap<SocketAddr, dtls::Reassembly>,
    receivers: BTreeMap<SocketAddr, delivery::Receiver>,
    framers: BTreeMap<(SocketAddr, u16), framing::Reassembler>,
    /// The channels DCEP opened, by stream.
    pub channels: BTreeMap<u16, Channel>,
    /// Counts by sending side (by receiving side for `messages` and `batches`).
    pub counts: BTreeMap<SocketAddr, Counts>,
    limits: delivery::Limits,
    mid_stream: bool,
    /// The side that closed the association (a close_notify alert read).
    pub closed_by: Option<SocketAddr>,
    /// The controlling ICE agent: the first sender of a binding request
    /// with ICE-CONTROLLING (the offerer, in full ICE).
    pub controlling: Option<SocketAddr>,
    /// Each side's ICE ufrag, as the checks' USERNAMEs name them.
    ufrags: BTreeMap<SocketAddr, String>,
}

impl Association {
    /// An association seen from its first datagram (`mid_stream` when
    /// the capture began after it started: no handshake, streams numbered
    /// from the first message seen).
    pub fn new(limits: delivery::Limits, mid_stream: bool) -> Self {
        Association {
            dtls_client: None,
            client_random: None,
            suite: None,
            version: None,
            keys: None,
            server_random: None,
            missing_key_said: false,
            flights: BTreeMap::new(),
            receivers: BTreeMap::new(),
            framers: BTreeMap::new(),
            channels: BTreeMap::new(),
            counts: BTreeMap::new(),
            limits,
            mid_stream,
            closed_by: None,
            controlling: None,
            ufrags: BTreeMap::new(),
        }
    }

    /// Whether the records open (the key log named this association).
    pub fn decrypts(&self) -> bool {
        self.keys.is_some()
    }

    /// Bytes held for later delivery: fragments, messages waiting for
    /// their turn, batches under way.
    pub fn held(&self) -> usize {
        let receivers: usize = self.receivers.values().map(delivery::Receiver::held).sum();
        let framers: usize = self.framers.values().map(framing::Reassembler::held).sum();
        receivers + framers
    }

    /// Lets go of everything [`Association::held`] counts, and reads on as
    /// from the middle of the streams; returns the bytes let go.
    pub fn shed(&mut self) -> usize {
        let held = self.held();
        self.receivers.clear();
        self.framers.clear();
        self.mid_stream = true;
        held
    }

    /// Take one datagram from `from` to `to`.
    pub fn datagram(
        &mut self,
        from: SocketAddr,
        to: SocketAddr,
        payload: &[u8],
        (keylog, ice): (&dtls::KeyLog, &stun::IcePasswords),
        out: &mut Vec<Event>,
    ) {
        match classify(payload) {
            Demux::Stun => self.stun((from, to), payload, ice, out),
            Demux::Dtls => self.dtls(from, to, payload, keylog, out),
            _ => out.push(Event::Anomaly {
                kind: Problem::NotWebrtc,
                detail: format!(
                    "a datagram of {} bytes that is neither STUN nor DTLS (first byte {:#04x})",
                    payload.len(),
                    payload.first().copied().unwrap_or(0)
                ),
            }),
        }
    }

    fn stun(
        &mut self,
        (from, to): (SocketAddr, SocketAddr),
        payload: &[u8],
        ice: &stun::IcePasswords,
        out: &mut Vec<Event>,
    ) {
        self.counts.entry(from).or_default().stun += 1;
        match stun::Message::parse(payload) {
            Ok(m) => {
                let request = m.class == stun::Class::Request;
                if request && self.controlling.is_none() {
                    // ICE-CONTROLLED names the other side.
                    self.controlling = m
                        .role()
                        .map(|(controlling, _)| if controlling { from } else { to });
                }
                // A request's USERNAME is "receiver:sender".
                if let Some((r, s)) = m
                    .username()
                    .filter(|_| request)
                    .and_then(|u| u.split_once(':'))
                {
                    self.ufrags.entry(to).or_insert_with(|| r.to_string());
                    self.ufrags.entry(from).or_insert_with(|| s.to_string());
                }
                let owner = if request { to } else { from };
                let integrity_ok = self
                    .ufrags
                    .get(&owner)
                    .and_then(|u| ice.get(u))
                    .and_then(|pwd| m.integrity(pwd.as_bytes()));
                out.push(Event::Stun {
                    class: m.class,
                    username: m.username().map(str::to_string),
                    use_candidate: m.use_candidate(),
                    fingerprint_ok: m.fingerprint_ok(),
                    integrity_ok,
                    error: m
                        .error_code()
                        .map(|(c, r)| (c, r.chars().take(128).collect())),
                })
            }
            Err(e) => out.push(Event::Anomaly {
                kind: Problem::Malformed,
                detail: format!("STUN {e}"),
            }),
        }
    }

    fn dtls(
        &mut self,
        from: SocketAddr,
        to: SocketAddr,
        payload: &[u8],
        keylog: &dtls::KeyLog,
        out: &mut Vec<Event>,
    ) {
        let records = match dtls::records(payload) {
            Ok(r) => r,
            Err(e) => {
                return out.push(Event::Anomaly {
                    kind: Problem::Malformed,
                    detail: format!("DTLS {e}"),
                })
            }
        };
        for r in records {
            self.counts.entry(from).or_default().dtls_records += 1;
            let mut seen = RecordSeen {
                content: r.content,
                epoch: r.epoch,
                seq: r.seq,
                len: r.fragment.len(),
                opened: r.epoch == 0 && !r.unified,
                handshakes: Vec::new(),
            };
            if r.unified {
                // DTLS 1.3 after its ServerHello: sealed, content type
                // and all; counted, not opened.
                self.counts.entry(from).or_default().encrypted += 1;
                out.push(Event::Record(seen));
                continue;
            }
            if r.epoch == 0 {
                if r.content == dtls::content::HANDSHAKE {
                    let kinds = dtls::handshakes(r.fragment, 0).unwrap_or_default();
                    seen.handshakes = kinds.iter().map(|h| h.kind).collect();
                }
                out.push(Event::Record(seen));
                self.clear(from, &r, keylog, out);
                continue;
            }
            self.counts.entry(from).or_default().encrypted += 1;
            if let (None, Some(suite), Some(sr)) = (&self.keys, self.suite, self.server_random) {
                if dtls::Suite::from_id(suite).is_some() && !keylog.is_empty() {
                    self.key(suite, &sr, keylog, true, out);
                }
            }
            let Some(keys) = &self.keys else {
                out.push(Event::Record(seen));
                if r.content == dtls::content::ALERT {
                    out.push(Event::Alert { from, alert: None });
                }
                continue;
            };
            let from_client = self.dtls_client == Some(from);
            let plain = match keys.decrypt(&r, from_client) {
                Ok(p) => p,
                Err(e) => {
                    out.push(Event::Record(seen));
                    out.push(Event::Anomaly {
                        kind: Problem::Undecryptable,
                        detail: format!("a DTLS {} record: {e}", dtls::content_name(r.content)),
                    });
                    continue;
                }
            };
            self.counts.entry(from).or_default().decrypted += 1;
            seen.opened = true;
            out.push(Event::Record(seen));
            match r.content {
                dtls::content::APPLICATION_DATA => self.sctp(from, to, &plain, out),
                dtls::content::ALERT => {
                    let alert = (plain.len() == 2).then(|| (plain[0], plain[1]));
                    self.alert(from, alert, out);
                }
                // The encrypted Finished: nothing more to read.
                _ => {}
            }
        }
    }

    /// A record of epoch 0: the handshake in the clear, or an alert.
    fn clear(
        &mut self,
        from: SocketAddr,
        r: &dtls::Record<'_>,
        keylog: &dtls::KeyLog,
        out: &mut Vec<Event>,
    ) {
        if r.content == dtls::content::ALERT {
            let alert = (r.fragment.len() == 2).then(|| (r.fragment[0], r.fragment[1]));
            return self.alert(from, alert, out);
        }
        if r.content != dtls::content::HANDSHAKE {
            return;
        }
        let fragments = match dtls::handshakes(r.fragment, r.at + 13) {
            Ok(f) => f,
            Err(e) => {
                return out.push(Event::Anomaly {
                    kind: Problem::Malformed,
                    detail: format!("DTLS {e}"),
                })
            }
        };
        for f in fragments {
            let whole = match self.flights.entry(from).or_default().push(&f) {
                Ok(Some(w)) => w,
                Ok(None) => continue,
                Err(e) => {
                    out.push(Event::Anomaly {
                        kind: Problem::Malformed,
                        detail: format!("DTLS handshake: {e}"),
                    });
                    continue;
                }
            };
            out.push(Event::Handshake {
                from,
                kind: whole.kind,
            });
            match whole.kind {
                1 => {
                    if let Ok(h) = dtls::hello(&whole.body, true) {
                        // A ClientHello after a HelloVerifyRequest has the
                        // same random.
                        self.dtls_client = Some(from);
                        self.client_random = Some(h.random);
                    }
                }
                2 => {
                    if let Ok(h) = dtls::hello(&whole.body, false) {
                        let suite = h.cipher_suites.first().copied().unwrap_or(0);
                        self.suite = Some(suite);
                        let version = h.chosen_version();
                        self.version = Some(version);
                        out.push(Event::Negotiated { version, suite });
                        if version != 0xFEFC {
                            self.server_random = Some(h.random);
                            self.key(suite, &h.random, keylog, false, out);
                        } else if !keylog.is_empty() {
                            // Its secrets are per traffic key, not a
                            // master secret: not read here.
                            out.push(Event::Anomaly {
                                kind: Problem::Undecryptable,
                                detail: "DTLS 1.3: this tool opens DTLS 1.2's records only".into(),
                            });
                        }
                    }
                }
                11 => {
                    if let Some(first) = dtls::certificates(&whole.body)
                        .ok()
                        .and_then(|c| c.first().copied())
                    {
                        out.push(Event::Certificate {
                            from,
                            fingerprint: dtls::fingerprint(first),
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// An alert read from `from`: a close_notify closes the association.
    fn alert(&mut self, from: SocketAddr, alert: Option<(u8, u8)>, out: &mut Vec<Event>) {
        if alert.is_some_and(|(_, d)| d == 0) && self.closed_by.is_none() {
            self.closed_by = Some(from);
        }
        out.push(Event::Alert { from, alert });
    }

    /// The keys, from the key log, once both randoms are known; a key
    /// log without this association's line is an anomaly (once) when
    /// `say_missing` (at the first encrypted record: its line may come
    /// after the hellos).
    fn key(
        &mut self,
        suite: u16,
        server_random: &[u8; 32],
        keylog: &dtls::KeyLog,
        say_missing: bool,
        out: &mut Vec<Event>,
    ) {
        let Some(cr) = self.client_random else { return };
        let Some(s) = dtls::Suite::from_id(suite) else {
            return out.push(Event::Anomaly {
                kind: Problem::Undecryptable,
                detail: format!(
                    "cipher suite {:#06x} ({}) is not one this tool decrypts",
                    suite,
                    dtls::suite_name(suite).unwrap_or("unknown")
                ),
            });
        };
        match keylog.master(&cr) {
            Some(m) => {
                self.keys = Some(dtls::Keys::derive(s, m, &cr, server_random));
                let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                out.push(Event::Keyed(format!(
                    "CLIENT_RANDOM {} {}",
                    hex(&cr),
                    hex(m)
                )));
            }
            None if say_missing && !keylog.is_empty() && !self.missing_key_said => {
                self.missing_key_said = true;
                out.push(Event::Anomaly {
                    kind: Problem::Undecryptable,
                    detail: "the key log has no CLIENT_RANDOM line for this association".into(),
                });
            }
            None => {}
        }
    }

    /// A decrypted record's SCTP packet, from `from` to `to`.
    fn sctp(&mut self, from: SocketAddr, to: SocketAddr, plain: &[u8], out: &mut Vec<Event>) {
        if !sctp::checksum_ok(plain) {
            out.push(Event::Anomaly {
                kind: Problem::Checksum,
                detail: "an SCTP packet whose CRC-32C does not match".into(),
            });
        }
        let p = match sctp::Packet::parse(plain) {
            Ok(p) => p,
            Err(e) => {
                return out.push(Event::Anomaly {
                    kind: Problem::Malformed,
                    detail: format!("SCTP {e}"),
                })
            }
        };
        self.counts.entry(from).or_default().sctp_packets += 1;
        out.push(Event::Chunks(p.chunks.iter().map(ChunkSeen::of).collect()));
        let (limits, mid) = (self.limits, self.mid_stream);
        let receiver = self.receivers.entry(to).or_insert_with(|| {
            if mid {
                delivery::Receiver::mid_stream(limits)
            } else {
                delivery::Receiver::new(limits)
            }
        });
        let mut events = Vec::new();
        receiver.chunks(&p.chunks, &mut events);
        for e in events {
            match e {
                delivery::Event::Delivered(m) => self.message(from, to, m, out),
                delivery::Event::Retransmitted { tsn } => {
                    self.counts.entry(from).or_default().retransmitted += 1;
                    out.push(Event::Resent(tsn));
                }
                delivery::Event::Abandoned { stream, messages } => out.push(Event::Anomaly {
                    kind: Problem::Abandoned,
                    detail: format!(
                        "stream {stream}: {messages} messages given up by the sender (FORWARD-TSN)"
                    ),
                }),
                delivery::Event::Dropped(what) => out.push(Event::Anomaly {
                    kind: Problem::Bounded,
                    detail: format!("dropped {what}"),
                }),
            }
        }
    }

    fn message(
        &mut self,
        from: SocketAddr,
        to: SocketAddr,
        m: delivery::Message,
        out: &mut Vec<Event>,
    ) {
        if m.ppid == sctp::ppid::DCEP {
            match dcep::Message::parse(&m.data) {
                Ok(dcep::Message::Open(o)) => {
                    let c = Channel {
                        stream: m.stream,
                        label: o.label,
                        ordered: o.ordered,
                        reliability: o.reliability,
                        opened_by: from,
                    };
                    if self.channels.len() < self.limits.streams {
                        self.channels.insert(m.stream, c.clone());
                    }
                    out.push(Event::ChannelOpen(c));
                }
                Ok(dcep::Message::Ack) => {}
                Err(e) => out.push(Event::Anomaly {
                    kind: Problem::Malformed,
                    detail: format!("DCEP {e}"),
                }),
            }
            return;
        }
        self.counts.entry(to).or_default().messages += 1;
        let framed = self
            .channels
            .get(&m.stream)
            .is_some_and(|c| c.label == RELIABLE || c.label == UNRELIABLE);
        let step = framed.then(|| {
            self.framers
                .entry((to, m.stream))
                .or_insert_with(|| framing::Reassembler::new(framing::DEFAULT_LIMIT))
                .push(&m.data)
        });
        out.push(Event::Message {
            to,
            stream: m.stream,
            ppid: m.ppid,
            data: m.data,
        });
        match step {
            Some(framing::Step::Whole(data)) => {
                self.counts.entry(to).or_default().batches += 1;
                out.push(Event::Batch {
                    to,
                    stream: m.stream,
                    data,
                });
            }
            Some(framing::Step::Broken(why)) => out.push(Event::Anomaly {
                kind: Problem::Framing,
                detail: why.to_string(),
            }),
            Some(framing::Step::Partial) | None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sacks_gap_blocks_give_the_tsns_missing() {
        let sack = |gaps: Vec<(u16, u16)>| sctp::Chunk {
            at: 0,
            kind: sctp::chunk::SACK,
            flags: 0,
            body: sctp::Body::Sack(sctp::Sack {
                cumulative_tsn: 100,
                a_rwnd: 0,
                gaps,
                duplicates: Vec::new(),
            }),
        };
        // Received 103-104 and 107: 101-102 and 105-106 missing.
        let seen = ChunkSeen::of(&sack(vec![(3, 4), (7, 7)]));
        assert_eq!(seen.holes, [(101, 102), (105, 106)]);
        assert_eq!(seen.gaps, Some(2));
        // A block right after the cumulative TSN, and overlapping ones.
        let seen = ChunkSeen::of(&sack(vec![(1, 2), (2, 5), (9, 9)]));
        assert_eq!(seen.holes, [(106, 108)]);
        assert!(ChunkSeen::of(&sack(Vec::new())).holes.is_empty());
    }
}
