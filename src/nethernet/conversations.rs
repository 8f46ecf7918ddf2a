//! The NetherNet associations of a capture: each UDP conversation (a pair
//! of addresses) that a STUN message or a DTLS ClientHello starts, read
//! through an [`Association`] of its own. Sans-IO: the pipeline hands it
//! the datagrams the RakNet dissector did not take.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::association::{Association, Event};
use super::{classify, delivery, dtls, Demux};

/// Conversations followed at most; datagrams of new ones past it are
/// counted ([`Conversations::refused`]), not read.
pub const MAX_CONVERSATIONS: usize = 4096;

/// Bytes all conversations may hold for later delivery, together, by
/// default: past it the one holding most lets go ([`Association::shed`]).
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// A conversation idle this long (capture time) is let go: WebRTC's
/// consent checks (every 5 s or so) keep a live one busier.
pub const IDLE: Duration = Duration::from_secs(60);

/// One whose close_notify was read, once idle this long.
pub const IDLE_CLOSED: Duration = Duration::from_secs(10);

/// STUN's magic cookie (RFC 5389 §6), bytes 4 to 7 of every message.
const MAGIC_COOKIE: [u8; 4] = [0x21, 0x12, 0xa4, 0x42];

/// One conversation: its flow id and what its datagrams showed so far.
#[derive(Debug)]
pub struct Conversation {
    /// Its flow id (numbered with the RakNet flows, in order of first
    /// sight).
    pub id: u32,
    /// The address that sent its first datagram.
    pub first_sender: SocketAddr,
    /// The other address.
    pub other: SocketAddr,
    /// Its first and last datagrams' capture times.
    pub first_ts: Duration,
    /// The last one's.
    pub last_ts: Duration,
    /// Datagrams read, by sender: `[first_sender, other]`.
    pub datagrams: [u64; 2],
    /// Their UDP payload bytes, by sender.
    pub bytes: [u64; 2],
    /// ICE, DTLS, SCTP and the channels on it.
    pub association: Association,
    /// RTT samples from SCTP's SACKs.
    pub rtt: super::rtt::SctpRtt,
    /// What its association held after its last datagram.
    held: usize,
}

impl Conversation {
    /// Its client: the side that opened the data channels; before they
    /// open (or without a key), the controlling ICE agent (the offerer:
    /// NetherNet's client); without ICE-CONTROLLING seen, the side that
    /// sent the first datagram.
    pub fn client(&self) -> SocketAddr {
        let a = &self.association;
        a.channels
            .values()
            .next()
            .map(|ch| ch.opened_by)
            .or(a.controlling)
            .unwrap_or(self.first_sender)
    }

    /// The side that is not [`Conversation::client`].
    pub fn server(&self) -> SocketAddr {
        if self.client() == self.first_sender {
            self.other
        } else {
            self.first_sender
        }
    }
}

/// What one datagram of a conversation showed.
#[derive(Debug)]
pub struct Seen<'c> {
    /// The conversation it belongs to.
    pub conversation: &'c Conversation,
    /// What happened, in order.
    pub events: &'c [Event],
    /// The flow ids of the conversations let go just before, idle
    /// ([`IDLE`], [`IDLE_CLOSED`]): their flows ended.
    pub retired: &'c [u32],
}

/// Every NetherNet conversation of a capture.
#[derive(Debug)]
pub struct Conversations {
    table: HashMap<(SocketAddr, SocketAddr), Conversation>,
    keylog: Arc<dtls::KeyLog>,
    limits: delivery::Limits,
    events: Vec<Event>,
    /// Bytes held by all, together, and at most.
    held: usize,
    budget: usize,
    /// Datagrams read as NetherNet.
    pub datagrams: u64,
    /// Conversations started.
    pub started: u64,
    /// The ICE passwords the signaling named.
    pub ice: super::stun::IcePasswords,
    /// Conversations let go, idle.
    pub idle: u64,
    retired: Vec<u32>,
    next_sweep: Duration,
    /// Datagrams of conversations past [`MAX_CONVERSATIONS`], not read.
    pub refused: u64,
}

impl Conversations {
    /// None seen yet; DTLS records opened with `keylog`'s secrets.
    pub fn new(keylog: Arc<dtls::KeyLog>) -> Self {
        Conversations {
            table: HashMap::new(),
            keylog,
            limits: delivery::Limits::default(),
            events: Vec::new(),
            held: 0,
            budget: DEFAULT_BUDGET,
            datagrams: 0,
            started: 0,
            refused: 0,
            ice: Default::default(),
            idle: 0,
            retired: Vec::new(),
            next_sweep: Duration::ZERO,
        }
    }

    /// [`Conversations::new`] whose conversations hold `budget` bytes at
    /// most, together.
    pub fn with_budget(keylog: Arc<dtls::KeyLog>, budget: usize) -> Self {
        Conversations {
            budget,
            ..Conversations::new(keylog)
        }
    }

    /// Adds a key log's lines (`CLIENT_RANDOM ...`, a capture's secrets
    /// block) to the secrets that open the records after this point;
    /// returns how many were new.
    pub fn add_keys(&mut self, text: &str) -> usize {
        Arc::make_mut(&mut self.keylog).add(text)
    }

    /// A conversation, by its flow id.
    pub fn get(&self, id: u32) -> Option<&Conversation> {
        self.table.values().find(|c| c.id == id)
    }

    /// Every conversation still followed, in order of first sight.
    pub fn all(&self) -> Vec<&Conversation> {
        let mut all: Vec<&Conversation> = self.table.values().collect();
        all.sort_by_key(|c| c.id);
        all
    }

    /// A UDP datagram the RakNet dissector did not take: `None` when it is
    /// not NetherNet's (no conversation of its addresses, and it starts
    /// none). A datagram that starts a conversation gets its flow id from
    /// `new_id`.
    pub fn datagram(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        ts: Duration,
        payload: &[u8],
        new_id: impl FnOnce() -> u32,
    ) -> Option<Seen<'_>> {
        self.retired.clear();
        if ts >= self.next_sweep {
            self.sweep(ts);
            self.next_sweep = ts + Duration::from_secs(1);
        }
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        if !self.table.contains_key(&key) {
            // Either start has the handshake to come: not mid-stream.
            starts(payload)?;
            if self.table.len() >= MAX_CONVERSATIONS {
                self.refused += 1;
                return None;
            }
            self.started += 1;
            self.table.insert(
                key,
                Conversation {
                    id: new_id(),
                    first_sender: src,
                    other: dst,
                    first_ts: ts,
                    last_ts: ts,
                    datagrams: [0; 2],
                    bytes: [0; 2],
                    held: 0,
                    association: Association::new(self.limits, false),
                    rtt: Default::default(),
                },
            );
        }
        let c = self.table.get_mut(&key)?;
        self.datagrams += 1;
        c.last_ts = ts;
        let side = usize::from(src != c.first_sender);
        c.datagrams[side] += 1;
        c.bytes[side] += payload.len() as u64;
        self.events.clear();
        c.association.datagram(
            src,
            dst,
            payload,
            (&self.keylog, &self.ice),
            &mut self.events,
        );
        for e in &self.events {
            if let Event::Chunks(chunks) = e {
                c.rtt.chunks(side, ts, chunks);
            }
        }
        let now = c.association.held() + c.rtt.held();
        self.held = self.held.saturating_sub(c.held) + now;
        c.held = now;
        if self.held > self.budget {
            self.shed();
        }
        let c = self.table.get(&key)?;
        Some(Seen {
            conversation: c,
            events: &self.events,
            retired: &self.retired,
        })
    }

    /// Lets go of the conversations idle at `now` (their ids to
    /// `retired`), so that a long capture's memory stays flat.
    fn sweep(&mut self, now: Duration) {
        let (retired, held) = (&mut self.retired, &mut self.held);
        self.table.retain(|_, c| {
            let idle = now.saturating_sub(c.last_ts);
            let limit = if c.association.closed_by.is_some() {
                IDLE_CLOSED
            } else {
                IDLE
            };
            let keep = idle < limit;
            if !keep {
                *held = held.saturating_sub(c.held);
                retired.push(c.id);
            }
            keep
        });
        self.idle += retired.len() as u64;
        retired.sort_unstable();
    }

    /// Past the budget: the conversation holding most lets go of it, said
    /// as an anomaly of the datagram that went past.
    fn shed(&mut self) {
        let Some(c) = self.table.values_mut().max_by_key(|c| c.held) else {
            return;
        };
        let gone = c.association.shed();
        self.held = self.held.saturating_sub(c.held);
        c.held = 0;
        self.events.push(Event::Anomaly {
            kind: super::association::Problem::Bounded,
            detail: format!(
                "flow {}: {gone} bytes held for delivery let go: the NetherNet conversations held more than {} bytes together",
                c.id, self.budget
            ),
        });
    }
}

/// How a datagram starts a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// A STUN message (its magic cookie): ICE checks come first.
    Stun,
    /// A DTLS record of a ClientHello: the checks were not captured.
    ClientHello,
}

/// Whether `payload` starts a NetherNet conversation, and how.
fn starts(payload: &[u8]) -> Option<Start> {
    match classify(payload) {
        Demux::Stun => (payload.len() >= 20 && payload.get(4..8) == Some(&MAGIC_COOKIE[..]))
            .then_some(Start::Stun),
        Demux::Dtls => {
            let first = dtls::records(payload).ok()?.into_iter().next()?;
            let hello = first.epoch == 0
                && first.content == dtls::content::HANDSHAKE
                && first.fragment.first() == Some(&1);
            hello.then_some(Start::ClientHello)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stun_or_a_client_hello_starts_one_and_nothing_else_does() {
        let mut stun = vec![0u8, 1, 0, 0];
        stun.extend_from_slice(&MAGIC_COOKIE);
        stun.extend_from_slice(&[7; 12]);
        assert_eq!(starts(&stun), Some(Start::Stun));
        stun[5] = 0;
        assert_eq!(starts(&stun), None, "no magic cookie");
        assert_eq!(starts(&[0x17, 0xfe, 0xfd]), None, "application data");
        assert_eq!(starts(&[]), None);
        assert_eq!(starts(&[0x84, 0, 0, 0]), None, "a RakNet datagram");
    }

    /// The sample's login batch comes in four segments: held between
    /// them. With a budget smaller than that, it is let go and said; with
    /// the default, nothing is.
    #[test]
    fn past_the_budget_what_is_held_is_let_go_and_said() {
        use super::super::association::Problem;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let text = std::fs::read_to_string(root.join("nethernet-join.keylog")).unwrap();
        let keylog = Arc::new(dtls::KeyLog::parse(&text));
        for (budget, shed) in [(1000, true), (DEFAULT_BUDGET, false)] {
            let mut c = Conversations::with_budget(Arc::clone(&keylog), budget);
            let (mut said, mut most) = (0, 0);
            let reader = crate::capture::CaptureReader::open(&root.join("nethernet-join.pcap"));
            for d in reader.unwrap() {
                let d = d.unwrap();
                let Some(seen) = c.datagram(d.src, d.dst, d.ts, &d.payload, || 1) else {
                    continue;
                };
                said += seen
                    .events
                    .iter()
                    .filter(|e| {
                        matches!(
                            e,
                            Event::Anomaly {
                                kind: Problem::Bounded,
                                ..
                            }
                        )
                    })
                    .count();
                most = most.max(c.held);
                assert!(c.held <= budget, "{} held past {budget}", c.held);
            }
            assert_eq!(
                said > 0,
                shed,
                "budget {budget}: {said} said, {most} held at most"
            );
        }
    }

    /// A conversation idle for [`IDLE`] is let go, its id said once, and
    /// the bound counts only those still followed: a capture of more
    /// conversations than [`MAX_CONVERSATIONS`], one after the other, is
    /// read whole.
    #[test]
    fn idle_conversations_are_let_go() {
        let mut c = Conversations::new(Arc::default());
        let mut stun = vec![0u8, 1, 0, 0];
        stun.extend_from_slice(&MAGIC_COOKIE);
        stun.extend_from_slice(&[7; 12]);
        let mut retired = Vec::new();
        let n = MAX_CONVERSATIONS as u32 + 100;
        for i in 0..n {
            let src = SocketAddr::from(([127, 0, 0, 1], (i % 60_000) as u16 + 1));
            let dst = SocketAddr::from(([127, 0, 0, 2], 19132));
            // One a second: each is idle IDLE later.
            let ts = Duration::from_secs(u64::from(i));
            let seen = c.datagram(src, dst, ts, &stun, || i + 1).unwrap();
            assert_eq!(seen.conversation.id, i + 1);
            retired.extend_from_slice(seen.retired);
        }
        assert_eq!(c.refused, 0);
        assert_eq!(c.started, u64::from(n));
        let live = c.table.len() as u32;
        assert!(live <= IDLE.as_secs() as u32 + 1, "{live} followed");
        // Each let go once, in order, none still followed.
        assert_eq!(retired, (1..=n - live).collect::<Vec<_>>());
        assert_eq!(c.idle, u64::from(n - live));
    }

    #[test]
    fn conversations_past_the_bound_are_counted_not_read() {
        let mut c = Conversations::new(Arc::default());
        let mut stun = vec![0u8, 1, 0, 0];
        stun.extend_from_slice(&MAGIC_COOKIE);
        stun.extend_from_slice(&[7; 12]);
        let mut next = 0;
        for i in 0..MAX_CONVERSATIONS + 3 {
            let src = SocketAddr::from(([127, 0, 0, 1], (i % 60_000) as u16 + 1));
            let dst = SocketAddr::from(([127, 0, 0, (i / 60_000) as u8 + 2], 19132));
            c.datagram(src, dst, Duration::ZERO, &stun, || {
                next += 1;
                next
            });
        }
        assert_eq!(c.started as usize, MAX_CONVERSATIONS);
        assert_eq!(c.refused, 3);
        // The other direction of a known one is the same conversation.
        let (a, b) = (
            SocketAddr::from(([127, 0, 0, 1], 1)),
            SocketAddr::from(([127, 0, 0, 2], 19132)),
        );
        let seen = c.datagram(b, a, Duration::ZERO, &stun, || 0).unwrap();
        assert_eq!(seen.conversation.id, 1);
        assert_eq!(seen.conversation.datagrams, [1, 1]);
    }
}
