//! Display filters and field export on arbitrary text and an arbitrary
//! packet: the text before the first NUL byte is the filter, the bytes after
//! it the UDP payload (port forced, so the datagram path is taken too).
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::capture::UdpDatagram;
use raknet_dissect::display::{DisplayFilter, FieldExport, PacketRecord, RecordType, FIELDS};
use raknet_dissect::dissect::{Dissector, Options};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..cut]);
    let payload = data.get(cut + 1..).unwrap_or(&[]);
    let filter = DisplayFilter::parse(&text, RecordType::Packet);
    let d = UdpDatagram {
        frame: 1,
        ts: Duration::from_secs(1),
        src: "127.0.0.1:50000".parse().unwrap(),
        dst: "127.0.0.1:19132".parse().unwrap(),
        payload: payload.to_vec(),
        udp_len: payload.len(),
        icmp: None,
        tcp: None,
    };
    let mut dis = Dissector::new(Options {
        ports: vec![19132],
        ..Options::default()
    });
    if let Some(p) = dis.dissect(&d) {
        let p = PacketRecord {
            packet: &p,
            file: None,
        };
        if let Ok(f) = &filter {
            let _ = f.matches(&p);
        }
        let names: Vec<String> = FIELDS
            .iter()
            .filter(|f| f.in_record(RecordType::Packet))
            .map(|f| f.name.to_string())
            .collect();
        if let Ok(x) = FieldExport::new(&names, &[], RecordType::Packet) {
            let mut line = String::new();
            x.push_row(&p, &mut line);
        }
    }
});
