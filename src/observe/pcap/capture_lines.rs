//! The lines `pcap` adds to the watch's JSON-lines schema (how they read for people is
//! `present::output::pcap_screen`).
//!
//! Everything the watch already says (connections, handshakes, pushes, closes, the summary) is
//! the watch's own [`WatchLine`], produced by the same timeline. What only a capture can tell
//! (the client's address, TCP gaps, TLS, the application's reconnect and the verdict about it)
//! lives here, as `pcap_*` lines documented in `docs/jsonl.md`.

use crate::observe::record::WatchLine;
use serde::{Deserialize, Serialize};

/// One line of `pcap` output: a watch line or a pcap line.
// One line exists at a time, written and dropped.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    Watch(WatchLine),
    Pcap(PcapLine),
}

/// One capture file as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLine {
    pub file: String,
    /// `pcap` or `pcapng`.
    pub format: String,
    pub packets: u64,
    /// Bytes after the last whole packet (the file was cut), if any.
    pub truncated_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PcapLine {
    /// An application connection (a TCP stream carrying RESP) was found.
    PcapStream {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        client: String,
        server: String,
        /// Whether the SYN was captured (so the handshake is in the capture).
        syn: bool,
        /// `port` (`--port`) or `content` (the client's first bytes are a RESP command).
        selected_by: String,
    },
    /// What the application did to opt in, and what it got.
    PcapHandshake {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        /// The protocol version sent with HELLO (`3`), or null when no HELLO was sent.
        hello: Option<String>,
        /// The server's error for HELLO, if it refused.
        hello_error: Option<String>,
        /// The opt-in command as the application sent it, or null.
        opt_in: Option<String>,
        endpoint_type: Option<String>,
        /// `accepted`, `refused`, `not_sent`, `resp3_unavailable`, `auth_failed`,
        /// `not_captured` (the capture started after the handshake).
        outcome: String,
        text: Option<String>,
    },
    /// A TLS stream: nothing inside can be read.
    PcapTls {
        v: u32,
        t: f64,
        at: String,
        client: String,
        server: String,
        text: String,
    },
    /// Bytes missing from one direction of a connection.
    PcapGap {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        /// `client` (what the application sent) or `server`.
        side: String,
        /// Stream offset of the first missing byte.
        offset: u64,
        /// How many bytes are missing.
        bytes: u64,
        /// `overflow` (too much out-of-order data waiting) or `ended` (the stream ended first).
        why: String,
        text: String,
    },
    /// The client's side could not be read as RESP commands.
    PcapUnreadable {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        side: String,
        offset: u64,
        error: String,
    },
    /// A new connection from the host of a connection that got a MOVING.
    PcapReconnect {
        v: u32,
        t: f64,
        at: String,
        /// The new connection.
        conn: u32,
        /// The connection that got the MOVING.
        after_conn: u32,
        event: String,
        /// Where the new connection goes.
        addr: String,
        /// Seconds after the MOVING.
        s: f64,
    },
    /// Did the application move before the server closed the connection it was warned on?
    PcapVerdict {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        event: String,
        /// `moved_before_close`, `cut_by_close`, `open_at_end`.
        verdict: String,
        text: String,
        /// Seconds after the MOVING: the new connection, and the close.
        reconnect_s: Option<f64>,
        close_s: Option<f64>,
        /// `server` or `client`, and how (`fin`, `rst`).
        closed_by: Option<String>,
        /// Commands the application sent on this connection after the MOVING, replies read,
        /// and the slowest reply.
        window_commands: u32,
        window_replies: u32,
        window_max_latency_ms: Option<f64>,
    },
    /// Something about the file rather than the traffic (a truncated file).
    PcapWarning { v: u32, file: String, text: String },
    /// The last line: what was read.
    PcapEnd {
        v: u32,
        files: Vec<FileLine>,
        packets: u64,
        tcp_streams: u64,
        resp_conns: u64,
        tls_streams: u64,
        ignored_streams: u64,
        /// Packets whose headers could not be decoded.
        bad_packets: u64,
        /// Packets cut by the capture's snap length.
        snapped_packets: u64,
        gaps: u64,
        /// Streams forgotten undecided, past the cap on streams not yet known to be RESP.
        #[serde(default)]
        pruned_streams: u64,
    },
}
