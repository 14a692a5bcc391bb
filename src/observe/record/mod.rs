//! The JSON-lines schema: one self-describing object per line, shared by `decode --json`,
//! `watch --json`, `--capture` files and `replay`.
//!
//! Every line has a `type` and the schema version `v`, so a consumer can dispatch on a line
//! without context, and a capture cut at any point is still a valid prefix. Raw bytes travel as
//! escaped text (see `escape`), which is lossless and still greppable. The parse stored next to
//! the bytes is what `replay --check` compares against a fresh parse of the same bytes.
//! The schema is documented in `docs/jsonl.md`.
//!
//! The schema's code sits together here, split by concern: `frame` (a [`FrameRecord`] and its
//! raw text), `parts` (the values lines are made of), `watch` (the [`WatchLine`] enum and how a
//! line is read back), [`line`](mod@line) (each line type's payload), `wall` (every line's
//! `at`), and the two hand-written paths a flood takes, the writer ([`write`](mod@write)) and the
//! reader of a `push` line (`fast`), each held byte for byte to what serde writes and reads.
//! Everything is re-exported here: `maintwatch::observe::record::X` is the path to use.

mod decide_line;
mod fast;
mod frame_schema;
mod parts;
#[cfg(test)]
mod tests;
mod wall;
mod watch;
pub mod write;

pub use decide_line::DecideLine;
pub use frame_schema::{reparse, reparse_bytes, reparse_sized, FrameRecord, Raw};
pub use parts::{
    ConnTotals, CopyOf, DecodeLine, EventRow, Label, OptInTally, PingStats, Rel, SimSpeed,
    SummaryNotes, WindowFailures,
};
pub use wall::{wall, wall_into};
pub use watch::{ClientVerdict, TaggedLine, Verdict, WatchLine};

pub use crate::network::conn::OptInOutcome;
pub use crate::SCHEMA_VERSION;

/// The payload of each [`WatchLine`], one named struct per line type (the `type` tag is the
/// enum's). Every payload refuses unknown fields, so a capture of another schema is caught.
pub mod line;
pub use parts::{ClosedBy, DnsEvent, DryRunOutcome, OursChange, TopologyReason};
