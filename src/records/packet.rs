//! The objects inside a `packet` record (its frames, a frame's split, a
//! pong's MOTD), written by serde until the packet record is described.

use serde::Serialize;

use crate::wire::{Capsule, Motd, Split};

/// A split capsule's `{count, id, index}`.
#[derive(Serialize)]
pub struct SplitJson {
    pub count: u32,
    pub id: u16,
    pub index: u32,
}

impl SplitJson {
    pub fn new(s: Split) -> Self {
        SplitJson {
            count: s.count,
            id: s.id,
            index: s.index,
        }
    }
}

/// One capsule of a data datagram.
#[derive(Serialize)]
pub struct FrameJson {
    pub reliability: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliable_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitJson>,
    pub len: usize,
    /// The message id, for a whole message or a first fragment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl FrameJson {
    pub fn new(c: &Capsule<'_>) -> Self {
        let id = c.message_id();
        FrameJson {
            reliability: c.reliability.name(),
            reliable_index: c.reliable_index,
            sequence_index: c.sequence_index,
            order_index: c.order_index,
            channel: c.channel,
            split: c.split.map(SplitJson::new),
            len: c.payload.len(),
            id,
            name: id.map(|i| crate::wire::message_name(i).into_owned()),
        }
    }
}

/// A Minecraft MOTD as the `motd` object of a `packet` record: every value a
/// string, the keys in alphabetical order.
pub fn motd_object(m: Motd) -> serde_json::Map<String, serde_json::Value> {
    m.fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
        .collect()
}
