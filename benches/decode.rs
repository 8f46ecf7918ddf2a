//! Decoder throughput: the wire codec alone, and the dissector with summary
//! formatting, over the packets of a real-peer sample capture.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use raknet_dissect::capture::{CaptureReader, UdpDatagram};
use raknet_dissect::dissect::{Dissector, Options};
use raknet_dissect::output::{json::PacketJson, text};
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
                    black_box(serde_json::to_string(&PacketJson::new(&p)).ok());
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
    targets = bench
}
criterion_main!(benches);
