//! What the known client libraries do with maintenance notifications, as data.
//!
//! The clients disagree: on whether they opt in by default, on which `moving-endpoint-type`
//! their `auto` asks for, and on which frame shapes their parsers take. `doctor` and
//! `decode --clients` answer "what would my client do?" from the facts here, and nothing else
//! in the tool knows a client by name. Each library has one file under `library/`: its facts,
//! read in its own source at the version named in [`Client::version`], what the client tier
//! measured, and its parser; docs/clients.md says where each fact comes from, and
//! `tests/it/client_parsers.rs` checks the parser predictions of redis-py and node-redis against
//! the real libraries. A fact not read is `None` (a parser not read: no parser), never a guess.
//!
//! A new library is its file under `library/`, holding `pub const CLIENT: Client`, plus its line
//! in that folder's list.

mod facts;
mod frame_view;
mod library;
mod predict;
mod reach;

pub use facts::{
    at_least, auto_type, window_bound, Auto, Client, Measured, Parser, Private, WindowBound,
    BACKSTOP_RUN, JVM_RUN, MATRIX_RUN,
};
pub use library::CLIENTS;
pub use predict::{
    azure_verdicts, has_cluster, lines, predict, predicted_hang, summary_line, verdict_lines,
    verdicts,
};
pub use reach::HANGS;
// The verdict types are part of the JSON schema, so they live in `record`.
pub use crate::observe::record::{ClientVerdict, Verdict};
pub use library::go_redis::GO_REDIS_RUN;
pub use library::ioredis::IOREDIS_RUN;
