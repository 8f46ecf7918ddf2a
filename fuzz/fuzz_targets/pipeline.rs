//! A whole capture through the pipeline every command runs: the reader, the
//! dissector, the reliability mirror, and what the commands build on them
//! (each packet's line and record with its `-V` tree, each message's, the
//! game layer with a key, the handshake tracker, the statistics, the plot
//! series), then the flows' records at the end. No panic. Seed it with
//! samples/*.pcap.
#![no_main]

use raknet_dissect::records::nethernet::{NethernetFlow, NethernetFlowRecord, NethernetPacket, NethernetRecord};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use raknet_dissect::analysis::plot::Collector;
use raknet_dissect::analysis::stats::Stats;
use raknet_dissect::bedrock::{Detect, Game, Keys};
use raknet_dissect::capture::CaptureReader;
use raknet_dissect::mirror::handshake::HandshakeTracker;
use raknet_dissect::mirror::{Mirror, MirrorConfig};
use raknet_dissect::records::message::MessageRecord;
use raknet_dissect::records::packet::PacketRecord;

use raknet_dissect::output::text::{self, Palette, TimeColumn, TimeFormat};
use raknet_dissect::pipeline::{Input, Item, Next, Pipeline, PipelineOptions};
use raknet_dissect::records::{flow::FlowRecord, write_line};

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = CaptureReader::from_reader(Box::new(std::io::Cursor::new(data.to_vec())))
        .map(CaptureReader::with_tcp)
    else {
        return;
    };
    let mut keys = Keys::default();
    keys.add_key_log(&format!("BEDROCK_KEY {}", "07".repeat(32)));
    let mut game = Game::new(Detect::Auto, keys);
    let mut tracker = HandshakeTracker::new();
    let mut stats = Stats::new(Duration::from_secs(1), 1000);
    let mut plot = Collector::new(None, None, None);
    let mut mirror = Mirror::new(MirrorConfig::default(), true);
    let mut time = TimeColumn::new(TimeFormat::default());
    let pal = Palette { enabled: false };
    let mut pipeline = Pipeline::new(PipelineOptions {
        trace: true,
        ..PipelineOptions::default()
    });
    let _ = pipeline.run(Input::Reader(Box::new(reader)), &mut mirror, |item| {
        if let Item::Packet {
            packet, obs, since, ..
        } = item
        {
            let _ = text::line(packet, since, pal);
            let mut json = Vec::new();
            let record = PacketRecord { packet, file: None };
            write_line(&record, &mut json);
            if let Some(t) = &packet.trace {
                let _ = text::tree(packet, t);
            }
            tracker.observe(packet, &obs.messages);
            stats.observe(packet, obs, None);
            plot.observe(packet, obs, since);
            for m in &obs.messages {
                let _ = text::message_line(m, None, since, &mut time, pal);
                let record = MessageRecord {
                    message: m,
                    data_limit: Some(64),
                    game: None,
                    file: None,
                    data_channel: None,
                };
                write_line(&record, &mut json);
                let _ = game.message(m);
            }
            game.packet(packet);
            let _ = tracker.take_ended(&obs.ended);
            for f in &obs.ended {
                let _ = game.close(*f);
            }
            for f in obs.closed.drain(..) {
                write_line(&FlowRecord::new(&f, None, None), &mut Vec::new());
            }
        } else if let Item::Signaling {
            seen,
            frame,
            ts,
            src,
            dst,
            payload,
            ..
        } = item
        {
            // NetherNet's signaling: its record and its tree.
            let p = NethernetPacket::signaling(&seen, (frame, ts), (src, dst), payload.len());
            write_line(&NethernetRecord { packet: &p, file: None }, &mut Vec::new());
            let _ = raknet_dissect::output::nethernet::tree(&p, payload);
        } else if let Item::Nethernet {
            seen,
            frame,
            ts,
            src,
            dst,
            payload,
            ..
        } = item
        {
            // A NetherNet datagram: its record and tree, its flow's, its
            // batches' game packets.
            let p = NethernetPacket::new(&seen, (frame, ts), (src, dst), payload.len());
            write_line(&NethernetRecord { packet: &p, file: None }, &mut Vec::new());
            let _ = raknet_dissect::output::nethernet::tree(&p, payload);
            let f = NethernetFlow::of(seen.conversation);
            let record = NethernetFlowRecord { flow: &f, game: None, file: None };
            write_line(&record, &mut Vec::new());
            for e in seen.events {
                if let raknet_dissect::nethernet::association::Event::Batch { data, .. } = e {
                    let _ = game.batch(f.id, raknet_dissect::dissect::Dir::C2s, data);
                }
            }
        }
        Ok::<_, std::io::Error>(Next::Continue)
    });
    let end = mirror.finish();
    for f in &end.closed {
        write_line(&FlowRecord::new(f, None, None), &mut Vec::new());
    }
    let _ = tracker.finish();
});
