//! Formatting for people and machines. Sinks decide nothing: they render what the timeline and
//! the other modules computed.

pub mod countdown;
pub mod human;
/// The JSON-lines writer lives with the schema it writes, in `record::write`; this path stays for
/// the callers and tests that name it.
pub use crate::record::write as json;
pub mod probe_table;
pub mod sink;
pub mod stdout;
pub mod terminal;
pub mod text;
