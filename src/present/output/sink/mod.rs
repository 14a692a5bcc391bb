//! Where timeline lines go: one small trait ([`Sink`]), one implementation per destination, each in
//! a file of its own (human lines, JSON lines, the capture file, the countdown, `--clients`' lines,
//! the kept summaries, stderr's notices), and [`Sinks`] handing each line to all of them.
//!
//! The engine and `replay` know only [`Sinks`]; which destinations exist is decided where the
//! command is wired. A new destination (metrics, hooks) is one more implementation, not one more
//! `if` in the engine.

mod capture_file;
mod client_lines;
mod countdown_sink;
mod human_lines;
mod json_lines;
mod kept_summaries;
mod sinks;
mod stderr_notices;
mod switch;
mod traits;

pub use capture_file::{CaptureFile, CaptureMode, Rotation};
pub use client_lines::ClientLines;
pub use human_lines::HumanLines;
pub use json_lines::JsonLines;
pub use kept_summaries::{KeptSummaries, Labelled};
pub use sinks::Sinks;
pub use stderr_notices::StderrNotices;
pub use switch::{lines, one};
pub use traits::{LineWriter, Record, Sink};
