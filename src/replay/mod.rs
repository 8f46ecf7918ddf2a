//! A captured session, as `replay` and `serve --replay` play it back: the
//! messages each application sent, taken from the mirror (reassembled,
//! de-duplicated), with their reliability, channel and capture time.
//!
//! The messages of a side are in the order the other side's application
//! received them: that order keeps every ordering channel's order, so a
//! fresh peer given them in that order with their reliabilities delivers
//! them in that order again. RakNet's own messages (pings, pongs,
//! ConnectionRequest, ConnectionRequestAccepted, NewIncomingConnection,
//! disconnection) are left out: a live peer makes its own.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::capture::{CaptureError, CaptureReader};
use crate::dissect::{Body, Dir, Dissector, Options};
use crate::mirror::{Mirror, MirrorConfig, Observation};
use crate::wire::{Offline, Reliability};

/// One application message of the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedMessage {
    /// Capture time at which the receiver got it.
    pub ts: Duration,
    pub data: Vec<u8>,
    /// As on the wire (0 to 4).
    pub reliability: Reliability,
    pub channel: u8,
}

/// One flow of a capture, ready to be played back.
#[derive(Debug, Clone, Default)]
pub struct CapturedSession {
    pub flow: u32,
    pub client: Option<SocketAddr>,
    pub server: Option<SocketAddr>,
    pub protocol: Option<u8>,
    pub mtu: Option<u16>,
    /// The server's unconnected pong payload, when one was captured.
    pub pong: Option<Vec<u8>>,
    /// When the server got NewIncomingConnection (the connection's start),
    /// or the first message's time.
    pub connected_ts: Option<Duration>,
    /// Sent by the client (received by the server).
    pub c2s: Vec<CapturedMessage>,
    /// Sent by the server (received by the client).
    pub s2c: Vec<CapturedMessage>,
}

/// Ids of RakNet's own connected messages, never replayed.
pub fn is_raknet_internal(id: u8) -> bool {
    matches!(id, 0x00 | 0x03 | 0x04 | 0x09 | 0x10 | 0x13 | 0x15)
}

/// Why a capture cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("{0}")]
    NoSession(String),
}

/// Read `path` and take flow `flow` (or the first flow whose client sent
/// application messages; failing that, the first flow with a handshake).
pub fn load(path: &Path, flow: Option<u32>, ports: &[u16]) -> Result<CapturedSession, ReplayError> {
    let mut reader = CaptureReader::open(path)?.in_background();
    let mut dissector = Dissector::new(Options {
        ports: ports.to_vec(),
        ..Options::default()
    });
    let mut mirror = Mirror::new(MirrorConfig::default(), false);
    let mut obs = Observation::default();
    let mut sessions: Vec<CapturedSession> = Vec::new();
    let mut pongs: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    let mut cut: Option<CaptureError> = None;
    while let Some(item) = reader.next_datagram() {
        let d = match item {
            Ok(d) => d,
            Err(e) => {
                cut = Some(e);
                break;
            }
        };
        if d.icmp.is_some() {
            reader.recycle(d);
            continue;
        }
        let Some(p) = dissector.dissect(&d) else {
            reader.recycle(d);
            continue;
        };
        if let Body::Offline {
            msg: Some(Offline::UnconnectedPong { payload, .. }),
            ..
        } = &p.body
        {
            if pongs.len() < 64 && !pongs.iter().any(|(a, _)| *a == p.src) {
                pongs.push((p.src, payload.to_vec()));
            }
        }
        mirror.observe(&p, || dissector.flow(p.src, p.dst), &mut obs);
        let flow_id = p.flow;
        let i = match sessions.iter().position(|s| s.flow == flow_id) {
            Some(i) => i,
            None => {
                sessions.push(CapturedSession {
                    flow: flow_id,
                    ..CapturedSession::default()
                });
                sessions.len() - 1
            }
        };
        let s = &mut sessions[i];
        for m in obs.messages.drain(..) {
            let Some(&id) = m.data.first() else { continue };
            if id == 0x13 && m.dir == Dir::C2s {
                s.connected_ts.get_or_insert(m.ts);
            }
            if is_raknet_internal(id) {
                continue;
            }
            let msg = CapturedMessage {
                ts: m.ts,
                data: m.data,
                reliability: m.reliability,
                channel: m.channel.unwrap_or(0),
            };
            match m.dir {
                Dir::C2s => s.c2s.push(msg),
                Dir::S2c => s.s2c.push(msg),
            }
        }
        obs.anomalies.clear();
        drop(p);
        reader.recycle(d);
    }
    for s in &mut sessions {
        if let Some(f) = dissector.flows().into_iter().find(|f| f.id == s.flow) {
            s.client = Some(f.client);
            s.server = Some(f.server);
            s.protocol = f.protocol;
            s.mtu = f.mtu;
            s.pong = pongs
                .iter()
                .find(|(a, _)| *a == f.server)
                .map(|(_, p)| p.clone());
        }
    }
    let chosen = match flow {
        Some(n) => sessions.into_iter().find(|s| s.flow == n).ok_or_else(|| {
            ReplayError::NoSession(format!("{}: no RakNet flow {n}", path.display()))
        })?,
        None => {
            let any = sessions.iter().position(|s| !s.c2s.is_empty());
            let handshake = sessions.iter().position(|s| s.protocol.is_some());
            match any.or(handshake) {
                Some(i) => sessions.swap_remove(i),
                None => {
                    return Err(match cut {
                        Some(e) => e.into(),
                        None => ReplayError::NoSession(format!(
                            "{}: no RakNet session to replay",
                            path.display()
                        )),
                    })
                }
            }
        }
    };
    Ok(chosen)
}
