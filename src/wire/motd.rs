//! The Minecraft Bedrock pong payload (docs/wire-format.md §10): a u16 big-endian
//! length, then `MCPE;motd;protocol;version;online;max;guid;sub motd;game mode;...`.

/// Names of the `;`-separated fields, in order.
pub(crate) const MOTD_FIELDS: [&str; 12] = [
    "edition",
    "motd",
    "protocol_version",
    "version",
    "players_online",
    "players_max",
    "server_guid",
    "sub_motd",
    "game_mode",
    "nintendo_limited",
    "port_v4",
    "port_v6",
];

/// A parsed Minecraft MOTD: each field with its name, in order (fields past
/// the twelfth are named `extra`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Motd {
    /// Each field's name and text, in the order sent.
    pub fields: Vec<(&'static str, String)>,
}

impl Motd {
    /// Parse a pong payload as a Minecraft MOTD; `None` when it is not one
    /// (the original library's payload is raw application bytes).
    pub fn parse(payload: &[u8]) -> Option<Motd> {
        let (len, text) = payload.split_at_checked(2)?;
        let len = u16::from_be_bytes([len[0], len[1]]) as usize;
        let text = std::str::from_utf8(text.get(..len)?).ok()?;
        if !(text.starts_with("MCPE;") || text.starts_with("MCEE;")) {
            return None;
        }
        let text = text.strip_suffix(';').unwrap_or(text);
        let fields = text
            .split(';')
            .enumerate()
            .map(|(i, v)| {
                (
                    MOTD_FIELDS.get(i).copied().unwrap_or("extra"),
                    v.to_string(),
                )
            })
            .collect();
        Some(Motd { fields })
    }

    /// The text of the field named `name` (one of the names above, or `extra`).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The payload bytes for this MOTD (length prefix, fields, final `;`).
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let mut s = String::new();
        for (_, v) in &self.fields {
            s.push_str(v);
            s.push(';');
        }
        let len = s.len().min(u16::MAX as usize);
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(&s.as_bytes()[..len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrock_pong_fields() {
        let s = "MCPE;Dedicated Server;594;1.20.12;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;";
        let mut p = (s.len() as u16).to_be_bytes().to_vec();
        p.extend_from_slice(s.as_bytes());
        let m = Motd::parse(&p).unwrap();
        assert_eq!(m.get("motd"), Some("Dedicated Server"));
        assert_eq!(m.get("protocol_version"), Some("594"));
        assert_eq!(m.get("port_v6"), Some("19133"));
        let mut out = Vec::new();
        m.emit(&mut out);
        assert_eq!(out, p);
    }

    #[test]
    fn raw_payload_is_not_a_motd() {
        assert_eq!(Motd::parse(b"hello pong"), None);
        assert_eq!(Motd::parse(&[0, 50, b'M']), None);
    }
}
