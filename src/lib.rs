//! raknet-dissect: a dissector and analyzer for RakNet.
//!
//! Layers (see DESIGN.md): `capture` yields UDP datagrams from captures,
//! `wire` is the stateless codec, `dissect` finds RakNet flows and decodes
//! their datagrams, `output` formats the result.

pub mod capture;
pub mod cli;
pub mod display;
pub mod dissect;
pub mod mirror;
pub mod output;
pub mod peer;
pub mod pipeline;
pub mod replay;
pub mod session;
pub mod wire;
