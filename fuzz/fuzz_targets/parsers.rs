//! The command line's little languages on arbitrary text: `live -f`'s
//! capture filter, `-e`/`-E` field export options, `--send` hex and
//! `--reliability`, and `-Y` over game records (whose field names are made
//! as they are read: `game.login.display_name`). The input is cut at NUL
//! bytes into the pieces. No panic, and a parsed filter can be applied.
#![no_main]

use libfuzzer_sys::fuzz_target;
use raknet_dissect::capture::filter::Filter;
use raknet_dissect::display::{DisplayFilter, FieldExport, RecordType};
use raknet_dissect::wire::cursor::parse_hex;
use raknet_dissect::wire::Reliability;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut pieces = text.split('\0');
    let first = pieces.next().unwrap_or("");
    if let Ok(f) = Filter::parse(first) {
        let a = "127.0.0.1:19132".parse().unwrap();
        let b = "[::1]:50000".parse().unwrap();
        let _ = f.matches(a, b);
        let _ = f.matches(b, a);
    }
    let _ = parse_hex(first);
    let _ = Reliability::parse(first);
    let _ = DisplayFilter::parse(first, RecordType::Game);
    let fields: Vec<String> = pieces.clone().take(4).map(str::to_string).collect();
    let options: Vec<String> = pieces.skip(4).take(4).map(str::to_string).collect();
    for r in RecordType::ALL {
        if let Ok(x) = FieldExport::new(&fields, &options, r) {
            let _ = x.header();
        }
    }
});
