//! The JSON-lines schema: one self-describing object per line, shared by `decode --json`,
//! `watch --json`, `--capture` files and `replay`.
//!
//! Every line has a `type` and the schema version `v`, so a consumer can dispatch on a line
//! without context, and a capture cut at any point is still a valid prefix. Raw bytes travel as
//! escaped text (see `escape`), which is lossless and still greppable. The parse stored next to
//! the bytes is what `replay --check` compares against a fresh parse of the same bytes.
//! The schema is documented in `docs/jsonl.md`.

use crate::escape::escape;
use crate::notification::{classify, classify_flat, Classified};
use crate::resp::{FlatScan, Scanner};
use serde::{Deserialize, Serialize};

mod fast;

/// Version of the JSON-lines schema, carried on every line as `v`.
pub const SCHEMA_VERSION: u32 = 1;

/// One frame: where it was in its stream, its exact bytes, and what they parse to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameRecord {
    /// Byte offset of the frame's first byte in its stream (connection or input).
    pub offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// The exact bytes, escaped (`\r`, `\n`, `\\`, `\xNN`) on the wire.
    pub raw: Raw,
    #[serde(deserialize_with = "read_parsed")]
    pub parsed: Classified,
}

impl FrameRecord {
    pub fn new(frame: &crate::resp::Frame<'_>, raw: &[u8], offset: u64) -> FrameRecord {
        FrameRecord {
            offset,
            len: raw.len(),
            raw: Raw::Bytes(raw.to_vec()),
            parsed: classify(frame),
        }
    }
}

/// A frame's exact bytes. A frame read live keeps them as they came and is escaped where it is
/// written, in one pass straight into the output (under a flood an escaped copy per frame was a
/// tenth of the watch's CPU); one read back from a capture keeps the escaped text it was
/// recorded as, which `replay` writes out again unchanged. Either way it is the same frame: two
/// compare equal when their escaped texts do.
#[derive(Debug, Clone)]
pub enum Raw {
    Bytes(Vec<u8>),
    Escaped(String),
}

impl Raw {
    /// The escaped text (`\r`, `\n`, `\\`, `\xNN`): printable ASCII for live bytes.
    pub fn escaped(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Raw::Bytes(b) => std::borrow::Cow::Owned(escape(b)),
            Raw::Escaped(s) => std::borrow::Cow::Borrowed(s),
        }
    }

    /// The exact bytes; an error for recorded text that does not unescape.
    pub fn bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        match self {
            Raw::Bytes(b) => Ok(std::borrow::Cow::Borrowed(b)),
            Raw::Escaped(s) => unescape_raw(s).map(std::borrow::Cow::Owned),
        }
    }

    /// The length of the escaped text, at least (exactly, for recorded text).
    pub fn len_hint(&self) -> usize {
        match self {
            Raw::Bytes(b) => b.len(),
            Raw::Escaped(s) => s.len(),
        }
    }

    /// The escaped text when it is already held (a record read back), for checks that would
    /// otherwise escape live bytes only to look at them.
    pub fn recorded(&self) -> Option<&str> {
        match self {
            Raw::Bytes(_) => None,
            Raw::Escaped(s) => Some(s),
        }
    }

    /// The escaped text, appended to `out`.
    pub fn escape_into(&self, out: &mut String) {
        match self {
            Raw::Bytes(b) => crate::escape::escape_into(out, b),
            Raw::Escaped(s) => out.push_str(s),
        }
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Raw) -> bool {
        match (self, other) {
            (Raw::Bytes(a), Raw::Bytes(b)) => a == b,
            _ => self.escaped() == other.escaped(),
        }
    }
}

impl Eq for Raw {}

impl PartialEq<str> for Raw {
    fn eq(&self, other: &str) -> bool {
        self.escaped() == other
    }
}

impl PartialEq<String> for Raw {
    fn eq(&self, other: &String) -> bool {
        self.escaped() == other.as_str()
    }
}

impl PartialEq<&str> for Raw {
    fn eq(&self, other: &&str) -> bool {
        self.escaped() == *other
    }
}

impl From<String> for Raw {
    fn from(escaped: String) -> Raw {
        Raw::Escaped(escaped)
    }
}

impl From<&str> for Raw {
    fn from(escaped: &str) -> Raw {
        Raw::Escaped(escaped.to_string())
    }
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.escaped())
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Raw, D::Error> {
        String::deserialize(deserializer).map(Raw::Escaped)
    }
}

/// Reads a recorded parse. The derived reader of the internally tagged [`Classified`] first
/// copies the whole object into an intermediate tree to find its `class`; lines maintwatch
/// writes put `class` first, so the payload is read straight from the rest of the object. Any
/// other order (or an unknown class) goes through the derived reader, whose result and errors
/// are the reference.
fn read_parsed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Classified, D::Error> {
    d.deserialize_map(ParsedVisitor)
}

struct ParsedVisitor;

impl<'de> serde::de::Visitor<'de> for ParsedVisitor {
    type Value = Classified;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a frame's parse (an object with a `class`)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Classified, A::Error> {
        use serde::de::{value::MapAccessDeserializer, Error};
        use std::borrow::Cow;
        let mut fields = serde_json::Map::new();
        if let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = map.next_value::<serde_json::Value>()?;
            match (key.as_ref(), value.as_str()) {
                ("class", Some("other_push")) => {
                    return crate::notification::OtherPush::deserialize(
                        MapAccessDeserializer::new(map),
                    )
                    .map(Classified::OtherPush);
                }
                ("class", Some("maintenance")) => {
                    return crate::notification::Notification::deserialize(
                        MapAccessDeserializer::new(map),
                    )
                    .map(|n| Classified::Maintenance(Box::new(n)));
                }
                _ => fields.insert(key.into_owned(), value),
            };
        }
        while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
            fields.insert(key, value);
        }
        Classified::deserialize(serde_json::Value::Object(fields)).map_err(A::Error::custom)
    }
}

/// Parses the bytes of a stored frame again with today's scanner and parser.
pub fn reparse(raw_escaped: &str) -> Result<Classified, String> {
    reparse_sized(raw_escaped).map(|(parsed, _)| parsed)
}

/// [`reparse`], and how many bytes the raw text stands for.
pub fn reparse_sized(raw_escaped: &str) -> Result<(Classified, usize), String> {
    reparse_bytes(&unescape_raw(raw_escaped)?)
}

/// The bytes of recorded raw text.
fn unescape_raw(raw_escaped: &str) -> Result<Vec<u8>, String> {
    match unescape_recorded(raw_escaped) {
        Some(bytes) => Ok(bytes),
        None => crate::escape::unescape(raw_escaped).map_err(|e| format!("raw text: {e}")),
    }
}

/// The parse of a frame's exact bytes, and their length; an error unless they are one frame.
pub fn reparse_bytes(bytes: &[u8]) -> Result<(Classified, usize), String> {
    // Flat, as the watch reads: a pub/sub push is classified without building its tree.
    let mut nodes = Vec::new();
    match Scanner::default().scan_flat(bytes, &mut nodes) {
        Ok(FlatScan::Frame(frame)) if frame.raw().len() == bytes.len() => {
            Ok((classify_flat(&frame), bytes.len()))
        }
        Ok(FlatScan::Frame(frame)) => Err(format!(
            "raw holds {} bytes after the frame's {}",
            bytes.len() - frame.raw().len(),
            frame.raw().len()
        )),
        Ok(FlatScan::Incomplete { need }) => Err(format!(
            "raw is an incomplete frame ({} of at least {need} bytes)",
            bytes.len()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The bytes of raw text as [`escape`] writes it (printable ASCII and backslash escapes), in
/// one pass over bytes; `None` for anything else (quoted text, line breaks, other characters,
/// a bad escape), which [`crate::escape::unescape`] reads or explains. Where both read a text
/// they agree (tested): `replay` reads a million of these per capture.
fn unescape_recorded(text: &str) -> Option<Vec<u8>> {
    // Quoted text is unquoted by the general reader (a frame never starts with `"`).
    let trimmed = text.trim();
    if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if b != b'\\' {
            if !(0x20..=0x7e).contains(&b) {
                return None;
            }
            out.push(b);
            continue;
        }
        let e = *bytes.get(i)?;
        i += 1;
        out.push(match e {
            b'r' => b'\r',
            b'n' => b'\n',
            b't' => b'\t',
            b'0' => 0,
            b'e' => 0x1b,
            b'\\' | b'"' | b'\'' => e,
            b'x' => {
                let hex = std::str::from_utf8(bytes.get(i..i + 2)?).ok()?;
                i += 2;
                if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                    return None;
                }
                u8::from_str_radix(hex, 16).ok()?
            }
            _ => return None,
        });
    }
    Some(out)
}

/// Lines written by `decode --json`.
// One line exists at a time, written and dropped: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecodeLine {
    Frame {
        v: u32,
        /// The input file, or `-` for standard input.
        source: String,
        frame: FrameRecord,
        /// `decode --clients`: what each known client's parser does with this frame.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clients: Option<Vec<ClientVerdict>>,
    },
    Error {
        v: u32,
        source: String,
        /// Offset in the decoded byte stream of that input.
        offset: u64,
        message: String,
    },
}

/// How a line relates to the latest opening notification: `+s.mmm` after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rel {
    /// The opening event, e.g. `MOVING seq 0`.
    pub to: String,
    /// Seconds since it arrived (negative never happens; 0 is the event itself).
    pub s: f64,
}

/// Why a push got a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// A retained MIGRATED/FAILED_OVER replayed with the opt-in's reply: an old event.
    CatchUp,
    /// Same type and seq as one already seen: not a new event.
    Resent,
    /// Arrived with the opt-in's reply (a MOVING whose window is still open).
    WithOptIn,
}

/// The opt-in's outcome on one connection: the one enum for it, in lines, the summary, `probe`
/// (inside its `Severity`) and `--require`'s exit code. Declared in severity order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptInOutcome {
    Accepted,
    Refused,
    Resp3Unavailable,
    AuthFailed,
}

impl OptInOutcome {
    /// The exit code of a run that ends on this outcome (`probe`, `watch --require`).
    pub fn exit_code(self) -> i32 {
        match self {
            OptInOutcome::Accepted => crate::exit::SUCCESS,
            OptInOutcome::Refused => crate::exit::REFUSED,
            OptInOutcome::Resp3Unavailable => crate::exit::RESP3_UNAVAILABLE,
            OptInOutcome::AuthFailed => crate::exit::AUTH_FAILED,
        }
    }
}

/// One row of the end-of-watch summary: one logical event and what followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRow {
    pub kind: String,
    pub seq: Option<i64>,
    /// Seconds since the watch started.
    pub t: f64,
    pub window_s: Option<i64>,
    /// Offsets below are seconds after this event.
    pub closed_by_notification_s: Option<f64>,
    pub dns_moved_s: Option<f64>,
    pub socket_closed_s: Option<f64>,
    /// Close minus window: positive is past the declared window.
    pub overshoot_s: Option<f64>,
    pub handoff: Option<String>,
    pub handoff_s: Option<f64>,
    /// Socket close minus the dry-run's move: how early a client following it would have been.
    pub margin_s: Option<f64>,
    /// Copies of this event seen (re-sent, or from other connections).
    pub copies: u32,
    /// The event (a MOVING) came with the opt-in: servers re-send an open window's MOVING to a
    /// new opt-in, so it may have opened before the watch joined. Its start is unknown: the
    /// offsets above count from receipt and the overshoot is a lower bound.
    #[serde(default)]
    pub joined_open: bool,
    /// `socket_closed_s` is a close nothing announced (no MOVING): in a silent shrink, the
    /// MIGRATING's row records when the node's sockets were closed anyway.
    #[serde(default)]
    pub silent_close: bool,
    /// A later MOVING on the same connection replaced this one before its close: the close, and
    /// so the margin, belong to that one (named here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl EventRow {
    /// A row for an event just seen: nothing has followed it yet.
    pub fn new(kind: &str, seq: Option<i64>, t: f64) -> EventRow {
        EventRow {
            kind: kind.into(),
            seq,
            t,
            window_s: None,
            closed_by_notification_s: None,
            dns_moved_s: None,
            socket_closed_s: None,
            overshoot_s: None,
            handoff: None,
            handoff_s: None,
            margin_s: None,
            copies: 0,
            joined_open: false,
            silent_close: false,
            superseded_by: None,
        }
    }
}

/// The speed a simulator announced in its HELLO reply (`maintwatch-sim-speed`), and the one the
/// watch reads offsets at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpeed {
    pub announced: f64,
    pub used: f64,
    /// `--sim-speed` was given (then a different announcement is a warning, not adopted).
    pub given: bool,
}

/// `--traffic` over the whole watch: latency percentiles of the PINGs answered, and the
/// failures, by the window they fell in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PingStats {
    pub sent: u64,
    pub answered: u64,
    pub failures: u64,
    /// Percentiles from a log histogram with 1 % wide buckets: within 1 % of the exact value.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Failures per open window (`MOVING seq 3`); failures outside any window are not listed.
    pub failure_windows: Vec<WindowFailures>,
}

/// How many PINGs failed during one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowFailures {
    pub window: String,
    pub failures: u64,
}

/// Where a copy of an event was first seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyOf {
    pub conn: u32,
    /// Milliseconds after the first copy.
    pub after_ms: f64,
}

/// How many connections got one opt-in outcome.
/// Counts that keep a long watch's state bounded, and errors retried after a session existed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryNotes {
    /// Events left out of `events`: only the most recent ones are kept.
    #[serde(default)]
    pub retired_events: u64,
    /// MOVINGs whose dry-run did not run because the most allowed at once were running.
    #[serde(default)]
    pub skipped_dry_runs: u64,
    /// Declared windows longer than the dry-run's cap, shortened to it.
    #[serde(default)]
    pub capped_windows: u64,
    /// Permanent errors (authentication, SELECT, certificate) met when reconnecting after a
    /// session had been established; they were retried.
    #[serde(default)]
    pub session_errors: u64,
}

impl SummaryNotes {
    pub fn is_empty(&self) -> bool {
        *self == SummaryNotes::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptInTally {
    pub opt_in: OptInOutcome,
    pub text: Option<String>,
    pub conns: u32,
}

/// Per-connection totals for the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnTotals {
    pub conn: u32,
    pub endpoint: String,
    pub notifications: u32,
    pub other_pushes: u32,
    pub closes: u32,
    pub reconnects: u32,
}

/// A closed set of values written as strings in the JSON lines: the enum inside the code, its
/// wire name outside. `as_str` gives the wire name; comparing with a `str` compares it.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// The name written in the JSON lines.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

wire_enum!(
    /// Who ended a connection (`closed.by`).
    ClosedBy {
        /// The server closed it cleanly.
        Server => "server",
        /// A reset or another I/O error.
        Error => "error",
        /// The watch closed it (stopping, or a node that left the cluster).
        Watch => "watch",
        /// `pcap`: the application closed it (FIN, or RST with the error saying so).
        Client => "client",
        /// The built-in simulator closed it at the end of its scenario, after marking that end
        /// (a push it sends to maintwatch's own connections only): a test ending, no incident.
        ScenarioEnd => "scenario_end",
    }
);

wire_enum!(
    /// What the DNS poller saw (`dns.event`).
    DnsEvent {
        Initial => "initial",
        Changed => "changed",
        CannotTell => "cannot_tell",
        Recovered => "recovered",
        Waiting => "waiting",
    }
);

wire_enum!(
    /// What a DNS change did to the address we are connected to (`dns.ours`).
    OursChange {
        Left => "left",
        Rejoined => "rejoined",
    }
);

wire_enum!(
    /// What a dry-run decided (`handoff.outcome`, and the summary's `handoff`).
    DryRunOutcome {
        MoveToSuccessor => "move_to_successor",
        ReconnectOnClock => "reconnect_on_clock",
        SteppedSideways => "stepped_sideways",
        Moved => "moved",
        StaleAtExpiry => "stale_at_expiry",
        Unresolved => "unresolved",
        Cancelled => "cancelled",
        /// An SMIGRATED named our nodes: one topology refresh after a jitter.
        RefreshTopology => "refresh_topology",
    }
);

wire_enum!(
    /// Why a topology line was written (`topology.reason`).
    TopologyReason {
        Discovered => "discovered",
        Refreshed => "refreshed",
    }
);

/// Lines written by `watch --json` and `--capture`, and read by `replay`. Each carries the schema
/// version `v`, `t` (seconds since the watch started, monotonic) and `at` (wall clock, RFC 3339
/// with microseconds, UTC).
// Lines are made, written and dropped one at a time: the size of the largest variant is not
// worth an allocation per push frame.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WatchLine {
    /// First line: what is watched, by which version.
    Start(line::Start),
    /// A TCP (and TLS) connection was established.
    Connected(line::Connected),
    /// Connecting failed; another attempt follows after `retry_in_s` unless the watch stops.
    ConnectFailed(line::ConnectFailed),
    /// HELLO 3 and the opt-in's outcome.
    Handshake(line::Handshake),
    /// A push frame (or an unexpected reply) received.
    Push(line::Push),
    /// The byte stream could not be framed; the connection is dropped and re-established.
    Malformed(line::Malformed),
    /// The connection ended.
    Closed(line::Closed),
    /// The DNS watch saw something.
    Dns(line::Dns),
    /// The dry-run handoff decided.
    Handoff(line::Handoff),
    /// What the dry-run would have done, set against what the server did.
    Verdict(line::Verdict),
    /// "Is our address still advertised?" after a MIGRATED.
    Advertised(line::Advertised),
    /// A `--traffic` PING and what came back.
    Ping(line::Ping),
    /// The cluster's nodes, as CLUSTER SHARDS (or SLOTS) reported them.
    Topology(line::Topology),
    /// Last line: one row per event and totals per connection.
    Summary(line::Summary),
    /// `--heartbeat`: the watch is alive, with its connections and opt-in state.
    Heartbeat(line::Heartbeat),
}

/// The payload of each [`WatchLine`], one named struct per line type (the `type` tag is the
/// enum's). Every payload refuses unknown fields, so a capture of another schema is caught.
pub mod line {
    use super::*;

    /// First line: what is watched, by which version.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Start {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub endpoint: String,
        pub version: String,
        /// Scenario seconds per real second: 1, or the simulator's `--speed` (`--sim-speed`).
        /// Offsets after events (`rel.s`, `past_s`, summary offsets) are in scenario seconds.
        pub speed: f64,
    }

    /// A TCP (and TLS) connection was established.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Connected {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub addr: String,
        pub tls: bool,
        /// 1 for the first connection, then one more per reconnect.
        pub session: u32,
        pub rel: Option<Rel>,
    }

    /// Connecting failed; another attempt follows after `retry_in_s` unless the watch stops.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ConnectFailed {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub error: String,
        pub retry_in_s: Option<f64>,
    }

    /// HELLO 3 and the opt-in's outcome.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Handshake {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub opt_in: OptInOutcome,
        /// The server's text for a refusal or error.
        pub text: Option<String>,
        pub server: Option<String>,
        pub version: Option<String>,
        pub mode: Option<String>,
        /// The exact CLIENT MAINT_NOTIFICATIONS command sent.
        pub sent: Option<String>,
        /// The same outcome and text were already reported by this connection: a cluster of
        /// refusing nodes is reported once, not once per node.
        #[serde(default)]
        pub repeat_of: Option<u32>,
        /// The simulator's announced speed, when its HELLO reply carried one.
        #[serde(default)]
        pub sim_speed: Option<SimSpeed>,
    }

    /// A push frame (or an unexpected reply) received.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Push {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub labels: Vec<Label>,
        pub rel: Option<Rel>,
        pub frame: FrameRecord,
        /// For a copy of an event first seen on another connection (every cluster node
        /// broadcasts the same event): where and how much earlier it was first seen.
        #[serde(default)]
        pub copy_of: Option<CopyOf>,
        /// SMIGRATED: the sources (`host:port`) that are nodes this watch is connected to.
        #[serde(default)]
        pub sources_ours: Vec<String>,
    }

    /// The byte stream could not be framed; the connection is dropped and re-established.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Malformed {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub offset: u64,
        pub error: String,
    }

    /// How a close during the handshake starts its `error`. A close before any session is not
    /// one a MOVING could have announced, so the screen does not call it unannounced.
    pub const DURING_HANDSHAKE: &str = "during the handshake";

    /// The connection ended.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Closed {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        /// `server` (the server closed it), `error` (reset, I/O error), or `watch` (we stopped).
        pub by: ClosedBy,
        pub error: Option<String>,
        /// Whether a MOVING on this connection announced it.
        pub announced: bool,
        pub window_s: Option<i64>,
        /// Seconds past the declared window (negative: before it ended).
        pub past_s: Option<f64>,
        pub rel: Option<Rel>,
        /// The MOVING came with the opt-in, so its window may have opened before the watch
        /// joined: `past_s` counts the window from receipt, a lower bound of the overshoot.
        #[serde(default)]
        pub joined_open: bool,
        /// The backoff before the watch reconnects (absent when it does not).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_in_s: Option<f64>,
    }

    /// The DNS watch saw something.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Dns {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub host: String,
        /// `initial`, `changed`, `cannot_tell`, `recovered`
        pub event: DnsEvent,
        pub before: Vec<String>,
        pub after: Vec<String>,
        pub ttl: Option<u32>,
        pub reason: Option<String>,
        /// `left` or `rejoined` when our connected address did.
        pub ours: Option<OursChange>,
        pub rel: Option<Rel>,
    }

    /// The dry-run handoff decided.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Handoff {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        /// The event it answers, e.g. `MOVING seq 0`.
        pub event: String,
        pub outcome: DryRunOutcome,
        /// Seconds after the event when the client would act.
        pub at_s: f64,
        /// Whether a client would have moved (successor, sibling, new address, or the clock).
        pub moves: bool,
        pub text: String,
        pub rel: Option<Rel>,
        /// Where a client would go: `host:port` of a named successor, or the address DNS gave;
        /// `null` when it would not move anywhere in particular.
        #[serde(default)]
        pub to: Option<String>,
    }

    /// What the dry-run would have done, set against what the server did.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Verdict {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub event: String,
        pub text: String,
        /// Close minus the dry-run's move, when it moved.
        pub margin_s: Option<f64>,
    }

    /// "Is our address still advertised?" after a MIGRATED.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Advertised {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub addr: String,
        /// `yes`, `no`, `cannot_tell`
        pub answer: crate::handoff::Advertised,
        pub rel: Option<Rel>,
    }

    /// A `--traffic` PING and what came back.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Ping {
        pub v: u32,
        pub t: f64,
        pub at: String,
        pub conn: u32,
        pub latency_ms: Option<f64>,
        pub error: Option<String>,
        /// The open window this is attributed to, if any.
        pub window: Option<String>,
    }

    /// The cluster's nodes, as CLUSTER SHARDS (or SLOTS) reported them.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Topology {
        pub v: u32,
        pub t: f64,
        pub at: String,
        /// `discovered` or `refreshed` (after an SMIGRATED).
        pub reason: TopologyReason,
        pub nodes: Vec<String>,
        pub added: Vec<String>,
        pub removed: Vec<String>,
        pub rel: Option<Rel>,
    }

    /// Last line: one row per event and totals per connection.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Summary {
        pub v: u32,
        pub t: f64,
        pub at: String,
        /// `interrupted`, `duration`, `count`, `ended`
        pub reason: String,
        pub events: Vec<EventRow>,
        pub conns: Vec<ConnTotals>,
        /// Opt-in outcomes, counted over connections (a cluster reports one line per outcome).
        #[serde(default)]
        pub opt_in: Vec<OptInTally>,
        /// `--traffic` figures, when PINGs were sent.
        #[serde(default)]
        pub pings: Option<PingStats>,
        /// What a long watch counted instead of keeping or doing; absent when all zero.
        #[serde(default, skip_serializing_if = "SummaryNotes::is_empty")]
        pub notes: SummaryNotes,
        /// `t` in scenario seconds, when the watch read a simulator's speed other than 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub scenario_s: Option<f64>,
    }

    /// `--heartbeat`: a quiet watch says it is alive (one per endpoint in a fleet).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Heartbeat {
        pub v: u32,
        pub t: f64,
        pub at: String,
        /// Connections watched (one per `--connections`, or per cluster node).
        pub conns: u32,
        /// Of those, the ones with a session now (handshake done, not closed since).
        pub up: u32,
        /// Of the sessions up, the ones whose opt-in was accepted.
        pub opted_in: u32,
        /// Maintenance notifications so far.
        pub notifications: u64,
        /// Seconds since the latest one (`null`: none yet).
        pub since_notification_s: Option<f64>,
    }
}

/// What a parser does with one frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Verdict {
    /// Takes it as a notification and acts; `reads` says what with.
    Acts {
        reads: String,
        /// A MOVING's target as the client reads it (`host`, `port`), when it moves somewhere
        /// named; `None` with a MOVING means "reconnect where it is".
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<(String, Option<i64>)>,
    },
    /// Not a notification to it: passed on or dropped without effect.
    Ignores { why: String },
    /// Breaks on it: `how` (an exception caught and logged, an assertion, a rejected frame).
    Fails { how: String },
    /// No prediction: the client's parser was not read.
    Unknown,
}

impl Verdict {
    pub fn outcome(&self) -> &'static str {
        match self {
            Verdict::Acts { .. } => "acts",
            Verdict::Ignores { .. } => "ignores",
            Verdict::Fails { .. } => "fails",
            Verdict::Unknown => "unknown",
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Acts { reads, .. } => format!("acts: {reads}"),
            Verdict::Ignores { why } => format!("ignores: {why}"),
            Verdict::Fails { how } => format!("fails: {how}"),
            Verdict::Unknown => "unknown: its parser was not read".into(),
        }
    }
}

/// One client's verdict on a frame (`clients`), as `decode --clients --json` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientVerdict {
    pub client: String,
    pub version: String,
    pub verdict: Verdict,
}

/// A line of a fleet as written: the endpoint's label (`ep`) beside the line's own fields. Read
/// only when a line has an `ep`; a line without one is a [`WatchLine`] as it always was.
#[derive(Debug, Deserialize)]
pub struct TaggedLine {
    pub ep: String,
    #[serde(flatten)]
    pub line: WatchLine,
}

impl WatchLine {
    /// Seconds since the watch started.
    pub fn t(&self) -> f64 {
        match self {
            WatchLine::Start(line::Start { t, .. })
            | WatchLine::Connected(line::Connected { t, .. })
            | WatchLine::ConnectFailed(line::ConnectFailed { t, .. })
            | WatchLine::Handshake(line::Handshake { t, .. })
            | WatchLine::Push(line::Push { t, .. })
            | WatchLine::Malformed(line::Malformed { t, .. })
            | WatchLine::Closed(line::Closed { t, .. })
            | WatchLine::Dns(line::Dns { t, .. })
            | WatchLine::Handoff(line::Handoff { t, .. })
            | WatchLine::Verdict(line::Verdict { t, .. })
            | WatchLine::Advertised(line::Advertised { t, .. })
            | WatchLine::Ping(line::Ping { t, .. })
            | WatchLine::Topology(line::Topology { t, .. })
            | WatchLine::Summary(line::Summary { t, .. })
            | WatchLine::Heartbeat(line::Heartbeat { t, .. }) => *t,
        }
    }

    /// The schema version the line says it is.
    pub fn v(&self) -> u32 {
        match self {
            WatchLine::Start(line::Start { v, .. })
            | WatchLine::Connected(line::Connected { v, .. })
            | WatchLine::ConnectFailed(line::ConnectFailed { v, .. })
            | WatchLine::Handshake(line::Handshake { v, .. })
            | WatchLine::Push(line::Push { v, .. })
            | WatchLine::Malformed(line::Malformed { v, .. })
            | WatchLine::Closed(line::Closed { v, .. })
            | WatchLine::Dns(line::Dns { v, .. })
            | WatchLine::Handoff(line::Handoff { v, .. })
            | WatchLine::Verdict(line::Verdict { v, .. })
            | WatchLine::Advertised(line::Advertised { v, .. })
            | WatchLine::Ping(line::Ping { v, .. })
            | WatchLine::Topology(line::Topology { v, .. })
            | WatchLine::Summary(line::Summary { v, .. })
            | WatchLine::Heartbeat(line::Heartbeat { v, .. }) => *v,
        }
    }

    /// Reads one JSON line. The same as `serde_json::from_slice::<WatchLine>`, faster for the
    /// lines maintwatch writes, which start with their `type`: the tag is blanked out in place
    /// and the payload read directly, where the derived reader of an internally tagged enum
    /// first copies every field into an intermediate tree. `text` is left as it was.
    pub fn from_json(text: &mut [u8]) -> serde_json::Result<WatchLine> {
        const START: &[u8] = b"{\"type\":\"";
        let tag = text
            .strip_prefix(START)
            .and_then(|rest| rest.iter().position(|&b| b == b'"'))
            .filter(|&end| text.get(START.len() + end + 1) == Some(&b','));
        let Some(end) = tag else {
            return serde_json::from_slice(text);
        };
        // Nearly every line of a flood capture is a push line, read by hand when it is written
        // exactly as the watch writes it.
        if &text[START.len()..START.len() + end] == b"push" {
            if let Some(push) = fast::push(text) {
                return Ok(WatchLine::Push(push));
            }
        }
        let tag_end = START.len() + end + 2;
        let name = text[START.len()..START.len() + end].to_vec();
        text[1..tag_end].fill(b' ');
        let direct = payload(&name, text);
        text[..tag_end].copy_from_slice(&[START, &name, b"\","].concat());
        match direct {
            Some(Ok(line)) => Ok(line),
            // The general reader says what is wrong, in its own words.
            _ => serde_json::from_slice(text),
        }
    }
}

/// The line of type `name` from `text`, whose tag was blanked; `None` for an unknown type.
fn payload(name: &[u8], text: &[u8]) -> Option<serde_json::Result<WatchLine>> {
    use serde_json::from_slice as read;
    Some(match name {
        b"push" => read(text).map(WatchLine::Push),
        b"ping" => read(text).map(WatchLine::Ping),
        b"start" => read(text).map(WatchLine::Start),
        b"connected" => read(text).map(WatchLine::Connected),
        b"connect_failed" => read(text).map(WatchLine::ConnectFailed),
        b"handshake" => read(text).map(WatchLine::Handshake),
        b"malformed" => read(text).map(WatchLine::Malformed),
        b"closed" => read(text).map(WatchLine::Closed),
        b"dns" => read(text).map(WatchLine::Dns),
        b"handoff" => read(text).map(WatchLine::Handoff),
        b"verdict" => read(text).map(WatchLine::Verdict),
        b"advertised" => read(text).map(WatchLine::Advertised),
        b"topology" => read(text).map(WatchLine::Topology),
        b"summary" => read(text).map(WatchLine::Summary),
        b"heartbeat" => read(text).map(WatchLine::Heartbeat),
        _ => return None,
    })
}

impl WatchLine {
    /// The wall-clock time of the line, as written.
    pub fn at(&self) -> &str {
        match self {
            WatchLine::Start(line::Start { at, .. })
            | WatchLine::Connected(line::Connected { at, .. })
            | WatchLine::ConnectFailed(line::ConnectFailed { at, .. })
            | WatchLine::Handshake(line::Handshake { at, .. })
            | WatchLine::Push(line::Push { at, .. })
            | WatchLine::Malformed(line::Malformed { at, .. })
            | WatchLine::Closed(line::Closed { at, .. })
            | WatchLine::Dns(line::Dns { at, .. })
            | WatchLine::Handoff(line::Handoff { at, .. })
            | WatchLine::Verdict(line::Verdict { at, .. })
            | WatchLine::Advertised(line::Advertised { at, .. })
            | WatchLine::Ping(line::Ping { at, .. })
            | WatchLine::Topology(line::Topology { at, .. })
            | WatchLine::Summary(line::Summary { at, .. })
            | WatchLine::Heartbeat(line::Heartbeat { at, .. }) => at,
        }
    }

    /// The connection the line is about (`None` for lines about the whole watch).
    pub fn conn(&self) -> Option<u32> {
        match self {
            WatchLine::Connected(line::Connected { conn, .. })
            | WatchLine::ConnectFailed(line::ConnectFailed { conn, .. })
            | WatchLine::Handshake(line::Handshake { conn, .. })
            | WatchLine::Push(line::Push { conn, .. })
            | WatchLine::Malformed(line::Malformed { conn, .. })
            | WatchLine::Closed(line::Closed { conn, .. })
            | WatchLine::Handoff(line::Handoff { conn, .. })
            | WatchLine::Verdict(line::Verdict { conn, .. })
            | WatchLine::Advertised(line::Advertised { conn, .. })
            | WatchLine::Ping(line::Ping { conn, .. }) => Some(*conn),
            WatchLine::Start(_)
            | WatchLine::Dns(_)
            | WatchLine::Topology(_)
            | WatchLine::Summary(_)
            | WatchLine::Heartbeat(_) => None,
        }
    }
}

/// Wall-clock time as written in JSON lines: RFC 3339, microseconds, UTC.
///
/// This runs once per line of a push flood: the calendar date and time of day are computed once
/// per second and kept (per thread), and only the microseconds are written for each line.
pub fn wall(at: std::time::SystemTime) -> String {
    use std::cell::RefCell;
    thread_local! {
        /// The whole second last formatted, and its text up to and with the `.`.
        static SECOND: RefCell<Option<(i64, [u8; 20])>> = const { RefCell::new(None) };
    }
    let (secs, micros) = match at.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_micros(),
        ),
        // Before 1970: whole seconds towards the past, microseconds forward from there.
        Err(e) => {
            let d = e.duration();
            let back = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_micros() {
                0 => (-back, 0),
                m => (-back - 1, 1_000_000 - m),
            }
        }
    };
    let prefix = SECOND.with(|cell| {
        let mut cached = cell.borrow_mut();
        match *cached {
            Some((s, text)) if s == secs => text,
            _ => {
                let text = second_text(secs);
                *cached = Some((secs, text));
                text
            }
        }
    });
    let mut text = [0u8; 27];
    text[..20].copy_from_slice(&prefix);
    let mut m = micros;
    for i in (20..26).rev() {
        text[i] = b'0' + (m % 10) as u8;
        m /= 10;
    }
    text[26] = b'Z';
    // ASCII digits and punctuation only: the check cannot fail.
    String::from_utf8(text.to_vec()).unwrap_or_default()
}

/// `YYYY-MM-DDTHH:MM:SS.` of a second since the epoch, UTC.
fn second_text(secs: i64) -> [u8; 20] {
    use chrono::{Datelike, Timelike};
    let t = chrono::DateTime::<chrono::Utc>::from_timestamp(secs, 0).unwrap_or_default();
    let text = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let mut out = *b"0000-00-00T00:00:00.";
    // Years past 9999 do not fit the field; they do not happen on a clock a watch runs on.
    if text.len() == out.len() {
        out.copy_from_slice(text.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn closed_sets_of_values_keep_their_wire_names() {
        use super::{ClosedBy, DnsEvent, DryRunOutcome, OursChange, TopologyReason};
        let wire = |v: serde_json::Value| v.as_str().unwrap().to_string();
        assert_eq!(wire(serde_json::json!(ClosedBy::Server)), "server");
        assert_eq!(wire(serde_json::json!(DnsEvent::CannotTell)), "cannot_tell");
        assert_eq!(wire(serde_json::json!(OursChange::Rejoined)), "rejoined");
        assert_eq!(
            wire(serde_json::json!(DryRunOutcome::RefreshTopology)),
            "refresh_topology"
        );
        assert_eq!(TopologyReason::Discovered.as_str(), "discovered");
        assert_eq!(
            serde_json::from_str::<DryRunOutcome>(r#""stale_at_expiry""#).unwrap(),
            DryRunOutcome::StaleAtExpiry
        );
        assert!(serde_json::from_str::<ClosedBy>(r#""nobody""#).is_err());
        assert!(ClosedBy::Watch == "watch" && ClosedBy::Watch != "server");
    }

    #[test]
    fn a_line_deserialises_into_its_named_payload_and_refuses_unknown_fields() {
        let text = r#"{"type":"verdict","v":1,"t":1.5,"at":"2026-11-30T20:49:23.448800Z","conn":1,"event":"MOVING seq 0","text":"x","margin_s":6.1}"#;
        let line: super::WatchLine = serde_json::from_str(text).unwrap();
        let super::WatchLine::Verdict(v) = &line else {
            panic!("{line:?}")
        };
        assert_eq!((v.conn, v.margin_s), (1, Some(6.1)));
        // The wire format is unchanged: the same text comes back.
        assert_eq!(serde_json::to_string(&line).unwrap(), text);
        let extra = text.replace(r#""conn":1,"#, r#""conn":1,"extra":true,"#);
        let err = serde_json::from_str::<super::WatchLine>(&extra).unwrap_err();
        assert!(err.to_string().contains("unknown field `extra`"), "{err}");
    }

    use super::*;
    use crate::resp::Scan;

    /// The direct reader gives what the derived one gives, for every line of the committed
    /// captures, and leaves the text as it was; a line it cannot read gets the derived
    /// reader's error.
    #[test]
    fn lines_read_directly_equal_lines_read_through_the_tag() {
        let captures = [
            include_str!("../tests/fixtures/captures/oss-cluster.jsonl"),
            include_str!("../tests/fixtures/captures/shard-migration.jsonl"),
            include_str!("../tests/fixtures/captures/single-proxy.jsonl"),
        ];
        let mut n = 0;
        for text in captures.iter().flat_map(|c| c.lines()) {
            let mut bytes = text.as_bytes().to_vec();
            let direct = WatchLine::from_json(&mut bytes).unwrap();
            assert_eq!(bytes, text.as_bytes());
            assert_eq!(direct, serde_json::from_str::<WatchLine>(text).unwrap());
            n += 1;
        }
        assert!(n > 50, "{n}");
        for bad in [
            r#"{"type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null,"extra":1}"#,
            r#"{"type":"verdict","type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null}"#,
            r#"{"type":"nonsense","v":1}"#,
            r#"{"type":"push","#,
            r#"{"v":1,"type":"verdict","t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null}"#,
        ] {
            let mut bytes = bad.as_bytes().to_vec();
            let direct = WatchLine::from_json(&mut bytes).map_err(|e| e.to_string());
            let derived = serde_json::from_str::<WatchLine>(bad).map_err(|e| e.to_string());
            assert_eq!(direct, derived, "{bad}");
            assert_eq!(bytes, bad.as_bytes());
        }
    }

    /// The recorded parse reads the same through the direct path (`class` first) and the
    /// derived one (any other order), and refuses the same things.
    #[test]
    fn a_recorded_parse_reads_the_same_whatever_the_order_of_its_fields() {
        let record =
            |parsed: &str| format!(r#"{{"offset":0,"len":3,"raw":"x","parsed":{parsed}}}"#);
        let read = |parsed: &str| {
            serde_json::from_str::<FrameRecord>(&record(parsed))
                .map(|r| r.parsed)
                .map_err(|e| e.to_string())
        };
        let derived =
            |parsed: &str| serde_json::from_str::<Classified>(parsed).map_err(|e| e.to_string());
        let moving = r#"{"kind":"MOVING","type_text":"MOVING","seq":4,"time":15,"target":null}"#;
        for (class_first, other_order) in [
            (
                r#"{"class":"other_push","name":"message","elements":3,"known":true}"#,
                r#"{"name":"message","class":"other_push","elements":3,"known":true}"#,
            ),
            (
                &*format!(r#"{{"class":"maintenance",{}"#, &moving[1..]),
                &*format!(r#"{},"class":"maintenance"}}"#, &moving[..moving.len() - 1]),
            ),
            (r#"{"class":"not_push"}"#, r#"{"class":"not_push"}"#),
        ] {
            let direct = read(class_first);
            assert!(direct.is_ok(), "{class_first}: {direct:?}");
            assert_eq!(direct, read(other_order));
            assert_eq!(direct.clone().ok(), derived(class_first).ok());
        }
        for bad in [
            r#"{"class":"other_push","name":"m","elements":3,"known":true,"extra":1}"#,
            r#"{"class":"other_push","name":"m"}"#,
            r#"{"class":"nonsense"}"#,
            r#"{"name":"m","elements":3,"known":true}"#,
            r#"{"class":3}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
            assert!(derived(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_moving_without_a_target_says_null_and_old_lines_still_read() {
        let raw = b">3\r\n$6\r\nMOVING\r\n:4\r\n:15\r\n";
        let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
            panic!()
        };
        let record = FrameRecord::new(&frame, raw, 0);
        let json = serde_json::to_value(&record).unwrap();
        let parsed = &json["parsed"];
        assert!(
            parsed.as_object().unwrap().contains_key("target") && parsed["target"].is_null(),
            "{json}"
        );
        // A capture written before the key was always there still reads, to the same value.
        let mut old = json.clone();
        old["parsed"].as_object_mut().unwrap().remove("target");
        let back: FrameRecord = serde_json::from_value(old).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn lines_written_before_the_new_optional_fields_still_read() {
        let old = r#"{"type":"closed","v":1,"t":1.0,"at":"x","conn":1,"by":"server","error":null,"announced":true,"window_s":15,"past_s":1.6,"rel":null}"#;
        let line: WatchLine = serde_json::from_str(old).unwrap();
        assert!(matches!(
            line,
            WatchLine::Closed(line::Closed {
                joined_open: false,
                ..
            })
        ));
        let old = r#"{"type":"handoff","v":1,"t":1.0,"at":"x","conn":1,"event":"MOVING seq 0","outcome":"moved","at_s":9.8,"moves":true,"text":"moved","rel":null}"#;
        let line: WatchLine = serde_json::from_str(old).unwrap();
        assert!(matches!(
            line,
            WatchLine::Handoff(line::Handoff { to: None, .. })
        ));
    }
}

#[cfg(test)]
mod unescape_tests {
    use super::unescape_recorded;
    use crate::escape::{escape, unescape};

    proptest::proptest! {
        #[test]
        fn recorded_raw_text_reads_back_to_its_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let text = escape(&bytes);
            let t = text.trim();
            let quoted = t.len() >= 2 && t.starts_with('"') && t.ends_with('"');
            let expected = (!quoted).then_some(bytes);
            proptest::prop_assert_eq!(unescape_recorded(&text), expected);
        }

        #[test]
        fn where_both_read_a_text_they_agree(text in r#"[ -~\\\r\n"]{0,40}|(\\x[0-9a-fA-FgG]{0,2}|\\[rnt0e"'\\qZ]|[ a-z"])*"#) {
            if let Some(fast) = unescape_recorded(&text) {
                proptest::prop_assert_eq!(Some(fast), unescape(&text).ok(), "{:?}", text);
            }
        }
    }
}

#[cfg(test)]
mod wall_tests {
    use super::wall;
    use std::time::{Duration, SystemTime};

    #[test]
    fn wall_clock_is_rfc3339_with_microseconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_764_459_487, 123_456_789);
        assert_eq!(wall(at), "2025-11-29T23:38:07.123456Z");
        assert_eq!(wall(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            wall(at),
            chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        );
    }

    /// The second is cached: lines within one second, then across a second, a minute, a day
    /// and a year boundary, and back in time, each match chrono's own formatting.
    #[test]
    fn the_cached_second_never_leaks_into_another_second() {
        let chrono_text = |at: SystemTime| {
            chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        };
        let year_end = 1_798_761_599; // 2026-12-31T23:59:59Z
        let mut instants = Vec::new();
        for (s, n) in [
            (year_end, 0),
            (year_end, 999_999_999),
            (year_end + 1, 1_000),
            (year_end + 1, 999),
            (year_end + 60, 5_000),
            (year_end - 86_400, 7),
            (year_end, 500_000_000),
            (0, 1),
            (951_782_400, 0), // 2000-02-29
        ] {
            instants.push(SystemTime::UNIX_EPOCH + Duration::new(s, n));
        }
        instants.push(SystemTime::UNIX_EPOCH - Duration::new(1, 250_000_000));
        instants.push(SystemTime::UNIX_EPOCH - Duration::new(86_400, 0));
        for at in instants {
            assert_eq!(wall(at), chrono_text(at), "{at:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn wall_matches_chrono_for_any_instant(secs in 0u64..8_000_000_000, nanos in 0u32..1_000_000_000) {
            let at = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
            let expected = chrono::DateTime::<chrono::Utc>::from(at)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            proptest::prop_assert_eq!(wall(at), expected);
        }
    }
}
