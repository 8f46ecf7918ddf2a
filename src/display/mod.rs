//! What a user picks out of the records: display filters (`-Y`) and field
//! export (`-T fields`), both over the NDJSON key names of `packet`,
//! `message`, `flow` and `handshake` records, read straight from the
//! dissected packet or the delivered message (a flow or a handshake through
//! its description, `records`); [`run`]: the capture commands that print
//! records, as library calls.

pub mod export;
pub mod fields;
pub mod filter;
pub mod print;
pub mod records;
pub mod run;
pub mod suggest;

pub use export::FieldExport;
pub use fields::{PacketRecord, RecordType, FIELDS};
pub use filter::{DisplayFilter, FilterError};
