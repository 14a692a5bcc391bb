//! The connection supervisor: one task per watched connection that connects, handshakes, reads
//! until the connection closes, backs off and starts again, turning all of it into observations.
//!
//! It owns what a reconnecting reader needs and the loop must not: the backoff, the backpressure
//! that keeps a flood from growing memory, and the rule for which errors are permanent.

use super::settings::{ClusterMode, WatchSettings, TRAFFIC_FLOOR};
use crate::cluster;
use crate::conn::{self, ConnectOptions};
use crate::dns::DnsResolver;
use crate::exit;
use crate::record::{FrameRecord, OptInOutcome};
use crate::timeline::{CloseCause, Observation, What};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Bounded exponential backoff with jitter: 100 ms doubling to 5 s, each delay drawn from its
/// upper half so reconnects from many watchers spread out but never stall.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    base: Duration,
    cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Duration::from_millis(100),
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
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

    /// A session ended after `lived`: only one that lasted [`HEALTHY_SESSION`] starts the
    /// backoff over. A server that breaks every session right after the handshake would
    /// otherwise be reconnected to ten times a second forever.
    pub fn session_ended(&mut self, lived: Duration) {
        if lived >= HEALTHY_SESSION {
            self.reset();
        }
    }
}

/// How long a session must last for its end to count as a fresh start (the backoff resets).
pub const HEALTHY_SESSION: Duration = Duration::from_secs(2);

pub(super) fn observe(tx: &mpsc::UnboundedSender<Observation>, conn: u32, what: What) {
    let _ = tx.send(Observation {
        at: Instant::now(),
        wall: SystemTime::now(),
        conn,
        what,
    });
}
/// What the connection tasks share with the watch loop.
pub(super) struct Shared {
    pub(super) permits: Backpressure,
    /// Set by the first completed handshake: permanent errors stop the watch only before it.
    pub(super) established: AtomicBool,
    pub(super) session_errors: AtomicU64,
    /// A permanent error before any session: the exit code and the message for stderr.
    pub(super) fatal: mpsc::UnboundedSender<(i32, String)>,
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
        let _ = self.fatal.send((code, format!("{e}{}", what_to_change(e))));
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
        _ => None,
    }
}

/// A sentence saying what to change for a permanent error (empty when there is nothing to say).
fn what_to_change(e: &conn::ConnectError) -> String {
    use conn::ConnectError;
    match e {
        ConnectError::Auth { text, .. } if text.starts_with("NOAUTH") => {
            "\n  the server needs a password: give it with -a, --askpass or REDISCLI_AUTH".into()
        }
        ConnectError::Auth { .. } => {
            "\n  check the user (--user) and password (-a, --askpass or REDISCLI_AUTH)".into()
        }
        ConnectError::Command { .. } => {
            "\n  the URL's /N picks the database: use one the server has (/0 is the default)".into()
        }
        ConnectError::Tls { .. } => {
            "\n  check --cacert, --sni and the server's certificate (--insecure skips the check)"
                .into()
        }
        _ => String::new(),
    }
}
/// Frames read but not yet written out, across all connections.
pub(super) const FRAMES_IN_FLIGHT: usize = 4096;

/// Bounds the frames between the readers and the sinks. A reader hands each frame over first
/// and waits for room after, so a frame once read is always in the channel (a stop drains it);
/// past the limit readers wait and are woken only once the sinks have caught up by half of it,
/// so a flood costs two atomic operations per frame and one wake-up per two thousand.
#[derive(Default)]
pub(super) struct Backpressure {
    in_flight: std::sync::atomic::AtomicUsize,
    room: tokio::sync::Notify,
}

impl Backpressure {
    /// Called by the watch loop when a frame has been written.
    pub(super) fn release(&self) {
        use std::sync::atomic::Ordering;
        let before = self.in_flight.fetch_sub(1, Ordering::AcqRel);
        if before == FRAMES_IN_FLIGHT / 2 {
            self.room.notify_waiters();
        }
    }
}

/// Hands a frame to the watch loop, then waits until the sinks have room for more.
pub(super) async fn hand_over(
    bp: &Backpressure,
    tx: &mpsc::UnboundedSender<Observation>,
    obs: Observation,
) {
    use std::sync::atomic::Ordering;
    // Counted before it is sent, so the loop's release never runs ahead of it.
    bp.in_flight.fetch_add(1, Ordering::AcqRel);
    let _ = tx.send(obs);
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
    pub(super) tx: mpsc::UnboundedSender<Observation>,
    pub(super) shared: Arc<Shared>,
}

impl Spawner {
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
    mut cmds: mpsc::UnboundedReceiver<ConnCmd>,
) {
    let Spawner {
        settings,
        resolver,
        tx,
        shared,
    } = ctx;
    let opts = &opts;
    let mut backoff = Backoff::default();
    loop {
        let mut connection = match conn::connect(opts, &resolver).await {
            Ok(c) => c,
            Err(e) => {
                let stop = shared.stops_on(&e, settings.require);
                let delay = backoff.next_delay(rand::random());
                observe(
                    &tx,
                    id,
                    What::ConnectFailed {
                        error: e.to_string(),
                        retry_in: (!stop).then_some(delay),
                    },
                );
                if stop {
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        observe(
            &tx,
            id,
            What::Connected {
                addr: connection.peer(),
                tls: opts.tls(),
                endpoint: opts.display_endpoint(),
            },
        );
        let handshake = match connection.handshake(opts).await {
            Ok(h) => h,
            Err(mut e) => {
                // Frames read before the failure are shown and captured before the close.
                for r in std::mem::take(&mut e.frames) {
                    hand_over(&shared.permits, &tx, frame_observation(id, r, true)).await;
                }
                if e.is_auth() {
                    observe(
                        &tx,
                        id,
                        What::Handshake {
                            opt_in: OptInOutcome::AuthFailed,
                            text: Some(e.to_string()),
                            server: None,
                            version: None,
                            mode: None,
                            sent: None,
                            sim_speed: None,
                        },
                    );
                }
                let stop = shared.stops_on(&e, settings.require);
                let delay = backoff.next_delay(rand::random());
                observe(
                    &tx,
                    id,
                    What::Closed {
                        cause: CloseCause::Error,
                        error: Some(format!("during the handshake: {e}")),
                        retry_in: (!stop).then_some(delay),
                    },
                );
                if stop {
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        let established = Instant::now();
        shared.established.store(true, Ordering::Release);
        observe(&tx, id, handshake_observation(&handshake));
        let in_cluster = match settings.cluster {
            ClusterMode::On => true,
            ClusterMode::Off => false,
            ClusterMode::Auto => handshake.mode() == Some("cluster"),
        };
        for r in handshake.early {
            hand_over(&shared.permits, &tx, frame_observation(id, r, true)).await;
        }
        let (mut reader, mut writer) = connection.into_split();
        // Replies come back in command order: each is matched with what asked for it.
        let mut pending: std::collections::VecDeque<Pending> = Default::default();
        let mut setup: Vec<Vec<Vec<u8>>> = Vec::new();
        if !settings.subscribe.is_empty() {
            // In RESP3 the confirmations of SUBSCRIBE are push frames, not replies.
            let mut cmd = vec![b"SUBSCRIBE".to_vec()];
            cmd.extend(settings.subscribe.iter().map(|c| c.as_bytes().to_vec()));
            setup.push(cmd);
        }
        if settings.tracking {
            pending.push_back(Pending::Other);
            setup.push(vec![
                b"CLIENT".to_vec(),
                b"TRACKING".to_vec(),
                b"ON".to_vec(),
                b"BCAST".to_vec(),
            ]);
        }
        if discover && in_cluster {
            pending.push_back(Pending::Shards);
            setup.push(vec![b"CLUSTER".to_vec(), b"SHARDS".to_vec()]);
        }
        for cmd in &setup {
            if let Err(e) = writer.send(cmd).await {
                observe(
                    &tx,
                    id,
                    What::ConnectFailed {
                        error: format!("sending {}: {e}", String::from_utf8_lossy(&cmd[0])),
                        retry_in: None,
                    },
                );
            }
        }
        let mut ticker = settings.traffic.map(|d| {
            let mut t = tokio::time::interval(d.max(TRAFFIC_FLOOR));
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        let end = loop {
            tokio::select! {
                r = reader.next() => match r {
                    Ok(Some(received)) => {
                        if let conn::Item::Reply(_, is_error) = &received.item {
                            match pending.front() {
                                Some(Pending::Shards) if *is_error => {
                                    // Before Redis 7 there is no CLUSTER SHARDS.
                                    pending.pop_front();
                                    pending.push_back(Pending::Slots);
                                    let _ = writer.send(&[b"CLUSTER" as &[u8], b"SLOTS"]).await;
                                    continue;
                                }
                                Some(Pending::Shards | Pending::Slots) => {
                                    let shards = matches!(pending.pop_front(), Some(Pending::Shards));
                                    topology_reply(&tx, id, &received.raw, shards);
                                    continue;
                                }
                                _ => {}
                            }
                        }
                        if let conn::Item::Reply(summary, is_error) = &received.item {
                            if matches!(pending.front(), Some(Pending::Other)) && !is_error {
                                // The +OK to our own setup command (CLIENT TRACKING): expected,
                                // not something the server pushed. A refusal is still shown.
                                pending.pop_front();
                                continue;
                            }
                            if let Some(Pending::Ping(sent)) = pending.front() {
                                let latency = received.at.into_std().saturating_duration_since(*sent);
                                pending.pop_front();
                                observe(&tx, id, What::Ping {
                                    latency: (!is_error).then_some(latency),
                                    error: is_error.then(|| summary.clone()),
                                });
                                continue;
                            }
                            pending.pop_front();
                        }
                        hand_over(&shared.permits, &tx, frame_observation(id, received, false)).await;
                    }
                    Ok(None) => break (CloseCause::Server, None),
                    Err(e) => {
                        if let Some((offset, error)) = e.framing() {
                            observe(&tx, id, What::Malformed { offset, error });
                        }
                        break (CloseCause::Error, Some(e.to_string()));
                    }
                },
                Some(ConnCmd::Topology) = cmds.recv() => {
                    pending.push_back(Pending::Shards);
                    let _ = writer.send(&[b"CLUSTER" as &[u8], b"SHARDS"]).await;
                }
                _ = async { ticker.as_mut().unwrap().tick().await }, if ticker.is_some() => {
                    pending.push_back(Pending::Ping(Instant::now()));
                    if let Err(e) = writer.send(&[b"PING"]).await {
                        pending.pop_back();
                        observe(&tx, id, What::Ping { latency: None, error: Some(e.to_string()) });
                    }
                }
            }
        };
        for _ in pending.drain(..).filter(|p| matches!(p, Pending::Ping(_))) {
            observe(
                &tx,
                id,
                What::Ping {
                    latency: None,
                    error: Some("no reply before the connection closed".into()),
                },
            );
        }
        backoff.session_ended(established.elapsed());
        let delay = backoff.next_delay(rand::random());
        observe(
            &tx,
            id,
            What::Closed {
                cause: end.0,
                error: end.1,
                retry_in: Some(delay),
            },
        );
        tokio::time::sleep(delay).await;
    }
}

/// What a reply still to come answers.
enum Pending {
    Ping(Instant),
    Shards,
    Slots,
    Other,
}

/// Reads a CLUSTER SHARDS / SLOTS reply and hands the nodes to the watch loop.
fn topology_reply(tx: &mpsc::UnboundedSender<Observation>, id: u32, raw: &[u8], shards: bool) {
    let nodes = match crate::resp::Scanner::default().scan(raw) {
        Ok(crate::resp::Scan::Frame(frame, _)) => {
            if shards {
                cluster::from_shards(&frame)
            } else {
                cluster::from_slots(&frame)
            }
        }
        _ => None,
    };
    match nodes {
        Some(nodes) if !nodes.is_empty() => observe(tx, id, What::Nodes(nodes)),
        _ => observe(
            tx,
            id,
            What::ConnectFailed {
                error: format!(
                    "could not read the cluster topology from {}",
                    crate::escape::escape(&raw[..raw.len().min(120)])
                ),
                retry_in: None,
            },
        ),
    }
}

/// A received frame as an observation, stamped when its bytes were read.
fn frame_observation(conn: u32, r: conn::Received, early: bool) -> Observation {
    let parsed = match r.item {
        conn::Item::Push(c) => c,
        conn::Item::Reply(..) => crate::notification::Classified::NotPush,
    };
    Observation {
        at: r.at.into_std(),
        wall: r.wall,
        conn,
        what: What::Frame {
            record: FrameRecord {
                offset: r.offset,
                len: r.raw.len(),
                raw: crate::escape::escape(&r.raw),
                parsed,
            },
            early,
        },
    }
}

fn handshake_observation(h: &conn::Handshake) -> What {
    let (opt_in, text) = h.outcome();
    What::Handshake {
        opt_in,
        sim_speed: h
            .hello_info()
            .and_then(|i| i.sim_speed.as_deref()?.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
            .map(|announced| crate::record::SimSpeed {
                announced,
                used: announced,
                given: false,
            }),
        text,
        server: h.server().map(str::to_string),
        version: h.version().map(str::to_string),
        mode: h.mode().map(str::to_string),
        sent: h.sent().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::{Backoff, HEALTHY_SESSION};
    use std::time::Duration;

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
}
