//! `probe`: one handshake per endpoint, classified, for many endpoints at once.
//!
//! The question a probe answers is "would a client that opts in get maintenance notifications
//! from this endpoint, and is a maintenance going on?". It runs exactly the handshake `watch`
//! runs ([`Connection::handshake`]), then keeps the connection open a little (the linger) because
//! Enterprise replays its retained completion about 16-17 ms after the `+OK`, usually but not
//! always in the same read. What arrived is reported: a catch-up replay (`MIGRATED` /
//! `FAILED_OVER`: a maintenance completed on that database) or a `MOVING` (one is under way
//! right now).
//!
//! Outcomes are ordered by severity ([`Severity`]); the exit code of a run is the most severe
//! outcome's code (see `crate::exit`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{
    connect_to, resolve, ConfigError, ConnectError, ConnectOptions, EndpointType, Hello, HelloInfo,
    Item, OptIn, Received, RedisUrl, Stage, TlsFailure,
};
use crate::exit;
use crate::network::conn::OptInOutcome;
use crate::network::dns::DnsResolver;
use crate::protocol::notification::{Classified, Kind, Notification};

/// How bad an outcome is; the order is the severity order and the exit-code order. The
/// handshake's outcomes are the watch's own [`OptInOutcome`] (one enum for the four of them);
/// a probe adds the endpoint that could not be reached at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    OptIn(OptInOutcome),
    ConnectionFailed,
}

impl From<OptInOutcome> for Severity {
    fn from(outcome: OptInOutcome) -> Severity {
        Severity::OptIn(outcome)
    }
}

impl Severity {
    pub fn exit_code(self) -> i32 {
        match self {
            Severity::OptIn(outcome) => outcome.exit_code(),
            Severity::ConnectionFailed => exit::CONNECTION_FAILED,
        }
    }
}

/// What one endpoint answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// `CLIENT MAINT_NOTIFICATIONS ON` answered `+OK`.
    Accepted,
    /// The opt-in was answered with an error; the server's text, exactly.
    Refused {
        text: String,
    },
    /// `HELLO 3` was refused (or answered with another protocol): no push can ever arrive.
    Resp3Unavailable {
        text: String,
    },
    /// `-WRONGPASS`, `-NOAUTH` ...; the server's text.
    AuthFailed {
        text: String,
    },
    TlsFailed {
        failure: TlsFailure,
        detail: String,
    },
    /// Name resolution failed, or no address accepted a TCP connection.
    Unreachable {
        detail: String,
    },
    TimedOut {
        stage: Stage,
        detail: String,
    },
    /// The server closed the connection or sent something that is not a RESP reply.
    ProtocolError {
        detail: String,
    },
}

impl ProbeOutcome {
    /// The machine name used in JSON and the table.
    pub fn name(&self) -> &'static str {
        match self {
            ProbeOutcome::Accepted => "accepted",
            ProbeOutcome::Refused { .. } => "refused",
            ProbeOutcome::Resp3Unavailable { .. } => "resp3_unavailable",
            ProbeOutcome::AuthFailed { .. } => "auth_failed",
            ProbeOutcome::TlsFailed { .. } => "tls_failed",
            ProbeOutcome::Unreachable { .. } => "unreachable",
            ProbeOutcome::TimedOut { .. } => "timed_out",
            ProbeOutcome::ProtocolError { .. } => "protocol_error",
        }
    }

    pub fn severity(&self) -> Severity {
        match self {
            ProbeOutcome::Accepted => Severity::OptIn(OptInOutcome::Accepted),
            ProbeOutcome::Refused { .. } => Severity::OptIn(OptInOutcome::Refused),
            ProbeOutcome::Resp3Unavailable { .. } => {
                Severity::OptIn(OptInOutcome::Resp3Unavailable)
            }
            ProbeOutcome::AuthFailed { .. } => Severity::OptIn(OptInOutcome::AuthFailed),
            ProbeOutcome::TlsFailed { .. }
            | ProbeOutcome::Unreachable { .. }
            | ProbeOutcome::TimedOut { .. }
            | ProbeOutcome::ProtocolError { .. } => Severity::ConnectionFailed,
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.severity().exit_code()
    }

    /// The server's text or the failure's explanation.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ProbeOutcome::Accepted => None,
            ProbeOutcome::Refused { text }
            | ProbeOutcome::Resp3Unavailable { text }
            | ProbeOutcome::AuthFailed { text } => Some(text),
            ProbeOutcome::TlsFailed { detail, .. }
            | ProbeOutcome::Unreachable { detail }
            | ProbeOutcome::TimedOut { detail, .. }
            | ProbeOutcome::ProtocolError { detail } => Some(detail),
        }
    }

    /// What to do about the outcome: a few words for the probe table's column, and, where the
    /// server's text or the error does not already say it, a sentence for the note under the
    /// table. `None` for an accepted opt-in. The short form is at most [`HINT_WIDTH`] characters,
    /// so that the column fits 80 columns beside an endpoint.
    pub fn remedy(&self) -> Option<Remedy> {
        let remedy = |hint, more: Option<&'static str>| Some(Remedy { hint, more });
        let code = |t: &str| {
            t.split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase()
        };
        match self {
            ProbeOutcome::Accepted => None,
            ProbeOutcome::Refused { text } if code(text) == "NOPERM" => remedy(
                "ACL forbids opt-in",
                Some("Allow CLIENT MAINT_NOTIFICATIONS in the user's ACL"),
            ),
            ProbeOutcome::Refused { .. } => remedy(
                "unsupported here",
                Some(
                    "Redis Open Source and Valkey send no notifications; Redis Software (8.0.2+) \
                     does with client_maint_notifications on",
                ),
            ),
            ProbeOutcome::Resp3Unavailable { .. } => remedy(
                "server lacks RESP3",
                Some(
                    "Notifications are RESP3 pushes: the server (and any proxy) must take HELLO 3",
                ),
            ),
            // The text already carries where the password came from, or that none was given.
            ProbeOutcome::AuthFailed { text } if code(text) == "NOAUTH" => {
                remedy("give a password", None)
            }
            ProbeOutcome::AuthFailed { .. } => remedy(
                "check the password",
                Some(
                    "Check the password and the user (--user); give the password in \
                     REDISCLI_AUTH, with --askpass, or as user:password@ in the URL",
                ),
            ),
            ProbeOutcome::TlsFailed { failure, .. } => remedy(tls_hint(*failure), None),
            ProbeOutcome::Unreachable { .. } => remedy("check host and port", None),
            ProbeOutcome::TimedOut { stage, .. } => match stage {
                // The error asks whether TLS is enabled on the port.
                Stage::TlsHandshake => remedy("no TLS? use redis://", None),
                Stage::Resolving | Stage::Connecting => remedy(
                    "check host, firewall",
                    Some(
                        "Nothing answered: check the address, the port and any firewall on the way",
                    ),
                ),
                Stage::Hello | Stage::Select | Stage::OptIn => remedy(
                    "is this Redis?",
                    Some("The port took the connection but did not answer as Redis does in time"),
                ),
            },
            ProbeOutcome::ProtocolError { .. } => remedy(
                "is this Redis?",
                Some("The answer was not a Redis reply: check the port, and TLS (rediss://)"),
            ),
        }
    }

    /// The text for the note under the probe table: the server's text or the error, with the
    /// TLS failure named.
    pub fn note(&self) -> Option<String> {
        match self {
            ProbeOutcome::TlsFailed { failure, detail } => Some(format!("{failure}: {detail}")),
            other => other.detail().map(str::to_string),
        }
    }

    /// Sorts a connection or handshake error into an outcome.
    pub fn from_error(e: &ConnectError) -> ProbeOutcome {
        match e {
            ConnectError::Auth { text, hint, .. } => ProbeOutcome::AuthFailed {
                text: format!("{text}{hint}"),
            },
            ConnectError::Tls {
                failure, detail, ..
            } => ProbeOutcome::TlsFailed {
                failure: *failure,
                detail: detail.clone(),
            },
            ConnectError::Timeout { stage, .. } => ProbeOutcome::TimedOut {
                stage: *stage,
                detail: e.reason(),
            },
            ConnectError::Resolve { .. }
            | ConnectError::NoResolver { .. }
            | ConnectError::NoAddresses { .. }
            | ConnectError::Unreachable { .. } => ProbeOutcome::Unreachable { detail: e.reason() },
            ConnectError::Command { .. }
            | ConnectError::PushFlood { .. }
            | ConnectError::Closed { .. }
            | ConnectError::Protocol { .. }
            | ConnectError::Io { .. } => ProbeOutcome::ProtocolError { detail: e.reason() },
        }
    }
}

/// The widest [`Remedy::hint`].
pub const HINT_WIDTH: usize = 20;

/// What to do about a probe's outcome (see [`ProbeOutcome::remedy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remedy {
    /// A few words, at most [`HINT_WIDTH`] characters.
    pub hint: &'static str,
    /// A sentence, when the server's text or the error does not already say what to do.
    pub more: Option<&'static str>,
}

fn tls_hint(failure: TlsFailure) -> &'static str {
    match failure {
        TlsFailure::UnknownCa => "give --cacert",
        TlsFailure::NameMismatch => "check host or --sni",
        TlsFailure::Expired
        | TlsFailure::NotYetValid
        | TlsFailure::Revoked
        | TlsFailure::BadCertificate => "check server's cert",
        TlsFailure::ClientCertRequired => "give --cert, --key",
        TlsFailure::ClientCertRejected => "check --cert/--key",
        TlsFailure::NotTls => "no TLS: use redis://",
        TlsFailure::Handshake => "check TLS settings",
    }
}

/// Why a push is in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PushRole {
    /// A retained `MIGRATED` / `FAILED_OVER` replayed to a new opt-in: a maintenance completed.
    CatchUp,
    /// A `MOVING`: its window is open right now (sent again to every new opt-in).
    Moving,
    /// Another maintenance notification that arrived while the probe listened.
    Live,
    /// A push that is not a maintenance notification.
    Other,
}

/// One push frame the probe received.
#[derive(Debug, Clone)]
pub struct ProbePush {
    pub received: Received,
    pub role: PushRole,
    /// Read while the opt-in's reply was awaited or with it, rather than before the opt-in was
    /// sent (while HELLO was answered) or during the linger.
    pub with_opt_in: bool,
}

/// Whether a maintenance was seen, from the pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaintenanceState {
    /// A MOVING (or another opening notification) arrived: a maintenance is under way.
    UnderWay,
    /// Only a catch-up replay arrived: a maintenance completed on this database.
    Completed,
}

/// Everything a probe learned about one endpoint.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    /// The endpoint as displayed (no secrets).
    pub endpoint: String,
    pub address: Option<SocketAddr>,
    pub tls: bool,
    pub outcome: ProbeOutcome,
    pub hello: Option<HelloInfo>,
    /// The `moving-endpoint-type` sent (`None`: bare `ON`, or the opt-in was not sent).
    pub endpoint_type: Option<EndpointType>,
    pub pushes: Vec<ProbePush>,
    pub elapsed: Duration,
}

/// The JSON line of one report (schema documented on [`ProbeReport::json_line`]).
#[derive(Serialize)]
pub struct JsonReport<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    /// The JSON-lines schema version, as on every maintwatch line.
    v: u32,
    endpoint: &'a str,
    address: Option<String>,
    tls: bool,
    outcome: &'static str,
    exit_code: i32,
    detail: Option<&'a str>,
    tls_failure: Option<TlsFailure>,
    hello: Option<&'a HelloInfo>,
    endpoint_type: Option<EndpointType>,
    maintenance: Option<JsonMaintenance<'a>>,
    pushes: Vec<JsonPush<'a>>,
    elapsed_ms: f64,
}

#[derive(Serialize)]
struct JsonMaintenance<'a> {
    state: MaintenanceState,
    kind: Kind,
    seq: Option<i64>,
    describe: String,
    notification: &'a Notification,
}

#[derive(Serialize)]
struct JsonPush<'a> {
    role: PushRole,
    with_opt_in: bool,
    offset: u64,
    raw: String,
    parsed: &'a Classified,
}

impl ProbeReport {
    fn new(opts: &ConnectOptions) -> ProbeReport {
        ProbeReport {
            endpoint: opts.display_endpoint(),
            address: None,
            tls: opts.tls(),
            outcome: ProbeOutcome::Accepted,
            hello: None,
            endpoint_type: None,
            pushes: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }

    /// A report for an endpoint that could not even be attempted.
    pub fn failed(endpoint: String, tls: bool, outcome: ProbeOutcome) -> ProbeReport {
        ProbeReport {
            endpoint,
            address: None,
            tls,
            outcome,
            hello: None,
            endpoint_type: None,
            pushes: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }

    /// The maintenance notifications received, in arrival order.
    pub fn notifications(&self) -> impl Iterator<Item = (&ProbePush, &Notification)> {
        self.pushes
            .iter()
            .filter_map(|p| p.received.notification().map(|n| (p, n)))
    }

    /// The maintenance the pushes reveal: an opening notification (MOVING first) means under
    /// way; otherwise the last catch-up replay means completed.
    pub fn maintenance(&self) -> Option<(MaintenanceState, &Notification)> {
        let opening = self
            .notifications()
            .find(|(_, n)| n.kind == Kind::Moving)
            .or_else(|| self.notifications().find(|(_, n)| n.kind.opens()));
        if let Some((_, n)) = opening {
            return Some((MaintenanceState::UnderWay, n));
        }
        self.notifications()
            .filter(|(p, _)| p.role == PushRole::CatchUp)
            .last()
            .map(|(_, n)| (MaintenanceState::Completed, n))
    }

    /// The catch-up replays received (retained completions).
    pub fn catch_up(&self) -> Vec<&Notification> {
        self.notifications()
            .filter(|(p, _)| p.role == PushRole::CatchUp)
            .map(|(_, n)| n)
            .collect()
    }

    /// The MOVING received, if any.
    pub fn moving(&self) -> Option<&Notification> {
        self.notifications()
            .find(|(_, n)| n.kind == Kind::Moving)
            .map(|(_, n)| n)
    }

    /// One JSON object, no newline. Fields: `type` ("probe"), `endpoint`, `address`, `tls`,
    /// `outcome` (accepted, refused, resp3_unavailable, auth_failed, tls_failed, unreachable,
    /// timed_out, protocol_error), `exit_code`, `detail` (the server's text or the error),
    /// `tls_failure` (unknown_ca, name_mismatch, ...), `hello` ({server, version, proto, id,
    /// mode, role}), `endpoint_type` (sent; null for a bare ON), `maintenance` ({state:
    /// under_way|completed, kind, seq, describe, notification}), `pushes` ([{role:
    /// catch_up|moving|live|other, with_opt_in, offset, raw (escaped bytes), parsed}]),
    /// `elapsed_ms`.
    pub fn json_line(&self) -> String {
        serde_json::to_string(&self.json()).expect("a probe report always serializes")
    }

    /// The value [`ProbeReport::json_line`] writes.
    pub fn json(&self) -> JsonReport<'_> {
        JsonReport {
            kind: "probe",
            v: crate::SCHEMA_VERSION,
            endpoint: &self.endpoint,
            address: self.address.map(|a| a.to_string()),
            tls: self.tls,
            outcome: self.outcome.name(),
            exit_code: self.outcome.exit_code(),
            detail: self.outcome.detail(),
            tls_failure: match &self.outcome {
                ProbeOutcome::TlsFailed { failure, .. } => Some(*failure),
                _ => None,
            },
            hello: self.hello.as_ref(),
            endpoint_type: self.endpoint_type,
            maintenance: self.maintenance().map(|(state, n)| JsonMaintenance {
                state,
                kind: n.kind,
                seq: n.seq,
                describe: n.describe(),
                notification: n,
            }),
            pushes: self
                .pushes
                .iter()
                .filter_map(|p| match &p.received.item {
                    Item::Push(parsed) => Some(JsonPush {
                        role: p.role,
                        with_opt_in: p.with_opt_in,
                        offset: p.received.offset,
                        raw: crate::shared::escape::escape(&p.received.raw),
                        parsed,
                    }),
                    Item::Reply(..) => None,
                })
                .collect(),
            elapsed_ms: self.elapsed.as_secs_f64() * 1000.0,
        }
    }

    /// The maintenance this probe saw, for people: `under way: MOVING seq 7 window 15 s`,
    /// `completed: MIGRATED seq 1 (catch-up)`, or empty.
    pub fn maintenance_text(&self) -> String {
        match self.maintenance() {
            None => String::new(),
            Some((MaintenanceState::UnderWay, n)) => format!("under way: {}", n.describe()),
            Some((MaintenanceState::Completed, n)) => {
                format!("completed: {} (catch-up)", n.describe())
            }
        }
    }
}

/// The exit code of a run: the most severe outcome's (0 for no reports).
pub fn exit_code(reports: &[ProbeReport]) -> i32 {
    reports
        .iter()
        .map(|r| r.outcome.severity())
        .max()
        .unwrap_or(Severity::OptIn(OptInOutcome::Accepted))
        .exit_code()
}

fn role_of(r: &Received) -> PushRole {
    match r.notification() {
        None => PushRole::Other,
        Some(n) if n.kind.is_retained() => PushRole::CatchUp,
        Some(n) if n.kind == Kind::Moving => PushRole::Moving,
        Some(_) => PushRole::Live,
    }
}

/// Probes one endpoint: resolve (unless an IP literal), connect, handshake, and when the opt-in
/// is accepted listen for `linger` more. `dns` may be `None` when the host is an IP literal.
pub async fn probe(
    opts: &ConnectOptions,
    dns: Option<&DnsResolver>,
    linger: Duration,
) -> ProbeReport {
    let started = Instant::now();
    let mut report = ProbeReport::new(opts);
    let result = run_probe(opts, dns, linger, &mut report).await;
    if let Err(e) = result {
        report.address = report.address.or(e.addr());
        report.outcome = ProbeOutcome::from_error(&e);
    }
    report.elapsed = started.elapsed();
    report
}

async fn run_probe(
    opts: &ConnectOptions,
    dns: Option<&DnsResolver>,
    linger: Duration,
    report: &mut ProbeReport,
) -> Result<(), ConnectError> {
    let addrs = match (opts.host.parse(), dns) {
        (Ok(ip), _) => vec![ip],
        (Err(_), Some(dns)) => resolve(opts, dns).await?,
        (Err(_), None) => {
            return Err(ConnectError::NoResolver {
                endpoint: opts.display_endpoint(),
                host: opts.host.clone(),
            })
        }
    };
    let mut conn = connect_to(opts, &addrs).await?;
    report.address = Some(conn.peer());
    let handshake = match conn.handshake(opts).await {
        Ok(h) => h,
        Err(e) => {
            // What arrived before the failure is part of the report all the same.
            keep_pushes(report, e.frames, e.before_opt_in);
            return Err(e.error);
        }
    };
    report.endpoint_type = handshake.endpoint_type;
    keep_pushes(report, handshake.early, handshake.before_opt_in);
    report.outcome = match (&handshake.hello, &handshake.opt_in) {
        (Hello::Unavailable { text }, _) => ProbeOutcome::Resp3Unavailable { text: text.clone() },
        (_, OptIn::Refused(text)) => ProbeOutcome::Refused { text: text.clone() },
        (_, OptIn::Unexpected(text)) => ProbeOutcome::ProtocolError {
            detail: format!("CLIENT MAINT_NOTIFICATIONS: {text}"),
        },
        (_, OptIn::Accepted) => ProbeOutcome::Accepted,
        (_, OptIn::NotAttempted) => ProbeOutcome::Resp3Unavailable {
            text: "the opt-in was not sent".into(),
        },
    };
    if let Hello::Resp3(info) = handshake.hello {
        report.hello = Some(info);
    }
    if report.outcome == ProbeOutcome::Accepted && !linger.is_zero() {
        // Listen for a replay that missed the reply's read. Anything that ends the connection
        // ends the listening; it does not change the outcome, which the opt-in decided.
        let deadline = Instant::now() + linger;
        while let Ok(Ok(Some(r))) = tokio::time::timeout_at(deadline, conn.next()).await {
            if r.is_push() {
                report.pushes.push(ProbePush {
                    role: role_of(&r),
                    received: r,
                    with_opt_in: false,
                });
            }
        }
    }
    Ok(())
}

/// A connection kept open to read `INFO errorstats` before and after another connection's
/// handshake (`doctor`): what one client's opt-in costs a server that refuses it. Its own
/// handshake (which may raise a counter too) is done before the first reading.
pub struct ErrorStats {
    conn: super::Connection,
}

/// The most bytes of an `INFO errorstats` reply kept: a server lists one line per error prefix.
const ERRORSTATS_LIMIT: usize = 64 * 1024;

impl ErrorStats {
    /// Connects to `addr` and runs the handshake (with the opt-in as `opts` says).
    pub async fn open(
        opts: &ConnectOptions,
        addr: std::net::IpAddr,
    ) -> Result<ErrorStats, ConnectError> {
        let mut conn = connect_to(opts, &[addr]).await?;
        conn.handshake(opts).await.map_err(|e| e.error)?;
        Ok(ErrorStats { conn })
    }

    /// Sends `command` and waits up to 5 s for its reply, pushes passed over: the reply, or why
    /// there is none (the server's error text among them).
    async fn ask(&mut self, command: &[&str]) -> Result<super::Received, String> {
        self.conn.send(command).await.map_err(|e| e.to_string())?;
        let reply = loop {
            match tokio::time::timeout(Duration::from_secs(5), self.conn.next()).await {
                Ok(Ok(Some(r))) if r.is_push() => continue,
                Ok(Ok(Some(r))) => break r,
                Ok(Ok(None)) => return Err("the server closed the connection".into()),
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => {
                    return Err(format!("no reply to {} within 5 s", command.join(" ")));
                }
            }
        };
        match reply.error_text() {
            Some(text) => Err(text.to_string()),
            None => Ok(reply),
        }
    }

    /// The counters now: `(name, count)` from each `errorstat_NAME:count=N,...` line, or the
    /// server's error text (`INFO` refused by an ACL, say).
    pub async fn read(&mut self) -> Result<Vec<(String, u64)>, String> {
        let reply = self.ask(&["INFO", "errorstats"]).await?;
        let raw = &reply.raw[..reply.raw.len().min(ERRORSTATS_LIMIT)];
        Ok(parse_errorstats(&String::from_utf8_lossy(raw)))
    }

    /// The cluster's health as this node sees it (CLUSTER SHARDS), or why it cannot be read.
    pub async fn cluster_health(&mut self) -> Result<crate::network::cluster::Health, String> {
        let reply = self.ask(&["CLUSTER", "SHARDS"]).await?;
        super::dial::rescan(&reply.raw)
            .as_ref()
            .and_then(crate::network::cluster::health_from_shards)
            .ok_or_else(|| "the CLUSTER SHARDS reply could not be read".into())
    }

    /// Whether this user may SUBSCRIBE to `channel`: its confirmation, or the server's error
    /// text (an ACL without `+subscribe` or without the channel). Leaves the connection
    /// subscribed: ask it last.
    pub async fn may_subscribe(&mut self, channel: &str) -> Result<(), String> {
        self.conn
            .send(&["SUBSCRIBE", channel])
            .await
            .map_err(|e| e.to_string())?;
        loop {
            match tokio::time::timeout(Duration::from_secs(5), self.conn.next()).await {
                // In RESP3 the confirmation is a push; other pushes are not the answer.
                Ok(Ok(Some(r))) if r.is_push() => {
                    if r.raw.starts_with(b">3\r\n$9\r\nsubscribe\r\n") {
                        return Ok(());
                    }
                }
                Ok(Ok(Some(r))) => {
                    return r.error_text().map_or(Ok(()), |t| Err(t.to_string()));
                }
                Ok(Ok(None)) => return Err("the server closed the connection".into()),
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err("no answer to SUBSCRIBE within 5 s".into()),
            }
        }
    }
}

/// `errorstat_ERR:count=3` lines of an INFO reply (the RESP framing around them is skipped).
pub fn parse_errorstats(text: &str) -> Vec<(String, u64)> {
    text.split(['\r', '\n'])
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("errorstat_")?.split_once(':')?;
            let count = rest
                .strip_prefix("count=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), count))
        })
        .collect()
}

/// What rose between two readings: `(name, increase)`, in the order of the later one.
pub fn errorstats_delta(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<(String, u64)> {
    after
        .iter()
        .filter_map(|(name, n)| {
            let was = before
                .iter()
                .find(|(b, _)| b == name)
                .map_or(0, |(_, c)| *c);
            (*n > was).then(|| (name.clone(), n - was))
        })
        .collect()
}

/// Adds the pushes read during a handshake; the first `before_opt_in` came before the opt-in.
fn keep_pushes(report: &mut ProbeReport, frames: Vec<Received>, before_opt_in: usize) {
    for (i, r) in frames.into_iter().enumerate() {
        if r.is_push() {
            report.pushes.push(ProbePush {
                role: role_of(&r),
                received: r,
                with_opt_in: i >= before_opt_in,
            });
        }
    }
}

/// Probes every endpoint, at most `concurrency` at a time. `on_report` is called in the input
/// order as soon as each report and all before it are done (so output streams, yet stays
/// deterministic); the reports are also returned in input order.
pub async fn probe_all<F>(
    endpoints: Vec<ConnectOptions>,
    dns: Option<Arc<DnsResolver>>,
    concurrency: usize,
    linger: Duration,
    mut on_report: F,
) -> Vec<ProbeReport>
where
    F: FnMut(&ProbeReport),
{
    let total = endpoints.len();
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for (index, opts) in endpoints.into_iter().enumerate() {
        let permits = permits.clone();
        let dns = dns.clone();
        tasks.spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            (index, probe(&opts, dns.as_deref(), linger).await)
        });
    }
    let mut slots: Vec<Option<ProbeReport>> = (0..total).map(|_| None).collect();
    let mut next = 0;
    while let Some(joined) = tasks.join_next().await {
        let (index, report) = match joined {
            Ok(done) => done,
            // A panic in a probe is a bug: surface it rather than report a made-up outcome.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        slots[index] = Some(report);
        while next < total {
            match &slots[next] {
                Some(r) => on_report(r),
                None => break,
            }
            next += 1;
        }
    }
    slots
        .into_iter()
        .map(|r| r.expect("every probe task reports"))
        .collect()
}

/// An endpoint list read from a file: the endpoints, and one error per line that is not one.
#[derive(Debug, Default)]
pub struct EndpointList {
    pub urls: Vec<RedisUrl>,
    /// Each names the source and line number; the other lines are still usable.
    pub errors: Vec<ConfigError>,
}

/// Reads an endpoint list: one URL (or `host[:port]`) per line. Blank lines are skipped, and a
/// `#` at the start of a line or after a blank starts a comment (an endpoint cannot contain a
/// blank, and a `#` inside a URL, which has none before it, stays part of it). An invalid line
/// is an error naming its line number, without ending the list: one typo in a fleet file must
/// not hide the state of the rest.
pub fn parse_endpoint_list(text: &str, source: &str) -> EndpointList {
    let mut list = EndpointList::default();
    for (i, line) in text.lines().enumerate() {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            continue;
        }
        match RedisUrl::parse(line) {
            Ok(url) => list.urls.push(url),
            Err(e) => list.errors.push(ConfigError::Invalid(format!(
                "{source}, line {}: {e}",
                i + 1
            ))),
        }
    }
    list
}

/// The most an endpoint list may hold: far more than any fleet, far less than a mistake
/// (`--from /dev/zero`, `yes |`) would make the process read.
pub const MAX_LIST_BYTES: usize = 16 << 20;
/// The longest line of an endpoint list (a URL with a long password is a few hundred bytes).
pub const MAX_LIST_LINE: usize = 8 << 10;
/// The most endpoints in one list.
pub const MAX_LIST_ENDPOINTS: usize = 100_000;

/// Reads an endpoint list from `input` within [`MAX_LIST_BYTES`], [`MAX_LIST_LINE`] and
/// [`MAX_LIST_ENDPOINTS`], stopping at the first line past a bound with an error naming `source`
/// and the line: a device or an endless pipe is never read further than that.
pub fn read_endpoint_text(input: &mut dyn std::io::Read, source: &str) -> anyhow::Result<String> {
    use std::io::{BufRead, Read};
    let bounded = input.take(MAX_LIST_BYTES as u64 + 1);
    let mut reader = std::io::BufReader::new(bounded);
    let mut text = Vec::new();
    let (mut line, mut endpoints) = (0usize, 0usize);
    let fail = |what: String| anyhow::Error::new(ConfigError::Invalid(what));
    loop {
        let start = text.len();
        let n = (&mut reader)
            .take(MAX_LIST_LINE as u64 + 2)
            .read_until(b'\n', &mut text)
            .map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        if n == 0 {
            break;
        }
        line += 1;
        let body = text[start..].strip_suffix(b"\n").unwrap_or(&text[start..]);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.len() > MAX_LIST_LINE {
            return Err(fail(format!(
                "{source}, line {line}: longer than {MAX_LIST_LINE} bytes: not an endpoint list"
            )));
        }
        if text.len() > MAX_LIST_BYTES {
            return Err(fail(format!(
                "{source}, line {line}: past {} MiB: an endpoint list is smaller",
                MAX_LIST_BYTES >> 20
            )));
        }
        let listed = std::str::from_utf8(body)
            .map_err(|_| fail(format!("{source}, line {line}: not UTF-8 text")))?;
        if !strip_comment(listed).trim().is_empty() {
            endpoints += 1;
            if endpoints > MAX_LIST_ENDPOINTS {
                return Err(fail(format!(
                    "{source}, line {line}: more than {MAX_LIST_ENDPOINTS} endpoints; split the \
                     list over several processes"
                )));
            }
        }
    }
    // Every line was checked to be UTF-8.
    String::from_utf8(text).map_err(|_| fail(format!("{source}: not UTF-8 text")))
}

fn strip_comment(line: &str) -> &str {
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        if c == '#' && previous.is_whitespace() {
            return &line[..at];
        }
        previous = c;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errorstats_lines_are_read_and_compared() {
        let before = parse_errorstats(
            "=120\r\ntxt:# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_NOAUTH:count=1\r\n",
        );
        assert_eq!(
            before,
            vec![("ERR".to_string(), 2), ("NOAUTH".to_string(), 1)]
        );
        let after = parse_errorstats(
            "errorstat_ERR:count=3\nerrorstat_NOAUTH:count=1\nerrorstat_WRONGTYPE:count=1\n",
        );
        assert_eq!(
            errorstats_delta(&before, &after),
            vec![("ERR".to_string(), 1), ("WRONGTYPE".to_string(), 1)]
        );
    }

    #[test]
    fn severity_orders_outcomes_and_maps_to_distinct_codes() {
        let outcomes = [
            ProbeOutcome::Accepted,
            ProbeOutcome::Refused { text: "x".into() },
            ProbeOutcome::Resp3Unavailable { text: "x".into() },
            ProbeOutcome::AuthFailed { text: "x".into() },
            ProbeOutcome::Unreachable { detail: "x".into() },
        ];
        let codes: Vec<i32> = outcomes.iter().map(ProbeOutcome::exit_code).collect();
        assert_eq!(codes, vec![0, 3, 4, 5, 6]);
        assert!(outcomes
            .windows(2)
            .all(|w| w[0].severity() < w[1].severity()));
        let tls = ProbeOutcome::TlsFailed {
            failure: TlsFailure::UnknownCa,
            detail: "x".into(),
        };
        assert_eq!(tls.exit_code(), exit::CONNECTION_FAILED);
    }

    #[test]
    fn every_hint_fits_its_column() {
        let text = |t: &str| t.to_string();
        let mut outcomes = vec![
            ProbeOutcome::Refused { text: text("ERR") },
            ProbeOutcome::Refused {
                text: text("NOPERM no"),
            },
            ProbeOutcome::Resp3Unavailable { text: text("x") },
            ProbeOutcome::AuthFailed {
                text: text("NOAUTH x"),
            },
            ProbeOutcome::AuthFailed {
                text: text("WRONGPASS x"),
            },
            ProbeOutcome::Unreachable { detail: text("x") },
            ProbeOutcome::ProtocolError { detail: text("x") },
        ];
        for stage in [
            Stage::Resolving,
            Stage::Connecting,
            Stage::TlsHandshake,
            Stage::Hello,
            Stage::Select,
            Stage::OptIn,
        ] {
            let detail = text("x");
            outcomes.push(ProbeOutcome::TimedOut { stage, detail });
        }
        for failure in [
            TlsFailure::UnknownCa,
            TlsFailure::NameMismatch,
            TlsFailure::Expired,
            TlsFailure::NotYetValid,
            TlsFailure::Revoked,
            TlsFailure::BadCertificate,
            TlsFailure::ClientCertRequired,
            TlsFailure::ClientCertRejected,
            TlsFailure::NotTls,
            TlsFailure::Handshake,
        ] {
            let detail = text("x");
            outcomes.push(ProbeOutcome::TlsFailed { failure, detail });
        }
        for o in &outcomes {
            let r = o.remedy().expect("every failure says what to do");
            assert!(r.hint.chars().count() <= HINT_WIDTH, "{r:?}");
            assert!(r
                .more
                .is_none_or(|m| m.ends_with(|c: char| c.is_alphanumeric() || c == ')')));
        }
        assert_eq!(ProbeOutcome::Accepted.remedy(), None);
        let tls = &outcomes[outcomes.len() - 1];
        assert_eq!(tls.note().unwrap(), "handshake failed: x");
    }

    #[test]
    fn the_most_severe_outcome_wins() {
        let r = |o| ProbeReport::failed("e".into(), false, o);
        let reports = vec![
            r(ProbeOutcome::Accepted),
            r(ProbeOutcome::AuthFailed { text: "x".into() }),
            r(ProbeOutcome::Refused { text: "x".into() }),
        ];
        assert_eq!(exit_code(&reports), exit::AUTH_FAILED);
        assert_eq!(exit_code(&reports[..1]), exit::SUCCESS);
        assert_eq!(exit_code(&[]), exit::SUCCESS);
    }

    /// Counts the bytes taken from an endless source.
    struct Counted<R>(R, u64);

    impl<R: std::io::Read> std::io::Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1 += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn an_endless_line_is_refused_at_its_line_having_read_little() {
        let mut zeros = Counted(std::io::repeat(0), 0);
        let e = read_endpoint_text(&mut zeros, "/dev/zero").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero, line 1: longer than 8192 bytes: not an endpoint list"
        );
        // One buffer past the line bound, not the device.
        assert!(zeros.1 <= 64 * 1024, "read {} bytes", zeros.1);
    }

    #[test]
    fn endless_short_lines_stop_at_the_endpoint_bound() {
        // `yes`: "y\n" forever.
        struct Yes;
        impl std::io::Read for Yes {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                for pair in buf.chunks_mut(2) {
                    pair[0] = b'y';
                    if pair.len() == 2 {
                        pair[1] = b'\n';
                    }
                }
                Ok(buf.len() & !1)
            }
        }
        let mut yes = Counted(Yes, 0);
        let e = read_endpoint_text(&mut yes, "standard input").unwrap_err();
        assert_eq!(
            e.to_string(),
            "standard input, line 100001: more than 100000 endpoints; split the list over several \
             processes"
        );
        assert!(yes.1 <= 2 * 100_001 + 64 * 1024, "read {} bytes", yes.1);
        // Comments and blank lines do not count; a list at the bound is read whole.
        let list = "# fleet\n\n".to_string() + &"h\n".repeat(MAX_LIST_ENDPOINTS);
        let text = read_endpoint_text(&mut list.as_bytes(), "f").unwrap();
        assert_eq!(text.len(), list.len());
    }

    #[test]
    fn endpoint_lists_skip_comments_and_name_bad_lines() {
        let list = parse_endpoint_list("# fleet\n\nredis://a:1\n  b:2  \n", "list");
        let urls = list.urls;
        assert_eq!(urls.len(), 2);
        assert!(list.errors.is_empty());
        assert_eq!((urls[1].host.as_str(), urls[1].port), ("b", Some(2)));
        let list = parse_endpoint_list("a\nredis://u:secret@h:x\n", "list");
        assert_eq!(list.errors.len(), 1);
        let text = list.errors[0].to_string();
        assert!(text.contains("list, line 2"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn an_inline_comment_ends_the_endpoint_and_a_bad_line_does_not_end_the_list() {
        let text = "redis://a:1   # primary\nb:2\t#replica\nredis://c:x # typo\nd:4\n";
        let list = parse_endpoint_list(text, "fleet.txt");
        let hosts: Vec<(&str, Option<u16>)> = list
            .urls
            .iter()
            .map(|u| (u.host.as_str(), u.port))
            .collect();
        assert_eq!(hosts[..2], [("a", Some(1)), ("b", Some(2))]);
        assert_eq!(
            list.urls.len(),
            3,
            "the line after the bad one is still read"
        );
        assert_eq!(list.errors.len(), 1);
        assert!(list.errors[0]
            .to_string()
            .starts_with("fleet.txt, line 3: "));
    }
}
