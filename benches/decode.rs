//! Decoder throughput: the wire codec alone, and the dissector with summary
//! formatting, over the packets of a real-peer sample capture; and the
//! Bedrock game layer over the messages the mirror delivered in the
//! bundled bedrock-protocol session (samples/bedrock-login.pcap).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use raknet_dissect::bedrock::crypto::Keys;
use raknet_dissect::bedrock::login::forget_verified;
use raknet_dissect::bedrock::{Detect, Game, GameEvent};
use raknet_dissect::capture::{CaptureReader, UdpDatagram};
use raknet_dissect::dissect::{Dissector, Options};
use raknet_dissect::mirror::{Message, Mirror, MirrorConfig};
use raknet_dissect::output::text;
use raknet_dissect::pipeline::{Input, Item, Next, Pipeline};
use raknet_dissect::records::game::GameRecord;
use raknet_dissect::records::packet::PacketRecord;
use raknet_dissect::wire::{offline_id, Datagram, Offline, Reader};

fn sample() -> Vec<UdpDatagram> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/handshake.pcap");
    let mut r = CaptureReader::open(&path).expect("samples/handshake.pcap opens");
    let mut v = Vec::new();
    while let Some(Ok(d)) = r.next_datagram() {
        v.push(d);
    }
    v
}

/// The messages the mirror delivered in `samples/NAME`, in order.
fn delivered(name: &str) -> Vec<Message> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name);
    let mut mirror = Mirror::new(MirrorConfig::default(), false);
    let mut out = Vec::new();
    Pipeline::new(Default::default())
        .run(Input::files([path]), &mut mirror, |item| {
            if let Item::Packet { obs, .. } = item {
                out.extend(obs.messages.iter().cloned());
            }
            Ok::<_, std::io::Error>(Next::Continue)
        })
        .expect("the sample reads");
    out
}

/// The game layer: every 0xFE message to game packets (decrypted with the
/// sample's key log, decompressed, split, the login decoded and its
/// signatures checked, every packet's fields decoded by the definitions,
/// or with `--no-fields` only the login's), then each `game` record written
/// as `--json` does. The signature checks a process remembers are forgotten
/// before each iteration: each measures a first reading of the session.
fn bench_game(c: &mut Criterion) {
    let messages = delivered("bedrock-login.pcap");
    let keylog = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/bedrock-login.keylog");
    let (keys, _) = Keys::from_files(&[keylog], &[]).expect("the key log reads");
    let bytes: usize = messages.iter().map(|m| m.data.len()).sum();
    let mut g = c.benchmark_group("bedrock-login.pcap");
    g.throughput(Throughput::Bytes(bytes as u64));
    for (name, keys) in [("game, no key", Keys::default()), ("game --keylog", keys)] {
        g.bench_function(format!("{name}: packets"), |b| {
            b.iter(|| {
                forget_verified();
                let mut game = Game::new(Detect::Auto, keys.clone());
                for m in &messages {
                    black_box(game.message(m));
                }
            })
        });
        g.bench_function(format!("{name}: packets, --no-fields"), |b| {
            b.iter(|| {
                forget_verified();
                let mut game = Game::new(Detect::Auto, keys.clone());
                game.fields = false;
                for m in &messages {
                    black_box(game.message(m));
                }
            })
        });
        g.bench_function(format!("{name}: + json"), |b| {
            let mut sink = Vec::with_capacity(1 << 20);
            b.iter(|| {
                sink.clear();
                forget_verified();
                let mut game = Game::new(Detect::Auto, keys.clone());
                for m in &messages {
                    for e in game.message(m).into_iter().flatten() {
                        if let GameEvent::Packet(_) = &e {
                            raknet_dissect::records::write_line(&GameRecord::new(m, &e), &mut sink);
                        }
                    }
                }
                black_box(sink.len())
            })
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let packets = sample();
    let mut g = c.benchmark_group("handshake.pcap");
    g.throughput(Throughput::Elements(packets.len() as u64));
    g.bench_function("wire decode", |b| {
        b.iter(|| {
            for d in &packets {
                let p = &d.payload[..];
                if offline_id(p).is_some() {
                    let _ = black_box(Offline::parse(&mut Reader::new(p)));
                } else {
                    let _ = black_box(Datagram::parse_lax(&mut Reader::new(p)));
                }
            }
        })
    });
    g.bench_function("dissect + summary line", |b| {
        b.iter(|| {
            let mut dis = Dissector::new(Options::default());
            for d in &packets {
                if let Some(p) = dis.dissect(d) {
                    black_box(text::line(
                        &p,
                        Duration::ZERO,
                        text::Palette { enabled: false },
                    ));
                }
            }
        })
    });
    g.bench_function("dissect + json", |b| {
        b.iter(|| {
            let mut dis = Dissector::new(Options::default());
            for d in &packets {
                if let Some(p) = dis.dissect(d) {
                    let mut line = Vec::new();
                    let r = PacketRecord {
                        packet: &p,
                        file: None,
                    };
                    raknet_dissect::records::write_line(&r, &mut line);
                    black_box(line);
                }
            }
        })
    });
    g.bench_function("dissect -V tree", |b| {
        b.iter(|| {
            let mut dis = Dissector::new(Options {
                trace: true,
                ..Options::default()
            });
            for d in &packets {
                if let Some(p) = dis.dissect(d) {
                    if let Some(t) = &p.trace {
                        black_box(text::tree(&p, t));
                    }
                }
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench, bench_game
}
criterion_main!(benches);
