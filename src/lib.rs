//! maintwatch: a watcher and diagnostic tool for Redis maintenance notifications.
//!
//! The library holds everything; the binary in `main.rs` only parses arguments and maps errors to
//! exit codes, so that tests and benchmarks drive the same code the operator runs.

pub mod azure;
pub mod cli;
pub mod clients;
pub mod cluster;
pub mod commands;
pub mod conn;
pub mod defaults;
pub mod dns;
pub mod exit;
mod frame_access;
pub mod handoff;
pub mod judge;
pub mod matrix;
pub mod notification;
pub mod output;
pub mod pcap;
pub mod record;
pub mod report;
pub mod resp;
pub mod service;
pub mod shared;
pub mod sim;
pub mod simulation;
pub mod timeline;
pub mod watch;
