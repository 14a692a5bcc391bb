//! What the timeline is fed: one observation, stamped when it was seen, carrying one event of a
//! named type. Each event is its own struct so a handler receives exactly the fields it reads,
//! and the timeline matches an observation once.

use crate::network::dns::DnsEventKind;
use crate::network::handoff::Outcome;
use crate::observe::record::{DryRunOutcome, FrameRecord, OptInOutcome, TopologyReason};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

/// Something that happened, stamped when it was seen.
#[derive(Debug, Clone)]
pub struct Observation {
    pub at: Instant,
    pub wall: SystemTime,
    /// Which watched connection (stable across its reconnects).
    pub conn: u32,
    pub what: What,
}

/// Who ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseCause {
    /// Clean end of stream from the server.
    Server,
    /// Reset or another I/O error.
    Error,
    /// We closed it (shutting down).
    Watch,
}

#[derive(Debug, Clone)]
pub enum What {
    Connected(Connected),
    ConnectFailed(ConnectFailed),
    Handshake(Handshake),
    Frame(Frame),
    /// SUBSCRIBE to `AzureRedisEvents` was answered with an error.
    AzureRefused(AzureRefused),
    Malformed(Malformed),
    Closed(Closed),
    Dns(Dns),
    Handoff(Handoff),
    /// A dry-run's decision as a capture recorded it (`replay`): what [`What::Handoff`] carries,
    /// reduced to what the timeline reads of it.
    DryRun(RecordedDryRun),
    Advertised(Advertised),
    Ping(Ping),
    /// The cluster's nodes, discovered or re-read.
    Topology(Topology),
    /// The dry-run's answer to an SMIGRATED naming our nodes: one topology refresh after a jitter.
    Refresh(Refresh),
}

#[derive(Debug, Clone)]
pub struct Connected {
    pub addr: SocketAddr,
    pub tls: bool,
    pub endpoint: String,
}

#[derive(Debug, Clone)]
pub struct ConnectFailed {
    pub error: String,
    pub retry_in: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct Handshake {
    pub opt_in: OptInOutcome,
    pub text: Option<String>,
    pub server: Option<String>,
    pub version: Option<String>,
    pub mode: Option<String>,
    pub sent: Option<String>,
    /// The speed a simulator announced; the watch loop fills in what it did with it.
    pub sim_speed: Option<crate::observe::record::SimSpeed>,
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub record: FrameRecord,
    /// Read together with the opt-in's reply.
    pub early: bool,
}

#[derive(Debug, Clone)]
pub struct AzureRefused {
    /// The server's error reply.
    pub error: String,
}

#[derive(Debug, Clone)]
pub struct Malformed {
    pub offset: u64,
    pub error: String,
}

#[derive(Debug, Clone)]
pub struct Closed {
    pub cause: CloseCause,
    pub error: Option<String>,
    /// The backoff before the next attempt (none when the watch will not retry).
    pub retry_in: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct Dns {
    pub host: String,
    pub kind: DnsEventKind,
}

#[derive(Debug, Clone)]
pub struct Handoff {
    /// The index of the event in the summary rows (from [`super::Action::StartHandoff`]).
    pub event: usize,
    pub outcome: Outcome,
}

#[derive(Debug, Clone)]
pub struct RecordedDryRun {
    pub event: usize,
    pub dry_run: DryRun,
}

#[derive(Debug, Clone)]
pub struct Advertised {
    pub addr: IpAddr,
    pub answer: crate::network::handoff::Advertised,
}

#[derive(Debug, Clone)]
pub struct Ping {
    pub latency: Option<Duration>,
    pub error: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Topology {
    pub reason: TopologyReason,
    pub nodes: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub replicas: Vec<String>,
    pub roles: Vec<crate::observe::record::line::RoleChange>,
    pub moved: Vec<crate::observe::record::line::SlotsMoved>,
}

#[derive(Debug, Clone)]
pub struct Refresh {
    pub event: usize,
    pub jitter_s: f64,
    pub sources: Vec<String>,
}

/// What the timeline reads of a dry-run's decision: from a live [`Outcome`], or from a recorded
/// `handoff` line when a capture is replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRun {
    /// The `outcome` field of the line.
    pub outcome: DryRunOutcome,
    /// Seconds after the event when a client would act.
    pub at_s: f64,
    pub moves: bool,
    pub text: String,
    pub to: Option<String>,
}

impl DryRun {
    pub fn from_outcome(outcome: &Outcome) -> DryRun {
        let (name, at, moves) = outcome_facts(outcome);
        DryRun {
            outcome: name,
            at_s: super::secs(at),
            moves,
            text: outcome.to_string(),
            to: outcome.destination(),
        }
    }
}

/// The outcome's name, when the client would act (after the event), and whether it moves.
fn outcome_facts(outcome: &Outcome) -> (DryRunOutcome, Duration, bool) {
    use DryRunOutcome as D;
    match outcome {
        Outcome::MoveToSuccessor { at, .. } => (D::MoveToSuccessor, *at, true),
        Outcome::ReconnectOnClock { at, .. } => (D::ReconnectOnClock, *at, true),
        Outcome::SteppedSideways { at, .. } => (D::SteppedSideways, *at, true),
        Outcome::Moved { at, .. } => (D::Moved, *at, true),
        Outcome::StaleAtExpiry { at, .. } => (D::StaleAtExpiry, *at, false),
        Outcome::Unresolved { at, .. } => (D::Unresolved, *at, false),
        Outcome::Cancelled { at, .. } => (D::Cancelled, *at, false),
    }
}
