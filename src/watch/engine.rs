//! The watch loop: one task that owns the timeline, takes every observation in arrival order,
//! hands each resulting line to the sinks and carries out the timeline's actions (dry-runs,
//! advertised-address checks, topology refreshes).

use super::connection::{observe, Report, Shared, Spawner, Tx};
use super::membership::Membership;
use super::settings::WatchSettings;
use crate::exit;
use crate::network::dns::{self, DnsResolver};
use crate::network::handoff::{self, Clock, EndpointHost, HandoffInput, RandJitter};
use crate::observe::record::line;
use crate::observe::record::{OptInOutcome, SimSpeed, TopologyReason, WatchLine};
use crate::observe::timeline::{event, Action, Observation, ScenarioClock, Step, Timeline, What};
use crate::present::output::sink::Sinks;
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
/// The dry-run's [`Clock`] in scenario time, so against a sped-up simulator it decides in
/// scenario seconds.
#[derive(Debug, Clone)]
struct ScaledClock {
    inner: handoff::TokioClock,
    scenario: ScenarioClock,
}

impl Clock for ScaledClock {
    fn now(&self) -> Duration {
        self.scenario.to_scenario(self.inner.now())
    }

    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(self.scenario.to_real(d))
    }
}

/// One endpoint of a watch: a single one, or one of a fleet.
pub struct Endpoint<'o> {
    pub settings: WatchSettings,
    /// The label its lines carry in a fleet; `None` for a single endpoint (lines untagged).
    pub label: Option<String>,
    /// Sinks of this endpoint alone (per-endpoint metrics or hooks): its lines, untagged.
    pub extra: Sinks<'o>,
}

impl<'o> Endpoint<'o> {
    pub fn new(mut settings: WatchSettings, label: Option<String>) -> Endpoint<'o> {
        // Each endpoint adopts the speed its own server announces: settings cloned for a fleet
        // share a clock until here.
        settings.clock = settings.clock.detached();
        Endpoint {
            settings,
            label,
            extra: Sinks::new(),
        }
    }
}

/// How a fleet ended: each endpoint's label and end, in the order given.
#[derive(Debug)]
pub struct FleetEnd {
    pub ends: Vec<(Option<String>, WatchEnd)>,
}

impl FleetEnd {
    /// The highest exit code of any endpoint: a signal's code (129 and up) when one stopped the
    /// watch, else the worst endpoint's (8 permanent errors after a session, 7 database, 6
    /// connection, 5 authentication, 3/4 `--require`, 1 capture, 0 when every endpoint is fine).
    pub fn exit_code(&self) -> i32 {
        self.ends
            .iter()
            .map(|(_, end)| end.exit_code())
            .max()
            .unwrap_or(exit::SUCCESS)
    }
}

/// Runs a watch until Ctrl-C, `--duration`, `--count`, `--require` or `stop` completes.
pub async fn watch(
    settings: &WatchSettings,
    sinks: &mut Sinks<'_>,
    stop: impl Future<Output = ()>,
    notes: Option<mpsc::UnboundedReceiver<String>>,
) -> anyhow::Result<WatchEnd> {
    let one = vec![Endpoint::new(settings.clone(), None)];
    let mut fleet = watch_fleet(settings, one, sinks, stop, notes).await?;
    Ok(fleet.ends.remove(0).1)
}

/// Watches every endpoint in one loop until a signal, `--duration`, `--count` or `stop`; an
/// endpoint that fails for good (or refuses under `--require`) stops alone, the watch goes on
/// while one is left. `common` holds what is the same for all (duration, count, heartbeat).
///
/// Idle work does not grow with the number of endpoints: one loop and one redraw tick (only
/// with a countdown) for the process, one DNS poller per distinct hostname (none for an
/// address), one resolver, and PINGs only with `--traffic`.
pub async fn watch_fleet<'o>(
    common: &WatchSettings,
    endpoints: Vec<Endpoint<'o>>,
    sinks: &mut Sinks<'_>,
    stop: impl Future<Output = ()>,
    mut notes: Option<mpsc::UnboundedReceiver<String>>,
) -> anyhow::Result<FleetEnd> {
    let resolver = Arc::new(DnsResolver::new(&common.connect.dns_options())?);
    let (tx, mut rx) = mpsc::unbounded_channel::<(u32, Report)>();
    let (fatal_tx, mut fatal_rx) = mpsc::unbounded_channel();
    let mut engines = start_engines(endpoints, sinks, &resolver, &tx, &fatal_tx)?;
    let pollers = spawn_dns_pollers(&mut engines, &resolver);
    let deadline = async {
        match common.engine.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    tokio::pin!(stop);
    let mut signals = Signals::install()?;
    let mut redraw = tokio::time::interval(Duration::from_millis(100));
    // Polled only while a countdown shows a window: ticks missed meanwhile are not made up.
    redraw.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let beat = common.engine.heartbeat.unwrap_or(Duration::from_secs(3600));
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + beat, beat);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut progress = Progress {
        live: engines.len(),
        seen: 0,
        count: common.engine.count,
    };
    // A narrated run (the demo) takes frames one at a time: a note must come before the frames
    // sent after it, and a batch could take those first.
    let batch = if notes.is_some() { 1 } else { BATCH };
    let reason = loop {
        tokio::select! {
            biased;
            // The stop conditions come before the frames: under a flood a frame is always
            // ready, and a biased select that looked at frames first would never see them.
            reason = signals.recv() => {
                // SIGHUP with a capture file: logrotate's signal to open it again.
                if reason == StopReason::Hangup && sinks.reopen()? {
                    continue;
                }
                break reason;
            }
            () = &mut deadline => break StopReason::Duration,
            Some((ep, code, message)) = fatal_rx.recv() => {
                let engine = &mut engines[ep as usize];
                engine.fatal = Some(message);
                if engine.end(StopReason::Failed(code)).await {
                    progress.live -= 1;
                }
                if progress.live == 0 {
                    break StopReason::Failed(code);
                }
            }
            _ = redraw.tick(), if sinks.animating() => sinks.tick(),
            _ = heartbeat.tick(), if common.engine.heartbeat.is_some() => {
                for engine in &mut engines {
                    engine.heartbeat(sinks)?;
                }
                sinks.flush()?;
            }
            // A narrator (the demo's simulator) tells a step before its frames leave: cause first.
            Some(text) = async { notes.as_mut()?.recv().await }, if notes.is_some() => {
                sinks.note(&text)?;
            }
            obs = rx.recv() => {
                let Some(first) = obs else { break StopReason::Ended };
                let taken = take_batch(&mut engines, sinks, first, &mut rx, batch, &mut progress);
                if let Some(reason) = taken.await? {
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
    finish(engines, sinks, reason, &mut rx).await
}

/// The most observations taken at once between two looks at the stop conditions.
const BATCH: usize = 64;

/// Where the loop stands: endpoints still running, notifications seen against `--count`.
struct Progress {
    live: usize,
    seen: u32,
    count: Option<u32>,
}

/// Takes `first` and then what else is already waiting, up to `batch` observations, without
/// going back through the loop's `select!` for each: under a flood that select (its signal,
/// deadline and timer branches polled and re-armed per frame) cost more than the frame. The stop
/// conditions are still looked at between batches. Returns why the watch stops, if it must.
async fn take_batch(
    engines: &mut [Engine<'_>],
    sinks: &mut Sinks<'_>,
    first: (u32, Report),
    rx: &mut mpsc::UnboundedReceiver<(u32, Report)>,
    batch: usize,
    progress: &mut Progress,
) -> anyhow::Result<Option<StopReason>> {
    let mut next = first;
    for taken in 1..=batch {
        let (ep, report) = next;
        let engine = &mut engines[ep as usize];
        let (required, notifications) = engine.take_report(sinks, report, rx.is_empty())?;
        if let Some(reason) = required {
            if engine.end(reason).await {
                progress.live -= 1;
            }
            if progress.live == 0 {
                return Ok(Some(reason));
            }
        }
        progress.seen = progress.seen.saturating_add(notifications);
        if progress.count.is_some_and(|n| progress.seen >= n) {
            return Ok(Some(StopReason::Count));
        }
        if taken == batch {
            break;
        }
        match rx.try_recv() {
            Ok(more) => next = more,
            Err(_) => break,
        }
    }
    Ok(None)
}

/// Starts every endpoint: its start line, its connections. What they share is made here: one
/// backpressure bound and one dry-run limit for the process.
fn start_engines<'o>(
    endpoints: Vec<Endpoint<'o>>,
    sinks: &mut Sinks<'_>,
    resolver: &Arc<DnsResolver>,
    tx: &mpsc::UnboundedSender<(u32, Report)>,
    fatal: &mpsc::UnboundedSender<(u32, i32, String)>,
) -> anyhow::Result<Vec<Engine<'o>>> {
    let permits = Arc::new(super::connection::Backpressure::default());
    let dry_runs = Arc::new(tokio::sync::Semaphore::new(MAX_DRY_RUNS));
    let mut engines = Vec::with_capacity(endpoints.len());
    for (i, ep) in endpoints.into_iter().enumerate() {
        let shared = Arc::new(Shared {
            permits: permits.clone(),
            ep: i as u32,
            established: AtomicBool::new(false),
            session_errors: AtomicU64::new(0),
            fatal: fatal.clone(),
        });
        let tx = Tx {
            ep: i as u32,
            tx: tx.clone(),
        };
        engines.push(Engine::start(ep, sinks, resolver, tx, shared, &dry_runs)?);
    }
    sinks.flush()?;
    Ok(engines)
}

/// Stops the connection tasks and writes whatever they had read: a reader puts a frame in the
/// channel before it waits for room, so once the tasks are gone the channel holds all of it (a
/// bounded number of frames and a few other observations). No action is taken on them: the
/// watch is ending. Then one summary per endpoint.
async fn finish(
    mut engines: Vec<Engine<'_>>,
    sinks: &mut Sinks<'_>,
    reason: StopReason,
    rx: &mut mpsc::UnboundedReceiver<(u32, Report)>,
) -> anyhow::Result<FleetEnd> {
    for engine in &mut engines {
        if let Some(members) = engine.members.take() {
            members.stop().await;
        }
    }
    // Nodes read now change nothing: the watch is ending.
    while let Ok((ep, report)) = rx.try_recv() {
        let observations = match report {
            Report::Seen(obs) => vec![obs],
            Report::Frames(frames) => frames,
            Report::Nodes { .. } | Report::Tick => continue,
        };
        let engine = &mut engines[ep as usize];
        for obs in observations {
            for line in &engine.timeline.observe(obs).lines {
                engine.emit(sinks, line)?;
            }
        }
    }
    let signalled = matches!(
        reason,
        StopReason::Interrupted | StopReason::Terminated | StopReason::Hangup
    );
    if signalled {
        sinks.interrupted()?;
    }
    let mut ends = Vec::with_capacity(engines.len());
    for mut engine in engines {
        if signalled {
            engine.extra.interrupted()?;
        }
        // A signal stops every endpoint; otherwise one that stopped alone keeps its reason.
        let reason = match engine.ended {
            Some(own) if !signalled => own,
            _ => reason,
        };
        let end = engine.finish(sinks, reason)?;
        ends.push(end);
    }
    sinks.flush()?;
    let capture_failed = sinks.failed();
    for (_, end) in &mut ends {
        end.capture_failed |= capture_failed;
    }
    Ok(FleetEnd { ends })
}

/// The watch loop's state for one endpoint between observations.
struct Engine<'o> {
    /// The speed may be learnt from the simulator's HELLO reply: this copy is the one that is.
    settings: WatchSettings,
    label: Option<String>,
    extra: Sinks<'o>,
    timeline: Timeline,
    /// The last observation's lines and actions: its room is reused for the next.
    step: Step,
    /// When its timeline started (the heartbeat's `t`).
    started: Instant,
    /// `None` once the endpoint stopped.
    members: Option<Membership>,
    resolver: Arc<DnsResolver>,
    tx: Tx,
    shared: Arc<Shared>,
    effects: Effects,
    /// This endpoint's slot in its hostname's DNS poller pace (none without a poller).
    dns_window: Option<(Arc<HostWindow>, usize)>,
    warned_speed: bool,
    /// Why this endpoint stopped alone (`--require`, a permanent error).
    ended: Option<StopReason>,
    fatal: Option<String>,
    /// Sessions up now, and whether each opted in (for the heartbeat).
    up: std::collections::HashMap<u32, bool>,
    notifications: u64,
    last_notification: Option<Instant>,
}

impl<'o> Engine<'o> {
    /// Writes the start line and starts the connections.
    fn start(
        endpoint: Endpoint<'o>,
        sinks: &mut Sinks<'_>,
        resolver: &Arc<DnsResolver>,
        tx: Tx,
        shared: Arc<Shared>,
        dry_runs: &Arc<tokio::sync::Semaphore>,
    ) -> anyhow::Result<Engine<'o>> {
        let Endpoint {
            settings,
            label,
            extra,
        } = endpoint;
        // Stamped before any connection starts: on the demo's worker pool a connection may
        // report before the start line is written, and its time must not precede this one.
        let (started, started_wall) = (Instant::now(), SystemTime::now());
        let mut timeline = Timeline::new(started);
        timeline.set_clock(settings.clock.clone());
        let spawner = Spawner {
            settings: settings.clone(),
            resolver: resolver.clone(),
            tx: tx.clone(),
            shared: shared.clone(),
        };
        let mut engine = Engine {
            members: Some(Membership::start(spawner, settings.engine.connections)),
            settings,
            label,
            extra,
            timeline,
            step: Step::default(),
            started,
            resolver: resolver.clone(),
            tx,
            shared,
            effects: Effects::new(dry_runs.clone()),
            dns_window: None,
            warned_speed: false,
            ended: None,
            fatal: None,
            up: Default::default(),
            notifications: 0,
            last_notification: None,
        };
        let start = engine
            .timeline
            .start_line(started_wall, &engine.settings.connect.display_endpoint());
        engine.emit(sinks, &start)?;
        Ok(engine)
    }

    /// Hands a line to the shared sinks (tagged in a fleet) and to this endpoint's own.
    fn emit(&mut self, sinks: &mut Sinks<'_>, line: &WatchLine) -> std::io::Result<()> {
        sinks.line_of(self.label.as_deref(), line)?;
        self.extra.line(line)
    }

    /// Stops this endpoint alone; whether it was still running.
    async fn end(&mut self, reason: StopReason) -> bool {
        let Some(members) = self.members.take() else {
            return false;
        };
        self.ended = Some(reason);
        members.stop().await;
        true
    }

    /// Takes a report's observations through the timeline to the sinks; `idle`: nothing else is
    /// waiting. Returns the first `--require` stop among them and the notifications they held.
    /// The frames of one read are all taken even past a stop: the watch would write them out
    /// while finishing anyway, and this way they keep their order.
    fn take_report(
        &mut self,
        sinks: &mut Sinks<'_>,
        report: Report,
        idle: bool,
    ) -> anyhow::Result<(Option<StopReason>, u32)> {
        let frames = match report {
            Report::Frames(frames) => frames,
            Report::Tick => {
                if let Some(members) = &mut self.members {
                    members.ask(TopologyReason::Interval, None);
                }
                return Ok((None, 0));
            }
            Report::Seen(obs) => return self.take(sinks, obs, idle),
            Report::Nodes {
                conn,
                at,
                wall,
                nodes,
            } => {
                let Some(members) = &mut self.members else {
                    return Ok((None, 0));
                };
                let Some(what) = members.nodes_read(&nodes) else {
                    return Ok((None, 0));
                };
                return self.take(
                    sinks,
                    Observation {
                        at,
                        wall,
                        conn,
                        what,
                    },
                    idle,
                );
            }
        };
        self.shared.permits.release(frames.len());
        let (mut required, mut notifications) = (None, 0u32);
        let last = frames.len().saturating_sub(1);
        for (i, obs) in frames.into_iter().enumerate() {
            let (stop, n) = self.take(sinks, obs, idle && i == last)?;
            required = required.or(stop);
            notifications = notifications.saturating_add(n);
        }
        Ok((required, notifications))
    }

    /// Takes one observation through the timeline to the sinks; `idle`: nothing else is waiting.
    /// Returns the `--require` stop, if this observation is one, and the notifications it held.
    fn take(
        &mut self,
        sinks: &mut Sinks<'_>,
        mut obs: Observation,
        idle: bool,
    ) -> anyhow::Result<(Option<StopReason>, u32)> {
        self.follow_sessions(obs.conn, &obs.what);
        match &mut obs.what {
            What::Connected(event::Connected { addr, .. }) => {
                if let Some(members) = &mut self.members {
                    members.connected(obs.conn, *addr);
                }
            }
            What::Handshake(event::Handshake {
                sim_speed: Some(announced),
                ..
            }) => {
                if let Some(warning) = self.learn_speed(announced) {
                    sinks.notice(&warning)?;
                }
            }
            _ => {}
        }
        let required = self.note_state(obs.conn, &obs.what);
        // The step is kept between observations (its room reused), taken out while this one's
        // lines and actions are carried out (an error ends the watch: its room is not missed).
        let mut step = std::mem::take(&mut self.step);
        self.timeline.observe_into(obs, &mut step);
        for line in &step.lines {
            self.emit(sinks, line)?;
        }
        // Flush when nothing else is waiting: live output stays live, and a flood is written in
        // large writes instead of one system call per line.
        if idle {
            sinks.flush()?;
            self.extra.flush()?;
        }
        if self.members.is_some() {
            for action in step.actions.drain(..) {
                self.act(action);
            }
            for notice in self.effects.notices.drain(..) {
                sinks.notice(&notice)?;
            }
        }
        let notifications = step.notifications;
        self.step = step;
        if notifications > 0 {
            self.notifications += u64::from(notifications);
            self.last_notification = Some(Instant::now());
            self.pace_dns();
        }
        Ok((required, notifications))
    }

    /// Tells the membership which connections have a session, and which lost theirs or failed
    /// to make one (a cluster's topology is read again then).
    fn follow_sessions(&mut self, conn: u32, what: &What) {
        let Some(members) = &mut self.members else {
            return;
        };
        match what {
            What::Handshake(event::Handshake { opt_in, .. })
                if *opt_in != OptInOutcome::AuthFailed =>
            {
                members.session_up(conn)
            }
            What::Closed(event::Closed { cause, .. }) => {
                members.session_down(conn, *cause != event::CloseCause::Watch)
            }
            What::ConnectFailed(event::ConnectFailed {
                retry_in: Some(_), ..
            }) => members.session_down(conn, true),
            _ => {}
        }
    }

    /// Keeps what the heartbeat reports (sessions up, opt-ins); returns the `--require` stop.
    fn note_state(&mut self, conn: u32, what: &What) -> Option<StopReason> {
        match what {
            What::Handshake(event::Handshake { opt_in, .. }) => {
                if *opt_in != OptInOutcome::AuthFailed {
                    self.up.insert(conn, *opt_in == OptInOutcome::Accepted);
                }
                if self.settings.engine.require && *opt_in != OptInOutcome::Accepted {
                    return Some(StopReason::Required(required_code(*opt_in)));
                }
            }
            What::Closed(event::Closed { .. }) => {
                self.up.remove(&conn);
            }
            _ => {}
        }
        None
    }

    /// `--heartbeat`: this endpoint's line.
    fn heartbeat(&mut self, sinks: &mut Sinks<'_>) -> std::io::Result<()> {
        let now = Instant::now();
        let secs = |d: Duration| (d.as_secs_f64() * 1e3).round() / 1e3;
        let beat = WatchLine::Heartbeat(line::Heartbeat {
            v: crate::observe::record::SCHEMA_VERSION,
            t: secs(now.saturating_duration_since(self.started)),
            at: crate::observe::record::wall(SystemTime::now()),
            conns: self.members.as_ref().map_or(0, |m| m.len() as u32),
            up: self.up.len() as u32,
            opted_in: self.up.values().filter(|&&accepted| accepted).count() as u32,
            notifications: self.notifications,
            since_notification_s: self
                .last_notification
                .map(|at| secs(now.saturating_duration_since(at))),
        });
        self.emit(sinks, &beat)
    }

    /// A new event may open or close a window: the DNS poller is told until when one is open.
    fn pace_dns(&self) {
        let Some((window, slot)) = &self.dns_window else {
            return;
        };
        let until = self
            .timeline
            .window_open_until(MAX_DRY_RUN_WINDOW_S)
            .map(tokio::time::Instant::from_std);
        window.set(*slot, until);
    }

    /// The simulator announced its speed: adopted unless `--sim-speed` was given.
    /// Adopts the simulator's announced speed unless `--sim-speed` was given; the warning to
    /// show (once) when the two differ.
    fn learn_speed(&mut self, announced: &mut SimSpeed) -> Option<String> {
        let speed = announced.announced;
        let settings = &self.settings;
        // Adopted on the clock every part of this endpoint reads (an impossible speed is not).
        if !settings.speed_given && speed != settings.clock.speed() {
            let _ = settings.clock.adopt(speed);
        }
        let used = settings.clock.speed();
        announced.used = used;
        announced.given = settings.speed_given;
        if speed == used || self.warned_speed {
            return None;
        }
        self.warned_speed = true;
        Some(format!(
            "warning: the simulator announces speed {speed} but --sim-speed {used} was given: \
             offsets are read at {used}"
        ))
    }

    fn act(&mut self, action: Action) {
        if let Action::RefreshTopology {
            conn,
            event,
            sources,
        } = action
        {
            if let Some(members) = &mut self.members {
                members.refresh(&self.settings.clock, conn, event, sources);
            }
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

    /// The summary of this endpoint, and how it ended.
    fn finish(
        mut self,
        sinks: &mut Sinks<'_>,
        reason: StopReason,
    ) -> anyhow::Result<(Option<String>, WatchEnd)> {
        let session_errors = self.shared.session_errors.load(Ordering::Acquire);
        let mut summary = self
            .timeline
            .summary(Instant::now(), SystemTime::now(), reason.name());
        if let WatchLine::Summary(line::Summary { notes, .. }) = &mut summary {
            notes.skipped_dry_runs = self.effects.skipped;
            notes.capped_windows = self.effects.capped;
            notes.session_errors = session_errors;
        }
        self.emit(sinks, &summary)?;
        self.extra.flush()?;
        let end = WatchEnd {
            reason,
            established: self.shared.established.load(Ordering::Acquire),
            session_errors,
            fatal: self.fatal.take(),
            capture_failed: self.extra.failed(),
        };
        Ok((self.label, end))
    }
}

/// The pace of one hostname's DNS poller: until when a window is open on any endpoint of that
/// name. Each endpoint has its own slot, so one window closing does not hide another's.
struct HostWindow {
    pace: tokio::sync::watch::Sender<Option<tokio::time::Instant>>,
    untils: std::sync::Mutex<Vec<Option<tokio::time::Instant>>>,
}

impl HostWindow {
    fn set(&self, slot: usize, until: Option<tokio::time::Instant>) {
        let mut untils = self.untils.lock().unwrap_or_else(|e| e.into_inner());
        untils[slot] = until;
        let latest = untils.iter().flatten().max().copied();
        self.pace.send_if_modified(|w| {
            let changed = *w != latest;
            *w = latest;
            changed
        });
    }
}

/// The DNS pollers: one per distinct hostname watched (none for an address or with
/// `--no-dns`), each change told to every endpoint of that name, each polling faster while a
/// window is open on one of them.
fn spawn_dns_pollers(
    engines: &mut [Engine<'_>],
    resolver: &Arc<DnsResolver>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut hosts: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, e) in engines.iter().enumerate() {
        let host = e.settings.connect.host();
        if e.settings.engine.dns && host.parse::<IpAddr>().is_err() {
            hosts.entry(host.to_string()).or_default().push(i);
        }
    }
    let mut tasks = Vec::new();
    for (host, members) in hosts {
        let settings = &engines[members[0]].settings;
        let pace = dns::PollPace {
            normal: settings.clock.to_real(settings.engine.dns_interval),
            open: settings.clock.to_real(settings.engine.dns_interval_open),
        };
        let timeout = settings.connect.dns_options().timeout;
        let (pace_tx, pace_rx) = tokio::sync::watch::channel(None);
        let window = Arc::new(HostWindow {
            pace: pace_tx,
            untils: std::sync::Mutex::new(vec![None; members.len()]),
        });
        let mut txs = Vec::with_capacity(members.len());
        for (slot, &i) in members.iter().enumerate() {
            engines[i].dns_window = Some((window.clone(), slot));
            txs.push(engines[i].tx.clone());
        }
        let (dtx, drx) = mpsc::unbounded_channel();
        tasks.push(dns::spawn_poller_paced(
            resolver.clone(),
            host.clone(),
            pace,
            timeout,
            pace_rx,
            dtx,
        ));
        tasks.push(tokio::spawn(forward_dns(host, drx, txs)));
    }
    tasks
}

/// Tells every endpoint of `host` what its poller saw.
async fn forward_dns(host: String, mut drx: mpsc::UnboundedReceiver<dns::DnsEvent>, txs: Vec<Tx>) {
    while let Some(ev) = drx.recv().await {
        for tx in &txs {
            let _ = tx.send(Report::Seen(Observation {
                at: ev.at.into_std(),
                wall: SystemTime::now(),
                conn: 0,
                what: What::Dns(event::Dns {
                    host: host.clone(),
                    kind: ev.kind.clone(),
                }),
            }));
        }
    }
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
    outcome.exit_code()
}

pub use crate::network::handoff::{MAX_DRY_RUNS, MAX_DRY_RUN_WINDOW_S};

/// The watch loop's side effects that are not lines: dry-runs and what they left out.
struct Effects {
    dry_runs: Arc<tokio::sync::Semaphore>,
    skipped: u64,
    capped: u64,
    /// Notes for stderr, handed to the sinks after each observation's actions.
    notices: Vec<String>,
}

impl Effects {
    /// `dry_runs` is shared by every endpoint: the bound is on the process.
    fn new(dry_runs: Arc<tokio::sync::Semaphore>) -> Effects {
        Effects {
            dry_runs,
            skipped: 0,
            capped: 0,
            notices: Vec::new(),
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
            if !settings.engine.handoff {
                return;
            }
            let Ok(permit) = effects.dry_runs.clone().try_acquire_owned() else {
                if effects.skipped == 0 {
                    effects.notices.push(format!(
                        "note: {MAX_DRY_RUNS} dry-runs are running; further MOVINGs get none \
                         until one ends (counted in the summary)"
                    ));
                }
                effects.skipped += 1;
                return;
            };
            if window_s > MAX_DRY_RUN_WINDOW_S {
                if effects.capped == 0 {
                    effects.notices.push(format!(
                        "note: a MOVING declares a window of {window_s} s; the dry-run waits \
                         {MAX_DRY_RUN_WINDOW_S} s at most (counted in the summary)"
                    ));
                }
                effects.capped += 1;
            }
            let input = HandoffInput {
                endpoint: EndpointHost::parse(settings.connect.host()),
                port: settings.connect.port(),
                current,
                successor: successor.map(|s| (s.host, s.port)),
                window_secs: window_s.min(MAX_DRY_RUN_WINDOW_S),
                poll_interval: settings.engine.handoff_poll,
            };
            let resolver = resolver.clone();
            let tx = tx.clone();
            let scenario = settings.clock.clone();
            tokio::spawn(async move {
                let clock = ScaledClock {
                    inner: handoff::TokioClock::new(),
                    scenario,
                };
                // Only a stop of the watch ends a dry-run early (its task is dropped then): its
                // verdict is what a close is compared with.
                let never = std::future::pending::<()>();
                let outcome = handoff::run(&input, &resolver, &clock, &mut RandJitter, never).await;
                drop(permit);
                observe(&tx, conn, What::Handoff(event::Handoff { event, outcome }));
            });
        }
        Action::CheckAdvertised { conn, addr } => {
            let host = settings.connect.host().to_string();
            if host.parse::<IpAddr>().is_ok() || !settings.engine.dns {
                return;
            }
            let resolver = resolver.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let res = handoff::Resolve::resolve(&*resolver, &host).await;
                let answer = handoff::advertised(&res, addr);
                observe(
                    &tx,
                    conn,
                    What::Advertised(event::Advertised { addr, answer }),
                );
            });
        }
        // A refresh is started by the loop.
        Action::RefreshTopology { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{HostWindow, StopReason, WatchEnd};
    use crate::exit;
    use std::time::Duration;

    #[test]
    fn one_endpoints_window_closing_does_not_slow_a_shared_hostnames_poller() {
        let (pace, rx) = tokio::sync::watch::channel(None);
        let window = HostWindow {
            pace,
            untils: std::sync::Mutex::new(vec![None; 2]),
        };
        let now = tokio::time::Instant::now();
        let (short, long) = (now + Duration::from_secs(5), now + Duration::from_secs(15));
        window.set(0, Some(short));
        window.set(1, Some(long));
        assert_eq!(*rx.borrow(), Some(long), "the latest window sets the pace");
        window.set(1, None);
        assert_eq!(
            *rx.borrow(),
            Some(short),
            "the other endpoint's window is still open"
        );
        window.set(0, None);
        assert_eq!(*rx.borrow(), None, "no window open: the normal pace");
    }

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
    fn a_fleet_exits_with_its_worst_endpoint() {
        let one = |reason, established, errors| WatchEnd {
            reason,
            established,
            session_errors: errors,
            fatal: None,
            capture_failed: false,
        };
        let fleet = |ends: Vec<WatchEnd>| {
            super::FleetEnd {
                ends: ends.into_iter().map(|e| (None, e)).collect(),
            }
            .exit_code()
        };
        assert_eq!(
            fleet(vec![
                one(StopReason::Duration, true, 0),
                one(StopReason::Duration, true, 0)
            ]),
            exit::SUCCESS
        );
        assert_eq!(
            fleet(vec![
                one(StopReason::Duration, true, 0),
                one(StopReason::Failed(exit::AUTH_FAILED), false, 0),
                one(StopReason::Duration, false, 0),
            ]),
            exit::AUTH_FAILED.max(exit::CONNECTION_FAILED)
        );
        assert_eq!(
            fleet(vec![
                one(StopReason::Interrupted, true, 0),
                one(StopReason::Interrupted, false, 0)
            ]),
            exit::INTERRUPTED
        );
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
