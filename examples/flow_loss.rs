//! Open a capture through the library and print each RakNet flow's loss
//! and round-trip time: `cargo run --example flow_loss -- samples/lossy.pcap`.

use raknet_dissect::dissect::Dir;
use raknet_dissect::mirror::{Mirror, MirrorConfig};
use raknet_dissect::pipeline::{Input, Item, Next, Pipeline};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let input = Input::files(std::env::args().skip(1));
    // Keep the flows as they end; no message bytes are needed for counts.
    let mut cfg = MirrorConfig::default();
    cfg.receive.keep_data = false;
    let mut mirror = Mirror::new(cfg, true);
    let mut flows = Vec::new();
    let ended = Pipeline::new(Default::default()).run(input, &mut mirror, |item| {
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
        let (c, s) = (f.stats(Dir::C2s), f.stats(Dir::S2c));
        let (lc, ls) = (c.nacked.max(c.never_seen), s.nacked.max(s.never_seen));
        let rtt = f.rtt_ms().map_or("-".into(), |r| format!("{:.3} ms", r.1));
        let (id, cl, sv) = (f.id, f.client, f.server);
        println!("flow {id} {cl} -> {sv}: lost {lc} c2s, {ls} s2c; median RTT {rtt}");
    }
    Ok(())
}
