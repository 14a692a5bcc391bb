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
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, oneshot};

/// Everything the watch needs, validated, free of clap.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub connect: ConnectOptions,
    pub require: bool,
    pub duration: Option<Duration>,
    pub count: Option<u32>,
    pub json: bool,
    pub capture: Option<std::path::PathBuf>,
    pub traffic: Option<Duration>,
    pub dns_interval: Duration,
    pub dns: bool,
    pub handoff: bool,
    pub handoff_poll: Duration,
    /// Scenario seconds per real second (1 outside the simulator).
    pub speed: f64,
    pub color: bool,
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
        if !(args.sim_speed.is_finite() && args.sim_speed > 0.0) {
            anyhow::bail!(
                "--sim-speed must be a positive number, not {}",
                args.sim_speed
            );
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
            traffic: args.traffic,
            dns_interval: args.dns_interval,
            dns: !args.no_dns,
            handoff: !args.no_handoff,
            handoff_poll: args.handoff_poll,
            speed: args.sim_speed,
            color: Style::choose(args.color, args.json).color,
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

/// Why the watch stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Interrupted,
    Duration,
    Count,
    /// The caller's stop future completed (the demo's scenario ended).
    Ended,
    /// `--require` and the opt-in was not accepted.
    Required(i32),
}

impl StopReason {
    fn name(self) -> &'static str {
        match self {
            StopReason::Interrupted => "interrupted",
            StopReason::Duration => "duration",
            StopReason::Count => "count",
            StopReason::Ended => "ended",
            StopReason::Required(_) => "opt-in not accepted",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            StopReason::Interrupted => exit::INTERRUPTED,
            StopReason::Required(code) => code,
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
    let reason = watch(&settings, &mut sink, std::future::pending::<()>(), None).await?;
    Ok(reason.exit_code())
}

/// Where lines go: stdout (human or JSON) and optionally a capture file, flushed per line.
pub struct Sink<'a> {
    out: Box<dyn Write + 'a>,
    capture: Option<std::io::BufWriter<std::fs::File>>,
    json: bool,
    style: Style,
    countdown: Option<Countdown>,
}

impl<'a> Sink<'a> {
    pub fn new(settings: &WatchSettings, out: Box<dyn Write + 'a>) -> anyhow::Result<Sink<'a>> {
        let capture = match &settings.capture {
            Some(path) => Some(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .map_err(|e| anyhow::anyhow!("--capture {}: {e}", path.display()))?,
            )),
            None => None,
        };
        Ok(Sink {
            out,
            capture,
            json: settings.json,
            style: Style {
                color: settings.color,
            },
            countdown: if settings.countdown {
                Countdown::on_terminal(settings.speed)
            } else {
                None
            },
        })
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
            capture.write_all(&text)?;
            capture.flush()?;
        }
        let mut text = Vec::new();
        if self.json {
            serde_json::to_writer(&mut text, line)?;
            text.push(b'\n');
        } else {
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

    /// Flushes standard output (the capture is flushed line by line already).
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
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
}

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
) -> anyhow::Result<StopReason> {
    let start = Instant::now();
    let mut timeline = Timeline::new(start);
    timeline.set_speed(settings.speed);
    let resolver = Arc::new(DnsResolver::new(&settings.connect.dns_options())?);
    sink.emit(&timeline.start_line(SystemTime::now(), &settings.connect.display_endpoint()))?;

    let (tx, mut rx) = mpsc::unbounded_channel::<Observation>();
    // Frames waiting for the sinks are bounded: when output is slower than the server (a pub/sub
    // flood into a slow pipe), readers wait and TCP pushes back, instead of memory growing.
    let permits = Arc::new(Backpressure::default());
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
            &permits,
        );
        watched.insert(id, w);
    }
    let mut next_id = settings.connections.max(1) + 1;
    let mut nodes: Option<Vec<ClusterNode>> = None;
    let mut peers: HashMap<u32, std::net::SocketAddr> = HashMap::new();
    let host = settings.connect.host().to_string();
    if settings.dns && host.parse::<IpAddr>().is_err() {
        let (dtx, mut drx) = mpsc::unbounded_channel();
        tasks.push(dns::spawn_poller(
            resolver.clone(),
            host.clone(),
            settings.dns_interval.div_f64(settings.speed),
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

    let mut cancels: HashMap<u32, Vec<oneshot::Sender<()>>> = HashMap::new();
    let mut seen = 0u32;
    let deadline = async {
        match settings.duration {
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
    let mut redraw = tokio::time::interval(Duration::from_millis(100));
    let reason = loop {
        tokio::select! {
            biased;
            // A narrator (the demo's simulator) tells a step before its frames leave: cause first.
            Some(text) = async { notes.as_mut()?.recv().await }, if notes.is_some() => {
                sink.note(&text)?;
            }
            obs = rx.recv() => {
                let Some(mut obs) = obs else { break StopReason::Ended };
                match &obs.what {
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
                                    let mut w = Watched::spawn(next_id, settings, opts, false, &resolver, &tx, &permits);
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
                    _ => {}
                }
                let required = match &obs.what {
                    What::Handshake { opt_in, .. } if settings.require && *opt_in != OptInOutcome::Accepted => {
                        Some(required_code(*opt_in))
                    }
                    _ => None,
                };
                if matches!(obs.what, What::Frame { .. }) {
                    permits.release();
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
                    act(settings, &resolver, &tx, &mut cancels, action);
                }
                if let Some(code) = required {
                    break StopReason::Required(code);
                }
                seen += step.notifications;
                if settings.count.is_some_and(|n| seen >= n) {
                    break StopReason::Count;
                }
            }
            _ = redraw.tick() => sink.tick(),
            _ = &mut interrupted => break StopReason::Interrupted,
            () = &mut deadline => break StopReason::Duration,
            () = &mut stop => break StopReason::Ended,
        }
    };
    for t in &tasks {
        t.abort();
    }
    for w in watched.values() {
        w.task.abort();
    }
    sink.emit(&timeline.summary(Instant::now(), SystemTime::now(), reason.name()))?;
    sink.flush()?;
    Ok(reason)
}

fn required_code(outcome: OptInOutcome) -> i32 {
    match outcome {
        OptInOutcome::Accepted => exit::SUCCESS,
        OptInOutcome::Refused => exit::REFUSED,
        OptInOutcome::Resp3Unavailable => exit::RESP3_UNAVAILABLE,
        OptInOutcome::AuthFailed => exit::AUTH_FAILED,
    }
}

fn act(
    settings: &WatchSettings,
    resolver: &Arc<DnsResolver>,
    tx: &mpsc::UnboundedSender<Observation>,
    cancels: &mut HashMap<u32, Vec<oneshot::Sender<()>>>,
    action: Action,
) {
    match action {
        Action::StartHandoff {
            conn,
            event,
            window_s,
            successor,
            current,
            since,
        } => {
            if !settings.handoff {
                return;
            }
            let input = HandoffInput {
                endpoint: EndpointHost::parse(settings.connect.host()),
                port: settings.connect.port(),
                current,
                successor: successor.map(|s| (s.host, s.port)),
                window_secs: window_s,
                poll_interval: settings.handoff_poll,
            };
            let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
            cancels.entry(conn).or_default().push(cancel_tx);
            let resolver = resolver.clone();
            let tx = tx.clone();
            let speed = settings.speed;
            tokio::spawn(async move {
                let clock = ScaledClock {
                    inner: handoff::TokioClock::new(),
                    speed,
                };
                let outcome = handoff::run(&input, &resolver, &clock, &mut RandJitter, async {
                    let _ = cancel_rx.await;
                })
                .await;
                let _ = since;
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
        Action::RefreshTopology { .. } => {}
        Action::CancelHandoff { conn } => {
            // A dry-run outlives the close on purpose: its verdict is what the close is compared
            // with. Only a stop of the watch cancels it (the tasks are aborted then).
            let _ = (conn, cancels.get(&conn));
        }
    }
}

/// Frames read but not yet written out, across all connections.
const FRAMES_IN_FLIGHT: usize = 4096;

/// Bounds the frames between the readers and the sinks. Readers stop at the limit and are woken
/// only once the sinks have caught up by half of it, so a flood costs two atomic operations per
/// frame and one wake-up per two thousand, not a lock and a wake-up per frame.
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

/// Waits until the sinks have room for one more frame.
async fn frame_permit(bp: &Backpressure) {
    use std::sync::atomic::Ordering;
    loop {
        // Registered before the check, so a release in between is not missed.
        let room = bp.room.notified();
        if bp.in_flight.load(Ordering::Acquire) < FRAMES_IN_FLIGHT {
            break;
        }
        room.await;
    }
    bp.in_flight.fetch_add(1, Ordering::AcqRel);
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
        permits: &Arc<Backpressure>,
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
            permits.clone(),
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
    permits: Arc<Backpressure>,
) {
    let opts = &opts;
    let mut backoff = Backoff::default();
    loop {
        let mut connection = match conn::connect(opts, &resolver).await {
            Ok(c) => c,
            Err(e) => {
                let delay = backoff.next_delay(rand::random());
                observe(
                    &tx,
                    id,
                    What::ConnectFailed {
                        error: e.to_string(),
                        retry_in: Some(delay),
                    },
                );
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
                    frame_permit(&permits).await;
                    let _ = tx.send(frame_observation(id, r, true));
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
                        },
                    );
                }
                observe(
                    &tx,
                    id,
                    What::Closed {
                        cause: CloseCause::Error,
                        error: Some(format!("during the handshake: {e}")),
                    },
                );
                tokio::time::sleep(backoff.next_delay(rand::random())).await;
                continue;
            }
        };
        observe(&tx, id, handshake_observation(&handshake));
        let in_cluster = match settings.cluster {
            ClusterMode::On => true,
            ClusterMode::Off => false,
            ClusterMode::Auto => handshake.mode() == Some("cluster"),
        };
        for r in handshake.early {
            frame_permit(&permits).await;
            let _ = tx.send(frame_observation(id, r, true));
        }
        backoff.reset();
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
            let mut t = tokio::time::interval(d.max(Duration::from_millis(1)));
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
                        frame_permit(&permits).await;
                        let _ = tx.send(frame_observation(id, received, false));
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
        observe(
            &tx,
            id,
            What::Closed {
                cause: end.0,
                error: end.1,
            },
        );
        tokio::time::sleep(backoff.next_delay(rand::random())).await;
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
        text,
        server: h.server().map(str::to_string),
        version: h.version().map(str::to_string),
        mode: h.mode().map(str::to_string),
        sent: h.sent().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
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
}
