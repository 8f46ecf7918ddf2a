//! The inflate-only ceiling of the game layer, for `scripts/bench-game.sh`:
//! the batches `scripts/bench_deserialize.js --batches FILE` wrote (each a
//! 4-byte little-endian length, the algorithm byte, the body: 0 raw
//! DEFLATE, 0xff stored), inflated on one thread with the DEFLATE library
//! and settings the game layer uses (zlib-rs through flate2, one inflate
//! state reset per batch, the output sized at four times the input and
//! grown as needed), and nothing else. Prints one JSON line: `bytes` out
//! and `inflate_s`, the median of RUNS runs after a warm-up.
//!
//! `cargo run --release --example inflate_ceiling -- FILE [RUNS]`

use flate2::{Decompress, FlushDecompress, Status};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next().ok_or("usage: inflate_ceiling FILE [RUNS]")?;
    let runs: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let data = std::fs::read(file)?;
    let mut batches = Vec::new();
    let mut at = 0;
    while at + 5 <= data.len() {
        let n = u32::from_le_bytes(data[at..at + 4].try_into()?) as usize;
        let body = data.get(at + 5..at + 5 + n).ok_or("a batch cut short")?;
        batches.push((data[at + 4], body));
        at += 5 + n;
    }
    let mut d = Decompress::new(false);
    let mut once = || -> Result<usize, Box<dyn std::error::Error>> {
        let mut total = 0;
        for &(algorithm, body) in &batches {
            if algorithm != 0 {
                total += body.len();
                continue;
            }
            d.reset(false);
            let mut out = Vec::with_capacity(body.len() * 4);
            loop {
                let consumed = d.total_in() as usize;
                let status =
                    d.decompress_vec(&body[consumed..], &mut out, FlushDecompress::Finish)?;
                if status == Status::StreamEnd {
                    break;
                }
                if out.len() == out.capacity() {
                    out.reserve(out.len());
                }
            }
            total += std::hint::black_box(out).len();
        }
        Ok(total)
    };
    let bytes = once()?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = std::time::Instant::now();
        once()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{{\"bytes\":{bytes},\"inflate_s\":{}}}",
        times[times.len() / 2]
    );
    Ok(())
}
