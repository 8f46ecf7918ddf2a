//! `handshake FILE`: each connection attempt of a capture, its timeline and
//! its outcome (`mirror::handshake`).

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::{drive_items, mirror_config, CaptureArgs, Next, OutputArgs};
use crate::display::{JsonRecord, RecordType};
use crate::mirror::handshake::{Attempt, HandshakeTracker};
use crate::mirror::Mirror;
use crate::pipeline::Item;

#[derive(Args, Debug, Default)]
pub struct HandshakeArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub display: super::DisplayArgs,
}

#[derive(Serialize)]
struct StepJson<'a> {
    t: f64,
    frame: u64,
    dir: Option<&'static str>,
    step: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    detail: &'a str,
}

#[derive(Serialize)]
struct HandshakeJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    flow: u32,
    attempt: u32,
    client: Option<String>,
    server: Option<String>,
    ts: f64,
    duration: f64,
    outcome: &'static str,
    diagnosis: &'a str,
    client_protocol: Option<u8>,
    server_protocol: Option<u8>,
    mtu_probes: &'a [u16],
    mtu: Option<u16>,
    pings: u32,
    pongs: u32,
    connection_request_acked: bool,
    steps: Vec<StepJson<'a>>,
    #[serde(skip_serializing_if = "is_zero")]
    steps_omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl<'a> HandshakeJson<'a> {
    fn new(a: &'a Attempt) -> Self {
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
        }
    }
}

pub fn run_handshake(args: &HandshakeArgs, out: &mut impl Write) -> anyhow::Result<u8> {
    let shown = match args
        .display
        .compile(RecordType::Handshake, args.output.json)
    {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut mirror = Mirror::new(mirror_config(&args.capture), false);
    let mut tracker = HandshakeTracker::new();
    let code = drive_items(
        None,
        &args.capture.printing_at_end(),
        false,
        &mut mirror,
        out,
        |item, _| {
            match item {
                Item::Icmp { note: i, .. } => tracker.icmp(i.flow, i.dir, i.ts, i.frame, i.kind),
                Item::Packet { packet, obs, .. } => tracker.observe(packet, &obs.messages),
                Item::File { .. } => {}
            }
            Ok(Next::Continue)
        },
    )?;
    let mut line = String::new();
    if let Some(x) = &shown.export {
        out.write_all(x.header().as_bytes())?;
    }
    for a in tracker.finish() {
        if args.output.quiet || args.capture.flow.is_some_and(|f| f != a.flow) {
            continue;
        }
        let j = HandshakeJson::new(&a);
        // A filter or an export reads the record itself.
        if shown.filter.is_some() || shown.export.is_some() {
            let r = JsonRecord(serde_json::to_value(&j)?);
            if !shown.wants(&r) {
                continue;
            }
            if let Some(x) = &shown.export {
                line.clear();
                x.push_row(&r, &mut line);
                out.write_all(line.as_bytes())?;
                continue;
            }
        }
        if shown.json {
            serde_json::to_writer(&mut *out, &j)?;
            out.write_all(b"\n")?;
            continue;
        }
        writeln!(
            out,
            "flow {} attempt {}  {} → {}  {}: {}",
            j.flow,
            j.attempt,
            j.client.as_deref().unwrap_or("?"),
            j.server.as_deref().unwrap_or("?"),
            j.outcome,
            j.diagnosis
        )?;
        for s in &j.steps {
            writeln!(
                out,
                "  {:>+11.6}  {}  {:<30} {}",
                s.t,
                s.dir.unwrap_or("   "),
                s.step,
                s.detail
            )?;
        }
        if j.steps_omitted > 0 {
            writeln!(out, "  ({} more steps not shown)", j.steps_omitted)?;
        }
    }
    Ok(code)
}
