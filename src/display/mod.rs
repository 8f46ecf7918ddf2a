//! What a user picks out of the records: display filters (`-Y`) and field
//! export (`-T fields`), both over the NDJSON key names of `packet` and
//! `message` records, read straight from the dissected packet or the
//! delivered message.

pub mod export;
pub mod fields;
pub mod filter;

pub use export::FieldExport;
pub use fields::{MessageRecord, Record, RecordType, FIELDS};
pub use filter::{DisplayFilter, FilterError};
