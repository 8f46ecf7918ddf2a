//! Every wire decoder, strict and lax, traced and not, on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::wire::{
    offline_id, Capsule, Connected, Datagram, Motd, Offline, Reader, SystemAddress,
};

fuzz_target!(|data: &[u8]| {
    let _ = offline_id(data);
    let _ = Offline::parse(&mut Reader::new(data).traced());
    let _ = Datagram::parse_lax(&mut Reader::new(data).traced());
    let _ = Datagram::parse(&mut Reader::new(data));
    let _ = Capsule::parse(&mut Reader::new(data));
    let _ = Connected::parse(&mut Reader::new(data).traced());
    let _ = SystemAddress::parse(&mut Reader::new(data), "address");
    let _ = Motd::parse(data);
    // What decodes must re-encode without panicking.
    if let Ok(d) = Datagram::parse(&mut Reader::new(data)) {
        let mut out = Vec::new();
        d.emit(&mut out);
    }
});
