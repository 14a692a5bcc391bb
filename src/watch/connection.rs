//! The connection supervisor: one task per watched connection that connects, handshakes, reads
//! until the connection closes, backs off and starts again, turning all of it into observations.
//!
//! It owns what a reconnecting reader needs and the loop must not: the backoff, the backpressure
//! that keeps a flood from growing memory, and the rule for which errors are permanent.

use super::settings::{ClusterMode, WatchSettings, TRAFFIC_FLOOR};
use crate::exit;
use crate::network::cluster::ClusterNode;
use crate::network::conn::session::{Event, Session};
use crate::network::conn::{self, ConnectOptions};
use crate::network::dns::DnsResolver;
use crate::observe::record::{FrameRecord, OptInOutcome, Raw};
use crate::observe::timeline::{event, CloseCause, Observation, What};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Bounded exponential backoff with jitter: 100 ms doubling to 5 s, each delay drawn from its
/// upper half so reconnects from many watchers spread out but never stall. A failing streak that
/// has lasted [`LONG_OUTAGE`] keeps doubling to [`OUTAGE_CAP`]: an endpoint gone for a minute is
/// not coming back in the next few seconds, and a fleet of dead endpoints should not be asked
/// every 5 s each for ever. A session brings the 5 s cap back.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    base: Duration,
    cap: Duration,
}

/// The cap of the backoff while an endpoint has been failing for less than [`LONG_OUTAGE`]: a
/// maintenance handoff must be followed within seconds.
pub const RECONNECT_CAP: Duration = Duration::from_secs(5);

/// How long an endpoint must have been failing for the backoff to grow past [`RECONNECT_CAP`].
pub const LONG_OUTAGE: Duration = Duration::from_secs(60);

/// The cap of the backoff in a long outage.
pub const OUTAGE_CAP: Duration = Duration::from_secs(30);

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Duration::from_millis(100),
            base: Duration::from_millis(100),
            cap: RECONNECT_CAP,
        }
    }
}

impl Backoff {
    /// The next delay; `unit` is a number in [0, 1) from the caller's randomness.
    pub fn next_delay(&mut self, unit: f64) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.cap);
        d.mul_f64(0.5 + unit.clamp(0.0, 1.0) * 0.5)
    }

    pub fn reset(&mut self) {
        self.next = self.base;
    }

    /// The endpoint has been failing for `failing`: past [`LONG_OUTAGE`] the delays grow on to
    /// [`OUTAGE_CAP`].
    pub fn failing_for(&mut self, failing: Duration) {
        if failing >= LONG_OUTAGE && self.cap < OUTAGE_CAP {
            self.cap = OUTAGE_CAP;
            self.next = (self.next * 2).min(self.cap);
        }
    }

    /// A session was established: the outage (if any) is over.
    pub fn session_started(&mut self) {
        self.cap = RECONNECT_CAP;
        self.next = self.next.min(self.cap);
    }

    /// A session ended after `lived`: only one that lasted [`HEALTHY_SESSION`] starts the
    /// backoff over. A server that breaks every session right after the handshake would
    /// otherwise be reconnected to ten times a second forever.
    pub fn session_ended(&mut self, lived: Duration) {
        if lived >= HEALTHY_SESSION {
            self.reset();
        }
    }
}

/// A run of attempts that ended without a session: since when, and how many. On the tokio clock,
/// so that a paused test drives it.
#[derive(Debug, Default)]
struct Streak {
    since: Option<tokio::time::Instant>,
    attempts: u32,
}

impl Streak {
    /// One more failed attempt at `now`: how long the endpoint has been failing, and how many
    /// attempts failed.
    fn failed(&mut self, now: tokio::time::Instant) -> (Duration, u32) {
        let since = *self.since.get_or_insert(now);
        self.attempts += 1;
        (now.saturating_duration_since(since), self.attempts)
    }
}

/// "; failing for 2m10s, 14 attempts": what a retried failure adds once the endpoint has failed
/// more than once in a row after a session existed (the human line follows it with "; retrying in
/// 30.0 s").
fn failing_note(failing: Duration, attempts: u32) -> String {
    format!(
        "; failing for {}, {attempts} attempts",
        short_duration(failing)
    )
}

/// `4.2s`, `2m10s`, `1h05m`: a failing time in a line.
fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// How long a session must last for its end to count as a fresh start (the backoff resets).
pub const HEALTHY_SESSION: Duration = Duration::from_secs(2);

/// What the connection tasks and the DNS poller send the watch loop.
// Seen is the large variant and the common one: boxing it would cost an allocation per frame.
#[allow(clippy::large_enum_variant)]
pub(super) enum Report {
    /// Something for the timeline.
    Seen(Observation),
    /// Frames read together, in order, each counted by the backpressure: one hand-over per
    /// read rather than per frame (under a flood the channel cost as much as the frame).
    Frames(Vec<Observation>),
    /// The nodes a topology reply named: for the membership, which tells the timeline what
    /// changed.
    Nodes {
        conn: u32,
        at: Instant,
        wall: SystemTime,
        nodes: Vec<ClusterNode>,
    },
    /// `--topology-interval` passed: time to read a cluster's topology again.
    Tick,
}

/// The channel into the watch loop, from one endpoint: every report carries its index, so one
/// loop serves a fleet.
#[derive(Clone)]
pub(super) struct Tx {
    pub(super) ep: u32,
    pub(super) tx: mpsc::UnboundedSender<(u32, Report)>,
}

impl Tx {
    pub(super) fn send(&self, report: Report) -> Result<(), ()> {
        self.tx.send((self.ep, report)).map_err(|_| ())
    }
}

pub(super) fn observe(tx: &Tx, conn: u32, what: What) {
    let _ = tx.send(Report::Seen(Observation {
        at: Instant::now(),
        wall: SystemTime::now(),
        conn,
        what,
    }));
}
/// What the connection tasks share with the watch loop.
pub(super) struct Shared {
    /// One for the whole process: the bound is on frames held, whichever endpoint sent them.
    pub(super) permits: Arc<Backpressure>,
    /// The endpoint (its index in the fleet).
    pub(super) ep: u32,
    /// Set by the first completed handshake: permanent errors stop the watch only before it.
    pub(super) established: AtomicBool,
    pub(super) session_errors: AtomicU64,
    /// A permanent error before any session: the endpoint, the exit code and the message for
    /// stderr.
    pub(super) fatal: mpsc::UnboundedSender<(u32, i32, String)>,
}

impl Shared {
    /// Whether `e` stops the watch: a permanent error (or, with `--require`, any error) before
    /// the first session. After a session existed, a permanent error is counted and retried.
    fn stops_on(&self, e: &conn::ConnectError, require: bool) -> bool {
        let code = permanent(e);
        if self.established.load(Ordering::Acquire) {
            if code.is_some() {
                self.session_errors.fetch_add(1, Ordering::AcqRel);
            }
            return false;
        }
        let Some(code) = code.or(require.then_some(exit::CONNECTION_FAILED)) else {
            return false;
        };
        let _ = self
            .fatal
            .send((self.ep, code, with_remedy(e.to_string(), e)));
        true
    }
}

/// The exit code of an error that retrying cannot fix.
fn permanent(e: &conn::ConnectError) -> Option<i32> {
    use conn::{ConnectError, TlsFailure};
    match e {
        ConnectError::Auth { .. } => Some(exit::AUTH_FAILED),
        ConnectError::Command {
            command: "SELECT", ..
        } => Some(exit::SELECT_FAILED),
        ConnectError::Tls {
            failure:
                TlsFailure::UnknownCa
                | TlsFailure::NameMismatch
                | TlsFailure::Expired
                | TlsFailure::NotYetValid
                | TlsFailure::Revoked
                | TlsFailure::BadCertificate
                | TlsFailure::ClientCertRequired
                | TlsFailure::ClientCertRejected,
            ..
        } => Some(exit::CONNECTION_FAILED),
        // The name does not exist (or has no address): asking again every few seconds forever
        // will not make a typo resolve. Only before a first session (see `stops_on`).
        ConnectError::Resolve {
            source: crate::network::dns::DnsError::NoAddresses { .. },
            ..
        } => Some(exit::CONNECTION_FAILED),
        _ => None,
    }
}

/// `text` followed by what to change, without a full stop before the "; ".
fn with_remedy(text: String, e: &conn::ConnectError) -> String {
    let remedy = what_to_change(e);
    match text.strip_suffix('.') {
        Some(stem) if remedy.starts_with(';') => format!("{stem}{remedy}"),
        _ => format!("{text}{remedy}"),
    }
}

/// A sentence saying what to change for a permanent error (empty when there is nothing to say).
fn what_to_change(e: &conn::ConnectError) -> String {
    use conn::ConnectError;
    match e {
        // The error's own hint already says what to change (no password given, a URL's lone
        // user-info): once is enough.
        ConnectError::Auth { hint, .. } if !hint.is_empty() => String::new(),
        ConnectError::Auth { text, .. } if text.starts_with("NOAUTH") => {
            "; the server needs a password: give it with -a, --askpass or REDISCLI_AUTH".into()
        }
        ConnectError::Auth { .. } => {
            "; check the user (--user) and password (-a, --askpass or REDISCLI_AUTH)".into()
        }
        ConnectError::Command { .. } => {
            "; the URL's /N picks the database: use one the server has (/0 is the default)".into()
        }
        ConnectError::Resolve {
            source: crate::network::dns::DnsError::NoAddresses { host },
            ..
        } => format!(
            "; the name {} does not resolve: check the host (and --dns-server)",
            crate::shared::escape::sanitize(host)
        ),
        ConnectError::Tls { .. } => {
            "; check --cacert, --sni and the server's certificate (--insecure skips the check)"
                .into()
        }
        _ => String::new(),
    }
}
/// Frames read but not yet written out, across all connections.
pub(super) const FRAMES_IN_FLIGHT: usize = 4096;

/// Bounds the frames between the readers and the sinks. A reader hands the frames of a read
/// over first and waits for room after, so a frame once read is always in the channel (a stop
/// drains it); past the limit readers wait and are woken only once the sinks have caught up by
/// half of it, so a flood costs two atomic operations per read and one wake-up per two
/// thousand frames.
#[derive(Default)]
pub(super) struct Backpressure {
    in_flight: std::sync::atomic::AtomicUsize,
    room: tokio::sync::Notify,
}

impl Backpressure {
    /// Called by the watch loop when `n` frames have been written.
    pub(super) fn release(&self, n: usize) {
        use std::sync::atomic::Ordering;
        let before = self.in_flight.fetch_sub(n, Ordering::AcqRel);
        if before > FRAMES_IN_FLIGHT / 2 && before - n <= FRAMES_IN_FLIGHT / 2 {
            self.room.notify_waiters();
        }
    }
}

/// The most frames handed over in one report: the bound on frames held is
/// [`FRAMES_IN_FLIGHT`] plus one of these per connection.
pub(super) const HAND_OVER: usize = 256;

/// Hands frames to the watch loop, then waits until the sinks have room for more.
pub(super) async fn hand_over(bp: &Backpressure, tx: &Tx, frames: Vec<Observation>) {
    use std::sync::atomic::Ordering;
    // Counted before they are sent, so the loop's release never runs ahead of them.
    bp.in_flight.fetch_add(frames.len(), Ordering::AcqRel);
    let _ = tx.send(Report::Frames(frames));
    loop {
        // Registered before the check, so a release in between is not missed.
        let room = bp.room.notified();
        if bp.in_flight.load(Ordering::Acquire) <= FRAMES_IN_FLIGHT {
            break;
        }
        room.await;
    }
}

/// A request to a connection task from the watch loop.
pub(super) enum ConnCmd {
    /// Read the cluster topology (CLUSTER SHARDS, else CLUSTER SLOTS) and report it.
    Topology,
}

/// A connection task and how to reach it.
pub(super) struct Watched {
    pub(super) task: tokio::task::JoinHandle<()>,
    pub(super) cmds: mpsc::UnboundedSender<ConnCmd>,
    /// The cluster node it watches, once the topology named it.
    pub(super) node: Option<String>,
}

/// What every connection task gets a clone of, and how one is started.
#[derive(Clone)]
pub(super) struct Spawner {
    pub(super) settings: WatchSettings,
    pub(super) resolver: Arc<DnsResolver>,
    pub(super) tx: Tx,
    pub(super) shared: Arc<Shared>,
}

impl Spawner {
    /// A spawner for the unit tests of the watch: endpoint 0, a session already established
    /// (failures are retried and their length said), reports to `tx`, fatal errors to `fatal`.
    #[cfg(test)]
    pub(super) fn for_test(
        settings: WatchSettings,
        tx: mpsc::UnboundedSender<(u32, Report)>,
        fatal: mpsc::UnboundedSender<(u32, i32, String)>,
    ) -> Spawner {
        Spawner {
            settings,
            resolver: Arc::new(DnsResolver::new(&Default::default()).unwrap()),
            tx: Tx { ep: 0, tx },
            shared: Arc::new(Shared {
                permits: Arc::default(),
                ep: 0,
                established: AtomicBool::new(true),
                session_errors: AtomicU64::new(0),
                fatal,
            }),
        }
    }

    /// Starts watching `opts` as connection `id`; `discover`: it reads the cluster's topology.
    pub(super) fn spawn(&self, id: u32, opts: ConnectOptions, discover: bool) -> Watched {
        let (cmds, cmd_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(connection_task(self.clone(), id, opts, discover, cmd_rx));
        Watched {
            task,
            cmds,
            node: None,
        }
    }
}

/// One watched connection: connect, handshake, read until closed, back off, again.
async fn connection_task(
    ctx: Spawner,
    id: u32,
    opts: ConnectOptions,
    discover: bool,
    cmds: mpsc::UnboundedReceiver<ConnCmd>,
) {
    let mut task = Task {
        ctx,
        id,
        opts,
        discover,
        cmds,
        backoff: Backoff::default(),
        streak: Streak::default(),
    };
    loop {
        let delay = match task.establish().await {
            Attempt::Stop => return,
            Attempt::Retry(delay) => delay,
            Attempt::Up(up) => task.session(up.0, up.1).await,
        };
        tokio::time::sleep(delay).await;
    }
}

/// How a connection attempt ended.
enum Attempt {
    /// A permanent error before any session: the watch stops.
    Stop,
    /// Try again after this delay.
    Retry(Duration),
    /// Connected and handshaken (boxed: once per connection, beside two small variants).
    Up(Box<(conn::Connection, conn::Handshake)>),
}

/// A connection task's state across its connections.
struct Task {
    ctx: Spawner,
    id: u32,
    opts: ConnectOptions,
    /// This connection reads the cluster's topology.
    discover: bool,
    cmds: mpsc::UnboundedReceiver<ConnCmd>,
    backoff: Backoff,
    /// The attempts since the last session that produced none.
    streak: Streak,
}

impl Task {
    fn observe(&self, what: What) {
        observe(&self.ctx.tx, self.id, what);
    }

    /// Hands a frame over, waiting while the sinks are behind.
    async fn frame(&self, r: conn::Received, early: bool) {
        self.hand_over(vec![frame_observation(self.id, r, early)])
            .await;
    }

    async fn hand_over(&self, frames: Vec<Observation>) {
        hand_over(&self.ctx.shared.permits, &self.ctx.tx, frames).await;
    }

    /// Whether `e` stops the watch, the delay before the next attempt if not, and what to add
    /// to the error's text: how long the endpoint has been failing, once a session has existed
    /// and this is not the first failure in a row.
    fn failed(&mut self, e: &conn::ConnectError) -> (bool, Duration, String) {
        let stop = self
            .ctx
            .shared
            .stops_on(e, self.ctx.settings.engine.require);
        let (failing, attempts) = self.streak.failed(tokio::time::Instant::now());
        self.backoff.failing_for(failing);
        let delay = self.backoff.next_delay(rand::random());
        let after_session = self.ctx.shared.established.load(Ordering::Acquire);
        let note = if after_session && attempts > 1 && !stop {
            failing_note(failing, attempts)
        } else {
            String::new()
        };
        (stop, delay, note)
    }

    /// Connects and handshakes.
    async fn establish(&mut self) -> Attempt {
        let mut connection = match conn::connect(&self.opts, &self.ctx.resolver).await {
            Ok(c) => c,
            Err(e) => {
                let (stop, delay, note) = self.failed(&e);
                self.observe(What::ConnectFailed(event::ConnectFailed {
                    error: format!("{e}{note}"),
                    retry_in: (!stop).then_some(delay),
                }));
                return if stop {
                    Attempt::Stop
                } else {
                    Attempt::Retry(delay)
                };
            }
        };
        self.observe(What::Connected(event::Connected {
            addr: connection.peer(),
            tls: self.opts.tls(),
            endpoint: self.opts.display_endpoint(),
        }));
        match connection.handshake(&self.opts).await {
            Ok(h) => Attempt::Up(Box::new((connection, h))),
            Err(e) => self.handshake_failed(e).await,
        }
    }

    async fn handshake_failed(&mut self, mut e: conn::HandshakeError) -> Attempt {
        // Frames read before the failure are shown and captured before the close.
        for r in std::mem::take(&mut e.frames) {
            self.frame(r, true).await;
        }
        if let conn::ConnectError::Auth { text, hint, .. } = &e.error {
            // The server's text and what to change, once: the close below and the summary do
            // not repeat them, and stderr names the endpoint only (see `report` in the watch
            // command).
            self.observe(What::Handshake(event::Handshake {
                opt_in: OptInOutcome::AuthFailed,
                text: Some(with_remedy(format!("{text}{hint}"), &e.error)),
                server: None,
                version: None,
                mode: None,
                sent: None,
                sim_speed: None,
            }));
        }
        let (stop, delay, note) = self.failed(&e);
        self.observe(What::Closed(event::Closed {
            cause: CloseCause::Error,
            error: Some(if e.is_auth() {
                format!("{}{note}", crate::observe::record::line::DURING_HANDSHAKE)
            } else {
                format!(
                    "{}: {e}{note}",
                    crate::observe::record::line::DURING_HANDSHAKE
                )
            }),
            retry_in: (!stop).then_some(delay),
        }));
        if stop {
            Attempt::Stop
        } else {
            Attempt::Retry(delay)
        }
    }

    /// Watches an established connection until it closes; returns the delay before the next.
    async fn session(
        &mut self,
        connection: conn::Connection,
        handshake: conn::Handshake,
    ) -> Duration {
        let established = Instant::now();
        self.ctx.shared.established.store(true, Ordering::Release);
        self.streak = Streak::default();
        self.backoff.session_started();
        self.observe(handshake_observation(&handshake));
        let in_cluster = match self.ctx.settings.engine.cluster {
            ClusterMode::On => true,
            ClusterMode::Off => false,
            ClusterMode::Auto => handshake.mode() == Some("cluster"),
        };
        for r in handshake.early {
            self.frame(r, true).await;
        }
        let (reader, writer) = connection.into_split();
        let mut session = Session::new(reader, writer);
        self.set_up(&mut session, in_cluster).await;
        let (cause, error) = self.read(&mut session).await;
        for _ in 0..session.unanswered_pings() {
            self.observe(What::Ping(event::Ping {
                latency: None,
                error: Some("no reply before the connection closed".into()),
            }));
        }
        self.backoff.session_ended(established.elapsed());
        let delay = self.backoff.next_delay(rand::random());
        self.observe(What::Closed(event::Closed {
            cause,
            error,
            retry_in: Some(delay),
        }));
        delay
    }

    /// The commands a session starts with: SUBSCRIBE, CLIENT TRACKING, CLUSTER SHARDS.
    async fn set_up(&mut self, session: &mut Session, in_cluster: bool) {
        let settings = &self.ctx.settings;
        let mut failures = Vec::new();
        if !settings.engine.subscribe.is_empty() {
            if let Err(e) = session.subscribe(&settings.engine.subscribe).await {
                failures.push(("SUBSCRIBE", e));
            }
        }
        if settings.engine.azure_events {
            if let Err(e) = session.subscribe_azure().await {
                failures.push(("SUBSCRIBE", e));
            }
        }
        if settings.engine.tracking {
            if let Err(e) = session.track().await {
                failures.push(("CLIENT", e));
            }
        }
        if self.discover && in_cluster {
            if let Err(e) = session.ask_topology().await {
                failures.push(("CLUSTER", e));
            }
        }
        for (command, e) in failures {
            self.observe(What::ConnectFailed(event::ConnectFailed {
                error: format!("sending {command}: {e}"),
                retry_in: None,
            }));
        }
    }

    /// Reads until the connection closes, answering the loop's requests and sending PINGs.
    async fn read(&mut self, session: &mut Session) -> (CloseCause, Option<String>) {
        let mut ticker = self.ctx.settings.engine.traffic.map(|d| {
            let mut t = tokio::time::interval(d.max(TRAFFIC_FLOOR));
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        loop {
            tokio::select! {
                r = session.next() => match r {
                    Ok(Some(event)) => {
                        self.events(event, session).await;
                        let _ = session.settle().await;
                    }
                    Ok(None) => return (CloseCause::Server, None),
                    Err(e) => {
                        if let Some((offset, error)) = e.framing() {
                            self.observe(What::Malformed(event::Malformed { offset, error }));
                        }
                        return (CloseCause::Error, Some(e.to_string()));
                    }
                },
                Some(ConnCmd::Topology) = self.cmds.recv() => {
                    let _ = session.ask_topology().await;
                }
                _ = async { ticker.as_mut().unwrap().tick().await }, if ticker.is_some() => {
                    if let Err(e) = session.ping().await {
                        self.observe(What::Ping(event::Ping { latency: None, error: Some(e.to_string()) }));
                    }
                }
            }
        }
    }

    /// `first` and what else the same read held, in order: frames handed over together.
    async fn events(&mut self, first: Event, session: &mut Session) {
        let mut frames = Vec::new();
        let mut next = Some(first);
        while let Some(event) = next {
            match event {
                Event::Frame(r) => {
                    if frames.capacity() == 0 {
                        frames.reserve_exact((session.ready() + 1).min(HAND_OVER));
                    }
                    frames.push(frame_observation(self.id, r, false));
                    if frames.len() == HAND_OVER {
                        self.hand_over(std::mem::take(&mut frames)).await;
                    }
                }
                other => {
                    // What came before it is handed over first: the order is the stream's.
                    if !frames.is_empty() {
                        self.hand_over(std::mem::take(&mut frames)).await;
                    }
                    self.event(other).await;
                }
            }
            next = session.next_ready();
        }
        if !frames.is_empty() {
            self.hand_over(frames).await;
        }
    }

    async fn event(&mut self, event: Event) {
        match event {
            Event::Frame(r) => self.frame(r, false).await,
            Event::Pong(answer) => self.observe(What::Ping(event::Ping {
                latency: answer.as_ref().ok().copied(),
                error: answer.err(),
            })),
            Event::Topology(nodes) => {
                let _ = self.ctx.tx.send(Report::Nodes {
                    conn: self.id,
                    at: Instant::now(),
                    wall: SystemTime::now(),
                    nodes,
                });
            }
            Event::AzureRefused(error) => {
                self.observe(What::AzureRefused(event::AzureRefused { error }))
            }
            Event::TopologyUnreadable(start) => {
                self.observe(What::ConnectFailed(event::ConnectFailed {
                    error: format!("could not read the cluster topology from {start}"),
                    retry_in: None,
                }))
            }
        }
    }
}

/// A received frame as an observation, stamped when its bytes were read.
fn frame_observation(conn: u32, r: conn::Received, early: bool) -> Observation {
    let parsed = match r.item {
        conn::Item::Push(c) => c,
        conn::Item::Reply(..) => crate::protocol::notification::Classified::NotPush,
    };
    Observation {
        at: r.at.into_std(),
        wall: r.wall,
        conn,
        what: What::Frame(event::Frame {
            record: FrameRecord {
                offset: r.offset,
                len: r.raw.len(),
                raw: Raw::Bytes(r.raw),
                parsed,
            },
            early,
        }),
    }
}

fn handshake_observation(h: &conn::Handshake) -> What {
    let (opt_in, text) = h.outcome();
    What::Handshake(event::Handshake {
        opt_in,
        sim_speed: h
            .hello_info()
            .and_then(|i| i.sim_speed.as_deref()?.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
            .map(|announced| crate::observe::record::SimSpeed {
                announced,
                used: announced,
                given: false,
            }),
        text,
        server: h.server().map(str::to_string),
        version: h.version().map(str::to_string),
        mode: h.mode().map(str::to_string),
        sent: h.sent().map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_with_jitter_in_the_upper_half() {
        let mut b = Backoff::default();
        assert_eq!(b.next_delay(0.0), Duration::from_millis(50));
        assert_eq!(b.next_delay(1.0), Duration::from_millis(200));
        for _ in 0..10 {
            b.next_delay(0.5);
        }
        let d = b.next_delay(0.999);
        assert!(
            d <= Duration::from_secs(5) && d >= Duration::from_millis(2500),
            "{d:?}"
        );
        b.reset();
        assert_eq!(b.next_delay(1.0), Duration::from_millis(100));
    }

    #[test]
    fn only_a_session_that_lasted_resets_the_backoff() {
        let mut b = Backoff::default();
        let mut last = Duration::ZERO;
        for _ in 0..5 {
            b.session_ended(Duration::from_millis(5));
            let d = b.next_delay(1.0);
            assert!(d > last, "{d:?} after {last:?}");
            last = d;
        }
        b.session_ended(HEALTHY_SESSION);
        assert_eq!(b.next_delay(1.0), Duration::from_millis(100));
    }

    #[test]
    fn a_long_outage_grows_the_backoff_to_the_outage_cap_and_a_session_brings_back_the_short_one() {
        let mut b = Backoff::default();
        // Under a minute of failing, the reconnect cap holds.
        for _ in 0..20 {
            b.failing_for(LONG_OUTAGE - Duration::from_secs(1));
            assert!(b.next_delay(1.0) <= RECONNECT_CAP);
        }
        // Past it, the delays keep doubling to the outage cap, and stay there.
        let mut delays = Vec::new();
        for _ in 0..6 {
            b.failing_for(LONG_OUTAGE);
            delays.push(b.next_delay(1.0));
        }
        assert_eq!(
            delays,
            [10, 20, 30, 30, 30, 30].map(Duration::from_secs).to_vec()
        );
        b.session_started();
        assert_eq!(b.next_delay(1.0), RECONNECT_CAP);
    }

    #[test]
    fn a_failing_time_is_said_in_seconds_minutes_or_hours() {
        assert_eq!(short_duration(Duration::from_millis(4_150)), "4.2s");
        assert_eq!(short_duration(Duration::from_secs(130)), "2m10s");
        assert_eq!(short_duration(Duration::from_secs(3_900)), "1h05m");
        assert_eq!(
            failing_note(Duration::from_secs(130), 14),
            "; failing for 2m10s, 14 attempts"
        );
    }

    /// The connection task itself, after a session existed, against a port nothing listens on,
    /// on the paused tokio clock: each attempt's delay is what the clock advances by.
    #[tokio::test(start_paused = true)]
    async fn a_failing_endpoint_after_a_session_says_for_how_long_and_backs_off_to_the_cap() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = crate::network::conn::url::RedisUrl::parse(&format!("redis://127.0.0.1:{port}"))
            .unwrap();
        let opts = crate::network::conn::ConnectConfig::default()
            .options_for(&url)
            .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (fatal, _fatal_rx) = mpsc::unbounded_channel();
        // A session has existed: failures are retried, and their length is said.
        let spawner = Spawner::for_test(WatchSettings::new(opts.clone()), tx, fatal);
        let watched = spawner.spawn(1, opts, false);
        let mut failures = Vec::new();
        while failures.len() < 40 {
            let Some((_, Report::Seen(obs))) = rx.recv().await else {
                continue;
            };
            if let What::ConnectFailed(event::ConnectFailed { error, retry_in }) = obs.what {
                failures.push((error, retry_in.expect("retried")));
            }
        }
        watched.task.abort();

        let mut waited = Duration::ZERO;
        for (i, (error, delay)) in failures.iter().enumerate() {
            let attempt = i + 1;
            if attempt == 1 {
                assert!(!error.contains("failing for"), "{error}");
            } else {
                // The failing time is the sum of the delays before it: the clock moved by
                // nothing else, except the timer wheel rounding each sleep up to the millisecond.
                let rounded = waited + Duration::from_millis(attempt as u64);
                let said = |d| format!("; failing for {}, {attempt} attempts", short_duration(d));
                assert!(
                    error.ends_with(&said(waited)) || error.ends_with(&said(rounded)),
                    "attempt {attempt} after {waited:?}: {error}"
                );
            }
            // The connection reads the outage's length from the clock, which the timer wheel's
            // rounding (up to a millisecond a sleep) puts ahead of the sum of the delays: within
            // that margin of a long outage, either cap may have been chosen.
            let cap = if waited + Duration::from_millis(attempt as u64) >= LONG_OUTAGE {
                OUTAGE_CAP
            } else {
                RECONNECT_CAP
            };
            assert!(*delay <= cap, "attempt {attempt}: {delay:?} over {cap:?}");
            waited += *delay;
        }
        // Forty attempts take more than the minute of a long outage (at least 2.5 s each past
        // the sixth), so the last delays come from the upper half of the outage cap: past 5 s.
        assert!(waited > LONG_OUTAGE, "{waited:?}");
        let (last, delay) = failures.last().unwrap();
        assert!(*delay >= OUTAGE_CAP / 2, "{delay:?}: {last}");
    }
}
