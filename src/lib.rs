//! maintwatch: a watcher and diagnostic tool for Redis maintenance notifications.
//!
//! The library holds everything; the binary in `main.rs` only parses arguments and maps errors to
//! exit codes, so that tests and benchmarks drive the same code the operator runs.
//!
//! `println!` and `eprintln!` are refused: they panic when the reader went away (`| head`), and
//! every line goes out through a write whose error is handled
//! ([`present::output::terminal::to_stderr`] for stderr).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod commands;
pub mod defaults;
pub mod exit;
pub mod grading;
pub mod network;
pub mod observe;
pub mod present;
pub mod protocol;
pub mod shared;
pub mod simulator;
pub mod watch;

/// Version of the JSON-lines schema, carried on every line as `v`: by the watch's records, the
/// grade and `probe --json` alike, so it is the crate's rather than one area's.
pub const SCHEMA_VERSION: u32 = 1;
