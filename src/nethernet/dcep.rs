//! The data channel establishment protocol (DCEP, RFC 8832): the messages
//! of PPID 50 on a stream that open a data channel (its label, whether it
//! is ordered and how reliable) and acknowledge it. NetherNet's client
//! opens `ReliableDataChannel` (ordered, reliable) and
//! `UnreliableDataChannel` (unordered, no retransmission).

use crate::wire::cursor::{Reader, Result};

/// DATA_CHANNEL_OPEN's message type.
pub const OPEN: u8 = 0x03;
/// DATA_CHANNEL_ACK's message type.
pub const ACK: u8 = 0x02;

/// How a channel's messages are delivered (RFC 8832 §5.1's channel type
/// and reliability parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// Every message, resent until acknowledged.
    Reliable,
    /// Resent at most this many times.
    Retransmits(u32),
    /// Resent for at most this many milliseconds.
    Lifetime(u32),
}

/// A DATA_CHANNEL_OPEN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    /// Delivered in the order sent.
    pub ordered: bool,
    /// How often a message is resent.
    pub reliability: Reliability,
    /// The channel's priority (RFC 8831 §6.4).
    pub priority: u16,
    /// The channel's name: NetherNet's `ReliableDataChannel` or `UnreliableDataChannel`.
    pub label: String,
    /// The sub-protocol (empty in NetherNet).
    pub protocol: String,
}

/// A DCEP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// DATA_CHANNEL_OPEN: a channel opens on the stream it came on.
    Open(Open),
    /// DATA_CHANNEL_ACK: the other side took the channel.
    Ack,
}

impl Open {
    /// NetherNet's reliable channel: `ReliableDataChannel`, ordered, resent
    /// until acknowledged.
    pub fn reliable() -> Open {
        Open {
            ordered: true,
            reliability: Reliability::Reliable,
            priority: 0,
            label: RELIABLE_LABEL.into(),
            protocol: String::new(),
        }
    }

    /// NetherNet's unreliable channel: `UnreliableDataChannel`, unordered,
    /// never resent (`maxRetransmits: 0`).
    pub fn unreliable() -> Open {
        Open {
            ordered: false,
            reliability: Reliability::Retransmits(0),
            priority: 0,
            label: UNRELIABLE_LABEL.into(),
            protocol: String::new(),
        }
    }

    /// The DATA_CHANNEL_OPEN's bytes (labels past 65,535 bytes are cut).
    pub fn emit(&self) -> Vec<u8> {
        let (kind, parameter) = match self.reliability {
            Reliability::Reliable => (0x00, 0),
            Reliability::Retransmits(n) => (0x01, n),
            Reliability::Lifetime(ms) => (0x02, ms),
        };
        let kind = kind | if self.ordered { 0 } else { 0x80 };
        let label = &self.label.as_bytes()[..self.label.len().min(0xFFFF)];
        let protocol = &self.protocol.as_bytes()[..self.protocol.len().min(0xFFFF)];
        let mut b = vec![OPEN, kind];
        b.extend(self.priority.to_be_bytes());
        b.extend(parameter.to_be_bytes());
        b.extend((label.len() as u16).to_be_bytes());
        b.extend((protocol.len() as u16).to_be_bytes());
        b.extend(label);
        b.extend(protocol);
        b
    }
}

/// The label of NetherNet's reliable channel.
pub const RELIABLE_LABEL: &str = "ReliableDataChannel";
/// The label of NetherNet's unreliable channel.
pub const UNRELIABLE_LABEL: &str = "UnreliableDataChannel";

impl Message {
    /// The DCEP message `b` (a PPID 50 user message).
    pub fn parse(b: &[u8]) -> Result<Message> {
        let mut r = Reader::new(b);
        match r.u8("DCEP message type")? {
            ACK => Ok(Message::Ack),
            OPEN => {
                let channel_type = r.u8("channel type")?;
                let priority = r.u16_be("priority")?;
                let parameter = r.u32_be("reliability parameter")?;
                let label_len = usize::from(r.u16_be("label length")?);
                let protocol_len = usize::from(r.u16_be("protocol length")?);
                let label = String::from_utf8_lossy(r.raw(label_len, "label")?).into_owned();
                let protocol =
                    String::from_utf8_lossy(r.raw(protocol_len, "protocol")?).into_owned();
                let reliability = match channel_type & 0x7F {
                    0x00 => Reliability::Reliable,
                    0x01 => Reliability::Retransmits(parameter),
                    0x02 => Reliability::Lifetime(parameter),
                    t => {
                        return Err(Reader::invalid_at(
                            1,
                            "channel type",
                            format!("{t:#04x} is not 0x00, 0x01 or 0x02 (high bit: unordered)"),
                        ))
                    }
                };
                Ok(Message::Open(Open {
                    ordered: channel_type & 0x80 == 0,
                    reliability,
                    priority,
                    label,
                    protocol,
                }))
            }
            t => Err(Reader::invalid_at(
                0,
                "DCEP message type",
                format!("{t:#04x} is neither OPEN (0x03) nor ACK (0x02)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_written_here_read_back() {
        for o in [Open::reliable(), Open::unreliable()] {
            assert_eq!(Message::parse(&o.emit()).unwrap(), Message::Open(o));
        }
        // As aiortc's client opens the unreliable one (the sample join's
        // stream 3 bytes).
        assert_eq!(
            Open::unreliable().emit()[..12],
            [OPEN, 0x81, 0, 0, 0, 0, 0, 0, 0, 21, 0, 0]
        );
    }

    #[test]
    fn nethernets_two_channels() {
        let open = |t: u8, p: u32, label: &str| {
            let mut b = vec![OPEN, t, 0, 0];
            b.extend(p.to_be_bytes());
            b.extend((label.len() as u16).to_be_bytes());
            b.extend([0, 0]);
            b.extend(label.as_bytes());
            b
        };
        let r = Message::parse(&open(0x00, 0, "ReliableDataChannel")).unwrap();
        let Message::Open(o) = r else { panic!() };
        assert!(
            o.ordered && o.reliability == Reliability::Reliable && o.label == "ReliableDataChannel"
        );
        let Message::Open(o) = Message::parse(&open(0x81, 0, "UnreliableDataChannel")).unwrap()
        else {
            panic!()
        };
        assert!(!o.ordered && o.reliability == Reliability::Retransmits(0));
        assert_eq!(Message::parse(&[ACK]).unwrap(), Message::Ack);
        let b = open(0x00, 0, "ReliableDataChannel");
        for n in 0..b.len() {
            assert!(Message::parse(&b[..n]).is_err());
        }
        assert!(Message::parse(&[0x07]).is_err());
    }
}
