//! The closed sets some keys' values come from (a packet's `kind`, a
//! message's `name`, an anomaly's `kind`): what a filter's value is
//! checked against, so that a typo is said, not silently matched by
//! nothing.

/// A closed set of values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// A record's `type`.
    RecordType,
    /// `c2s` or `s2c`.
    Dir,
    /// A packet's `kind`.
    Kind,
    /// An anomaly's `kind` (`dissect::ANOMALY_KINDS`).
    AnomalyKind,
    /// A reliability's name.
    Reliability,
    /// A RakNet message's name (`ID_*`, and `ID_USER_PACKET_ENUM+N`).
    Message,
    /// A game packet's name (and `unknown(N)`).
    GamePacket,
}

/// Every record type, as `type` keys give them.
const RECORD_TYPES: [&str; 8] = [
    "packet",
    "message",
    "flow",
    "handshake",
    "game",
    "game_opaque",
    "icmp",
    "end_of_capture",
];

impl Closed {
    /// What a value of the set is, in words ("packet kind").
    pub(crate) fn what(self) -> &'static str {
        match self {
            Closed::RecordType => "record type",
            Closed::Dir => "direction",
            Closed::Kind => "packet kind",
            Closed::AnomalyKind => "anomaly kind",
            Closed::Reliability => "reliability",
            Closed::Message => "message",
            Closed::GamePacket => "game packet",
        }
    }

    /// The set's named values.
    pub(crate) fn names(self) -> Vec<&'static str> {
        match self {
            Closed::RecordType => RECORD_TYPES.to_vec(),
            Closed::Dir => vec!["c2s", "s2c"],
            Closed::Kind => vec![
                "offline", "data", "ack", "nack", "stun", "dtls", "other", "http",
            ],
            Closed::AnomalyKind => crate::dissect::ANOMALY_KINDS.to_vec(),
            Closed::Reliability => (0..8).map(|r| crate::wire::Reliability(r).name()).collect(),
            Closed::Message => crate::wire::ids::MESSAGE_NAMES.to_vec(),
            Closed::GamePacket => crate::bedrock::names::all_names().collect(),
        }
    }

    /// Whether `value` is in the set: one of its names, or a value of the
    /// form the set also takes (`ID_USER_PACKET_ENUM+3`, `unknown(400)`).
    pub(crate) fn accepts(self, value: &str) -> bool {
        let numbered = match self {
            Closed::GamePacket => value.starts_with("unknown("),
            Closed::Message => value
                .strip_prefix("ID_USER_PACKET_ENUM+")
                .and_then(|n| n.parse::<u8>().ok())
                .is_some_and(|n| (1..=0xff - crate::wire::ids::USER_PACKET_ENUM).contains(&n)),
            _ => false,
        };
        numbered || self.names().contains(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_take_their_names_and_numbered_forms_only() {
        assert!(Closed::Kind.accepts("nack") && !Closed::Kind.accepts("nak"));
        assert!(Closed::Dir.accepts("s2c") && !Closed::Dir.accepts("c2z"));
        assert!(Closed::Message.accepts("ID_USER_PACKET_ENUM+1"));
        assert!(!Closed::Message.accepts("ID_USER_PACKET_ENUM+0"));
        assert!(Closed::Message.accepts("ID_CONNECTED_PING"));
        assert!(Closed::GamePacket.accepts("login") && Closed::GamePacket.accepts("unknown(400)"));
        assert!(!Closed::GamePacket.accepts("disconect"));
        assert!(Closed::AnomalyKind.accepts("resend") && !Closed::AnomalyKind.accepts("resent"));
        assert!(Closed::Reliability.accepts("RELIABLE_ORDERED"));
        assert!(Closed::RecordType.accepts("game_opaque"));
    }
}
