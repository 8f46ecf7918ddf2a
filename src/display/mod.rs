//! What a user picks out of the records: display filters (`-Y`) and field
//! export (`-T fields`), both over the NDJSON key names of `packet`,
//! `message` and `flow` records, read straight from the dissected packet or
//! the delivered message (a flow from its record).

pub mod export;
pub mod fields;
pub mod filter;
pub mod print;
pub mod records;
pub mod suggest;

pub use export::FieldExport;
pub use fields::{JsonRecord, MessageRecord, Record, RecordType, Since, FIELDS};
pub use filter::{DisplayFilter, FilterError};
