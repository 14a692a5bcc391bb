//! The values the lines are made of: the `decode` line, labels, event rows, tallies and the closed
//! sets of wire names shared by several line types.

use super::{ClientVerdict, FrameRecord, OptInOutcome, Raw};
use serde::{Deserialize, Serialize};

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
    /// A message on Azure Cache for Redis's `AzureRedisEvents` channel (a pub/sub frame, or a
    /// bare payload line given as text), parsed.
    AzureEvent {
        v: u32,
        source: String,
        /// Offset of the frame, or of the text line, in the decoded input.
        offset: u64,
        /// The payload's exact bytes, escaped as a frame's `raw` is.
        payload: Raw,
        /// The whole frame the payload came in; `None` for a bare text line.
        frame: Option<FrameRecord>,
        event: crate::protocol::azure::AzureEvent,
        /// `decode --clients`: which clients listen to the channel, and what they do.
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
    /// An Azure Cache event's outcome: the ending event that followed it (NodeMaintenanceEnded,
    /// FailoverComplete or ScaleComplete); none while the watch ran, when it stays empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
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
            outcome: None,
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
        /// Read again at `--topology-interval`: written only when something changed.
        Interval => "interval",
        /// Read again because a watched node's connection closed or could not be made (or the
        /// connection that reads it reconnected): written only when something changed.
        ConnectionLost => "connection_lost",
    }
);
