//! `maintwatch watch`: the live watch, wiring connection, DNS poller, dry-run handoff and
//! timeline together.
//!
//! Every source sends an [`Observation`] down one channel to one loop that owns the timeline and
//! the sinks, so ordering between sources is the order of arrival and nothing is printed from two
//! places. The connection task never gives up on its own: it reconnects with bounded, jittered
//! exponential backoff until the watch stops.

use crate::cli::watch::WatchArgs;
use crate::cluster::{self, ClusterNode};
use crate::conn::{self, ConnectOptions};
use crate::dns::{self, DnsResolver};
use crate::exit;
use crate::handoff::{self, Clock, EndpointHost, HandoffInput, RandJitter};
use crate::output::countdown::Countdown;
use crate::output::human::{self, Style};
use crate::record::{FrameRecord, OptInOutcome, WatchLine};
use crate::timeline::{Action, CloseCause, Observation, Timeline, What};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Everything the watch needs, validated, free of clap.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub connect: ConnectOptions,
    pub require: bool,
    pub duration: Option<Duration>,
    pub count: Option<u32>,
    pub json: bool,
    pub capture: Option<std::path::PathBuf>,
    /// What to do with an existing capture file.
    pub capture_mode: CaptureMode,
    pub traffic: Option<Duration>,
    pub dns_interval: Duration,
    pub dns: bool,
    pub handoff: bool,
    pub handoff_poll: Duration,
    /// Scenario seconds per real second (1 outside the simulator).
    pub speed: f64,
    /// `--sim-speed` was given: a speed the simulator announces is compared, not adopted.
    pub speed_given: bool,
    pub color: bool,
    /// How a human line shows its time (`--time-format`).
    pub time: human::TimeFormat,
    /// Show detail lines (each successful PING) in human output.
    pub verbose: bool,
    /// Show the open-window countdown (on stderr, only when it is a terminal).
    pub countdown: bool,
    /// Parallel connections to the endpoint (a node-wide close takes them all).
    pub connections: u32,
    /// Channels to SUBSCRIBE to on each connection, to see pub/sub beside maintenance pushes.
    pub subscribe: Vec<String>,
    /// CLIENT TRACKING ON BCAST on each connection, to see invalidations.
    pub tracking: bool,
    /// Watch every node of an OSS cluster.
    pub cluster: ClusterMode,
    /// With a cluster, watch the masters only.
    pub masters_only: bool,
}

/// What `--capture` does with a file that already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Refuse it (the default: a typo must not overwrite last week's capture).
    New,
    /// `--append`.
    Append,
    /// `--force`: truncate it.
    Truncate,
}

/// Whether to watch a whole cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterMode {
    /// When HELLO reports mode `cluster`.
    Auto,
    On,
    Off,
}

impl WatchSettings {
    pub fn from_args(args: &WatchArgs) -> anyhow::Result<WatchSettings> {
        let speed = args.sim_speed.unwrap_or(1.0);
        if !(speed.is_finite() && speed > 0.0) {
            anyhow::bail!("--sim-speed must be a positive number, not {speed}");
        }
        if args.count == Some(0) {
            anyhow::bail!("--count must be at least 1");
        }
        let connect = match &args.url {
            Some(url) => {
                let config = args.connect.config();
                let options = config.options_for(url)?;
                config.check_tls_flags_apply(std::slice::from_ref(&options))?;
                options
            }
            None => ConnectOptions::from_args(&args.connect)?,
        };
        Ok(WatchSettings {
            connect,
            require: args.require,
            duration: args.duration,
            count: args.count,
            json: args.json,
            capture: args.capture.clone(),
            capture_mode: if args.append {
                CaptureMode::Append
            } else if args.force {
                CaptureMode::Truncate
            } else {
                CaptureMode::New
            },
            traffic: args.traffic.map(traffic_floor),
            dns_interval: args.dns_interval,
            dns: !args.no_dns,
            handoff: !args.no_handoff,
            handoff_poll: args.handoff_poll,
            speed,
            speed_given: args.sim_speed.is_some(),
            color: Style::choose(args.color, args.json).color,
            time: args.time_format,
            verbose: args.verbose,
            countdown: !args.json,
            connections: args.connections,
            subscribe: args.subscribe.clone(),
            tracking: args.tracking,
            cluster: if args.cluster {
                ClusterMode::On
            } else if args.no_cluster {
                ClusterMode::Off
            } else {
                ClusterMode::Auto
            },
            masters_only: args.masters_only,
        })
    }
}

/// The shortest `--traffic` interval: below it a watch would flood the server it observes
/// (`--traffic 0` meant a PING per millisecond).
pub const TRAFFIC_FLOOR: Duration = Duration::from_millis(10);

/// Raises a `--traffic` interval to [`TRAFFIC_FLOOR`], saying so on stderr.
fn traffic_floor(interval: Duration) -> Duration {
    if interval < TRAFFIC_FLOOR {
        eprintln!(
            "maintwatch: warning: --traffic {interval:?} is below the {} ms floor: sending a PING every {} ms",
            TRAFFIC_FLOOR.as_millis(),
            TRAFFIC_FLOOR.as_millis()
        );
        return TRAFFIC_FLOOR;
    }
    interval
}

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

pub async fn run(args: &WatchArgs) -> anyhow::Result<i32> {
    let settings = WatchSettings::from_args(args)?;
    args.connect.warn_command_line_password(args.url.as_slice());
    for note in settings.connect.notes() {
        eprintln!("maintwatch: note: {note}");
    }
    if settings.connect.insecure() {
        eprintln!(
            "maintwatch: warning: --insecure: the server's certificate is NOT verified; anyone on the path can read and change this session"
        );
    }
    let stdout = std::io::stdout();
    // Rust's stdout flushes at every newline; the watch decides when to flush instead.
    let out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut sink = Sink::new(&settings, Box::new(out))?;
    let end = watch(&settings, &mut sink, std::future::pending::<()>(), None).await?;
    if let Some(message) = &end.fatal {
        eprintln!("maintwatch: {message}");
    }
    if !end.established && end.reason == StopReason::Duration {
        eprintln!("maintwatch: no session was established before --duration ended the watch");
    }
    Ok(end.exit_code())
}

/// Where lines go: stdout (human or JSON) and optionally a capture file, flushed per line.
pub struct Sink<'a> {
    out: Box<dyn Write + 'a>,
    capture: Option<Capture>,
    /// The capture failed (a full disk): it was reported and closed, the watch went on.
    capture_failed: bool,
    json: bool,
    style: Style,
    countdown: Option<Countdown>,
    verbose: bool,
}

/// The capture file and its name for errors.
struct Capture {
    file: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
}

impl<'a> Sink<'a> {
    pub fn new(settings: &WatchSettings, out: Box<dyn Write + 'a>) -> anyhow::Result<Sink<'a>> {
        let capture = match &settings.capture {
            Some(path) => Some(Capture {
                file: std::io::BufWriter::new(
                    open_capture(path, settings.capture_mode)
                        .map_err(|e| anyhow::anyhow!("--capture {}: {e}", path.display()))?,
                ),
                path: path.clone(),
            }),
            None => None,
        };
        Ok(Sink {
            out,
            capture,
            capture_failed: false,
            json: settings.json,
            style: Style {
                color: settings.color,
                time: settings.time,
            },
            verbose: settings.verbose,
            countdown: if settings.countdown {
                Countdown::on_terminal(settings.speed)
            } else {
                None
            },
        })
    }

    /// Whether writing the capture failed at some point.
    pub fn capture_failed(&self) -> bool {
        self.capture_failed
    }

    /// Writes a line that is not part of the timeline (the demo's simulator narration), under
    /// the same care for the countdown.
    pub fn note(&mut self, text: &str) -> anyhow::Result<()> {
        let out = &mut self.out;
        let mut write = || -> std::io::Result<()> {
            writeln!(out, "{text}")?;
            out.flush()
        };
        match &self.countdown {
            Some(c) => c.suspend(write)?,
            None => write()?,
        }
        Ok(())
    }

    /// Refreshes the countdown, if one is shown.
    pub fn tick(&mut self) {
        if let Some(c) = &mut self.countdown {
            c.tick();
        }
    }

    pub fn emit(&mut self, line: &WatchLine) -> anyhow::Result<()> {
        if let Some(capture) = &mut self.capture {
            // One whole line per write and a flush after it: a killed watch leaves at most one
            // torn line at the end of the capture.
            let mut text = serde_json::to_vec(line)?;
            text.push(b'\n');
            let written = capture
                .file
                .write_all(&text)
                .and_then(|()| capture.file.flush());
            if let Err(e) = written {
                // The watch goes on without it: what is on stdout, and the summary, still count.
                eprintln!(
                    "maintwatch: --capture {}: {e}; the capture stops here, the watch goes on",
                    capture.path.display()
                );
                self.capture = None;
                self.capture_failed = true;
            }
        }
        let mut text = Vec::new();
        if self.json {
            serde_json::to_writer(&mut text, line)?;
            text.push(b'\n');
        } else if self.verbose || !human::is_detail(line) {
            for l in human::render(line, &self.style) {
                text.extend_from_slice(l.as_bytes());
                text.push(b'\n');
            }
        }
        let out = &mut self.out;
        match &mut self.countdown {
            Some(c) => {
                // Under a countdown the line must be on the terminal before the bar is redrawn.
                c.suspend(|| -> std::io::Result<()> {
                    out.write_all(&text)?;
                    out.flush()
                })?;
                c.on_line(line);
            }
            None => out.write_all(&text)?,
        }
        Ok(())
    }

    /// Before the summary of an interrupted watch: the countdown is cleared, and a human summary
    /// starts on a line of its own rather than after the `^C` the terminal echoed.
    pub fn interrupted(&mut self) -> anyhow::Result<()> {
        use std::io::IsTerminal;
        // A bar being cleared takes the echoed `^C` with it, leaving a fresh line; without one,
        // the `^C` sits at the start of the line the summary would begin on.
        let mut bars = false;
        if let Some(c) = &mut self.countdown {
            bars = c.is_active();
            c.clear();
        }
        if !bars && !self.json && std::io::stdout().is_terminal() {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Reads offsets at a speed learnt after the watch started (the simulator announced it).
    pub fn set_speed(&mut self, speed: f64) {
        if let Some(c) = &mut self.countdown {
            c.set_speed(speed);
        }
    }

    /// Flushes standard output (the capture is flushed line by line already).
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }
}

/// Opens the capture file: created 0600, never through a symlink, and an existing file only as
/// `mode` allows.
fn open_capture(path: &std::path::Path, mode: CaptureMode) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let existing = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let Some(before) = existing else {
        // O_CREAT|O_EXCL: fails on anything that appeared meanwhile, a symlink included.
        return std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    };
    if before.file_type().is_symlink() {
        return Err(std::io::Error::other(
            "is a symbolic link; give the file itself",
        ));
    }
    if mode == CaptureMode::New {
        return Err(std::io::Error::other(
            "already exists; --append adds to it, --force empties it",
        ));
    }
    // Opened without truncating, then checked to be the file that was looked at: a symlink
    // swapped in between is refused before anything is written or emptied.
    let file = std::fs::OpenOptions::new()
        .append(mode == CaptureMode::Append)
        .write(true)
        .open(path)?;
    let opened = file.metadata()?;
    if (opened.dev(), opened.ino()) != (before.dev(), before.ino()) {
        return Err(std::io::Error::other("changed while it was being opened"));
    }
    if mode == CaptureMode::Truncate && opened.is_file() {
        file.set_len(0)?;
    }
    Ok(file)
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

fn observe(tx: &mpsc::UnboundedSender<Observation>, conn: u32, what: What) {
    let _ = tx.send(Observation {
        at: Instant::now(),
        wall: SystemTime::now(),
        conn,
        what,
    });
}

/// Runs a watch until Ctrl-C, `--duration`, `--count`, `--require` or `stop` completes.
pub async fn watch(
    settings: &WatchSettings,
    sink: &mut Sink<'_>,
    stop: impl Future<Output = ()>,
    mut notes: Option<mpsc::UnboundedReceiver<String>>,
) -> anyhow::Result<WatchEnd> {
    // The speed may be learnt from the simulator's HELLO reply: this copy is the one that is.
    let mut settings = settings.clone();
    let settings = &mut settings;
    let start = Instant::now();
    let mut timeline = Timeline::new(start);
    timeline.set_speed(settings.speed);
    let resolver = Arc::new(DnsResolver::new(&settings.connect.dns_options())?);
    sink.emit(&timeline.start_line(SystemTime::now(), &settings.connect.display_endpoint()))?;

    let (tx, mut rx) = mpsc::unbounded_channel::<Observation>();
    // Frames waiting for the sinks are bounded: when output is slower than the server (a pub/sub
    // flood into a slow pipe), readers wait and TCP pushes back, instead of memory growing.
    let (fatal_tx, mut fatal_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        permits: Backpressure::default(),
        established: AtomicBool::new(false),
        session_errors: AtomicU64::new(0),
        fatal: fatal_tx,
    });
    let mut tasks = Vec::new();
    let mut watched: HashMap<u32, Watched> = HashMap::new();
    for id in 1..=settings.connections.max(1) {
        // Only the first connection reads the cluster's topology.
        let w = Watched::spawn(
            id,
            settings,
            settings.connect.clone(),
            id == 1,
            &resolver,
            &tx,
            &shared,
        );
        watched.insert(id, w);
    }
    let mut next_id = settings.connections.max(1) + 1;
    let mut nodes: Option<Vec<ClusterNode>> = None;
    let mut peers: HashMap<u32, std::net::SocketAddr> = HashMap::new();
    let host = settings.connect.host().to_string();
    if settings.dns && host.parse::<IpAddr>().is_err() {
        let (dtx, mut drx) = mpsc::unbounded_channel();
        tasks.push(dns::spawn_poller_bounded(
            resolver.clone(),
            host.clone(),
            settings.dns_interval.div_f64(settings.speed),
            settings.connect.dns_options().timeout,
            dtx,
        ));
        let tx = tx.clone();
        let host = host.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = drx.recv().await {
                let _ = tx.send(Observation {
                    at: ev.at.into_std(),
                    wall: SystemTime::now(),
                    conn: 0,
                    what: What::Dns {
                        host: host.clone(),
                        kind: ev.kind,
                    },
                });
            }
        }));
    }

    let mut effects = Effects::default();
    let mut fatal = None;
    let mut seen = 0u32;
    let mut warned_speed = false;
    let duration = settings.duration;
    let deadline = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    tokio::pin!(stop);
    // One future for the whole watch: a fresh ctrl_c() per loop turn only hears signals sent
    // after it was first polled, so a Ctrl-C arriving while a turn was busy was lost.
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut terminate = unix_signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangup = unix_signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut redraw = tokio::time::interval(Duration::from_millis(100));
    let reason = loop {
        tokio::select! {
            biased;
            // The stop conditions come before the frames: under a flood a frame is always
            // ready, and a biased select that looked at frames first would never see them.
            _ = &mut interrupted => break StopReason::Interrupted,
            _ = terminate.recv() => break StopReason::Terminated,
            _ = hangup.recv() => break StopReason::Hangup,
            () = &mut deadline => break StopReason::Duration,
            Some((code, message)) = fatal_rx.recv() => {
                fatal = Some(message);
                break StopReason::Failed(code);
            }
            _ = redraw.tick() => sink.tick(),
            // A narrator (the demo's simulator) tells a step before its frames leave: cause first.
            Some(text) = async { notes.as_mut()?.recv().await }, if notes.is_some() => {
                sink.note(&text)?;
            }
            obs = rx.recv() => {
                let Some(mut obs) = obs else { break StopReason::Ended };
                match &mut obs.what {
                    What::Connected { addr, .. } => {
                        peers.insert(obs.conn, *addr);
                    }
                    What::Nodes(found) => {
                        let found: Vec<ClusterNode> = found
                            .iter()
                            .filter(|n| !settings.masters_only || n.is_master())
                            .cloned()
                            .collect();
                        let reason = if nodes.is_some() { "refreshed" } else { "discovered" };
                        let before = nodes.take().unwrap_or_default();
                        let (added, removed) = cluster::diff(&before, &found);
                        for node in &added {
                            let addr = node.addr();
                            let covered = watched.iter_mut().find(|(id, w)| {
                                w.node.is_none() && peers.get(id).is_some_and(|p| p.to_string() == addr)
                            });
                            match covered {
                                Some((_, w)) => w.node = Some(addr),
                                None => {
                                    let opts = settings.connect.for_node(&node.host, node.port);
                                    let mut w = Watched::spawn(next_id, settings, opts, false, &resolver, &tx, &shared);
                                    w.node = Some(addr);
                                    watched.insert(next_id, w);
                                    next_id += 1;
                                }
                            }
                        }
                        for node in &removed {
                            let addr = node.addr();
                            let gone: Vec<u32> = watched
                                .iter()
                                .filter(|(_, w)| w.node.as_deref() == Some(addr.as_str()))
                                .map(|(id, _)| *id)
                                .collect();
                            for id in gone {
                                if let Some(w) = watched.remove(&id) {
                                    w.task.abort();
                                    observe(&tx, id, What::Closed {
                                        cause: CloseCause::Watch,
                                        error: Some(format!("{addr} left the cluster")),
                                        retry_in: None,
                                    });
                                }
                            }
                        }
                        nodes = Some(found.clone());
                        obs.what = What::Topology {
                            reason: reason.into(),
                            nodes: found.iter().map(ClusterNode::addr).collect(),
                            added: added.iter().map(ClusterNode::addr).collect(),
                            removed: removed.iter().map(ClusterNode::addr).collect(),
                        };
                    }
                    What::Handshake { sim_speed: Some(announced), .. } => {
                        let speed = announced.announced;
                        if !settings.speed_given && speed != settings.speed {
                            settings.speed = speed;
                            timeline.set_speed(speed);
                            sink.set_speed(speed);
                        }
                        announced.used = settings.speed;
                        announced.given = settings.speed_given;
                        if speed != settings.speed && !warned_speed {
                            warned_speed = true;
                            eprintln!(
                                "maintwatch: warning: the simulator announces speed {speed} but --sim-speed {} was given: offsets are read at {}",
                                settings.speed, settings.speed
                            );
                        }
                    }
                    _ => {}
                }
                let required = match &obs.what {
                    What::Handshake { opt_in, .. } if settings.require && *opt_in != OptInOutcome::Accepted => {
                        Some(required_code(*opt_in))
                    }
                    _ => None,
                };
                if matches!(obs.what, What::Frame { .. }) {
                    shared.permits.release();
                }
                let step = timeline.observe(obs);
                for line in &step.lines {
                    sink.emit(line)?;
                }
                // Flush when nothing else is waiting: live output stays live, and a flood is
                // written in large writes instead of one system call per line.
                if rx.is_empty() {
                    sink.flush()?;
                }
                for action in step.actions {
                    if let Action::RefreshTopology { conn, event, sources } = action {
                        refresh(settings, &watched, &tx, conn, event, sources);
                        continue;
                    }
                    act(settings, &resolver, &tx, &mut effects, action);
                }
                if let Some(code) = required {
                    break StopReason::Required(code);
                }
                seen += step.notifications;
                if settings.count.is_some_and(|n| seen >= n) {
                    break StopReason::Count;
                }
            }
            // The demo's end comes after its frames: the scenario's last push is part of it.
            () = &mut stop => break StopReason::Ended,
        }
    };
    for t in &tasks {
        t.abort();
    }
    drain_after_stop(watched, &mut rx, &mut timeline, sink).await?;
    if matches!(
        reason,
        StopReason::Interrupted | StopReason::Terminated | StopReason::Hangup
    ) {
        sink.interrupted()?;
    }
    let session_errors = shared.session_errors.load(Ordering::Acquire);
    let mut summary = timeline.summary(Instant::now(), SystemTime::now(), reason.name());
    if let WatchLine::Summary { notes, .. } = &mut summary {
        notes.skipped_dry_runs = effects.skipped;
        notes.capped_windows = effects.capped;
        notes.session_errors = session_errors;
    }
    sink.emit(&summary)?;
    sink.flush()?;
    Ok(WatchEnd {
        reason,
        established: shared.established.load(Ordering::Acquire),
        session_errors,
        fatal,
        capture_failed: sink.capture_failed(),
    })
}

/// Stops the connection tasks and writes whatever they had read: a reader puts a frame in the
/// channel before it waits for room, so once the tasks are gone the channel holds all of it
/// (at most [`FRAMES_IN_FLIGHT`] frames and a few other observations). No action is taken on
/// them: the watch is ending.
async fn drain_after_stop(
    watched: HashMap<u32, Watched>,
    rx: &mut mpsc::UnboundedReceiver<Observation>,
    timeline: &mut Timeline,
    sink: &mut Sink<'_>,
) -> anyhow::Result<()> {
    for w in watched.values() {
        w.task.abort();
    }
    for w in watched.into_values() {
        let _ = w.task.await;
    }
    while let Ok(obs) = rx.try_recv() {
        for line in &timeline.observe(obs).lines {
            sink.emit(line)?;
        }
    }
    Ok(())
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

/// What the connection tasks share with the watch loop.
struct Shared {
    permits: Backpressure,
    /// Set by the first completed handshake: permanent errors stop the watch only before it.
    established: AtomicBool,
    session_errors: AtomicU64,
    /// A permanent error before any session: the exit code and the message for stderr.
    fatal: mpsc::UnboundedSender<(i32, String)>,
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

/// A Unix signal stream, with the signal named when it cannot be installed.
fn unix_signal(
    kind: tokio::signal::unix::SignalKind,
) -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind)
        .map_err(|e| anyhow::anyhow!("cannot listen for signal {}: {e}", kind.as_raw_value()))
}

fn required_code(outcome: OptInOutcome) -> i32 {
    match outcome {
        OptInOutcome::Accepted => exit::SUCCESS,
        OptInOutcome::Refused => exit::REFUSED,
        OptInOutcome::Resp3Unavailable => exit::RESP3_UNAVAILABLE,
        OptInOutcome::AuthFailed => exit::AUTH_FAILED,
    }
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
    tx: &mpsc::UnboundedSender<Observation>,
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
            since: _,
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
        // A dry-run outlives the close on purpose (see above); a refresh is started by the loop.
        Action::RefreshTopology { .. } | Action::CancelHandoff { .. } => {}
    }
}

/// Frames read but not yet written out, across all connections.
const FRAMES_IN_FLIGHT: usize = 4096;

/// Bounds the frames between the readers and the sinks. A reader hands each frame over first
/// and waits for room after, so a frame once read is always in the channel (a stop drains it);
/// past the limit readers wait and are woken only once the sinks have caught up by half of it,
/// so a flood costs two atomic operations per frame and one wake-up per two thousand.
#[derive(Default)]
struct Backpressure {
    in_flight: std::sync::atomic::AtomicUsize,
    room: tokio::sync::Notify,
}

impl Backpressure {
    /// Called by the watch loop when a frame has been written.
    fn release(&self) {
        use std::sync::atomic::Ordering;
        let before = self.in_flight.fetch_sub(1, Ordering::AcqRel);
        if before == FRAMES_IN_FLIGHT / 2 {
            self.room.notify_waiters();
        }
    }
}

/// Hands a frame to the watch loop, then waits until the sinks have room for more.
async fn hand_over(bp: &Backpressure, tx: &mpsc::UnboundedSender<Observation>, obs: Observation) {
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
enum ConnCmd {
    /// Read the cluster topology (CLUSTER SHARDS, else CLUSTER SLOTS) and report it.
    Topology,
}

/// A connection task and how to reach it.
struct Watched {
    task: tokio::task::JoinHandle<()>,
    cmds: mpsc::UnboundedSender<ConnCmd>,
    /// The cluster node it watches, once the topology named it.
    node: Option<String>,
}

impl Watched {
    fn spawn(
        id: u32,
        settings: &WatchSettings,
        opts: ConnectOptions,
        discover: bool,
        resolver: &Arc<DnsResolver>,
        tx: &mpsc::UnboundedSender<Observation>,
        shared: &Arc<Shared>,
    ) -> Watched {
        let (cmds, cmd_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(connection_task(
            id,
            settings.clone(),
            opts,
            discover,
            resolver.clone(),
            tx.clone(),
            cmd_rx,
            shared.clone(),
        ));
        Watched {
            task,
            cmds,
            node: None,
        }
    }
}

/// The dry-run's answer to an SMIGRATED that moved slots off our nodes (reported at once), then
/// the real refresh after the same jitter, so the new topology is watched.
fn refresh(
    settings: &WatchSettings,
    watched: &HashMap<u32, Watched>,
    tx: &mpsc::UnboundedSender<Observation>,
    conn: u32,
    event: usize,
    sources: Vec<String>,
) {
    // Up to 1 s of jitter, as clients spread their refreshes (scenario seconds).
    let jitter_s: f64 = rand::random::<f64>();
    observe(
        tx,
        conn,
        What::Refresh {
            event,
            jitter_s,
            sources,
        },
    );
    let asker = watched
        .get(&1)
        .or_else(|| watched.get(&conn))
        .map(|w| w.cmds.clone());
    let delay = Duration::from_secs_f64(jitter_s / settings.speed);
    if let Some(cmds) = asker {
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = cmds.send(ConnCmd::Topology);
        });
    }
}

/// One watched connection: connect, handshake, read until closed, back off, again.
// Each argument is a different shared handle the task owns a clone of; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
async fn connection_task(
    id: u32,
    settings: WatchSettings,
    opts: ConnectOptions,
    discover: bool,
    resolver: Arc<DnsResolver>,
    tx: mpsc::UnboundedSender<Observation>,
    mut cmds: mpsc::UnboundedReceiver<ConnCmd>,
    shared: Arc<Shared>,
) {
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
    use super::{Backoff, StopReason, WatchEnd};
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
        b.session_ended(super::HEALTHY_SESSION);
        assert_eq!(b.next_delay(1.0), Duration::from_millis(100));
    }
}
