//! The dissector and every formatter on one arbitrary UDP payload, with the
//! port forced so that the datagram path is taken too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::capture::UdpDatagram;
use raknet_dissect::dissect::{Dissector, Options};
use raknet_dissect::output::text;
use raknet_dissect::records::{packet::PacketRecord, write_line};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let d = UdpDatagram {
        frame: 1,
        ts: Duration::from_secs(1),
        src: "127.0.0.1:50000".parse().unwrap(),
        dst: "127.0.0.1:19132".parse().unwrap(),
        payload: data.to_vec(),
        udp_len: data.len() + (data.first().copied().unwrap_or(0) as usize % 3),
        icmp: None,
        tcp: None,
    };
    let mut dis = Dissector::new(Options {
        ports: vec![19132],
        trace: true,
        ..Options::default()
    });
    if let Some(p) = dis.dissect(&d) {
        let mut json = Vec::new();
        let record = PacketRecord {
            packet: &p,
            file: None,
        };
        write_line(&record, &mut json);
        let _ = text::line(&p, Duration::ZERO, text::Palette { enabled: true });
        if let Some(t) = &p.trace {
            let _ = text::tree(&p, t);
        }
        let _ = text::hex_dump(p.payload);
    }
});
