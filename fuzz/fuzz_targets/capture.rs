//! The capture reader on arbitrary bytes: format detection, pcap and pcapng
//! records, link layers, IP, fragment reassembly. It must never panic, and an
//! error must be the last thing it returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::capture::CaptureReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::from_reader(Box::new(std::io::Cursor::new(data.to_vec())))
    else {
        return;
    };
    while let Some(next) = reader.next_datagram() {
        if next.is_err() {
            assert!(reader.next_datagram().is_none(), "an error is final");
            break;
        }
    }
    let stats = reader.stats();
    assert!(stats.udp <= stats.frames, "at most one datagram per frame");
});
