//! Open a capture through the library and print each RakNet flow's loss
//! and round-trip time: `cargo run --example flow_loss -- samples/lossy.pcap`.

use raknet_dissect::dissect::Dir;
use raknet_dissect::mirror::{Mirror, MirrorConfig};
use raknet_dissect::pipeline::{Input, Item, Next, Pipeline};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    // Keep the flows as they end; no message bytes are needed for counts.
    let mut cfg = MirrorConfig::default();
    cfg.receive.keep_data = false;
    let mut mirror = Mirror::new(cfg, true);
    let mut flows = Vec::new();
    let ended =
        Pipeline::new(Default::default()).run(Input::files(&files), &mut mirror, |item| {
            if let Item::Packet { obs, .. } = item {
                flows.append(&mut obs.closed); // flows evicted while reading
            }
            Ok::<_, std::io::Error>(Next::Continue)
        })?;
    if let Some(e) = ended.unreadable.first() {
        return Err(e.error.to_string().into());
    }
    flows.extend(mirror.finish().closed);
    flows.sort_by_key(|f| f.id);
    for f in &flows {
        let lost = |d| f.stats(d).nacked.max(f.stats(d).never_seen);
        let rtt = f
            .rtt_ms()
            .map_or("-".into(), |(_, median, _, _)| format!("{median:.3} ms"));
        println!(
            "flow {} {} -> {}: lost {} c2s, {} s2c; median RTT {rtt}",
            f.id,
            f.client,
            f.server,
            lost(Dir::C2s),
            lost(Dir::S2c)
        );
    }
    Ok(())
}
