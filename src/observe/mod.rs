//! Watching: the watch engine (`watch`), the timeline that turns what it sees into lines
//! (`timeline`), the lines as records (`record`), and captures read as the same lines (`pcap`);
//! and what a run showed, as evidence for the judge (`evidence`), which the simulator's
//! narration and `pcap --grade` both produce and `grading` only reads; and a capture read back
//! and checked against today's parser and timeline (`replay`); and the frames in bytes pasted
//! from a bug report or a capture (`decode`).

pub mod decode;
pub mod evidence;
pub mod pcap;
pub mod record;
pub mod replay;
pub mod timeline;
