//! The watch loop: one task that owns the timeline, takes every observation in arrival order,
//! hands each resulting line to the sinks and carries out the timeline's actions (dry-runs,
//! advertised-address checks, topology refreshes).

use super::cluster::Membership;
use super::connection::{observe, Report, Shared, Spawner, Tx};
use super::settings::WatchSettings;
use crate::dns::{self, DnsResolver};
use crate::exit;
use crate::handoff::{self, Clock, EndpointHost, HandoffInput, RandJitter};
use crate::output::sink::Sinks;
use crate::record::line;
use crate::record::{OptInOutcome, SimSpeed, WatchLine};
use crate::timeline::{Action, Observation, Timeline, What};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Why the watch stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Interrupted,
    /// SIGTERM.
    Terminated,
    /// SIGHUP.
    Hangup,
    Duration,
    Count,
    /// The caller's stop future completed (the demo's scenario ended).
    Ended,
    /// `--require` and the opt-in was not accepted.
    Required(i32),
    /// A permanent error before any session was established (the code says which).
    Failed(i32),
}

impl StopReason {
    fn name(self) -> &'static str {
        match self {
            StopReason::Interrupted => "interrupted",
            StopReason::Terminated => "terminated",
            StopReason::Hangup => "hangup",
            StopReason::Duration => "duration",
            StopReason::Count => "count",
            StopReason::Ended => "ended",
            StopReason::Required(_) => "opt-in not accepted",
            StopReason::Failed(_) => "permanent error",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            StopReason::Interrupted => exit::INTERRUPTED,
            StopReason::Terminated => exit::TERMINATED,
            StopReason::Hangup => exit::HANGUP,
            StopReason::Required(code) | StopReason::Failed(code) => code,
            _ => exit::SUCCESS,
        }
    }
}
/// A [`Clock`] running `speed` times faster than real time, so the dry-run against a sped-up
/// simulator decides in scenario seconds.
#[derive(Debug, Clone, Copy)]
struct ScaledClock {
    inner: handoff::TokioClock,
    speed: f64,
}

impl Clock for ScaledClock {
    fn now(&self) -> Duration {
        self.inner.now().mul_f64(self.speed)
    }

    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d.div_f64(self.speed))
    }
}

/// Runs a watch until Ctrl-C, `--duration`, `--count`, `--require` or `stop` completes.
pub async fn watch(
    settings: &WatchSettings,
    sinks: &mut Sinks<'_>,
    stop: impl Future<Output = ()>,
    mut notes: Option<mpsc::UnboundedReceiver<String>>,
) -> anyhow::Result<WatchEnd> {
    let resolver = Arc::new(DnsResolver::new(&settings.connect.dns_options())?);
    let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
    let (fatal_tx, mut fatal_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        permits: Default::default(),
        established: AtomicBool::new(false),
        session_errors: AtomicU64::new(0),
        fatal: fatal_tx,
    });
    let mut engine = Engine::start(settings, sinks, &resolver, &tx, &shared)?;
    let pollers = spawn_dns_poller(settings, &resolver, &tx, engine.dns_window.subscribe());
    let mut fatal = None;
    let deadline = async {
        match settings.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    tokio::pin!(stop);
    let mut signals = Signals::install()?;
    let mut redraw = tokio::time::interval(Duration::from_millis(100));
    // Polled only while a countdown is drawn: ticks missed meanwhile are not made up.
    redraw.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let reason = loop {
        tokio::select! {
            biased;
            // The stop conditions come before the frames: under a flood a frame is always
            // ready, and a biased select that looked at frames first would never see them.
            reason = signals.recv() => break reason,
            () = &mut deadline => break StopReason::Duration,
            Some((code, message)) = fatal_rx.recv() => {
                fatal = Some(message);
                break StopReason::Failed(code);
            }
            _ = redraw.tick(), if engine.sinks.animating() => engine.sinks.tick(),
            // A narrator (the demo's simulator) tells a step before its frames leave: cause first.
            Some(text) = async { notes.as_mut()?.recv().await }, if notes.is_some() => {
                engine.sinks.note(&text)?;
            }
            obs = rx.recv() => {
                let Some(report) = obs else { break StopReason::Ended };
                if let Some(reason) = engine.take(report, rx.is_empty())? {
                    break reason;
                }
            }
            // The demo's end comes after its frames: the scenario's last push is part of it.
            () = &mut stop => break StopReason::Ended,
        }
    };
    for t in &pollers {
        t.abort();
    }
    engine.finish(reason, &mut rx, fatal).await
}

/// The watch loop's state between observations.
struct Engine<'w, 'o> {
    /// The speed may be learnt from the simulator's HELLO reply: this copy is the one that is.
    settings: WatchSettings,
    timeline: Timeline,
    sinks: &'w mut Sinks<'o>,
    members: Membership,
    resolver: Arc<DnsResolver>,
    tx: Tx,
    shared: Arc<Shared>,
    effects: Effects,
    /// Until when a maintenance window is open: the DNS poller's pace follows it.
    dns_window: tokio::sync::watch::Sender<Option<tokio::time::Instant>>,
    /// Notifications seen, for `--count`.
    seen: u32,
    warned_speed: bool,
}

impl<'w, 'o> Engine<'w, 'o> {
    /// Writes the start line and starts the connections.
    fn start(
        settings: &WatchSettings,
        sinks: &'w mut Sinks<'o>,
        resolver: &Arc<DnsResolver>,
        tx: &Tx,
        shared: &Arc<Shared>,
    ) -> anyhow::Result<Engine<'w, 'o>> {
        let mut timeline = Timeline::new(Instant::now());
        timeline.set_speed(settings.speed);
        sinks
            .line(&timeline.start_line(SystemTime::now(), &settings.connect.display_endpoint()))?;
        let spawner = Spawner {
            settings: settings.clone(),
            resolver: resolver.clone(),
            tx: tx.clone(),
            shared: shared.clone(),
        };
        Ok(Engine {
            settings: settings.clone(),
            timeline,
            sinks,
            members: Membership::start(spawner, settings.connections),
            resolver: resolver.clone(),
            tx: tx.clone(),
            shared: shared.clone(),
            effects: Effects::default(),
            dns_window: tokio::sync::watch::channel(None).0,
            seen: 0,
            warned_speed: false,
        })
    }

    /// Takes one observation through the timeline to the sinks; `idle`: nothing else is waiting.
    /// Returns why the watch stops, if this observation stops it.
    fn take(&mut self, report: Report, idle: bool) -> anyhow::Result<Option<StopReason>> {
        let mut obs = match report {
            Report::Seen(obs) => obs,
            Report::Nodes {
                conn,
                at,
                wall,
                nodes,
            } => Observation {
                at,
                wall,
                conn,
                what: self.members.nodes_read(&nodes),
            },
        };
        match &mut obs.what {
            What::Connected { addr, .. } => self.members.connected(obs.conn, *addr),
            What::Handshake {
                sim_speed: Some(announced),
                ..
            } => self.learn_speed(announced),
            _ => {}
        }
        let required = match &obs.what {
            What::Handshake { opt_in, .. }
                if self.settings.require && *opt_in != OptInOutcome::Accepted =>
            {
                Some(required_code(*opt_in))
            }
            _ => None,
        };
        if matches!(obs.what, What::Frame { .. }) {
            self.shared.permits.release();
        }
        let step = self.timeline.observe(obs);
        for line in &step.lines {
            self.sinks.line(line)?;
        }
        // Flush when nothing else is waiting: live output stays live, and a flood is written in
        // large writes instead of one system call per line.
        if idle {
            self.sinks.flush()?;
        }
        for action in step.actions {
            self.act(action);
        }
        if let Some(code) = required {
            return Ok(Some(StopReason::Required(code)));
        }
        if step.notifications > 0 {
            self.pace_dns();
        }
        self.seen += step.notifications;
        if self.settings.count.is_some_and(|n| self.seen >= n) {
            return Ok(Some(StopReason::Count));
        }
        Ok(None)
    }

    /// A new event may open or close a window: the DNS poller is told until when one is open.
    fn pace_dns(&self) {
        let until = self
            .timeline
            .window_open_until(MAX_DRY_RUN_WINDOW_S)
            .map(tokio::time::Instant::from_std);
        self.dns_window.send_if_modified(|w| {
            let changed = *w != until;
            *w = until;
            changed
        });
    }

    /// The simulator announced its speed: adopted unless `--sim-speed` was given.
    fn learn_speed(&mut self, announced: &mut SimSpeed) {
        let speed = announced.announced;
        let settings = &mut self.settings;
        if !settings.speed_given && speed != settings.speed {
            settings.speed = speed;
            self.timeline.set_speed(speed);
            self.sinks.set_speed(speed);
        }
        announced.used = settings.speed;
        announced.given = settings.speed_given;
        if speed != settings.speed && !self.warned_speed {
            self.warned_speed = true;
            eprintln!(
                "maintwatch: warning: the simulator announces speed {speed} but --sim-speed {} was given: offsets are read at {}",
                settings.speed, settings.speed
            );
        }
    }

    fn act(&mut self, action: Action) {
        if let Action::RefreshTopology {
            conn,
            event,
            sources,
        } = action
        {
            self.members
                .refresh(self.settings.speed, conn, event, sources);
            return;
        }
        act(
            &self.settings,
            &self.resolver,
            &self.tx,
            &mut self.effects,
            action,
        );
    }

    /// Stops the connection tasks and writes whatever they had read: a reader puts a frame in
    /// the channel before it waits for room, so once the tasks are gone the channel holds all of
    /// it (a bounded number of frames and a few other observations). No action is taken on them:
    /// the watch is ending. Then the summary.
    async fn finish(
        self,
        reason: StopReason,
        rx: &mut mpsc::UnboundedReceiver<Report>,
        fatal: Option<String>,
    ) -> anyhow::Result<WatchEnd> {
        let Engine {
            mut timeline,
            sinks,
            members,
            shared,
            effects,
            ..
        } = self;
        members.stop().await;
        // Nodes read now change nothing: the watch is ending.
        while let Ok(report) = rx.try_recv() {
            let Report::Seen(obs) = report else { continue };
            for line in &timeline.observe(obs).lines {
                sinks.line(line)?;
            }
        }
        if matches!(
            reason,
            StopReason::Interrupted | StopReason::Terminated | StopReason::Hangup
        ) {
            sinks.interrupted()?;
        }
        let session_errors = shared.session_errors.load(Ordering::Acquire);
        let mut summary = timeline.summary(Instant::now(), SystemTime::now(), reason.name());
        if let WatchLine::Summary(line::Summary { notes, .. }) = &mut summary {
            notes.skipped_dry_runs = effects.skipped;
            notes.capped_windows = effects.capped;
            notes.session_errors = session_errors;
        }
        sinks.line(&summary)?;
        sinks.flush()?;
        Ok(WatchEnd {
            reason,
            established: shared.established.load(Ordering::Acquire),
            session_errors,
            fatal,
            capture_failed: sinks.failed(),
        })
    }
}

/// The DNS poller of the endpoint's hostname (none for an address or with `--no-dns`).
fn spawn_dns_poller(
    settings: &WatchSettings,
    resolver: &Arc<DnsResolver>,
    tx: &Tx,
    window: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let host = settings.connect.host().to_string();
    if !settings.dns || host.parse::<IpAddr>().is_ok() {
        return Vec::new();
    }
    let (dtx, mut drx) = mpsc::unbounded_channel();
    let pace = dns::PollPace {
        normal: settings.dns_interval.div_f64(settings.speed),
        open: settings.dns_interval_open.div_f64(settings.speed),
    };
    let timeout = settings.connect.dns_options().timeout;
    let poller =
        dns::spawn_poller_paced(resolver.clone(), host.clone(), pace, timeout, window, dtx);
    let tx = tx.clone();
    let forward = tokio::spawn(async move {
        while let Some(ev) = drx.recv().await {
            let _ = tx.send(Report::Seen(Observation {
                at: ev.at.into_std(),
                wall: SystemTime::now(),
                conn: 0,
                what: What::Dns {
                    host: host.clone(),
                    kind: ev.kind,
                },
            }));
        }
    });
    vec![poller, forward]
}

/// Ctrl-C, SIGTERM and SIGHUP.
struct Signals {
    /// One future for the whole watch: a fresh ctrl_c() per loop turn only hears signals sent
    /// after it was first polled, so a Ctrl-C arriving while a turn was busy was lost.
    interrupted: Pin<Box<dyn Future<Output = std::io::Result<()>>>>,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        Ok(Signals {
            interrupted: Box::pin(tokio::signal::ctrl_c()),
            terminate: unix_signal(tokio::signal::unix::SignalKind::terminate())?,
            hangup: unix_signal(tokio::signal::unix::SignalKind::hangup())?,
        })
    }

    /// The next signal, as the reason the watch stops.
    async fn recv(&mut self) -> StopReason {
        tokio::select! {
            biased;
            _ = &mut self.interrupted => StopReason::Interrupted,
            _ = self.terminate.recv() => StopReason::Terminated,
            _ = self.hangup.recv() => StopReason::Hangup,
        }
    }
}

/// How a watch ended, with what decides its exit code.
#[derive(Debug)]
pub struct WatchEnd {
    pub reason: StopReason,
    /// Some handshake completed.
    pub established: bool,
    /// Permanent errors retried after a session existed.
    pub session_errors: u64,
    /// What stopped the watch before any session, with what to change.
    pub fatal: Option<String>,
    /// The capture could not be written (the file was named on stderr).
    pub capture_failed: bool,
}

impl WatchEnd {
    /// A signal, `--require` or a permanent error decide first; a watch that ended as asked
    /// exits 0 only if a session existed and nothing permanent went wrong.
    pub fn exit_code(&self) -> i32 {
        match self.reason {
            StopReason::Duration | StopReason::Count | StopReason::Ended => {
                if !self.established {
                    exit::CONNECTION_FAILED
                } else if self.session_errors > 0 {
                    exit::SESSION_ERRORS
                } else if self.capture_failed {
                    exit::FAILURE
                } else {
                    exit::SUCCESS
                }
            }
            reason => reason.exit_code(),
        }
    }
}
/// A Unix signal stream, with the signal named when it cannot be installed.
fn unix_signal(
    kind: tokio::signal::unix::SignalKind,
) -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind)
        .map_err(|e| anyhow::anyhow!("cannot listen for signal {}: {e}", kind.as_raw_value()))
}

/// The exit code of `--require` for an opt-in outcome: the one mapping `probe` uses too.
fn required_code(outcome: OptInOutcome) -> i32 {
    crate::conn::probe::Severity::from(outcome).exit_code()
}

/// Dry-runs running at once, at most: each polls DNS until its window ends, and a server that
/// sends a stream of distinct MOVINGs must not start one task per notification.
pub const MAX_DRY_RUNS: usize = 64;

/// The longest declared window a dry-run waits out, in scenario seconds. A server may declare
/// any window up to `i64::MAX` seconds; a dry-run still waiting after an hour tells nothing new.
pub const MAX_DRY_RUN_WINDOW_S: i64 = 3600;

/// The watch loop's side effects that are not lines: dry-runs and what they left out.
struct Effects {
    dry_runs: Arc<tokio::sync::Semaphore>,
    skipped: u64,
    capped: u64,
}

impl Default for Effects {
    fn default() -> Self {
        Effects {
            dry_runs: Arc::new(tokio::sync::Semaphore::new(MAX_DRY_RUNS)),
            skipped: 0,
            capped: 0,
        }
    }
}

fn act(
    settings: &WatchSettings,
    resolver: &Arc<DnsResolver>,
    tx: &Tx,
    effects: &mut Effects,
    action: Action,
) {
    match action {
        Action::StartHandoff {
            conn,
            event,
            window_s,
            successor,
            current,
        } => {
            if !settings.handoff {
                return;
            }
            let Ok(permit) = effects.dry_runs.clone().try_acquire_owned() else {
                if effects.skipped == 0 {
                    eprintln!(
                        "maintwatch: note: {MAX_DRY_RUNS} dry-runs are running; further MOVINGs get none until one ends (counted in the summary)"
                    );
                }
                effects.skipped += 1;
                return;
            };
            if window_s > MAX_DRY_RUN_WINDOW_S {
                if effects.capped == 0 {
                    eprintln!(
                        "maintwatch: note: a MOVING declares a window of {window_s} s; the dry-run waits {MAX_DRY_RUN_WINDOW_S} s at most (counted in the summary)"
                    );
                }
                effects.capped += 1;
            }
            let input = HandoffInput {
                endpoint: EndpointHost::parse(settings.connect.host()),
                port: settings.connect.port(),
                current,
                successor: successor.map(|s| (s.host, s.port)),
                window_secs: window_s.min(MAX_DRY_RUN_WINDOW_S),
                poll_interval: settings.handoff_poll,
            };
            let resolver = resolver.clone();
            let tx = tx.clone();
            let speed = settings.speed;
            tokio::spawn(async move {
                let clock = ScaledClock {
                    inner: handoff::TokioClock::new(),
                    speed,
                };
                // Only a stop of the watch ends a dry-run early (its task is dropped then): its
                // verdict is what a close is compared with.
                let never = std::future::pending::<()>();
                let outcome = handoff::run(&input, &resolver, &clock, &mut RandJitter, never).await;
                drop(permit);
                observe(&tx, conn, What::Handoff { event, outcome });
            });
        }
        Action::CheckAdvertised { conn, addr } => {
            let host = settings.connect.host().to_string();
            if host.parse::<IpAddr>().is_ok() || !settings.dns {
                return;
            }
            let resolver = resolver.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let res = handoff::Resolve::resolve(&*resolver, &host).await;
                let answer = handoff::advertised(&res, addr);
                observe(&tx, conn, What::Advertised { addr, answer });
            });
        }
        // A refresh is started by the loop.
        Action::RefreshTopology { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{StopReason, WatchEnd};
    use crate::exit;

    fn end(reason: StopReason, established: bool, session_errors: u64) -> i32 {
        WatchEnd {
            reason,
            established,
            session_errors,
            fatal: None,
            capture_failed: false,
        }
        .exit_code()
    }

    #[test]
    fn a_watch_exits_0_only_after_a_session_and_without_permanent_errors() {
        assert_eq!(end(StopReason::Duration, true, 0), exit::SUCCESS);
        assert_eq!(end(StopReason::Count, true, 0), exit::SUCCESS);
        assert_eq!(end(StopReason::Duration, false, 0), exit::CONNECTION_FAILED);
        assert_eq!(end(StopReason::Duration, true, 2), exit::SESSION_ERRORS);
        // A signal's code and a permanent error's code come first.
        assert_eq!(end(StopReason::Terminated, true, 2), exit::TERMINATED);
        assert_eq!(end(StopReason::Hangup, false, 0), exit::HANGUP);
        assert_eq!(end(StopReason::Interrupted, false, 0), exit::INTERRUPTED);
        assert_eq!(
            end(StopReason::Failed(exit::SELECT_FAILED), false, 0),
            exit::SELECT_FAILED
        );
    }
}
