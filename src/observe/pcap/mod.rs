//! `maintwatch pcap`: what the application's own connections saw, read from a packet capture.
//!
//! The watch only ever sees its own connection. After a maintenance the question is about the
//! application's connections: did they get the MOVING, when were they closed, did the client
//! move before the close? A capture taken on the application host answers that for any client
//! in any language without touching it. This module turns packets into the watch's own
//! observations (so the timeline, labels and summary are the watch's) plus what only a capture
//! can say: the client's address, TCP gaps, TLS streams, reconnects and the verdict on them.
//!
//! Packets are read in file order, TCP is reassembled per direction ([`reassembly`]), and each
//! stream that carries RESP becomes one application connection ([`app`]). Capture timestamps
//! become the timeline's clock: a fixed base `Instant` plus the offset from the first packet.
//! The files of one run are read one after another through one analyzer ([`capture_files`]).

mod analyzer;
pub mod app;
pub mod capture_files;
pub mod capture_lines;
pub mod dns_answers;
pub mod observations;
pub mod packet;
pub mod read;
pub mod reassembly;

pub use analyzer::{Analyzer, FastHash, FastHasher, Settings, Stats, MAX_UNDECIDED, TLS_TEXT};
