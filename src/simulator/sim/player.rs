//! The simulator's engine: its options, the state its servers share, the DNS and proxies
//! started, and the player that runs a scenario's steps on the scenario clock. Kept apart from
//! the folder's root, which is its map.

use super::cluster_slots::Topology;
use super::dns_server::SimDns;
use super::scenario::{Action, Hostile, Mode, Push, PushKind, Start, Step, To};
use crate::simulator::sim::{
    dns_server, fault_injector, proxy_api, server, sharded_pubsub, upstream, Scenario, SimEvent,
    What, Why,
};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

/// The DNS zone the simulator is authoritative for.
pub const ZONE: &str = "sim.maintwatch.test.";

/// The database hostname whose A records the scenario changes.
pub const HOSTNAME: &str = "db.sim.maintwatch.test.";

/// How many events a slow subscriber may fall behind before it loses the oldest.
pub(super) const EVENT_CAPACITY: usize = 4096;

/// Attempts at finding one port free on every proxy address before giving up.
pub(super) const PORT_ATTEMPTS: usize = 20;

/// How to run a scenario.
#[derive(Clone)]
pub struct SimOptions {
    pub scenario: Scenario,
    /// The scenario clock runs this many times faster than the wall clock (> 0).
    pub speed: f64,
    /// Port shared by every proxy; 0 picks a free one.
    pub port: u16,
    /// Require this password (AUTH / HELLO AUTH). Never printed.
    pub password: Option<String>,
    /// The ACL user the password belongs to (default: `default`). Needs a password.
    pub user: Option<String>,
    /// Replay the last MIGRATED / FAILED_OVER after an opt-in's `+OK` (if the scenario does too).
    pub catch_up: bool,
    /// Play the scenario again and again (see [`Simulator::finished`]).
    pub repeat: bool,
    /// Relay the commands the simulator does not own to this server (see [`upstream`]).
    pub upstream: Option<upstream::Upstream>,
    /// Narrate traffic ([`What::Traffic`]) for a grade; off by default, it costs an event per
    /// read.
    pub traffic: bool,
    /// Mark a scenario's end to maintwatch's own connections (on by default; the demo, which
    /// stops its watch at the end itself, turns it off).
    pub mark_end: bool,
    /// Serve cae-resp-proxy's HTTP API and its relaying nodes too ([`proxy_api`]).
    pub api: Option<proxy_api::ApiOptions>,
    /// Serve Redis Enterprise's fault injector API too ([`fault_injector`]); the scenario is
    /// then [`Scenario::fault_injector`].
    pub fault_injector: Option<fault_injector::FaultInjectorOptions>,
    /// Keep every event, in order, for a grade ([`Simulator::kept_events`]). The narration's
    /// broadcast drops the oldest events for a subscriber that falls behind, which is right for
    /// a terminal but not for a judge: on a loaded machine a verdict would rest on part of the
    /// run. A graded run is played once, so what is kept is bounded by its length.
    pub keep: bool,
}

impl SimOptions {
    /// Speed 1, a free port, no password, catch-up as the scenario says, played once.
    pub fn new(scenario: Scenario) -> SimOptions {
        SimOptions {
            scenario,
            speed: 1.0,
            port: 0,
            password: None,
            user: None,
            catch_up: true,
            repeat: false,
            upstream: None,
            traffic: false,
            mark_end: true,
            api: None,
            fault_injector: None,
            keep: false,
        }
    }
}

// Hand-written so that a password never reaches a log through `{:?}`.
impl fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimOptions")
            .field("scenario", &self.scenario.name)
            .field("speed", &self.speed)
            .field("port", &self.port)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("user", &self.user)
            .field("catch_up", &self.catch_up)
            .field("repeat", &self.repeat)
            .field("mark_end", &self.mark_end)
            .field("upstream", &self.upstream)
            .field("traffic", &self.traffic)
            .field("api", &self.api)
            .field("fault_injector", &self.fault_injector)
            .field("keep", &self.keep)
            .finish()
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid simulator options: {0}")]
    Options(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("no port was free on all of {addrs} after {attempts} attempts")]
    NoCommonPort { addrs: String, attempts: usize },
    #[error("cannot start the DNS server on 127.0.0.1: {0}")]
    Dns(std::io::Error),
}

/// What the player waits on to start the clock.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Triggers {
    /// Connections ever accepted.
    pub(super) connects: u64,
    /// Opt-in attempts ever answered (accepted or refused).
    pub(super) attempts: u64,
    /// Connections opted in right now.
    pub(super) opted_in: usize,
    /// Connection tasks still running (their sockets not yet closed).
    pub(super) live: usize,
    /// SUBSCRIBEs to `AzureRedisEvents` ever answered.
    pub(super) subscribed: u64,
    /// Sharded channels ever subscribed to (each channel of each SSUBSCRIBE answered).
    pub(super) ssubscribed: u64,
}

/// A message to a connection's task. Writes go through the task so that a notification can never
/// land in the middle of a reply.
pub(super) enum ConnMsg {
    Push(Arc<[u8]>, Why),
    /// A push written only once the connection is in that state (`push P when STATE raw`).
    PushWhen(Arc<[u8]>, Why, super::scenario::When),
    /// A hostile step, from the scenario line given.
    Hostile(Hostile, usize),
    /// A pub/sub frame (a sharded message, or the server's own SUNSUBSCRIBE): written between
    /// replies like a notification, but not one, so not narrated as one.
    Message(Arc<[u8]>),
    Close,
}

/// A MOVING whose window is open: its bytes, and what re-renders them for a connection that
/// asked for another form of the target.
#[derive(Clone)]
pub(super) struct OpenMoving {
    pub(super) bytes: Arc<[u8]>,
    pub(super) push: Push,
    pub(super) seq: i64,
}

impl OpenMoving {
    pub(super) fn for_conn(&self, port: u16, endpoint_type: Option<&str>) -> Arc<[u8]> {
        if self.push.asks() {
            self.push.encode_for(self.seq, port, endpoint_type).into()
        } else {
            self.bytes.clone()
        }
    }
}

/// A proxy's own host name, served by the simulator's DNS, for MOVING targets in an fqdn form:
/// `proxy-127-0-0-3.sim.maintwatch.test` (without the final dot).
pub fn proxy_host(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("proxy-{a}-{b}-{c}-{d}.{}", ZONE.trim_end_matches('.'))
}

pub(super) struct ConnEntry {
    pub(super) proxy: Ipv4Addr,
    pub(super) opted_in: bool,
    /// The `moving-endpoint-type` of its opt-in, if any.
    pub(super) endpoint_type: Option<String>,
    /// It named itself maintwatch: the end of a scenario is marked to it.
    pub(super) watch: bool,
    /// Its sharded channels (on this node), at most [`sharded_pubsub::CHANNELS_MAX`].
    pub(super) sharded: BTreeSet<Vec<u8>>,
    /// Its channels (SUBSCRIBE), at most [`sharded_pubsub::CHANNELS_MAX`]: in an Azure scenario,
    /// whether it hears `AzureRedisEvents`.
    pub(super) subscribed: BTreeSet<Vec<u8>>,
    /// Its protocol when it last subscribed: how its pub/sub frames are written.
    pub(super) resp3: bool,
    pub(super) tx: mpsc::UnboundedSender<ConnMsg>,
}

/// Everything the player and the connections share, behind one lock so that "opted in" and
/// "sent the push" can never disagree (a push either reaches a connection through its queue or,
/// for an open MOVING, through the opt-in's re-send, never both and never neither).
pub(super) struct State {
    pub(super) next_conn: u64,
    pub(super) conns: HashMap<u64, ConnEntry>,
    /// The database's one sequence counter (docs/protocol.md section 3).
    pub(super) seq: i64,
    /// Last MIGRATED / FAILED_OVER, replayed to new opt-ins.
    pub(super) retained: Option<Arc<[u8]>>,
    /// MOVING frames whose window is open, per proxy; ended by that proxy's close.
    pub(super) open_moving: HashMap<Ipv4Addr, OpenMoving>,
    /// The open MIGRATING / FAILING_OVER / SMIGRATING and the proxies it went to, kept only
    /// with [`Shared::resend_windows`]; ended by its completion.
    pub(super) open_window: Option<(Arc<[u8]>, Vec<Ipv4Addr>)>,
    pub(super) topology: Topology,
    pub(super) keys: HashMap<(u8, Vec<u8>), Vec<u8>>,
    /// Every sharded channel ever subscribed to, at most [`sharded_pubsub::CHANNELS_MAX`]: what a
    /// `spublish` tick publishes on.
    pub(super) channels: BTreeSet<Vec<u8>>,
}

impl State {
    /// A fresh database: no connection yet, its counter at `seq`, nothing retained or open.
    fn new(seq: i64, topology: Topology) -> State {
        State {
            next_conn: 1,
            conns: HashMap::new(),
            seq,
            retained: None,
            open_moving: HashMap::new(),
            open_window: None,
            topology,
            keys: HashMap::new(),
            channels: BTreeSet::new(),
        }
    }
}

pub(super) struct Shared {
    pub(super) scenario: Scenario,
    /// [`Scenario::is_azure`], asked once: the relay asks for every command.
    pub(super) azure: bool,
    pub(super) speed: f64,
    /// [`SimOptions::mark_end`].
    pub(super) mark_end: bool,
    pub(super) port: u16,
    /// The scenario's TTL scaled to the speed (at least 1 s).
    pub(super) ttl: u32,
    pub(super) password: Option<String>,
    pub(super) user: String,
    pub(super) catch_up: bool,
    pub(super) upstream: Option<upstream::Upstream>,
    pub(super) traffic: bool,
    pub(super) events: broadcast::Sender<SimEvent>,
    /// [`SimOptions::keep`]: every event, none lost.
    pub(super) kept: Option<Mutex<Vec<SimEvent>>>,
    pub(super) state: Mutex<State>,
    pub(super) clock: Mutex<Option<Instant>>,
    pub(super) triggers: watch::Sender<Triggers>,
    pub(super) listening: HashMap<Ipv4Addr, watch::Sender<bool>>,
    pub(super) shutdown: watch::Receiver<bool>,
    /// An `optin refuse` step ran (and no `optin accept` since): opt-ins are refused.
    pub(super) refusing: AtomicBool,
    /// Until when each proxy holds its replies (`stall` steps); one entry per proxy at most.
    pub(super) stalls: Mutex<HashMap<Ipv4Addr, tokio::time::Instant>>,
    /// Proxies that answer as OSS-cluster nodes besides a cluster scenario's own (the fault
    /// injector's OSS-cluster databases, [`fault_injector::OSS_NODES`]).
    pub(super) cluster_nodes: Vec<Ipv4Addr>,
    /// An open MIGRATING / FAILING_OVER / SMIGRATING is re-sent to a connection that opts in
    /// during its window (the fault injector's mode: what the suites expect of Redis Enterprise,
    /// docs/fault-injector.md; no capture shows it, so scenarios do not do it).
    pub(super) resend_windows: bool,
    /// Steps played beside the scenario's own (the fault injector's actions), numbered past its
    /// lines, so that a grade reads their windows, targets and moves as a scenario step's.
    pub(super) played_steps: Mutex<Vec<Step>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a bug already reported; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn clock(&self) -> Option<f64> {
        self.clock_at(Instant::now())
    }

    /// The scenario clock at `now`: for an event whose other figures were read at that instant.
    pub(super) fn clock_at(&self, now: Instant) -> Option<f64> {
        let start = *self.clock.lock().unwrap_or_else(|e| e.into_inner());
        start.map(|s| now.saturating_duration_since(s).as_secs_f64() * self.speed)
    }

    pub(super) fn emit(&self, what: What) {
        self.emit_read_at(Instant::now(), what);
    }

    /// An event whose figures were read at `now`, on the scenario clock of that same instant: a
    /// preemption between two readings would move what the judge computes from both (a wait's
    /// start, so a give-up just before a stall's end would be dated after it).
    pub(super) fn emit_read_at(&self, now: Instant, what: What) {
        self.emit_stamped(SystemTime::now(), self.clock_at(now), what);
    }

    pub(super) fn emit_at(&self, at: SystemTime, what: What) {
        self.emit_stamped(at, self.clock(), what);
    }

    /// An event stamped before it was emitted: at the moment it took effect, when that must come
    /// before whatever it causes on the timeline.
    pub(super) fn emit_stamped(&self, at: SystemTime, clock: Option<f64>, what: What) {
        let event = SimEvent { at, clock, what };
        if let Some(kept) = &self.kept {
            kept.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(event.clone());
        }
        // No subscriber is fine: the narration is optional.
        let _ = self.events.send(event);
    }

    /// Until when this proxy holds its replies, when a stall is on now.
    pub(super) fn stalled(&self, proxy: Ipv4Addr) -> Option<tokio::time::Instant> {
        let stalls = self.stalls.lock().unwrap_or_else(|e| e.into_inner());
        stalls
            .get(&proxy)
            .copied()
            .filter(|until| *until > tokio::time::Instant::now())
    }

    /// Whether this proxy answers as an OSS-cluster node (CLUSTER SLOTS, `-MOVED`, SSUBSCRIBE).
    pub(super) fn is_cluster_node(&self, proxy: Ipv4Addr) -> bool {
        self.scenario.is_cluster() || self.cluster_nodes.contains(&proxy)
    }

    /// One scenario second of real time.
    pub(super) fn second(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.speed)
    }

    pub(super) fn addr(&self, ip: Ipv4Addr) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(ip), self.port)
    }

    /// Republishes the opted-in count after the connection table changed.
    pub(super) fn sync_opted_in(&self, state: &State) {
        let n = state.conns.values().filter(|c| c.opted_in).count();
        self.triggers.send_if_modified(|t| {
            let changed = t.opted_in != n;
            t.opted_in = n;
            changed
        });
    }
}

/// A running simulator.
pub struct Simulator {
    pub(super) shared: Arc<Shared>,
    /// `None` once shut down.
    pub(super) dns: Option<Arc<SimDns>>,
    pub(super) dns_addr: SocketAddr,
    pub(super) first_events: Mutex<Option<broadcast::Receiver<SimEvent>>>,
    pub(super) finished: watch::Receiver<bool>,
    pub(super) tasks: Vec<JoinHandle<()>>,
    pub(super) shutdown: watch::Sender<bool>,
    /// Where the proxy API answers and its nodes as started, with `--proxy-api`.
    pub(super) api: Option<(SocketAddr, Vec<SocketAddr>)>,
    /// Where the fault injector API answers, with `--fault-injector-api`.
    pub(super) fault_injector: Option<SocketAddr>,
}

impl Simulator {
    /// Binds every proxy on one port and the DNS server, publishes the initial records, and starts
    /// the scenario (whose clock waits for its `start` condition).
    pub async fn start(opts: SimOptions) -> Result<Simulator, SimError> {
        check_options(&opts)?;
        let scenario = opts.scenario;
        let (port, mut listeners) = bind_proxies(&scenario.proxies, opts.port).await?;
        let narrator: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>> = Arc::default();
        let (dns, ttl) = start_dns(&scenario, opts.speed, narrator.clone()).await?;
        let dns_addr = dns.addr();

        let (events, first) = broadcast::channel(EVENT_CAPACITY);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (finished_tx, finished_rx) = watch::channel(false);
        let mut listening = HashMap::new();
        let mut wants = Vec::new();
        for ip in &scenario.proxies {
            let (tx, rx) = watch::channel(!scenario.initially_down.contains(ip));
            listening.insert(*ip, tx);
            wants.push(rx);
        }
        let topology = initial_topology(&scenario);
        let shared = Arc::new(Shared {
            cluster_nodes: fault_injector::cluster_nodes(opts.fault_injector.as_ref()),
            resend_windows: opts.fault_injector.is_some(),
            played_steps: Mutex::new(Vec::new()),
            speed: opts.speed,
            mark_end: opts.mark_end,
            port,
            ttl,
            catch_up: opts.catch_up && scenario.catch_up,
            user: opts.user.unwrap_or_else(|| "default".into()),
            password: opts.password,
            upstream: opts.upstream,
            traffic: opts.traffic,
            events,
            kept: opts.keep.then(|| Mutex::new(Vec::new())),
            state: Mutex::new(State::new(scenario.first_seq, topology)),
            clock: Mutex::new(None),
            triggers: watch::channel(Triggers::default()).0,
            listening,
            shutdown: shutdown_rx,
            refusing: AtomicBool::new(false),
            stalls: Mutex::new(HashMap::new()),
            azure: scenario.is_azure(),
            scenario,
        });

        let _ = narrator.set(Arc::downgrade(&shared));
        let mut tasks = Vec::new();
        // Before anything else is spawned: a port it cannot bind ends the start cleanly.
        let fi = fault_injector::bind(opts.fault_injector).await?;
        let api = match opts.api {
            Some(a) => {
                let handle = proxy_api::start(shared.clone(), a).await?;
                tasks.extend(handle.tasks);
                Some((handle.addr, handle.nodes))
            }
            None => None,
        };
        let dns = Arc::new(dns);
        let fault_injector = match fi {
            Some(fi) => Some(fault_injector::start(&shared, &dns, fi, &mut tasks).await),
            None => None,
        };
        for (i, want) in wants.into_iter().enumerate() {
            let ip = shared.scenario.proxies[i];
            // A proxy that starts down gives its socket back now; `up` binds it again.
            let listener = listeners[i].take().filter(|_| *want.borrow());
            tasks.push(tokio::spawn(server::listen(
                shared.clone(),
                ip,
                listener,
                want,
            )));
        }
        tasks.push(tokio::spawn(play(
            shared.clone(),
            dns.clone(),
            opts.repeat,
            finished_tx,
        )));
        Ok(Simulator {
            api,
            fault_injector,
            shared,
            dns: Some(dns),
            dns_addr,
            first_events: Mutex::new(Some(first)),
            finished: finished_rx,
            tasks,
            shutdown: shutdown_tx,
        })
    }

    /// Where the proxy API answers, and its nodes as started (`--proxy-api`).
    pub fn api(&self) -> Option<(SocketAddr, &[SocketAddr])> {
        self.api.as_ref().map(|(a, n)| (*a, n.as_slice()))
    }

    /// Where the fault injector API answers (`--fault-injector-api`).
    pub fn fault_injector(&self) -> Option<SocketAddr> {
        self.fault_injector
    }

    /// The port every proxy listens on.
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Every proxy's address (including ones not listening yet).
    pub fn proxies(&self) -> Vec<SocketAddr> {
        self.shared
            .scenario
            .proxies
            .iter()
            .map(|ip| self.shared.addr(*ip))
            .collect()
    }

    /// Where the DNS server answers, UDP and TCP.
    pub fn dns_addr(&self) -> SocketAddr {
        self.dns_addr
    }

    /// The database hostname (fully qualified, with the final dot).
    pub fn hostname(&self) -> &'static str {
        HOSTNAME
    }

    /// The database hostname as a client writes it: without the final dot.
    pub fn host(&self) -> &'static str {
        HOSTNAME.trim_end_matches('.')
    }

    /// The endpoint as a `redis://` URL a client connects to (through the simulator's DNS).
    pub fn url(&self) -> String {
        format!("redis://{}:{}", self.host(), self.port())
    }

    /// Scenario seconds since the clock started (at speed 1), `None` before it has started.
    pub fn clock(&self) -> Option<f64> {
        self.shared.clock()
    }

    /// The simulator's DNS, also served at `bind` (UDP and TCP) until the returned server is
    /// shut down (see [`SimDns::serve_also`]).
    pub async fn serve_dns_also(&self, bind: SocketAddr) -> std::io::Result<SimDns> {
        match &self.dns {
            Some(dns) => dns.serve_also(bind).await,
            None => Err(std::io::Error::other("the simulator was shut down")),
        }
    }

    /// The clock's speed (scenario seconds per real second).
    pub fn speed(&self) -> f64 {
        self.shared.speed
    }

    /// The scenario being played.
    pub fn scenario(&self) -> &Scenario {
        &self.shared.scenario
    }

    /// The scenario with the steps played beside it (the fault injector's actions) after its
    /// own: what a grade of the run reads.
    pub fn played_scenario(&self) -> Scenario {
        let mut s = self.shared.scenario.clone();
        let played = self
            .shared
            .played_steps
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        s.steps.extend(played.iter().cloned());
        s
    }

    /// The DNS TTL actually served (the scenario's, divided by the speed, at least 1 s).
    pub fn ttl(&self) -> u32 {
        self.shared.ttl
    }

    /// The narration. The first call receives every event since [`Simulator::start`] (so a
    /// `start now` scenario loses nothing); later calls receive events from then on.
    pub fn events(&self) -> broadcast::Receiver<SimEvent> {
        let first = self
            .first_events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        first.unwrap_or_else(|| self.shared.events.subscribe())
    }

    /// Every event since [`Simulator::start`], in order, none lost, when [`SimOptions::keep`]
    /// asked for them (empty otherwise); taken, so a second call gets those emitted since.
    pub fn kept_events(&self) -> Vec<SimEvent> {
        self.shared.kept.as_ref().map_or_else(Vec::new, |k| {
            std::mem::take(&mut *k.lock().unwrap_or_else(|e| e.into_inner()))
        })
    }

    /// Resolves when the scenario has ended (never, when it repeats). The servers keep serving
    /// until [`Simulator::shutdown`].
    pub async fn finished(&self) {
        let mut rx = self.finished.clone();
        // An error means the player is gone, which only happens at shutdown: nothing to wait for.
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Stops the player, every listener and connection, and the DNS server, and waits until
    /// every socket is closed.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        let tasks = std::mem::take(&mut self.tasks);
        for task in &tasks {
            task.abort();
        }
        for task in tasks {
            let _ = task.await;
        }
        // Connection tasks see the shutdown signal and close their sockets. Bounded, because a
        // task stuck writing to a client that stopped reading must not hang the caller forever.
        let mut live = self.shared.triggers.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(2), live.wait_for(|t| t.live == 0)).await;
        // The player held the other reference to the DNS server; it has ended.
        if let Some(dns) = self.dns.take().and_then(|d| Arc::try_unwrap(d).ok()) {
            dns.shutdown().await;
        }
    }
}

/// Refuses options no scenario can run with, before anything is bound.
pub(super) fn check_options(opts: &SimOptions) -> Result<(), SimError> {
    if let Err(e) = crate::shared::clock::ScenarioClock::check(opts.speed) {
        return Err(SimError::Options(e.to_string()));
    }
    if opts.user.is_some() && opts.password.is_none() {
        return Err(SimError::Options("a user needs a password".into()));
    }
    Ok(())
}

/// Starts the DNS server with the scenario's initial records and its TTL scaled by the speed
/// (at least 1 s); returns the server and that TTL. The narration of queries needs the shared
/// state, which needs this TTL first: the closure finds it through `narrator` once it exists
/// (and never keeps it alive). When a push asks for addresses, each proxy gets a name too.
pub(super) async fn start_dns(
    scenario: &Scenario,
    speed: f64,
    narrator: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>>,
) -> Result<(SimDns, u32), SimError> {
    let on_query: dns_server::OnQuery = Arc::new(move |from, name| {
        if let Some(shared) = narrator.get().and_then(std::sync::Weak::upgrade) {
            shared.emit(What::Resolved { from, name });
        }
    });
    let dns = SimDns::start_narrated(SocketAddr::from(([127, 0, 0, 1], 0)), ZONE, Some(on_query))
        .await
        .map_err(SimError::Dns)?;
    let ttl = ((f64::from(scenario.ttl) / speed).ceil() as u32).max(1);
    dns.set_records(HOSTNAME, &scenario.dns, ttl).await;
    if scenario
        .steps
        .iter()
        .any(|s| matches!(&s.action, Action::Push { push, .. } if push.asks()))
    {
        for ip in &scenario.proxies {
            let name = format!("{}.", proxy_host(*ip));
            dns.set_records(&name, &[IpAddr::V4(*ip)], ttl).await;
        }
    }
    Ok((dns, ttl))
}

/// Dropped without [`Simulator::shutdown`] (a test that panicked, say): stop everything anyway,
/// without waiting.
impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Binds every proxy address on one port: the first on `port` (or a free one), the others on the
/// same number, trying again with a new port when one is taken on some address.
pub(super) async fn bind_proxies(
    proxies: &[Ipv4Addr],
    port: u16,
) -> Result<(u16, Vec<Option<TcpListener>>), SimError> {
    let attempts = if port == 0 { PORT_ATTEMPTS } else { 1 };
    for _ in 0..attempts {
        let mut listeners = Vec::with_capacity(proxies.len());
        let mut chosen = port;
        let mut taken = false;
        for ip in proxies {
            let addr = SocketAddr::new(IpAddr::V4(*ip), chosen);
            match TcpListener::bind(addr).await {
                Ok(l) => {
                    if chosen == 0 {
                        chosen = l
                            .local_addr()
                            .map_err(|source| SimError::Bind { addr, source })?
                            .port();
                    }
                    listeners.push(Some(l));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && port == 0 => {
                    taken = true;
                    break;
                }
                Err(source) => return Err(SimError::Bind { addr, source }),
            }
        }
        if !taken {
            return Ok((chosen, listeners));
        }
    }
    Err(SimError::NoCommonPort {
        addrs: proxies
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        attempts,
    })
}

pub(super) fn initial_topology(s: &Scenario) -> Topology {
    let nodes: Vec<(Ipv4Addr, Vec<(u16, u16)>)> = s
        .cluster
        .iter()
        .map(|n| (n.addr, n.slots.clone()))
        .collect();
    Topology::new(&nodes)
}

/// How long after the opt-in that starts it the scenario clock starts (real time, at any speed).
pub const JOIN_GAP: Duration = Duration::from_millis(250);

/// The player: waits for the start condition, runs the steps on the scaled clock, ends, and on a
/// loop resets the deployment and does it again.
pub(super) async fn play(
    shared: Arc<Shared>,
    dns: Arc<SimDns>,
    repeat: bool,
    finished: watch::Sender<bool>,
) {
    let scenario = &shared.scenario;
    let scaled = |secs: f64| Duration::from_secs_f64(secs / shared.speed);
    let mut iteration = 0;
    loop {
        iteration += 1;
        let mut triggers = shared.triggers.subscribe();
        let base = *triggers.borrow();
        let refusing = scenario.mode == Mode::Refusing;
        // wait_for fails only when the sender is gone, i.e. never while `shared` lives.
        match scenario.start {
            Start::Now => {}
            Start::Connect => {
                let _ = triggers.wait_for(|t| t.connects > base.connects).await;
            }
            Start::Subscribe => {
                let _ = triggers.wait_for(|t| t.subscribed > base.subscribed).await;
            }
            Start::OptIn(n) | Start::OptInSsubscribe(n) => {
                let sharded = matches!(scenario.start, Start::OptInSsubscribe(_));
                // A refusing server never accepts an opt-in: there the attempt starts the clock.
                let _ = triggers
                    .wait_for(|t| {
                        (t.opted_in >= n || (refusing && t.attempts > base.attempts))
                            && (!sharded || t.ssubscribed > base.ssubscribed)
                    })
                    .await;
                // A step at 0 sent right behind the opt-in's +OK lands in the same read as it
                // on a busy machine, where a client takes it for the catch-up of a window already
                // open: the clock starts a moment later, as a real maintenance is not timed to
                // anyone's opt-in.
                tokio::time::sleep(JOIN_GAP).await;
            }
        }
        let t0 = tokio::time::Instant::now();
        *shared.clock.lock().unwrap_or_else(|e| e.into_inner()) = Some(t0.into_std());
        shared.emit(What::Started { iteration });
        for step in &scenario.steps {
            tokio::time::sleep_until(t0 + scaled(step.at)).await;
            run_step(&shared, &dns, step).await;
        }
        if !scenario.end.is_finite() {
            // The proxy API alone (`Scenario::api_only`): it runs until it is stopped.
            return std::future::pending().await;
        }
        tokio::time::sleep_until(t0 + scaled(scenario.end)).await;
        if shared.mark_end {
            mark_end(&shared, iteration);
        }
        shared.emit(What::Finished { iteration });
        if !repeat {
            let _ = finished.send(true);
            return;
        }
        reset(&shared, &dns).await;
    }
}

/// Tells maintwatch's own connections that the scenario ended, so that the close that follows
/// (a `--loop` round's reset, or the simulator stopping) reads as a test's end, not an incident.
/// No real server sends this push; a client under test never gets it (docs/protocol.md section 2).
pub(super) fn mark_end(shared: &Shared, iteration: u64) {
    let name = crate::shared::clock::SCENARIO_END;
    let bytes: Arc<[u8]> = format!(">2\r\n${}\r\n{name}\r\n:{iteration}\r\n", name.len())
        .into_bytes()
        .into();
    for c in shared.lock().conns.values().filter(|c| c.watch) {
        let _ = c.tx.send(ConnMsg::Push(bytes.clone(), Why::ScenarioEnd));
    }
}

/// A stall step: the proxies hold their replies until `millis` of real time from now (the
/// client's timeouts run on the wall clock, so the speed does not shorten it).
pub(super) fn start_stall(shared: &Shared, line: usize, to: &To, millis: u64) {
    let targets = match to {
        To::All => shared.scenario.proxies.clone(),
        To::One(p) => vec![*p],
    };
    // Stamped before the proxies see it: a command held by it is then never timed before the
    // stall began. Stamped after, a thread the machine's load paused between the two let a
    // proxy hold a command first, and the judge left that wait out of the stall.
    let (at, clock) = (SystemTime::now(), shared.clock());
    let until = tokio::time::Instant::now() + Duration::from_millis(millis);
    {
        let mut stalls = shared.stalls.lock().unwrap_or_else(|e| e.into_inner());
        for p in &targets {
            stalls.insert(*p, until);
        }
    }
    let what = What::Stalled {
        line,
        proxies: targets.iter().map(|p| shared.addr(*p)).collect(),
        seconds: millis as f64 / 1000.0,
    };
    shared.emit_stamped(at, clock, what);
}

pub(super) async fn run_step(shared: &Shared, dns: &SimDns, step: &Step) {
    match &step.action {
        Action::Push { to, push } => {
            let targets = match to {
                To::All => shared.scenario.proxies.clone(),
                To::One(p) => vec![*p],
            };
            broadcast_push(shared, step.line, &targets, push);
        }
        Action::Dns(records) => {
            dns.set_records(HOSTNAME, records, shared.ttl).await;
            shared.emit(What::Dns {
                records: records.clone(),
                ttl: shared.ttl,
            });
        }
        Action::Close { proxy, restart } => {
            let (connections, opted_in, closing) = close_proxy(shared, Some(*proxy));
            // Narrated before the connections learn of it, so every Disconnected it causes comes
            // after it (the grade counts the connections still open at this event as cut).
            shared.emit(What::Closed {
                proxy: shared.addr(*proxy),
                connections,
                opted_in,
                restart: *restart,
            });
            for tx in closing {
                let _ = tx.send(ConnMsg::Close);
            }
        }
        Action::Down(p) | Action::Up(p) => {
            let up = matches!(step.action, Action::Up(_));
            if let Some(tx) = shared.listening.get(p) {
                // The listener task narrates once the socket is really open or closed.
                tx.send_replace(up);
            }
        }
        Action::Assign { slots, node } => assign(shared, slots, *node),
        Action::OptIn(accept) => {
            shared.refusing.store(!accept, Ordering::Relaxed);
            shared.emit(What::Say {
                line: step.line,
                text: format!(
                    "from now on the opt-in is {}",
                    if *accept {
                        "accepted"
                    } else {
                        "refused as Redis OSS refuses it"
                    }
                ),
            });
        }
        Action::Say(text) => shared.emit(What::Say {
            line: step.line,
            text: text.clone(),
        }),
        Action::Stall { to, millis } => start_stall(shared, step.line, to, *millis),
        Action::ShardPublish { tick } => sharded_pubsub::publish(shared, *tick),
        Action::Azure { to, message } => {
            let targets = match to {
                To::All => shared.scenario.proxies.clone(),
                To::One(p) => vec![*p],
            };
            sharded_pubsub::publish_azure(shared, step.line, &targets, message);
        }
        Action::Hostile { to, kind } => {
            let targets = match to {
                To::All => shared.scenario.proxies.clone(),
                To::One(p) => vec![*p],
            };
            let st = shared.lock();
            let recipients: Vec<&ConnEntry> = st
                .conns
                .values()
                .filter(|c| c.opted_in && targets.contains(&c.proxy))
                .collect();
            shared.emit(What::Pushed {
                line: step.line,
                summary: format!("hostile {kind}"),
                seq: None,
                proxies: targets.iter().map(|p| shared.addr(*p)).collect(),
                recipients: recipients.len(),
            });
            for c in recipients {
                let _ = c.tx.send(ConnMsg::Hostile(*kind, step.line));
            }
        }
    }
}

/// Slots change owner; the sharded subscriptions they take away end with it.
pub(super) fn assign(shared: &Shared, slots: &[(u16, u16)], node: Ipv4Addr) {
    shared.lock().topology.assign(slots, node);
    let text = slots
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    shared.emit(What::Assigned {
        slots: text,
        node: shared.addr(node),
    });
    sharded_pubsub::end_moved(shared);
}

/// Numbers the push from the database counter, remembers what must be replayed or re-sent, and
/// queues it to every opted-in connection of the targets, all under one lock.
pub(super) fn broadcast_push(shared: &Shared, line: usize, targets: &[Ipv4Addr], push: &Push) {
    let mut st = shared.lock();
    let seq = push.kind().map(|_| {
        let s = st.seq;
        st.seq += 1;
        s
    });
    let bytes: Arc<[u8]> = push.encode(seq.unwrap_or(0), shared.port).into();
    match push.kind() {
        Some(PushKind::Moving) => {
            let open = OpenMoving {
                bytes: bytes.clone(),
                push: push.clone(),
                seq: seq.unwrap_or(0),
            };
            for p in targets {
                st.open_moving.insert(*p, open.clone());
            }
        }
        Some(k) if k.is_retained() => st.retained = Some(bytes.clone()),
        _ => {}
    }
    if shared.resend_windows {
        match push.kind() {
            Some(PushKind::Migrating | PushKind::FailingOver | PushKind::SMigrating) => {
                st.open_window = Some((bytes.clone(), targets.to_vec()));
            }
            Some(PushKind::Migrated | PushKind::FailedOver | PushKind::SMigrated) => {
                st.open_window = None;
            }
            _ => {}
        }
    }
    let recipients: Vec<&ConnEntry> = st
        .conns
        .values()
        .filter(|c| c.opted_in && targets.contains(&c.proxy))
        .collect();
    // Narrated before the frames go out, so the narration reads cause then effect.
    shared.emit(What::Pushed {
        line,
        summary: push.summary(shared.port),
        seq,
        proxies: targets.iter().map(|p| shared.addr(*p)).collect(),
        recipients: recipients.len(),
    });
    for c in recipients {
        let bytes = if push.asks() {
            let asked = c.endpoint_type.as_deref();
            push.encode_for(seq.unwrap_or(0), shared.port, asked).into()
        } else {
            bytes.clone()
        };
        let msg = match push {
            Push::RawWhen(_, when) => ConnMsg::PushWhen(bytes, Why::Step { line }, *when),
            _ => ConnMsg::Push(bytes, Why::Step { line }),
        };
        // A send fails only if the connection task already ended; it is about to leave the table.
        let _ = c.tx.send(msg);
    }
}

/// Takes every connection of `proxy` (of every proxy for `None`) out of the table; returns (all,
/// opted in, the queues to send the close to).
pub(super) fn close_proxy(
    shared: &Shared,
    proxy: Option<Ipv4Addr>,
) -> (usize, usize, Vec<mpsc::UnboundedSender<ConnMsg>>) {
    let mut st = shared.lock();
    let ids: Vec<u64> = st
        .conns
        .iter()
        .filter(|(_, c)| proxy.is_none_or(|p| c.proxy == p))
        .map(|(id, _)| *id)
        .collect();
    let mut opted_in = 0;
    let mut closing = Vec::new();
    for id in &ids {
        if let Some(c) = st.conns.remove(id) {
            opted_in += usize::from(c.opted_in);
            closing.push(c.tx);
        }
    }
    match proxy {
        Some(p) => {
            st.open_moving.remove(&p);
        }
        None => st.open_moving.clear(),
    }
    shared.sync_opted_in(&st);
    (ids.len(), opted_in, closing)
}

/// Between loop iterations: the deployment goes back to how the scenario starts. The counter and
/// the retained completion survive, as they do on a real database.
pub(super) async fn reset(shared: &Shared, dns: &SimDns) {
    let s = &shared.scenario;
    dns.set_records(HOSTNAME, &s.dns, shared.ttl).await;
    shared.emit(What::Dns {
        records: s.dns.clone(),
        ttl: shared.ttl,
    });
    for (ip, tx) in &shared.listening {
        tx.send_replace(!s.initially_down.contains(ip));
    }
    shared.lock().topology = initial_topology(s);
    shared.refusing.store(false, Ordering::Relaxed);
    shared
        .stalls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    let (connections, _, closing) = close_proxy(shared, None);
    shared.emit(What::Reset { connections });
    for tx in closing {
        let _ = tx.send(ConnMsg::Close);
    }
}
