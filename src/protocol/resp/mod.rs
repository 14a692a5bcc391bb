//! A strict RESP3 scanner that keeps the exact bytes of every frame.
//!
//! maintwatch is a diagnostic instrument: it prints and captures the bytes a server sent, so its
//! reader must tell *where* a malformed frame went wrong, check every CRLF, and refuse absurd
//! declared sizes before allocating anything. General-purpose client codecs are lenient and fast
//! to accept; this one is strict and cheap to run: frames borrow from the read buffer, and decode
//! into a flat list of 16-byte [`Node`]s in wire order (a [`FlatFrame`]) that one reader reuses
//! from frame to frame, so the watcher's hot path allocates nothing per frame. The owned tree
//! ([`Frame`], one `Vec` per aggregate) is built from the flat form where code wants one; both
//! come from the same single scanner, so they cannot disagree.
//!
//! "Incomplete, read more" is not an error: [`Scanner::scan`] returns [`Scan::Incomplete`] with a
//! lower bound on how many bytes the frame needs, so a reader need not rescan a large blob on every
//! small read.
//!
//! Everything a server sends is untrusted, so a frame's cost stays linear in its size: the
//! [`StreamReader`] checks a frame still arriving incrementally (resuming where the last read
//! stopped) and scans it into a tree once, when whole; and a tree holds at most
//! [`Limits::max_decoded`] values, past which aggregates are [`Frame::Elided`] (their bytes are
//! still checked and delivered whole).
//!
//! The module is split by concern: `frame` holds the owned tree, its encoding and the error
//! type; `flat` the flat form a scan fills; `scanner` the one scanner both come from; and
//! `stream` the reader that feeds a byte stream through it, resuming a frame still arriving.
//! Everything public is re-exported here, so `maintwatch::protocol::resp::X` stays the path to use.

mod flat;
mod frame;
mod scanner;
mod stream;
#[cfg(test)]
mod tests;

pub use flat::{Children, FlatFrame, FlatScan, Kind, Node, Value, MAX_FRAME_CAP};
pub use frame::{encode_command, ErrorKind, Frame, Limits, RespError, Scan, Spanned};
pub use scanner::Scanner;
pub use stream::StreamReader;
