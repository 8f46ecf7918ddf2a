//! A capture counted, for `stats`: the messages delivered to each side's
//! application by message id, reliability and ordering channel, and the
//! traffic per time interval from the first packet (packets, bytes, ACKs,
//! NACKs, resends, messages). Memory is bounded whatever the capture.

use std::time::Duration;

use serde::Serialize;

use crate::dissect::{Dir, Packet};
use crate::mirror::{Message, Observation};

/// Intervals counted at most: the buckets are a `Vec` of at most this many.
/// Traffic past the last one counts in the totals only.
pub(crate) const MAX_INTERVALS: usize = 100_000;
/// Interval rows the text table shows at most.
pub(crate) const MAX_TABLE_INTERVALS: usize = 10_000;

/// Messages and their bytes.
#[derive(Serialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Msgs {
    pub(crate) messages: u64,
    pub(crate) bytes: u64,
}

impl Msgs {
    pub(crate) fn add(&mut self, len: usize) {
        self.messages += 1;
        self.bytes += len as u64;
    }
}

/// Traffic one way, in an interval or in the whole capture.
#[derive(Serialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// RakNet packets sent this way (offline, data, ACK, NACK).
    pub(crate) packets: u64,
    /// Their UDP payload bytes.
    pub(crate) bytes: u64,
    pub(crate) data: u64,
    pub(crate) acks: u64,
    pub(crate) nacks: u64,
    /// Capsules the mirror flagged `resend`.
    pub(crate) resends: u64,
    /// Messages delivered to this way's receiver, and their bytes.
    pub(crate) messages: u64,
    pub(crate) message_bytes: u64,
}

/// `[c2s, s2c]`.
pub(crate) type Both<T> = [T; 2];

/// Index of an empty message (no id) in [`Stats::ids`].
pub(crate) const NO_ID: usize = 256;
/// Index of every reliability above 7 (`INVALID`).
pub(crate) const INVALID: usize = 8;

/// Everything `stats` counts; memory is bounded whatever the input.
pub struct Stats {
    pub(crate) interval: Duration,
    /// Intervals allocated at most.
    pub(crate) cap: usize,
    /// The first packet's time (the intervals' origin) and the last's.
    pub(crate) first: Option<Duration>,
    pub(crate) last: Duration,
    /// By message id; [`NO_ID`] for empty messages.
    pub(crate) ids: Vec<Both<Msgs>>,
    /// By reliability number; [`INVALID`] above 7.
    pub(crate) reliabilities: Vec<Both<Msgs>>,
    pub(crate) channels: Vec<Both<Msgs>>,
    pub(crate) intervals: Vec<Both<Traffic>>,
    /// The highest interval number reached, past `cap` too.
    pub(crate) last_interval: u64,
    pub(crate) total: Both<Traffic>,
    /// Bedrock game packets by name (`unknown(0x1ff)` without one), and
    /// batches that showed none by reason (`encrypted`, ...): at most
    /// [`MAX_GAME_NAMES`] names, the rest under `other`.
    pub(crate) game: std::collections::BTreeMap<String, Both<u64>>,
    /// The game layer that names them (no keys: encrypted batches count
    /// as `encrypted`).
    game_layer: crate::bedrock::Game,
    /// What the whole capture read and skipped (every flow, `--flow` or
    /// not), once it was read.
    pub(crate) capture: Option<crate::dissect::Counted>,
    /// NetherNet's data-channel messages by channel label (`stream N`
    /// before DCEP named it), in order of first sight: at most
    /// [`MAX_LABELS`], the rest under `other`.
    pub(crate) labels: Vec<(String, Both<Msgs>)>,
    /// NetherNet datagrams and signaling segments counted as packets.
    pub(crate) nethernet: u64,
}

/// Distinct labels in [`Stats::labels`] at most.
pub(crate) const MAX_LABELS: usize = 64;

/// Distinct names in [`Stats::game`] at most (ids have 10 bits).
pub(crate) const MAX_GAME_NAMES: usize = 1100;

impl Stats {
    /// Nothing counted yet: traffic in intervals of `interval` (at least
    /// 1 ns), at most `cap` of them kept.
    pub fn new(interval: Duration, cap: usize) -> Self {
        Stats {
            interval: interval.max(Duration::from_nanos(1)),
            cap,
            first: None,
            last: Duration::ZERO,
            ids: vec![Both::default(); NO_ID + 1],
            reliabilities: vec![Both::default(); INVALID + 1],
            channels: vec![Both::default(); 256],
            intervals: Vec::new(),
            last_interval: 0,
            total: Both::default(),
            game: Default::default(),
            game_layer: crate::bedrock::Game::counting(
                crate::bedrock::Detect::Auto,
                crate::bedrock::Keys::default(),
            ),
            capture: None,
            labels: Vec::new(),
            nethernet: 0,
        }
    }

    /// The game layer that names NetherNet's batches too.
    pub(crate) fn game_layer(&mut self) -> &mut crate::bedrock::Game {
        &mut self.game_layer
    }

    /// A message a NetherNet data channel delivered, and the game packets
    /// of the batch it completed.
    pub(crate) fn data_channel(&mut self, d: &crate::pipeline::drive::Delivered) {
        let m = &d.message;
        if let Some(events) = &d.game {
            for name in crate::bedrock::event_names(events) {
                self.game(m.dir, &name);
            }
        }
        let label = d.channel.as_ref().map_or("?".to_string(), |c| {
            c.label
                .clone()
                .unwrap_or_else(|| format!("stream {}", c.stream))
        });
        let at = match self.labels.iter().position(|(l, _)| *l == label) {
            Some(i) => i,
            None if self.labels.len() + 1 < MAX_LABELS => {
                self.labels.push((label, Both::default()));
                self.labels.len() - 1
            }
            None => match self.labels.iter().position(|(l, _)| l == "other") {
                Some(i) => i,
                None => {
                    self.labels.push(("other".into(), Both::default()));
                    self.labels.len() - 1
                }
            },
        };
        let (dir, len) = (m.dir.index(), m.data.len());
        self.labels[at].1[dir].add(len);
        let add = |t: &mut Traffic| {
            t.messages += 1;
            t.message_bytes += len as u64;
        };
        add(&mut self.total[dir]);
        if let Some(b) = self.slot(m.ts) {
            add(&mut b[dir]);
        }
    }

    /// The interval `ts` falls in, unless past the cap; the first call sets the
    /// origin. A time before the origin (a capture out of time order) falls in
    /// the first interval.
    fn slot(&mut self, ts: Duration) -> Option<&mut Both<Traffic>> {
        let first = *self.first.get_or_insert(ts);
        let n = ts.saturating_sub(first).as_nanos() / self.interval.as_nanos();
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.last_interval = self.last_interval.max(n);
        let i = usize::try_from(n).ok().filter(|&i| i < self.cap)?;
        if i >= self.intervals.len() {
            self.intervals.resize(i + 1, Both::default());
        }
        self.intervals.get_mut(i)
    }

    /// A RakNet packet of `kind` (`Packet::kind`), `len` payload bytes,
    /// carrying `resends` resent capsules.
    pub(crate) fn packet(&mut self, dir: Dir, ts: Duration, kind: &str, len: usize, resends: u64) {
        self.last = if self.first.is_some() {
            self.last.max(ts)
        } else {
            ts
        };
        let add = |t: &mut Traffic| {
            t.packets += 1;
            t.bytes += len as u64;
            match kind {
                "data" => t.data += 1,
                "ack" => t.acks += 1,
                "nack" => t.nacks += 1,
                _ => {}
            }
            t.resends += resends;
        };
        let d = dir.index();
        add(&mut self.total[d]);
        if let Some(b) = self.slot(ts) {
            add(&mut b[d]);
        }
    }

    /// A RakNet packet and what the mirror found in it: the packet's
    /// traffic and the messages it delivered, those of flow `only` when given.
    pub fn observe(&mut self, p: &Packet<'_>, obs: &Observation, only: Option<u32>) {
        if only.is_none_or(|f| f == p.flow) {
            let resends = obs.anomalies.iter().filter(|a| a.kind == "resend").count();
            self.packet(p.dir, p.ts, p.kind(), p.payload.len(), resends as u64);
        }
        self.game_layer.packet(p);
        for m in obs
            .messages
            .iter()
            .filter(|m| only.is_none_or(|f| f == m.flow))
        {
            self.message(m);
        }
        obs.ended
            .iter()
            .for_each(|&f| drop(self.game_layer.close(f)));
    }

    /// A message delivered (and, in a Bedrock flow, its game packets).
    pub(crate) fn message(&mut self, m: &Message) {
        if let Some(events) = self.game_layer.message(m) {
            for name in crate::bedrock::event_names(&events) {
                self.game(m.dir, &name);
            }
        }
        let (d, len) = (m.dir.index(), m.data.len());
        let id = m.data.first().map_or(NO_ID, |&b| usize::from(b));
        self.ids[id][d].add(len);
        self.reliabilities[usize::from(m.reliability.0).min(INVALID)][d].add(len);
        if let Some(c) = m.channel {
            self.channels[usize::from(c)][d].add(len);
        }
        let add = |t: &mut Traffic| {
            t.messages += 1;
            t.message_bytes += len as u64;
        };
        add(&mut self.total[d]);
        if let Some(b) = self.slot(m.ts) {
            add(&mut b[d]);
        }
    }

    /// A game packet (or an opaque batch) of direction `dir`, by name.
    pub(crate) fn game(&mut self, dir: Dir, name: &str) {
        let key = if self.game.len() < MAX_GAME_NAMES || self.game.contains_key(name) {
            name
        } else {
            "other"
        };
        self.game.entry(key.to_string()).or_default()[dir.index()] += 1;
    }

    /// Intervals from the first packet to the last, counted or not.
    pub(crate) fn interval_count(&self) -> u64 {
        if self.first.is_some() {
            self.last_interval.saturating_add(1)
        } else {
            0
        }
    }

    /// Intervals with a row: the first [`Stats::interval_count`], at most `cap`.
    pub(crate) fn rows(&self, max: usize) -> impl Iterator<Item = (usize, Both<Traffic>)> + '_ {
        let n = usize::try_from(self.interval_count()).unwrap_or(usize::MAX);
        (0..n.min(self.cap).min(max))
            .map(|i| (i, self.intervals.get(i).copied().unwrap_or_default()))
    }

    /// Seconds from the first packet to the start of interval `i`.
    pub(crate) fn start(&self, i: usize) -> f64 {
        u32::try_from(i)
            .ok()
            .and_then(|i| self.interval.checked_mul(i))
            .map_or(f64::INFINITY, |d| d.as_secs_f64())
    }

    pub(crate) fn duration(&self) -> Duration {
        self.first
            .map_or(Duration::ZERO, |f| self.last.saturating_sub(f))
    }
}

/// The rows of `v` with a message, with their index.
pub(crate) fn used(v: &[Both<Msgs>]) -> impl Iterator<Item = (usize, &Both<Msgs>)> {
    v.iter()
        .enumerate()
        .filter(|(_, b)| b[0].messages + b[1].messages > 0)
}

/// A round interval (1, 2 or 5 times a power of ten, in seconds) that cuts
/// `span` seconds into at most `rows` intervals, as `--interval` reads it.
pub(crate) fn nice_interval(span: f64, rows: usize) -> String {
    let need = (span / rows.saturating_sub(1).max(1) as f64).clamp(1e-9, 1e6);
    let e = need.log10().floor() as i32;
    let base = 10f64.powi(e);
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * base >= need)
        .unwrap_or(10.0);
    let decimals = usize::try_from(-e).unwrap_or(0);
    format!("{:.*}", decimals, (m * base).min(1e6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Reliability;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn buckets_from_the_first_packet_with_empty_ones_between() {
        let mut st = Stats::new(s(0.5), 100);
        st.packet(Dir::C2s, s(100.2), "data", 10, 0);
        st.packet(Dir::S2c, s(100.69), "ack", 7, 0);
        st.packet(Dir::S2c, s(100.7), "nack", 5, 0);
        st.packet(Dir::C2s, s(102.0), "data", 30, 2);
        assert_eq!(st.interval_count(), 4);
        assert_eq!(st.intervals.len(), 4);
        let i = &st.intervals;
        assert_eq!((i[0][0].packets, i[0][0].bytes, i[0][0].data), (1, 10, 1));
        assert_eq!((i[0][1].acks, i[0][1].nacks), (1, 0));
        assert_eq!((i[1][1].nacks, i[1][1].bytes), (1, 5));
        assert_eq!(i[2], Both::default());
        assert_eq!((i[3][0].resends, i[3][0].bytes), (2, 30));
        assert_eq!(st.total[0].packets, 2);
        assert_eq!(st.total[1].bytes, 12);
        assert_eq!(st.duration(), s(102.0) - s(100.2));
        assert_eq!(st.start(3), 1.5);
    }

    #[test]
    fn a_far_packet_allocates_no_more_than_the_cap() {
        let mut st = Stats::new(s(1.0), MAX_INTERVALS);
        st.packet(Dir::C2s, s(0.0), "data", 1, 0);
        st.packet(Dir::C2s, s(1e9), "data", 1, 0);
        assert_eq!(st.intervals.len(), 1);
        assert_eq!(st.interval_count(), 1_000_000_001);
        // Rows (zeros after the first) up to the cap, not past it.
        assert_eq!(st.rows(usize::MAX).count(), MAX_INTERVALS);
        assert_eq!(st.rows(MAX_TABLE_INTERVALS).count(), MAX_TABLE_INTERVALS);
        assert_eq!(
            st.rows(usize::MAX).nth(7).map(|r| r.1),
            Some(Both::default())
        );
        assert_eq!(st.total[0].packets, 2);
        // 1 ns intervals over the same span: still bounded.
        let mut st = Stats::new(Duration::from_nanos(1), 10);
        st.packet(Dir::C2s, s(0.0), "data", 1, 0);
        st.packet(Dir::S2c, s(9e-9), "ack", 1, 0);
        st.packet(Dir::S2c, Duration::MAX, "ack", 1, 0);
        assert_eq!(st.intervals.len(), 10);
        assert_eq!(st.interval_count(), u64::MAX);
        assert_eq!(st.intervals[9][1].acks, 1);
    }

    #[test]
    fn time_going_backwards_counts_in_the_first_interval() {
        let mut st = Stats::new(s(1.0), 10);
        st.packet(Dir::C2s, s(50.0), "data", 1, 0);
        st.packet(Dir::C2s, s(40.0), "data", 1, 0);
        assert_eq!(st.intervals.len(), 1);
        assert_eq!(st.intervals[0][0].packets, 2);
        assert_eq!(st.duration(), Duration::ZERO);
    }

    #[test]
    fn messages_by_id_reliability_channel_and_interval() {
        let msg = |dir, ts, data: &[u8], r: u8, channel| Message {
            flow: 1,
            dir,
            frame: 1,
            ts: s(ts),
            data: data.to_vec(),
            reliability: Reliability(r),
            channel,
            anomalies: Vec::new(),
        };
        let mut st = Stats::new(s(1.0), 10);
        st.packet(Dir::C2s, s(10.0), "data", 1, 0);
        st.message(&msg(Dir::C2s, 10.0, &[0x86, 1, 2], 3, Some(0)));
        st.message(&msg(Dir::S2c, 11.5, &[0x86], 2, None));
        st.message(&msg(Dir::S2c, 11.5, &[], 200, Some(31)));
        assert_eq!(
            st.ids[0x86],
            [
                Msgs {
                    messages: 1,
                    bytes: 3
                },
                Msgs {
                    messages: 1,
                    bytes: 1
                }
            ]
        );
        assert_eq!(st.ids[NO_ID][1].messages, 1);
        assert_eq!(st.reliabilities[3][0].messages, 1);
        assert_eq!(st.reliabilities[INVALID][1].messages, 1);
        assert_eq!(
            (st.channels[0][0].messages, st.channels[31][1].bytes),
            (1, 0)
        );
        assert_eq!(used(&st.channels).count(), 2);
        assert_eq!(st.intervals[1][1].messages, 2);
        assert_eq!(st.total[1].message_bytes, 1);
    }

    #[test]
    fn suggested_intervals_fit() {
        assert_eq!(nice_interval(10.75, 10_000), "0.002");
        assert_eq!(nice_interval(1e9, 10_000), "200000");
        assert_eq!(nice_interval(49_995.0, 10_000), "5");
        assert_eq!(nice_interval(1e12, 10_000), "1000000");
        for span in [0.5, 10.75, 123.0, 99_990.0, 7e6] {
            let i: f64 = nice_interval(span, 10_000).parse().unwrap();
            assert!((span / i).floor() + 1.0 <= 10_000.0, "{span}: {i}");
        }
    }
}
