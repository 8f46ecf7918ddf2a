//! The game layer printed: a line per game packet (or batch that shows
//! none), and the `-V` tree of a packet's decoded fields. Its records
//! (`--json`) are `records::game`'s.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::bedrock::{GamePacket, Opaque};
use crate::dissect::Dir;
use crate::mirror::Message;
use crate::output::text::Palette;

/// The key fields of a decoded packet, `key=value` each, for its line.
pub(crate) fn key_fields(fields: &Value) -> String {
    const KEYS: &[&str] = &[
        "client_protocol",
        "protocol",
        "display_name",
        "game_version",
        "device_os_name",
        "compression",
        "compression_threshold",
        "status",
        "status_name",
        "response_status_name",
        "entity_id",
        "player_gamemode_name",
        "type_name",
        "source_name",
        "reason",
        "message",
        "server_address",
        "port",
        "salt",
        "error",
    ];
    let mut s = String::new();
    for k in KEYS {
        // A name the definitions already give (`status` is mapped).
        let same = k
            .strip_suffix("_name")
            .is_some_and(|base| fields.get(base).is_some() && fields.get(base) == fields.get(*k));
        // The hand decoder's number beside its name (`--no-fields`).
        let number_named = fields.get(*k).is_some_and(Value::is_number)
            && fields.get(format!("{k}_name")).is_some();
        if same || number_named {
            continue;
        }
        match fields.get(*k) {
            Some(Value::String(v)) => {
                let _ = write!(s, " {k}={}", super::text::quoted(v.as_bytes(), 60));
            }
            Some(v @ (Value::Number(_) | Value::Bool(_))) => {
                let _ = write!(s, " {k}={v}");
            }
            _ => {}
        }
    }
    s
}

/// The start of every game line: frame, time, flow, direction.
fn head(s: &mut String, m: &Message, since: Duration, dir: Dir, pal: Palette) {
    let t = m.ts.saturating_sub(since).as_secs_f64();
    let _ = write!(s, "{:>6} {t:>11.6} {:>3} ", m.frame, m.flow);
    s.push_str(&pal.paint_dir(dir));
}

/// One line per game packet: frame, time since `since`, flow, direction,
/// batch, name and id, length, encryption, the key fields.
pub fn line(p: &GamePacket, m: &Message, since: Duration, pal: Palette) -> String {
    let mut s = String::with_capacity(120);
    head(&mut s, m, since, p.dir, pal);
    let name = p.name.unwrap_or("unknown");
    let _ = write!(
        s,
        " #{} {} (0x{:02x}) len={}{}",
        p.batch,
        pal.paint_bold(name),
        p.header.id,
        p.data.len(),
        if p.encrypted { " encrypted" } else { "" }
    );
    if p.header.sender != 0 || p.header.target != 0 {
        let _ = write!(s, " subclient={}->{}", p.header.sender, p.header.target);
    }
    if let Some(f) = &p.fields {
        s.push_str(&key_fields(f));
    }
    s
}

/// The line of an opaque batch.
pub(crate) fn opaque_line(o: &Opaque, m: &Message, since: Duration, pal: Palette) -> String {
    let mut s = String::with_capacity(120);
    head(&mut s, m, since, o.dir, pal);
    let _ = write!(s, " #{} batch of {} bytes ", o.batch, o.len);
    s.push_str(&pal.paint_anomaly(&format!("[{}: {}]", o.reason.as_str(), o.detail)));
    s
}

/// A message line whose `ID_USER_PACKET_ENUM+120` is replaced by the game
/// packets inside (`game[login]`, `game[play_status,text]`).
pub(crate) fn name_message(line: &str, names: &[String]) -> String {
    // In colour the name is already in bold: only its text changes.
    line.replacen(
        "ID_USER_PACKET_ENUM+120",
        &format!("game[{}]", names.join(",")),
        1,
    )
}

/// A packet line of a Bedrock flow: each `ID_USER_PACKET_ENUM+120` is
/// `game`, and the game packets inside the messages the packet delivered
/// (`names`, in delivery order) follow a `⇒` (the split's last part, an
/// ordering hole filled: not always the capsules of this line).
pub(crate) fn name_packet(line: &mut Vec<u8>, names: &[String]) {
    const TOKEN: &[u8] = b"ID_USER_PACKET_ENUM+120";
    let mut out = Vec::with_capacity(line.len() + 32);
    let mut rest = &line[..];
    while let Some(i) = rest.windows(TOKEN.len()).position(|w| w == TOKEN) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(b"game");
        rest = &rest[i + TOKEN.len()..];
    }
    out.extend_from_slice(rest);
    if !names.is_empty() {
        out.extend_from_slice(" ⇒ ".as_bytes());
        out.extend_from_slice(names.join(", ").as_bytes());
    }
    *line = out;
}

/// Under a packet's `-V` tree: the game packets of the messages it
/// delivered, each with its decoded fields.
pub(crate) fn delivered_tree(events: &[crate::bedrock::GameEvent]) -> String {
    use crate::bedrock::GameEvent;
    let mut s = String::from("  Bedrock game packets (in the messages this packet delivered)\n");
    for e in events {
        match e {
            GameEvent::Packet(p) => {
                let _ = writeln!(
                    s,
                    "    {} {} (0x{:02x}) len={} batch {}{}",
                    p.dir.as_str(),
                    p.name.unwrap_or("unknown"),
                    p.header.id,
                    p.data.len(),
                    p.batch,
                    if p.encrypted { ", encrypted" } else { "" }
                );
                // Offsets in a game packet would read as the datagram's here.
                if let Some(Value::Object(f)) = &p.fields {
                    for (k, v) in f {
                        push_value(&mut s, k, v, 3);
                    }
                }
            }
            GameEvent::Opaque(o) => {
                let _ = writeln!(
                    s,
                    "    {} batch {}: {} bytes not shown ({}: {})",
                    o.dir.as_str(),
                    o.batch,
                    o.len,
                    o.reason.as_str(),
                    o.detail
                );
            }
        }
    }
    s
}

/// The `-V` tree of a packet, under its line, as the RakNet tree is: an
/// offset and a length in the packet (its header included), then the
/// field, indented by depth. The header, then the fields the definitions
/// decoded in wire order ([`GamePacket::layout`]), then, under `decoded
/// (no offset)`, the keys with no bytes of their own (the hand decoders':
/// names of numbers, the login's JWT claims, signature checks).
pub fn tree(p: &GamePacket) -> String {
    use crate::bedrock::schema::Shown;
    let digits = p.data.len().to_string().len();
    let mut t = Tree {
        s: String::new(),
        widths: (digits.max(5), digits.max(4)),
    };
    t.row(
        Some((0, p.header.len)),
        0,
        format_args!(
            "header: id {} ({}), sender sub-client {}, target sub-client {}",
            p.header.id,
            p.name.unwrap_or("unknown"),
            p.header.sender,
            p.header.target
        ),
    );
    let spans = p.layout.as_deref().unwrap_or_default();
    for span in spans {
        let at = Some((p.header.len + span.start, span.end - span.start));
        let depth = usize::from(span.depth);
        match &span.shown {
            Shown::Object => t.row(at, depth, format_args!("{}", span.name)),
            Shown::Array(n) => t.row(
                at,
                depth,
                format_args!(
                    "{}: {n} element{}",
                    span.name,
                    if *n == 1 { "" } else { "s" }
                ),
            ),
            Shown::Value(v) => t.value(at, depth, &span.name, v),
        }
    }
    let Some(Value::Object(f)) = &p.fields else {
        return t.s;
    };
    let wire: std::collections::HashSet<&str> = spans
        .iter()
        .filter(|s| s.depth == 0)
        .map(|s| &*s.name)
        .collect();
    let mut decoded = f
        .iter()
        .filter(|(k, _)| !wire.contains(k.as_str()))
        .peekable();
    if decoded.peek().is_some() {
        t.row(None, 0, format_args!("decoded (no offset):"));
        for (k, v) in decoded {
            t.value(None, 1, k, v);
        }
    }
    t.s
}

/// A `-V` tree being written: offset and length columns as wide as the
/// packet's length needs (the RakNet tree's widths at least).
struct Tree {
    s: String,
    widths: (usize, usize),
}

impl Tree {
    /// A line: `at` the offset and length (blank when `None`).
    fn row(&mut self, at: Option<(usize, usize)>, depth: usize, text: std::fmt::Arguments<'_>) {
        let (ow, lw) = self.widths;
        let indent = "  ".repeat(depth + 2);
        let _ = match at {
            Some((o, l)) => writeln!(self.s, "  {o:>ow$} {l:>lw$} {indent}{text}"),
            None => writeln!(self.s, "  {:ow$} {:lw$} {indent}{text}", "", ""),
        };
    }

    /// `key: value` at `at`; an object's or array's parts (with no
    /// spans of their own) on the lines after it, without offsets.
    fn value(&mut self, at: Option<(usize, usize)>, depth: usize, key: &str, v: &Value) {
        match v {
            Value::Object(o) if !o.is_empty() => {
                self.row(at, depth, format_args!("{key}"));
                for (k, v) in o {
                    self.value(None, depth + 1, k, v);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                self.row(at, depth, format_args!("{key}: {} elements", a.len()));
                for (i, v) in a.iter().enumerate() {
                    self.value(None, depth + 1, &format!("[{i}]"), v);
                }
            }
            Value::String(t) => self.row(
                at,
                depth,
                format_args!("{key}: {}", super::text::quoted(t.as_bytes(), 120)),
            ),
            other => self.row(at, depth, format_args!("{key}: {other}")),
        }
    }
}

fn push_value(s: &mut String, key: &str, v: &Value, depth: usize) {
    let indent = "  ".repeat(depth + 1);
    match v {
        Value::Object(o) => {
            let _ = writeln!(s, "{indent}{key}:");
            for (k, v) in o {
                push_value(s, k, v, depth + 1);
            }
        }
        Value::String(t) => {
            let _ = writeln!(
                s,
                "{indent}{key}: {}",
                super::text::quoted(t.as_bytes(), 120)
            );
        }
        other => {
            let _ = writeln!(s, "{indent}{key}: {other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::batch::Header;

    #[test]
    fn packet_lines_say_game_and_what_was_delivered() {
        let mut l = b"#3 RELIABLE_ORDERED ID_USER_PACKET_ENUM+120 len=16 | RELIABLE_ORDERED ID_USER_PACKET_ENUM+120 len=20".to_vec();
        name_packet(
            &mut l,
            &["play_status".into(), "resource_packs_info".into()],
        );
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "#3 RELIABLE_ORDERED game len=16 | RELIABLE_ORDERED game len=20 ⇒ play_status, resource_packs_info"
        );
        let mut l = b"#7 split 5/5 id=1 len=1197".to_vec();
        name_packet(&mut l, &["login".into()]);
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "#7 split 5/5 id=1 len=1197 ⇒ login"
        );
        let mut l = b"ACK 3".to_vec();
        name_packet(&mut l, &[]);
        assert_eq!(l, b"ACK 3");
    }

    #[test]
    fn lines_records_and_trees() {
        let p = GamePacket {
            dir: Dir::S2c,
            batch: 3,
            header: Header {
                id: 2,
                sender: 0,
                target: 0,
                len: 1,
            },
            name: Some("play_status"),
            data: vec![2, 0, 0, 0, 1].into(),
            encrypted: true,
            fields: Some(serde_json::json!({"status": 1, "status_name": "failed_client"})),
            anomaly: None,
            error: None,
            pending: None,
            layout: None,
        };
        let m = Message {
            flow: 1,
            dir: Dir::S2c,
            frame: 40,
            ts: Duration::from_millis(1500),
            data: vec![0xfe],
            reliability: crate::wire::Reliability::RELIABLE_ORDERED,
            channel: Some(0),
            anomalies: Vec::new(),
        };
        let pal = Palette { enabled: false };
        assert_eq!(
            line(&p, &m, Duration::from_millis(500), pal),
            "    40    1.000000   1 s2c #3 play_status (0x02) len=5 encrypted status_name=\"failed_client\""
        );
        // No layout (the hand decoder's fields only): the header, then
        // the keys said as decoded.
        let want = [
            "      0    1     header: id 2 (play_status), sender sub-client 0, target sub-client 0",
            "                 decoded (no offset):",
            "                   status: 1",
            "                   status_name: \"failed_client\"",
        ];
        assert_eq!(tree(&p), want.join("\n") + "\n");
    }

    #[test]
    fn the_tree_is_in_wire_order_with_offsets_in_the_packet() {
        use crate::bedrock::schema::{Shown, Span};
        let span = |depth, name: &str, start, end, shown| Span {
            depth,
            name: name.into(),
            start,
            end,
            shown,
        };
        let v = |v: serde_json::Value| Shown::Value(v);
        // A two-byte header, then (body offsets) a varint string, an
        // object, an empty array, a long string.
        let long = "x".repeat(130);
        let p = GamePacket {
            dir: Dir::C2s,
            batch: 0,
            header: Header {
                id: 193,
                sender: 0,
                target: 0,
                len: 2,
            },
            name: Some("example"),
            data: vec![0; 2 + 10 + 133].into(),
            encrypted: false,
            fields: Some(serde_json::json!({
                "zeta": "hi", "pos": {"x": 1, "y": 2}, "list": [], "text": long,
                "zeta_name": "greeting", "chain": {"verifies": true}})),
            anomaly: None,
            error: None,
            pending: None,
            layout: Some(vec![
                span(0, "zeta", 0, 3, v("hi".into())),
                span(0, "pos", 3, 9, Shown::Object),
                span(1, "x", 3, 7, v(1.into())),
                span(1, "y", 7, 9, v(2.into())),
                span(0, "list", 9, 10, Shown::Array(0)),
                span(0, "text", 10, 143, v(long.clone().into())),
            ]),
        };
        let want = [
            "      0    2     header: id 193 (example), sender sub-client 0, target sub-client 0",
            "      2    3     zeta: \"hi\"",
            "      5    6     pos",
            "      5    4       x: 1",
            "      9    2       y: 2",
            "     11    1     list: 0 elements",
            &format!("     12  133     text: \"{}\"…", &long[..120]),
            "                 decoded (no offset):",
            "                   chain",
            "                     verifies: true",
            "                   zeta_name: \"greeting\"",
        ];
        assert_eq!(tree(&p), want.join("\n") + "\n");
    }
}
