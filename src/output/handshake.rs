//! The `handshake` record of a connection attempt, and its text lines.

use std::fmt::Write as _;

use serde::Serialize;

use crate::mirror::handshake::Attempt;

#[derive(Serialize)]
pub struct StepJson<'a> {
    pub t: f64,
    pub frame: u64,
    pub dir: Option<&'static str>,
    pub step: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub detail: &'a str,
}

#[derive(Serialize)]
pub struct HandshakeJson<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The capture file (`--separate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<&'a str>,
    pub flow: u32,
    pub attempt: u32,
    pub client: Option<String>,
    pub server: Option<String>,
    pub ts: f64,
    pub duration: f64,
    pub outcome: &'static str,
    pub diagnosis: &'a str,
    pub client_protocol: Option<u8>,
    pub server_protocol: Option<u8>,
    pub mtu_probes: &'a [u16],
    pub mtu: Option<u16>,
    pub pings: u32,
    pub pongs: u32,
    pub connection_request_acked: bool,
    pub steps: Vec<StepJson<'a>>,
    #[serde(skip_serializing_if = "is_zero")]
    pub steps_omitted: u32,
    /// On a Bedrock flow, where the game login got (the flow's last
    /// connected attempt only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl<'a> HandshakeJson<'a> {
    pub fn new(a: &'a Attempt) -> Self {
        HandshakeJson {
            kind: "handshake",
            flow: a.flow,
            attempt: a.number,
            client: a.client.map(|c| c.to_string()),
            server: a.server.map(|s| s.to_string()),
            ts: a.start.as_secs_f64(),
            duration: a.end.saturating_sub(a.start).as_secs_f64(),
            outcome: a.outcome,
            diagnosis: &a.diagnosis,
            client_protocol: a.client_protocol,
            server_protocol: a.server_protocol,
            mtu_probes: &a.request1_mtus,
            mtu: a.reply2_mtu.or(a.reply1_mtu),
            pings: a.pings,
            pongs: a.pongs,
            connection_request_acked: a.connection_request_acked,
            steps: a
                .steps
                .iter()
                .map(|s| StepJson {
                    t: s.ts.saturating_sub(a.start).as_secs_f64(),
                    frame: s.frame,
                    dir: s.dir.map(|d| d.as_str()),
                    step: s.step,
                    detail: &s.detail,
                })
                .collect(),
            steps_omitted: a.steps_omitted,
            game: None,
            file: None,
        }
    }
}

impl HandshakeJson<'_> {
    /// The attempt as text: a heading line, then a line per step.
    pub fn lines(&self) -> String {
        let mut s = format!(
            "flow {} attempt {}  {} → {}  {}: {}",
            self.flow,
            self.attempt,
            self.client.as_deref().unwrap_or("?"),
            self.server.as_deref().unwrap_or("?"),
            self.outcome,
            self.diagnosis
        );
        for st in &self.steps {
            let _ = write!(
                s,
                "\n  {:>+11.6}  {}  {:<30} {}",
                st.t,
                st.dir.unwrap_or("   "),
                st.step,
                st.detail
            );
        }
        if self.steps_omitted > 0 {
            let _ = write!(s, "\n  ({} more steps not shown)", self.steps_omitted);
        }
        if let Some(g) = &self.game {
            let _ = write!(s, "\n  game login: {g}");
        }
        s
    }
}
