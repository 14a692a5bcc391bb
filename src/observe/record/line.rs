//! The payload of each line type, one named struct per `type`.

use super::{
    ClosedBy, ConnTotals, CopyOf, DnsEvent, DryRunOutcome, EventRow, FrameRecord, Label,
    OptInOutcome, OptInTally, OursChange, PingStats, Rel, SimSpeed, SummaryNotes, TopologyReason,
};
use serde::{Deserialize, Serialize};

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

/// A message on Azure Cache for Redis's `AzureRedisEvents` channel: an event of the timeline
/// like a notification, its exact bytes in `frame` beside the parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureEvent {
    pub v: u32,
    pub t: f64,
    pub at: String,
    pub conn: u32,
    pub rel: Option<Rel>,
    pub frame: FrameRecord,
    pub event: crate::protocol::azure::AzureEvent,
    /// Seconds from this line's wall clock to the event's `StartTimeInUTC` (negative: past).
    #[serde(default)]
    pub starts_in_s: Option<f64>,
    /// The same message, first seen on another connection.
    #[serde(default)]
    pub copy_of: Option<CopyOf>,
    /// What the reference client (StackExchange.Redis) does with it, in words.
    pub reaction: String,
}

/// SUBSCRIBE to `AzureRedisEvents` was refused: the watch goes on without the channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureRefused {
    pub v: u32,
    pub t: f64,
    pub at: String,
    pub conn: u32,
    /// The server's error reply, sanitised.
    pub error: String,
    /// What to change.
    pub fix: String,
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
    pub answer: crate::network::handoff::Advertised,
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
    /// `discovered`, `refreshed` (after an SMIGRATED), `interval` or `connection_lost`.
    pub reason: TopologyReason,
    pub nodes: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Which of `nodes` are replicas (the others are masters).
    #[serde(default)]
    pub replicas: Vec<String>,
    /// Nodes whose role changed since the previous topology line (a replica promoted).
    #[serde(default)]
    pub roles: Vec<RoleChange>,
    /// Slot ranges whose master changed since the previous topology line.
    #[serde(default)]
    pub moved: Vec<SlotsMoved>,
    pub rel: Option<Rel>,
}

impl Topology {
    /// Whether it says something changed (a `discovered` line always does).
    pub fn changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.roles.is_empty()
            && self.moved.is_empty())
    }
}

/// A node's role before and now (`master`, `replica`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    pub node: String,
    pub from: String,
    pub to: String,
}

/// Slots `first` to `last` (inclusive) served by master `from` before and by `to` now; `null`:
/// no master that answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotsMoved {
    pub first: u16,
    pub last: u16,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// A topology change as the summary lists it: a topology line's change, without its nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyRow {
    pub t: f64,
    pub reason: TopologyReason,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub roles: Vec<RoleChange>,
    pub moved: Vec<SlotsMoved>,
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
    /// The cluster's topology changes after its discovery (the last 100); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology: Vec<TopologyRow>,
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
