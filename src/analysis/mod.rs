//! What is computed from the mirror for people: a capture counted
//! ([`stats::Stats`]) and each flow's time series for a picture
//! ([`plot::Collector`]). Plain types fed packet by packet, bounded in
//! memory, with no command-line or terminal code; `output` prints them.

pub mod plot;
pub mod stats;
