//! Human output: one summary line per packet, the `-V` field tree and the
//! `-x` hex dump. Formatting only: everything shown was decoded elsewhere.

use std::fmt::Write as _;
use std::time::Duration;

use owo_colors::{OwoColorize, Style};

use crate::dissect::{Body, IcmpNote, Packet};
use crate::mirror::Message;
use std::net::SocketAddr;

use crate::wire::{AckRange, Capsule, Datagram, Motd, Offline, Trace};

/// Colours, or none.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    /// Whether to colour at all (ANSI escapes); `false` writes plain text.
    pub enabled: bool,
}

impl Palette {
    /// The colours of standard output under `choice`; none for JSON or a
    /// field export (`plain`).
    pub fn choose(choice: super::ColorChoice, plain: bool) -> Palette {
        Palette {
            enabled: !plain && choice.enabled(),
        }
    }

    /// `s` in the anomaly colour.
    pub fn paint_anomaly(&self, s: &str) -> String {
        self.paint(s, Style::new().red().bold())
    }

    /// A direction, in its colour (`c2s` blue, `s2c` magenta).
    pub(crate) fn paint_dir(&self, d: crate::dissect::Dir) -> String {
        let style = match d {
            crate::dissect::Dir::C2s => Style::new().blue(),
            crate::dissect::Dir::S2c => Style::new().magenta(),
        };
        self.paint(d.as_str(), style)
    }

    /// `s` in bold.
    pub(crate) fn paint_bold(&self, s: &str) -> String {
        self.paint(s, Style::new().bold())
    }

    fn paint(&self, s: &str, style: Style) -> String {
        if self.enabled {
            s.style(style).to_string()
        } else {
            s.to_string()
        }
    }
}

fn style_for(p: &Packet<'_>) -> Style {
    match p.kind() {
        "offline" => Style::new().cyan(),
        "ack" => Style::new().green(),
        "nack" => Style::new().yellow(),
        _ => Style::new(),
    }
}

/// Printable text of a byte string, quoted, at most `max` characters.
pub(crate) fn quoted(b: &[u8], max: usize) -> String {
    let mut s = String::from("\"");
    for &c in b.iter().take(max) {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s.push('"');
    if b.len() > max {
        s.push('…');
    }
    s
}

fn offline_summary(m: &Offline<'_>) -> String {
    match m {
        Offline::UnconnectedPing {
            time, client_guid, ..
        } => match client_guid {
            Some(g) => format!("time={time} guid={g:#018x}"),
            None => format!("time={time}"),
        },
        Offline::UnconnectedPong {
            time,
            server_guid,
            payload,
        } => match Motd::parse(payload) {
            Some(motd) => {
                let text: Vec<&str> = motd.fields.iter().map(|(_, v)| v.as_str()).collect();
                format!(
                    "time={time} guid={server_guid:#018x} motd={}",
                    quoted(text.join(";").as_bytes(), 80)
                )
            }
            None => format!(
                "time={time} guid={server_guid:#018x} payload={}",
                quoted(payload, 60)
            ),
        },
        Offline::OpenConnectionRequest1 { protocol, mtu } => {
            format!("protocol={protocol} mtu={mtu}")
        }
        Offline::OpenConnectionReply1 {
            server_guid,
            security,
            mtu,
        } => match security {
            Some(s) => format!(
                "guid={server_guid:#018x} security=yes cookie={:#010x} mtu={mtu}",
                s.cookie
            ),
            None => format!("guid={server_guid:#018x} security=no mtu={mtu}"),
        },
        Offline::OpenConnectionRequest2 {
            security,
            server_address,
            mtu,
            client_guid,
        } => {
            let cookie = security
                .as_ref()
                .map(|s| format!(" cookie={:#010x}", s.cookie))
                .unwrap_or_default();
            format!("server={server_address} mtu={mtu} guid={client_guid:#018x}{cookie}")
        }
        Offline::OpenConnectionReply2 {
            server_guid,
            client_address,
            mtu,
            security_answer,
        } => format!(
            "guid={server_guid:#018x} client={client_address} mtu={mtu} security={}",
            if security_answer.is_some() {
                "yes"
            } else {
                "no"
            }
        ),
        Offline::IncompatibleProtocolVersion {
            protocol,
            server_guid,
        } => format!("server protocol={protocol} guid={server_guid:#018x}"),
        Offline::Refusal { server_guid, .. } => format!("guid={server_guid:#018x}"),
        Offline::OutOfBand { guid, payload } => {
            let n = payload.len() as u64;
            format!(
                "guid={guid:#018x} payload={n} {}",
                crate::wire::plural(n, "byte", "bytes")
            )
        }
    }
}

/// Append `v` in decimal, without going through `fmt`.
fn push_uint(s: &mut Vec<u8>, mut v: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    s.extend_from_slice(&buf[i..]);
}

fn decimal_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

fn push_spaces(s: &mut Vec<u8>, n: usize) {
    for _ in 0..n {
        s.push(b' ');
    }
}

/// A message id's name: the table's, or `ID_USER_PACKET_ENUM+N`.
fn push_name(s: &mut Vec<u8>, id: u8) {
    match crate::wire::ids::MESSAGE_NAMES.get(id as usize) {
        Some(n) => s.extend_from_slice(n.as_bytes()),
        None => {
            s.extend_from_slice("ID_USER_PACKET_ENUM+".as_bytes());
            push_uint(s, u64::from(id - crate::wire::ids::USER_PACKET_ENUM));
        }
    }
}

fn push_capsule(s: &mut Vec<u8>, c: &Capsule<'_>) {
    s.extend_from_slice(c.reliability.name().as_bytes());
    let fields = [
        (" ri=", c.reliable_index),
        (" si=", c.sequence_index),
        (" oi=", c.order_index),
        (" ch=", c.channel.map(u32::from)),
    ];
    for (label, v) in fields {
        if let Some(v) = v {
            s.extend_from_slice(label.as_bytes());
            push_uint(s, u64::from(v));
        }
    }
    if let Some(sp) = c.split {
        s.extend_from_slice(" split ".as_bytes());
        push_uint(s, u64::from(sp.index) + 1);
        s.push(b'/');
        push_uint(s, u64::from(sp.count));
        s.extend_from_slice(" id=".as_bytes());
        push_uint(s, u64::from(sp.id));
    }
    if let Some(id) = c.message_id() {
        s.push(b' ');
        push_name(s, id);
    }
    s.extend_from_slice(" len=".as_bytes());
    push_uint(s, c.payload.len() as u64);
}

/// `3-7,9`: the datagram numbers of an ACK or NACK.
fn push_ranges(s: &mut Vec<u8>, ranges: &[AckRange]) {
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            s.push(b',');
        }
        push_uint(s, u64::from(r.min));
        if r.max != r.min {
            s.push(b'-');
            push_uint(s, u64::from(r.max));
        }
    }
}

/// Append the summary after the addresses: offline message, `#seq` and
/// capsules, or ACK/NACK ranges.
pub(crate) fn push_summary(s: &mut Vec<u8>, p: &Packet<'_>) {
    match &p.body {
        Body::Offline { id, msg } => {
            push_name(s, *id);
            if let Some(m) = msg {
                s.push(b' ');
                s.extend_from_slice(offline_summary(m).as_bytes());
            }
        }
        Body::Datagram(Some(Datagram::Data(d))) => {
            s.push(b'#');
            push_uint(s, u64::from(d.seq));
            for (i, c) in d.capsules.iter().enumerate() {
                s.extend_from_slice(if i == 0 { b" " } else { b" | " });
                push_capsule(s, c);
            }
        }
        Body::Datagram(Some(Datagram::Ack(l))) => {
            s.extend_from_slice("ACK ".as_bytes());
            push_ranges(s, &l.ranges);
        }
        Body::Datagram(Some(Datagram::Nack(l))) => {
            s.extend_from_slice("NACK ".as_bytes());
            push_ranges(s, &l.ranges);
        }
        Body::Datagram(None) => s.extend_from_slice("datagram".as_bytes()),
    }
}

/// How the time column of packet and message lines is written: tshark's
/// `-t` formats. Absolute times are UTC (tshark shows local time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// Seconds since the capture's first UDP datagram (`-t r`).
    #[default]
    Relative,
    /// Time of day, UTC: hh:mm:ss.ffffff (`-t a`).
    Absolute,
    /// Date and time of day, UTC: YYYY-MM-DD hh:mm:ss.ffffff (`-t ad`).
    AbsoluteDate,
    /// Seconds since the Unix epoch (`-t e`).
    Epoch,
    /// Seconds since the previous packet read (messages: delivered), shown
    /// or not (`-t d`).
    Delta,
    /// Seconds since the previous line shown (`-t dd`).
    DeltaDisplayed,
}

impl TimeFormat {
    /// `-t`'s parser: its letters (and the words tshark's manual gives them).
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = TimeFormat> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        let letters = TimeFormat::LETTERS
            .iter()
            .map(|(l, _, _)| PossibleValue::new(*l));
        let words = TimeFormat::LETTERS
            .iter()
            .map(|(_, w, _)| PossibleValue::new(*w).hide(true));
        PossibleValuesParser::new(letters.chain(words))
            .map(|s| TimeFormat::parse(&s).unwrap_or_default())
    }

    /// tshark's letter, its word, and the format of each.
    pub const LETTERS: [(&'static str, &'static str, TimeFormat); 6] = [
        ("r", "relative", TimeFormat::Relative),
        ("a", "absolute", TimeFormat::Absolute),
        ("ad", "absolute-with-date", TimeFormat::AbsoluteDate),
        ("e", "epoch", TimeFormat::Epoch),
        ("d", "delta", TimeFormat::Delta),
        ("dd", "delta-displayed", TimeFormat::DeltaDisplayed),
    ];

    /// The format named by a letter or a word of [`TimeFormat::LETTERS`].
    pub fn parse(s: &str) -> Option<TimeFormat> {
        Self::LETTERS
            .iter()
            .find(|(l, w, _)| *l == s || *w == s)
            .map(|(_, _, f)| *f)
    }
}

/// The time column of a run of lines: the format, and for the deltas the
/// times of the record read and of the line shown before.
#[derive(Debug, Clone)]
pub struct TimeColumn {
    format: TimeFormat,
    /// The last two records read ([`TimeColumn::seen`]): the one being
    /// shown, and the one before it.
    read: [Option<Duration>; 2],
    shown: Option<Duration>,
}

impl TimeColumn {
    /// A column written in `format`, before any record is read.
    pub fn new(format: TimeFormat) -> Self {
        TimeColumn {
            format,
            read: [None, None],
            shown: None,
        }
    }

    /// Whether the column depends on which lines were shown (`-t dd`),
    /// which only the printer knows, not on the records read.
    pub(crate) fn follows_shown(&self) -> bool {
        self.format == TimeFormat::DeltaDisplayed
    }

    /// A record was read at `ts`, whether it will be shown or not: what
    /// [`TimeFormat::Delta`] counts from. Call it for every record, before
    /// [`TimeColumn::push`].
    pub(crate) fn seen(&mut self, ts: Duration) {
        self.read = [Some(ts), self.read[0]];
    }

    /// Append the column for a line at `ts`, `since` being the capture's
    /// first datagram: a space, then the time, microseconds rounded.
    pub(crate) fn push(&mut self, s: &mut Vec<u8>, ts: Duration, since: Duration) {
        let before = match self.format {
            TimeFormat::Delta => Some(self.read[1].unwrap_or(ts)),
            TimeFormat::DeltaDisplayed => Some(self.shown.unwrap_or(ts)),
            _ => None,
        };
        self.shown = Some(ts);
        match self.format {
            TimeFormat::Relative => push_seconds(s, false, ts.saturating_sub(since), 4),
            TimeFormat::Epoch => push_seconds(s, false, ts, 10),
            TimeFormat::Delta | TimeFormat::DeltaDisplayed => {
                let before = before.unwrap_or(ts);
                match ts.checked_sub(before) {
                    Some(d) => push_seconds(s, false, d, 4),
                    // Timestamps that go back, as tshark shows them.
                    None => push_seconds(s, true, before - ts, 4),
                }
            }
            TimeFormat::Absolute | TimeFormat::AbsoluteDate => {
                let (secs, micros) = micros(ts);
                let days = (secs / 86_400) as i64;
                let of_day = secs % 86_400;
                s.push(b' ');
                if self.format == TimeFormat::AbsoluteDate {
                    let (y, m, d) = civil_from_days(days);
                    push_zeroed(s, y.max(0) as u64, 4);
                    s.push(b'-');
                    push_zeroed(s, m.into(), 2);
                    s.push(b'-');
                    push_zeroed(s, d.into(), 2);
                    s.push(b' ');
                }
                push_zeroed(s, of_day / 3600, 2);
                s.push(b':');
                push_zeroed(s, of_day / 60 % 60, 2);
                s.push(b':');
                push_zeroed(s, of_day % 60, 2);
                s.push(b'.');
                push_zeroed(s, micros, 6);
            }
        }
    }
}

/// Whole seconds and microseconds of `d`, rounded to the microsecond as
/// `{:.6}` would.
fn micros(d: Duration) -> (u64, u64) {
    let us = (d.as_nanos() + 500) / 1000;
    ((us / 1_000_000) as u64, (us % 1_000_000) as u64)
}

/// ` SECS.ffffff`, right-aligned in `width` digits of seconds.
fn push_seconds(s: &mut Vec<u8>, negative: bool, d: Duration, width: usize) {
    let (secs, frac) = micros(d);
    let digits = decimal_len(secs) + usize::from(negative);
    push_spaces(s, 1 + width.saturating_sub(digits));
    if negative {
        s.push(b'-');
    }
    push_uint(s, secs);
    s.push(b'.');
    push_zeroed(s, frac, 6);
}

/// `v` in decimal, with leading zeros to `width` digits.
fn push_zeroed(s: &mut Vec<u8>, v: u64, width: usize) {
    for _ in decimal_len(v)..width {
        s.push(b'0');
    }
    push_uint(s, v);
}

/// The proleptic Gregorian date of a day counted from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Writes summary lines into a reused buffer, remembering the text of the
/// endpoints it saw last (formatting an address costs more than the rest).
pub(crate) struct LineFormatter {
    pal: Palette,
    time: TimeColumn,
    recent: Vec<(SocketAddr, String)>,
    next: usize,
}

/// Endpoints whose text is remembered.
const RECENT_ADDRESSES: usize = 16;

impl LineFormatter {
    pub(crate) fn new(pal: Palette, time: TimeFormat) -> Self {
        LineFormatter {
            pal,
            time: TimeColumn::new(time),
            recent: Vec::with_capacity(RECENT_ADDRESSES),
            next: 0,
        }
    }

    /// A packet (or ICMP error) was read at `ts`, shown or not
    /// ([`TimeColumn::seen`]).
    pub(crate) fn seen(&mut self, ts: Duration) {
        self.time.seen(ts);
    }

    /// The time column as another thread left it (for the next line's delta).
    pub(crate) fn set_time(&mut self, time: TimeColumn) {
        self.time = time;
    }

    fn addr(&mut self, a: SocketAddr) -> &str {
        let i = match self.recent.iter().position(|(k, _)| *k == a) {
            Some(i) => i,
            None if self.recent.len() < RECENT_ADDRESSES => {
                self.recent.push((a, a.to_string()));
                self.recent.len() - 1
            }
            None => {
                let i = self.next;
                self.next = (self.next + 1) % RECENT_ADDRESSES;
                self.recent[i] = (a, a.to_string());
                i
            }
        };
        &self.recent[i].1
    }

    /// Append one line (without the newline): frame, time (since `since`,
    /// the capture's first datagram, in the default format), endpoints,
    /// flow and direction, summary, anomalies.
    pub(crate) fn push_line(&mut self, s: &mut Vec<u8>, p: &Packet<'_>, since: Duration) {
        push_spaces(s, 6usize.saturating_sub(decimal_len(p.frame)));
        push_uint(s, p.frame);
        self.time.push(s, p.ts, since);
        s.push(b' ');
        let src = self.addr(p.src);
        push_spaces(s, 21usize.saturating_sub(src.len()));
        s.extend_from_slice(src.as_bytes());
        s.extend_from_slice(" → ".as_bytes());
        let dst = self.addr(p.dst);
        let pad = 21usize.saturating_sub(dst.len());
        s.extend_from_slice(dst.as_bytes());
        push_spaces(s, pad);
        s.push(b' ');
        push_spaces(s, 3usize.saturating_sub(decimal_len(u64::from(p.flow))));
        push_uint(s, u64::from(p.flow));
        s.push(b' ');
        s.extend_from_slice(p.dir.as_str().as_bytes());
        s.push(b' ');
        let start = s.len();
        push_summary(s, p);
        if self.pal.enabled {
            let plain = s.split_off(start);
            s.extend_from_slice(
                self.pal
                    .paint(&String::from_utf8_lossy(&plain), style_for(p))
                    .as_bytes(),
            );
        }
        for a in &p.anomalies {
            let text = if a.kind == "malformed" {
                format!(" [{}]", a.detail)
            } else {
                format!(" [{}: {}]", a.kind, a.detail)
            };
            s.extend_from_slice(self.pal.paint(&text, Style::new().red().bold()).as_bytes());
        }
    }

    /// The line of a NetherNet datagram, in the columns of packet lines:
    /// what it held, as tshark's Info column says it (`STUN Binding
    /// request`, `DTLS client_hello`, `DTLS application_data → SCTP
    /// DATA(tsn=.. sid=.. ppid=53 len=..) SACK(cum=..)`).
    pub(crate) fn nethernet_line(
        &mut self,
        p: &crate::records::nethernet::NethernetPacket,
        since: Duration,
    ) -> String {
        let mut time = Vec::new();
        self.time.push(&mut time, p.ts, since);
        let info = self.pal.paint(&nethernet_info(p), Style::new().cyan());
        let (src, dst) = (self.addr(p.src).to_string(), self.addr(p.dst).to_string());
        let mut line = format!(
            "{:>6}{} {src:>21} → {dst:<21} {:>3} {} {info}",
            p.frame,
            String::from_utf8_lossy(&time),
            p.flow,
            p.dir.as_str(),
        );
        for a in &p.anomalies {
            let text = format!(" [{}: {}]", a.kind, a.detail);
            line.push_str(&self.pal.paint(&text, Style::new().red().bold()));
        }
        line
    }

    /// The line of an ICMP error about a flow's datagram, in the columns of
    /// packet lines: from the error's sender back to the datagram's sender,
    /// in the direction opposite to the datagram's.
    pub(crate) fn icmp_line(&mut self, n: &IcmpNote) -> String {
        let what = match n.mtu {
            Some(mtu) => format!("{} (MTU {mtu})", n.kind.replace('_', " ")),
            None => n.kind.replace('_', " "),
        };
        let mut time = Vec::new();
        self.time.push(&mut time, n.ts, n.since);
        format!(
            "{:>6}{} {:>21} → {:<21} {:>3} {} {}",
            n.frame,
            String::from_utf8_lossy(&time),
            n.from.to_string(),
            n.src.to_string(),
            n.flow,
            n.dir.reverse().as_str(),
            self.pal.paint(
                &format!("ICMP {what} for {} → {}", n.src, n.dst),
                Style::new().magenta().bold()
            )
        )
    }
}

/// A LAN discovery datagram, in words: who looks for worlds, the world's
/// card, the signal.
fn lan_info(l: &crate::nethernet::lan::LanSeen, s: &mut String) {
    let _ = write!(s, "LAN discovery {} from {}", l.packet, l.sender);
    if let Some(d) = &l.server_data {
        let _ = write!(
            s,
            ": \"{}\" by {}, {}/{} players, game type {}",
            d.level_name, d.server_name, d.player_count, d.max_player_count, d.game_type
        );
    }
    if let (Some(r), Some(k), Some(c)) = (&l.recipient, &l.signal, &l.connection) {
        let _ = write!(s, " to {r}: {k} connection {c}");
        // One line: the data's words, cut.
        let words = || l.data.iter().flat_map(|d| d.split_whitespace());
        match &l.ice_ufrag {
            Some(u) => {
                let _ = write!(s, " (SDP, ufrag={u})");
            }
            None if words().map(|w| w.len() + 1).sum::<usize>() <= 80 => {
                for w in words() {
                    let _ = write!(s, " {w}");
                }
            }
            None => {
                let cut: String = words()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(60)
                    .collect();
                let _ = write!(s, " {cut}…");
            }
        }
    }
    if let Some(e) = &l.error {
        let _ = write!(s, " [{e}]");
    }
}

/// What a NetherNet datagram held, in words.
fn nethernet_info(p: &crate::records::nethernet::NethernetPacket) -> String {
    use crate::nethernet::{dtls, sctp};
    let mut s = String::new();
    if let Some(st) = &p.stun {
        let _ = write!(s, "STUN Binding {}", st.class.as_str());
        if let Some(u) = &st.username {
            let _ = write!(s, " user={u}");
        }
        if st.use_candidate {
            s.push_str(" USE-CANDIDATE");
        }
        if let Some((code, reason)) = &st.error {
            let _ = write!(s, " {code} {reason}");
        }
        if st.integrity_ok == Some(false) {
            s.push_str(" [MESSAGE-INTEGRITY does not verify with the SDP's ice-pwd]");
        }
    }
    for r in &p.records {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str("DTLS ");
        if r.handshakes.is_empty() {
            s.push_str(dtls::content_name(r.content));
        } else {
            let names: Vec<&str> = r
                .handshakes
                .iter()
                .map(|&k| dtls::handshake_name(k))
                .collect();
            s.push_str(&names.join("+"));
        }
        if (r.epoch > 0 || dtls::is_unified(r.content)) && !r.opened {
            let _ = write!(s, " (sealed, {} bytes)", r.len);
        }
    }
    if !p.chunks.is_empty() {
        s.push_str(" → SCTP");
        for c in &p.chunks {
            let _ = write!(s, " {}", sctp::chunk_name(c.kind));
            let mut args = Vec::new();
            if let Some(t) = c.tsn {
                args.push(format!("tsn={t}"));
            }
            if let Some(v) = c.stream {
                args.push(format!("sid={v}"));
            }
            if let Some(v) = c.ppid {
                args.push(format!("ppid={v}"));
            }
            if let Some(v) = c.len {
                args.push(format!("len={v}"));
            }
            if let Some(v) = c.cumulative_tsn {
                args.push(format!("cum={v}"));
            }
            if !args.is_empty() {
                let _ = write!(s, "({})", args.join(" "));
            }
        }
    }
    for label in &p.opened {
        let _ = write!(s, " opens {label}");
    }
    // A sealed alert: its record says so already.
    for (level, d) in p.alerts.iter().flatten() {
        let level = if *level == 2 { "fatal" } else { "warning" };
        let _ = write!(s, " {level} {}", dtls::alert_name(*d));
    }
    for h in &p.http {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str("HTTP");
        for v in [&h.method, &h.target].into_iter().flatten() {
            let _ = write!(s, " {v}");
        }
        if let Some(status) = h.status {
            let _ = write!(s, " {status} {}", h.reason.as_deref().unwrap_or(""));
        }
        if let Some(t) = &h.content_type {
            let _ = write!(s, " {t}");
        }
        if let Some(u) = &h.ice_ufrag {
            let _ = write!(s, " ufrag={u} candidates={}", h.candidates.join(","));
            if let Some(i) = &h.identity {
                let who = i.name.as_deref().or(i.domain.as_deref()).unwrap_or("?");
                let ok = match i.fingerprints_verify {
                    Some(true) => "signed",
                    Some(false) => "NOT SIGNED",
                    None => "unchecked",
                };
                let _ = write!(s, " identity={who} fingerprints={ok}");
            }
        } else if let Some(b) = h.body.as_deref().filter(|b| b.starts_with('{')) {
            // A status: its JSON, cut.
            let cut: String = b.chars().take(80).collect();
            let _ = write!(s, " {cut}{}", if cut.len() < b.len() { "…" } else { "" });
        }
    }
    if let Some(l) = &p.lan {
        lan_info(l, &mut s);
    }
    if s.is_empty() {
        s.push_str(if p.kind == "http" {
            "TCP"
        } else {
            "not STUN or DTLS"
        });
    }
    s
}

/// A packet's summary line (without the newline): frame, time relative to
/// `since`, endpoints, flow and direction, summary, anomalies.
pub fn line(p: &Packet<'_>, since: Duration, pal: Palette) -> String {
    let mut s = Vec::new();
    LineFormatter::new(pal, TimeFormat::Relative).push_line(&mut s, p, since);
    String::from_utf8_lossy(&s).into_owned()
}

/// One line per delivered message: frame, time (in `time`'s format, `since`
/// being the capture's first datagram), flow, direction, reliability and
/// channel, id and name, length, the first bytes.
pub fn message_line(
    m: &Message,
    via: Option<&crate::nethernet::association::DataChannel>,
    since: Duration,
    time: &mut TimeColumn,
    pal: Palette,
) -> String {
    let mut s = Vec::with_capacity(160);
    push_spaces(&mut s, 6usize.saturating_sub(decimal_len(m.frame)));
    push_uint(&mut s, m.frame);
    time.push(&mut s, m.ts, since);
    // Colours: the direction (as each side's packets would be told apart)
    // and the application's own messages in bold, RakNet's own plain.
    let _ = write!(
        ByteWriter(&mut s),
        " {:>3} {}",
        m.flow,
        pal.paint_dir(m.dir)
    );
    // A NetherNet message: its data channel, not a RakNet message id.
    if let Some(v) = via {
        let _ = match &v.label {
            Some(label) => write!(ByteWriter(&mut s), " {label}"),
            None => write!(ByteWriter(&mut s), " stream={}", v.stream),
        };
        let _ = write!(ByteWriter(&mut s), " ppid={}", v.ppid);
    } else {
        let _ = write!(ByteWriter(&mut s), " {}", m.reliability.name());
    }
    if let Some(ch) = m.channel {
        s.extend_from_slice(b" ch=");
        push_uint(&mut s, u64::from(ch));
    }
    if let Some(&id) = m.data.first().filter(|_| via.is_none()) {
        s.push(b' ');
        if pal.enabled && id >= crate::wire::ids::USER_PACKET_ENUM {
            let mut name = Vec::new();
            push_name(&mut name, id);
            let name = String::from_utf8_lossy(&name);
            s.extend_from_slice(pal.paint_bold(&name).as_bytes());
        } else {
            push_name(&mut s, id);
        }
    }
    s.extend_from_slice(b" len=");
    push_uint(&mut s, m.data.len() as u64);
    s.push(b' ');
    s.extend_from_slice(crate::wire::cursor::hex(&m.data[..m.data.len().min(16)]).as_bytes());
    let mut line = String::from_utf8_lossy(&s).into_owned();
    if m.data.len() > 16 {
        line.push('…');
    }
    for a in &m.anomalies {
        line.push_str(&pal.paint_anomaly(&format!(" [{}: {}]", a.kind, a.detail)));
    }
    line
}

/// `fmt::Write` into a byte buffer.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The `-V` field tree: offset and length columns, then the field, indented by depth.
pub fn tree(p: &Packet<'_>, t: &Trace) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  UDP {} → {}, flow {} {}, {} bytes of payload{}",
        p.src,
        p.dst,
        p.flow,
        p.dir.as_str(),
        p.payload.len(),
        if p.payload.len() < p.udp_len {
            format!(" (of {}, cut by the snapshot length)", p.udp_len)
        } else {
            String::new()
        }
    );
    let _ = writeln!(s, "  RakNet {}", p.kind());
    for f in &t.fields {
        let indent = "  ".repeat(f.depth as usize + 2);
        if f.value.is_empty() {
            let _ = writeln!(s, "  {:>5} {:>4} {indent}{}", f.offset, f.len, f.name);
        } else {
            let _ = writeln!(
                s,
                "  {:>5} {:>4} {indent}{}: {}",
                f.offset, f.len, f.name, f.value
            );
        }
    }
    for a in &p.anomalies {
        let _ = writeln!(s, "  anomaly: {}: {}", a.kind, a.detail);
    }
    s
}

/// A classic hex dump of `b`: offset, 16 bytes in hex, printable ASCII.
pub fn hex_dump(b: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in b.chunks(16).enumerate() {
        let _ = write!(s, "  {:04x}  ", i * 16);
        for j in 0..16 {
            match chunk.get(j) {
                Some(x) => {
                    let _ = write!(s, "{x:02x} ");
                }
                None => s.push_str("   "),
            }
            if j == 7 {
                s.push(' ');
            }
        }
        s.push(' ');
        for &c in chunk {
            s.push(if (0x20..0x7f).contains(&c) {
                c as char
            } else {
                '.'
            });
        }
        s.push('\n');
    }
    s
}

/// Seconds on the command line: finite, 0 to a million (about 11 days).
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1e6).contains(v))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?} is not a number of seconds from 0 to 1000000"))
}

/// `stats --interval`: seconds as [`parse_seconds`] reads them, more than 0
/// (at least 1 ns).
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    parse_seconds(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not an interval: seconds, more than 0, at most 1000000"))
}

/// A count on the command line (`-c N`, `--threads N`): a whole number, 1
/// or more, said in words when it is not.
pub fn parse_count<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + TryFrom<u64> + Into<u64> + Copy + Bounded,
{
    let max: u64 = T::MAX_VALUE.into();
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be 1 or more".into()),
        Ok(n) => T::try_from(n).map_err(|_| format!("must be at most {max}")),
        Err(_) if s.trim().starts_with('-') => Err("must be 1 or more".into()),
        Err(_) if !s.is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("must be at most {max}"))
        }
        Err(_) => Err(format!("{s:?} is not a whole number (1 to {max})")),
    }
}

/// The largest value of an unsigned integer type, for [`parse_count`].
pub trait Bounded {
    /// The type's largest value.
    const MAX_VALUE: Self;
}

impl Bounded for u16 {
    const MAX_VALUE: Self = u16::MAX;
}

impl Bounded for u32 {
    const MAX_VALUE: Self = u32::MAX;
}

impl Bounded for u64 {
    const MAX_VALUE: Self = u64::MAX;
}

/// An ordering channel on the command line: 0 to 31.
pub fn parse_channel(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(c) if c < 32 => Ok(c),
        _ => Err(format!("{s:?} is not an ordering channel (0 to 31)")),
    }
}

/// `replay --speed`: 0.001 to 1,000,000 times the captured pace.
pub fn parse_speed(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.001..=1e6).contains(v))
        .ok_or_else(|| format!("{s:?} is not a speed from 0.001 to 1000000"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_channels_are_said_in_words() {
        assert_eq!(parse_count::<u64>("3"), Ok(3));
        assert_eq!(parse_count::<u64>("0").unwrap_err(), "must be 1 or more");
        assert_eq!(parse_count::<u32>("-2").unwrap_err(), "must be 1 or more");
        assert_eq!(
            parse_count::<u16>("70000").unwrap_err(),
            "must be at most 65535"
        );
        assert_eq!(
            parse_count::<u64>("99999999999999999999").unwrap_err(),
            "must be at most 18446744073709551615"
        );
        assert!(parse_count::<u32>("ten")
            .unwrap_err()
            .contains("not a whole number"));
        assert_eq!(parse_channel("31"), Ok(31));
        assert!(parse_channel("32").unwrap_err().contains("0 to 31"));
    }

    #[test]
    fn decimals_as_display_writes_them() {
        let mut powers: Vec<u64> = (0..20).map(|k| 10u64.pow(k)).collect();
        powers.extend(powers.clone().iter().map(|p| p - 1));
        powers.extend([u64::MAX, 99, 100, 101, 12_345, 65_535]);
        for v in powers.into_iter().chain((0..5000).map(|k| k * 7919)) {
            let mut s = b"x".to_vec();
            push_uint(&mut s, v);
            assert_eq!(s, format!("x{v}").into_bytes());
        }
    }

    #[test]
    fn interval_argument() {
        let s = Duration::from_secs_f64;
        assert_eq!(parse_interval("0.25"), Ok(s(0.25)));
        assert_eq!(parse_interval("1"), Ok(s(1.0)));
        for bad in ["0", "-1", "NaN", "inf", "1e9", "1e-12", "x", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_speed("2"), Ok(2.0));
        assert!(parse_speed("0").is_err() && parse_speed("NaN").is_err());
    }

    #[test]
    fn seconds_never_panic_on_odd_input() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["inf", "NaN", "-1", "1e300", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
    use crate::capture::UdpDatagram;
    use crate::dissect::{Dissector, Options};

    fn dissect_one(payload: Vec<u8>) -> (String, String) {
        let d = UdpDatagram {
            frame: 7,
            ts: Duration::from_millis(1500),
            src: "127.0.0.1:50000".parse().unwrap(),
            dst: "127.0.0.1:19132".parse().unwrap(),
            udp_len: payload.len(),
            payload,
            icmp: None,
            tcp: None,
        };
        let mut dis = Dissector::new(Options {
            ports: vec![19132],
            trace: true,
            ..Options::default()
        });
        let p = dis.dissect(&d).unwrap();
        let t = p.trace.as_ref().unwrap();
        (
            line(&p, Duration::from_secs(1), Palette { enabled: false }),
            tree(&p, t),
        )
    }

    #[test]
    fn data_datagram_line_and_tree() {
        // #5: RELIABLE_ORDERED ri=3 oi=2 ch=1 carrying a connected ping, then an unreliable 0x86.
        let mut p = vec![0x84, 5, 0, 0, 0x60, 0x00, 0x48, 3, 0, 0, 2, 0, 0, 1];
        p.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 9]);
        p.extend_from_slice(&[0x00, 0x00, 0x08, 0x86]);
        let (l, t) = dissect_one(p);
        assert_eq!(
            l,
            "     7    0.500000       127.0.0.1:50000 → 127.0.0.1:19132         1 c2s \
             #5 RELIABLE_ORDERED ri=3 oi=2 ch=1 ID_CONNECTED_PING len=9 | UNRELIABLE ID_USER_PACKET_ENUM len=1"
        );
        assert_eq!(
            t,
            "  UDP 127.0.0.1:50000 → 127.0.0.1:19132, flow 1 c2s, 27 bytes of payload
  RakNet data
      0    1     datagram flags: 0x84 (valid, needs B and AS)
      1    3     datagram number: 5
      4   19     capsule: 1
      4    1       capsule flags: 0x60
      4    1       reliability: 3 RELIABLE_ORDERED
      4    1       has split: false
      5    2       length in bits: 72
      7    3       reliable index: 3
     10    3       order index: 2
     13    1       order channel: 1
     14    9       payload: 000000000000000009
     14    1         message id: 0x00 ID_CONNECTED_PING
     15    8         ping time: 9
     23    4     capsule: 2
     23    1       capsule flags: 0x00
     23    1       reliability: 0 UNRELIABLE
     23    1       has split: false
     24    2       length in bits: 8
     26    1       payload: 86
"
        );
    }

    #[test]
    fn ack_line() {
        let (l, _) = dissect_one(vec![0xc0, 0, 2, 0, 3, 0, 0, 7, 0, 0, 1, 9, 0, 0]);
        assert!(l.ends_with("ACK 3-7,9"), "{l}");
    }

    #[test]
    fn hex_dump_layout() {
        let d = hex_dump(b"\x84\x00\x00\x00ABCDEFGHIJKLMNOPQ");
        assert_eq!(
            d,
            "  0000  84 00 00 00 41 42 43 44  45 46 47 48 49 4a 4b 4c  ....ABCDEFGHIJKL\n  \
             0010  4d 4e 4f 50 51                                    MNOPQ\n"
        );
    }

    #[test]
    fn decimal_digits() {
        for v in [
            0u64,
            7,
            10,
            99,
            100,
            101,
            999,
            1000,
            65535,
            16_777_215,
            u64::MAX,
        ] {
            let mut s = Vec::new();
            push_uint(&mut s, v);
            assert_eq!(String::from_utf8(s).unwrap(), v.to_string());
            assert_eq!(decimal_len(v), v.to_string().len());
        }
    }

    /// The time column of each format for lines at `ts` (each a list of
    /// (time, shown)), `since` the capture's start.
    fn column(format: TimeFormat, since: Duration, lines: &[(Duration, bool)]) -> Vec<String> {
        let mut c = TimeColumn::new(format);
        let mut out = Vec::new();
        for &(ts, shown) in lines {
            c.seen(ts);
            if shown {
                let mut s = Vec::new();
                c.push(&mut s, ts, since);
                out.push(String::from_utf8(s).unwrap());
            }
        }
        out
    }

    #[test]
    fn time_formats() {
        let since = Duration::new(1_795_321_080, 485_315_000);
        let ts = Duration::new(1_795_321_080, 506_463_400);
        let one = |f| column(f, since, &[(ts, true)]).remove(0);
        assert_eq!(one(TimeFormat::Relative), "    0.021148");
        assert_eq!(one(TimeFormat::Absolute), " 04:18:00.506463");
        assert_eq!(one(TimeFormat::AbsoluteDate), " 2026-11-22 04:18:00.506463");
        assert_eq!(one(TimeFormat::Epoch), " 1795321080.506463");
        assert_eq!(one(TimeFormat::Delta), "    0.000000", "the first line");
        assert_eq!(one(TimeFormat::DeltaDisplayed), "    0.000000");
        // Rounded to the microsecond, carrying into the seconds.
        let carry = Duration::new(86_399, 999_999_600);
        let date = |t| column(TimeFormat::AbsoluteDate, Duration::ZERO, &[(t, true)]).remove(0);
        assert_eq!(date(carry), " 1970-01-02 00:00:00.000000");
        assert_eq!(date(Duration::ZERO), " 1970-01-01 00:00:00.000000");
        assert_eq!(
            date(Duration::from_secs(951_782_400)),
            " 2000-02-29 00:00:00.000000"
        );
        assert_eq!(
            date(Duration::new(1_735_689_599, 999_999_000)),
            " 2024-12-31 23:59:59.999999"
        );
        assert_eq!(
            date(Duration::from_secs(4_107_542_400)),
            " 2100-03-01 00:00:00.000000"
        );
        assert_eq!(
            date(Duration::from_secs(253_402_300_799)),
            " 9999-12-31 23:59:59.000000"
        );
        let rel = |t| column(TimeFormat::Relative, Duration::ZERO, &[(t, true)]).remove(0);
        assert_eq!(rel(carry), " 86400.000000", "wider than the column");
        assert_eq!(rel(Duration::from_micros(12_345_678)), "   12.345678");
    }

    #[test]
    fn deltas_count_from_the_record_read_or_the_line_shown() {
        let ms = Duration::from_millis;
        let lines = [
            (ms(1000), true),
            (ms(1250), false),
            (ms(1500), true),
            (ms(1400), true),
        ];
        assert_eq!(
            column(TimeFormat::Delta, ms(1000), &lines),
            ["    0.000000", "    0.250000", "   -0.100000"]
        );
        assert_eq!(
            column(TimeFormat::DeltaDisplayed, ms(1000), &lines),
            ["    0.000000", "    0.500000", "   -0.100000"]
        );
        assert_eq!(
            column(TimeFormat::Relative, ms(1000), &lines),
            ["    0.000000", "    0.500000", "    0.400000"]
        );
    }

    #[test]
    fn message_lines_take_the_time_format() {
        let m = Message {
            flow: 1,
            dir: crate::dissect::Dir::C2s,
            frame: 9,
            ts: Duration::new(1_795_321_080, 517_479_000),
            data: vec![0x09, 0, 1],
            reliability: crate::wire::Reliability::RELIABLE_ORDERED,
            channel: Some(0),
            anomalies: Vec::new(),
        };
        let since = Duration::new(1_795_321_080, 485_315_000);
        let pal = Palette { enabled: false };
        let line = |f| message_line(&m, None, since, &mut TimeColumn::new(f), pal);
        assert_eq!(
            line(TimeFormat::Relative),
            "     9    0.032164   1 c2s RELIABLE_ORDERED ch=0 ID_CONNECTION_REQUEST len=3 090001"
        );
        assert_eq!(
            line(TimeFormat::AbsoluteDate),
            "     9 2026-11-22 04:18:00.517479   1 c2s RELIABLE_ORDERED ch=0 ID_CONNECTION_REQUEST len=3 090001"
        );
    }

    #[test]
    fn message_lines_colour_the_direction_and_application_messages() {
        let mut m = Message {
            flow: 1,
            dir: crate::dissect::Dir::S2c,
            frame: 9,
            ts: Duration::from_millis(40),
            data: vec![0x86, 1],
            reliability: crate::wire::Reliability::RELIABLE,
            channel: None,
            anomalies: Vec::new(),
        };
        let on = Palette { enabled: true };
        let off = Palette { enabled: false };
        let line = |m: &Message, pal| {
            message_line(
                m,
                None,
                Duration::ZERO,
                &mut TimeColumn::new(TimeFormat::Relative),
                pal,
            )
        };
        let plain = line(&m, off);
        assert!(!plain.contains('\x1b'), "{plain}");
        let coloured = line(&m, on);
        assert!(coloured.contains("\x1b[35ms2c\x1b[0m"), "{coloured:?}");
        assert!(
            coloured.contains("\x1b[1mID_USER_PACKET_ENUM"),
            "{coloured:?}"
        );
        // RakNet's own messages are not in bold; stripped, the lines agree.
        m.data = vec![0x10];
        assert!(!line(&m, on).contains("\x1b[1m"));
        let strip = |s: &str| {
            let mut out = String::new();
            let mut it = s.chars();
            while let Some(c) = it.next() {
                if c == '\x1b' {
                    it.by_ref().find(|&c| c == 'm');
                } else {
                    out.push(c);
                }
            }
            out
        };
        assert_eq!(strip(&line(&m, on)), line(&m, off));
    }

    #[test]
    fn quoted_escapes() {
        assert_eq!(quoted(b"a\"\x01", 10), "\"a\\\"\\x01\"");
        assert_eq!(quoted(b"abcdef", 3), "\"abc\"…");
    }
}
