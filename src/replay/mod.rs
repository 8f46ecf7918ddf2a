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
use std::time::Duration;

use crate::dissect::{Body, Dir, Packet};
use crate::mirror::{FlowMirror, Message};
use crate::wire::{Offline, Reliability};

pub mod bedrock;
pub mod run;

/// One application message of the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapturedMessage {
    /// Capture time at which the receiver got it.
    pub(crate) ts: Duration,
    pub(crate) data: Vec<u8>,
    /// As on the wire (0 to 4).
    pub(crate) reliability: Reliability,
    pub(crate) channel: u8,
}

/// One flow of a capture, ready to be played back.
#[derive(Debug, Clone, Default)]
pub(crate) struct CapturedSession {
    pub(crate) flow: u32,
    pub(crate) client: Option<SocketAddr>,
    pub(crate) server: Option<SocketAddr>,
    pub(crate) protocol: Option<u8>,
    pub(crate) mtu: Option<u16>,
    /// The server's unconnected pong payload, when one was captured.
    pub(crate) pong: Option<Vec<u8>>,
    /// When the server got NewIncomingConnection (the connection's start),
    /// or the first message's time.
    pub(crate) connected_ts: Option<Duration>,
    /// Sent by the client (received by the server).
    pub(crate) c2s: Vec<CapturedMessage>,
    /// Sent by the server (received by the client).
    pub(crate) s2c: Vec<CapturedMessage>,
}

/// Ids of RakNet's own connected messages, never replayed.
pub(crate) fn is_raknet_internal(id: u8) -> bool {
    matches!(id, 0x00 | 0x03 | 0x04 | 0x09 | 0x10 | 0x13 | 0x15)
}

/// Why a capture has no session to replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSession {
    /// `--flow N` names a flow the capture does not have.
    #[error("no RakNet flow {0}")]
    NoFlow(u32),
    /// The first flow's handshake began but never connected.
    #[error(
        "no RakNet session to replay: flow {0} never connected (no NewIncomingConnection reached the server)"
    )]
    NeverConnected(u32),
    /// No RakNet flow at all.
    #[error("no RakNet session to replay")]
    None,
    /// The flow asked for never connected and its client sent nothing.
    #[error("flow {0}: nothing to replay, it never connected and its client sent no messages")]
    NothingSent(u32),
}

/// Gathers every flow's application messages from the packets of a capture
/// and the messages the mirror delivered because of them (the caller runs
/// the capture through the dissector and the mirror, as every command does).
#[derive(Debug, Default)]
pub(crate) struct SessionCollector {
    sessions: Vec<CapturedSession>,
    /// Pong payloads by server address (the first 64 servers).
    pongs: Vec<(SocketAddr, Vec<u8>)>,
}

impl SessionCollector {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn observe(&mut self, p: &Packet<'_>, delivered: &[Message]) {
        if let Body::Offline {
            msg: Some(Offline::UnconnectedPong { payload, .. }),
            ..
        } = &p.body
        {
            if self.pongs.len() < 64 && !self.pongs.iter().any(|(a, _)| *a == p.src) {
                self.pongs.push((p.src, payload.to_vec()));
            }
        }
        let i = match self.sessions.iter().position(|s| s.flow == p.flow) {
            Some(i) => i,
            None => {
                self.sessions.push(CapturedSession {
                    flow: p.flow,
                    ..CapturedSession::default()
                });
                self.sessions.len() - 1
            }
        };
        let s = &mut self.sessions[i];
        for m in delivered.iter().filter(|m| m.flow == p.flow) {
            let Some(&id) = m.data.first() else { continue };
            if id == 0x13 && m.dir == Dir::C2s {
                s.connected_ts.get_or_insert(m.ts);
            }
            if is_raknet_internal(id) {
                continue;
            }
            let msg = CapturedMessage {
                ts: m.ts,
                data: m.data.clone(),
                reliability: m.reliability,
                channel: m.channel.unwrap_or(0),
            };
            match m.dir {
                Dir::C2s => s.c2s.push(msg),
                Dir::S2c => s.s2c.push(msg),
            }
        }
    }

    /// The mirror's record of a flow, when it ends: endpoints, protocol, MTU.
    pub(crate) fn flow_ended(&mut self, f: &FlowMirror) {
        if let Some(s) = self.sessions.iter_mut().find(|s| s.flow == f.id) {
            s.client = Some(f.client);
            s.server = Some(f.server);
            s.protocol = f.protocol;
            s.mtu = f.mtu;
        }
    }

    /// Flow `flow`, or the first flow whose client sent application
    /// messages (failing that, the first with a handshake).
    pub(crate) fn take(mut self, flow: Option<u32>) -> Result<CapturedSession, NoSession> {
        let i = match flow {
            Some(n) => self
                .sessions
                .iter()
                .position(|s| s.flow == n)
                .ok_or(NoSession::NoFlow(n))?,
            None => self
                .sessions
                .iter()
                .position(|s| !s.c2s.is_empty())
                .or_else(|| self.sessions.iter().position(|s| s.connected_ts.is_some()))
                .ok_or_else(|| match self.sessions.first() {
                    Some(s) if s.protocol.is_some() => NoSession::NeverConnected(s.flow),
                    _ => NoSession::None,
                })?,
        };
        if self.sessions[i].c2s.is_empty() && self.sessions[i].connected_ts.is_none() {
            return Err(NoSession::NothingSent(self.sessions[i].flow));
        }
        let mut s = self.sessions.swap_remove(i);
        s.pong = s
            .server
            .and_then(|srv| self.pongs.iter().find(|(a, _)| *a == srv))
            .map(|(_, p)| p.clone());
        Ok(s)
    }
}
