//! The lines of `watch --json` and `--capture` as one enum, with what `replay` needs to read them
//! back: the line's common fields and the dispatch from JSON text to a line.

use super::{fast, line};
use serde::{Deserialize, Serialize};

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
    /// A message on Azure Cache's `AzureRedisEvents` channel, parsed beside its bytes.
    AzureEvent(line::AzureEvent),
    /// SUBSCRIBE to `AzureRedisEvents` was refused.
    AzureRefused(line::AzureRefused),
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
            | WatchLine::AzureEvent(line::AzureEvent { t, .. })
            | WatchLine::AzureRefused(line::AzureRefused { t, .. })
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
            | WatchLine::AzureEvent(line::AzureEvent { v, .. })
            | WatchLine::AzureRefused(line::AzureRefused { v, .. })
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
        b"azure_event" => read(text).map(WatchLine::AzureEvent),
        b"azure_refused" => read(text).map(WatchLine::AzureRefused),
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
            | WatchLine::AzureEvent(line::AzureEvent { at, .. })
            | WatchLine::AzureRefused(line::AzureRefused { at, .. })
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
            | WatchLine::AzureEvent(line::AzureEvent { conn, .. })
            | WatchLine::AzureRefused(line::AzureRefused { conn, .. })
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
