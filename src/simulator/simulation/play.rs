//! A simulation run end to end: the simulator started from the settings, its upstream, capture
//! and client, the narration printed, the run graded. Kept apart from the folder's root, which is
//! its map.

use super::client::{Client, Target};
use super::grade::Grade;
use super::start::{AtBound, StartWatch};
use crate::exit;
use crate::grading::judge::{ClientProcess, Observations};
use crate::present::output::{human, terminal};
use crate::simulator::sim::capture::Capture;
use crate::simulator::sim::dns_server::SimDns;
use crate::simulator::sim::scenario::{Mode, Scenario, Start};
use crate::simulator::sim::upstream::{Address, SpawnedRedis, Upstream};
use crate::simulator::sim::{SimEvent, Simulator, What};
use crate::simulator::simulation::{
    client, grade, SimulationSettings, TooLoaded, UpstreamChoice, Verbosity,
};
use anyhow::{anyhow, Context};
use std::io::Write;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

/// One scenario played to its end (or the client's, or a signal's), with what a grade needs.
pub struct Played {
    pub scenario: Scenario,
    pub seen: Vec<SimEvent>,
    /// Events the narration lost (the output was too slow).
    pub lost: u64,
    pub stop: Stop,
    pub process: Option<ClientProcess>,
}

/// A graded run: the grade, what it was made from, and how the run stopped.
pub struct Graded {
    pub scenario: Scenario,
    /// Every event of the run (`--report` draws the frames sent from them).
    pub seen: Vec<SimEvent>,
    pub grade: Grade,
    pub obs: Observations,
    pub lost: u64,
    pub stop: Stop,
}

/// Plays the scenario of `settings` with a grade: `simulate --grade -- CMD`, and each scenario of
/// `certify`. `None` after a usage error was printed.
pub async fn graded(
    args: &SimulationSettings,
    signals: &mut Signals,
) -> anyhow::Result<Option<Graded>> {
    let Some(played) = play(args, signals).await? else {
        return Ok(None);
    };
    let mut obs = grade::observations(&played.scenario, &played.seen, args.speed);
    obs.client_process = played.process;
    let grade = crate::grading::judge::judge(&obs);
    Ok(Some(Graded {
        scenario: played.scenario,
        seen: played.seen,
        grade,
        obs,
        lost: played.lost,
        stop: played.stop,
    }))
}

/// Starts the upstream, the simulator and CMD, follows the scenario, and stops them all, on
/// every path out. `None` after a usage error was printed.
pub async fn play(
    args: &SimulationSettings,
    signals: &mut Signals,
) -> anyhow::Result<Option<Played>> {
    let scenario = args.scenario.load()?;
    // Started before the simulator so that a redis-server that cannot start stops everything
    // before anything is printed; dropped (killed) on every path out of here.
    let (upstream, spawned) = start_upstream(&args.upstream).await?;
    let grading = args.grading();
    let mut opts = args.sim_options(scenario, upstream.clone());
    opts.api = api_options(args, upstream.as_ref(), spawned.as_ref())?;
    let sim = Simulator::start(opts)
        .await
        .context("starting the simulator")?;
    let mut events = sim.events();
    if !args.silent() {
        print_banner(&sim, args, upstream.as_ref(), spawned.as_ref())?;
    }
    let (mut client, port53, capture) = start_client(&sim, args).await?;
    let mut run = Narration::default();
    let stop = run
        .follow(&mut events, signals, client.as_mut(), args)
        .await?;
    let process = match client {
        Some(c) => Some(c.finish(|| sim.clock()).await),
        None => None,
    };
    // What happened up to the stop (the client's own disconnects included) is in the grade:
    // every event the simulator kept, whatever the narration had to skip.
    run.drain(&mut events, args)?;
    if grading {
        run.seen = sim.kept_events();
        run.lost = 0;
    }
    run.dns_count(args)?;
    if let Some(c) = capture {
        c.stop().context("--pcap: capturing")?;
    }
    if let Some(d) = port53 {
        d.shutdown().await;
    }
    let scenario = sim.played_scenario();
    sim.shutdown().await;
    if let Some(s) = spawned {
        s.stop().await;
    }
    Ok(Some(Played {
        scenario,
        seen: run.seen,
        lost: run.lost,
        stop,
        process,
    }))
}

/// A frame the simulator sent: when (scenario seconds, -1 before the clock started), on which
/// connection, and its bytes. A report draws them; a `certify` worker hands them back.
pub type SentFrame = (f64, u64, Vec<u8>);

/// The frames a run sent, in order.
pub fn sent_frames(seen: &[SimEvent]) -> Vec<SentFrame> {
    seen.iter()
        .filter_map(|e| match &e.what {
            What::Sent { conn, bytes, .. } => {
                Some((e.clock.unwrap_or(-1.0), *conn, bytes.to_vec()))
            }
            _ => None,
        })
        .collect()
}

/// What a page of a graded run is drawn from beside the judge's observations: the frames the
/// simulator sent, and sentences about how the run ended.
pub fn report_parts(run: &Graded) -> (crate::present::report::Collected, Vec<String>) {
    page_parts(
        &sent_frames(&run.seen),
        observed_until(&run.seen),
        run.lost,
        run.stop,
    )
}

/// The clock of a run's last event (the scenario's end, or the client's last close): a page is
/// observed until then, though the last frame went out long before.
pub fn observed_until(seen: &[SimEvent]) -> Option<f64> {
    seen.iter().filter_map(|e| e.clock).reduce(f64::max)
}

/// [`report_parts`] from the frames sent, the events lost and how the run stopped.
pub fn page_parts(
    sent: &[SentFrame],
    until: Option<f64>,
    lost: u64,
    stop: Stop,
) -> (crate::present::report::Collected, Vec<String>) {
    let mut lines = crate::present::report::Collected::default();
    for (t, conn, bytes) in sent {
        lines.sent(*t, *conn, bytes);
    }
    if let Some(t) = until {
        lines.observed_until(t);
    }
    let mut notes = Vec::new();
    if lost > 0 {
        notes.push(format!(
            "{lost} events were lost (the output was too slow); figures may be low"
        ));
    }
    match stop {
        Stop::Signal(name, _) => notes.push(format!(
            "stopped by {name} before the scenario ended: this is what happened so far"
        )),
        Stop::ClientExited => notes.push(
            "the client exited before the scenario ended: this is what happened so far".into(),
        ),
        Stop::NeverStarted(_) => notes.push(
            "the scenario never started (it waits for opt-ins): this is what happened".into(),
        ),
        Stop::Ended => {}
    }
    (lines, notes)
}

/// The upstream the settings name, and the redis-server started for it.
pub(super) async fn start_upstream(
    choice: &UpstreamChoice,
) -> anyhow::Result<(Option<Upstream>, Option<SpawnedRedis>)> {
    Ok(match choice {
        UpstreamChoice::None => (None, None),
        UpstreamChoice::Spawn => {
            let s = SpawnedRedis::start().await.map_err(|e| anyhow!(e))?;
            (Some(s.upstream()), Some(s))
        }
        UpstreamChoice::At(up) => (Some(up.clone()), None),
    })
}

pub(super) fn print_banner(
    sim: &Simulator,
    args: &SimulationSettings,
    upstream: Option<&Upstream>,
    spawned: Option<&SpawnedRedis>,
) -> anyhow::Result<()> {
    let mut out = Header::new(std::io::stdout().lock(), terminal::stdout_columns());
    match sim.api() {
        Some((addr, nodes)) => api_banner(&mut out, sim, args, addr, nodes)?,
        None => banner(&mut out, sim, args)?,
    }
    if let Some(addr) = sim.fault_injector() {
        fault_injector_banner(&mut out, args, addr)?;
    }
    match (upstream, spawned) {
        (Some(up), Some(s)) => {
            // The TCP address first: it is the one a client (or redis-cli) would use directly.
            let via = match &up.addr {
                Address::Unix(_) => format!(", reached through {}", up.addr),
                Address::Tcp(_) => String::new(),
            };
            writeln!(
                out,
                "  upstream  {} (redis-server started for this run{via}): every other command \
                 is relayed there",
                s.addr
            )?;
        }
        (Some(up), None) => writeln!(
            out,
            "  upstream  {}: every other command is relayed there",
            up.addr
        )?,
        _ => {}
    }
    out.flush()?;
    Ok(())
}

/// The header of a `--proxy-api` run: where the API and its nodes are, then the scenario's own
/// header when there is one.
pub(super) fn api_banner(
    out: &mut Header<impl Write>,
    sim: &Simulator,
    args: &SimulationSettings,
    addr: std::net::SocketAddr,
    nodes: &[std::net::SocketAddr],
) -> anyhow::Result<()> {
    writeln!(
        out,
        "maintwatch simulator: the cae-resp-proxy API (docs/proxy-api.md)"
    )?;
    writeln!(out, "  api       http://{addr}")?;
    let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    writeln!(
        out,
        "  nodes     {} (relayed to the upstream)",
        nodes.join("  ")
    )?;
    let defaults = match args.api.as_ref().map(|a| &a.defaults) {
        Some(d) if !d.is_empty() => d.join(", "),
        _ => "none".to_string(),
    };
    writeln!(out, "  intercept {defaults}")?;
    if !sim.scenario().proxies.is_empty() {
        banner(out, sim, args)?;
    } else {
        writeln!(
            out,
            "  clock     started; nothing happens until the API asks"
        )?;
    }
    Ok(())
}

/// The fault injector's lines of the header: where its API answers and where the endpoints file
/// is.
pub(super) fn fault_injector_banner(
    out: &mut Header<impl Write>,
    args: &SimulationSettings,
    addr: std::net::SocketAddr,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "  faults    http://{addr}: Redis Enterprise's fault injector API (docs/fault-injector.md); \
         nothing happens until an action asks"
    )?;
    if let Some(path) = args
        .fault_injector
        .as_ref()
        .and_then(|f| f.endpoints_file.as_ref())
    {
        writeln!(out, "  endpoints {}", path.display())?;
    }
    Ok(())
}

/// The proxy API's options: its settings, with the nodes relaying to the upstream over TCP (a
/// spawned redis-server's TCP port: a node's id names its target as `host:port`, as the
/// proxy's do).
pub(super) fn api_options(
    args: &SimulationSettings,
    upstream: Option<&Upstream>,
    spawned: Option<&SpawnedRedis>,
) -> anyhow::Result<Option<crate::simulator::sim::proxy_api::ApiOptions>> {
    let Some(api) = &args.api else {
        return Ok(None);
    };
    let upstream = match (spawned, upstream) {
        (Some(s), _) => Upstream {
            addr: Address::Tcp(s.addr.to_string()),
            user: None,
            password: None,
        },
        (None, Some(u)) => u.clone(),
        (None, None) => {
            return Err(exit::usage(
                "--proxy-api",
                "needs --upstream (spawn, or the Redis to relay to)".to_string(),
            ))
        }
    };
    Ok(Some(crate::simulator::sim::proxy_api::ApiOptions {
        addr: api.addr,
        listen: api.listen.clone(),
        upstream,
        defaults: api.defaults.clone(),
        announce: api.announce.clone(),
    }))
}

/// `--pcap`: the run's packets from here on, to and from its proxies and DNS servers.
pub(super) fn start_capture(
    sim: &Simulator,
    port53: Option<&SimDns>,
    args: &SimulationSettings,
) -> anyhow::Result<Option<Capture>> {
    let Some(path) = &args.pcap else {
        return Ok(None);
    };
    let ends = sim
        .proxies()
        .into_iter()
        .chain([sim.dns_addr()])
        .chain(port53.map(SimDns::addr))
        .filter_map(|a| match a {
            std::net::SocketAddr::V4(a) => Some(a),
            std::net::SocketAddr::V6(_) => None,
        })
        .collect();
    Capture::start(path, ends)
        .map(Some)
        .map_err(|e| exit::usage("--pcap", format!("{}: {e}", path.display())))
}

/// What [`start_client`] started: CMD, the DNS on port 53 for its resolv.conf, the capture.
pub(super) type Started = (Option<Client>, Option<SimDns>, Option<Capture>);

/// Starts CMD (after `--`), with the simulator's DNS on port 53 for its private resolv.conf,
/// and the `--pcap` capture before it; no CMD without one.
pub(super) async fn start_client(
    sim: &Simulator,
    args: &SimulationSettings,
) -> anyhow::Result<Started> {
    let Some(cmd) = &args.client else {
        return Ok((None, None, start_capture(sim, None, args)?));
    };
    let port53 = if cfg!(target_os = "linux") {
        client::dns_on_port_53(sim).await
    } else {
        Err("private mount namespaces are Linux-only".into())
    };
    // Port 53 refused and no namespace to be had: the reason says what to do.
    let refused = crate::simulator::sim::isolation::refused();
    let nameserver = match &port53 {
        Ok(d) => Ok(d.addr().ip()),
        Err(e) => Err(refused.clone().unwrap_or_else(|| e.clone())),
    };
    let output = cmd.output.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("maintwatch-client-{}.log", std::process::id()))
    });
    let capture = start_capture(sim, port53.as_ref().ok(), args)?;
    let target = Target::of(sim, args.password.clone());
    let (client, note) = client::start(&cmd.command, &target, nameserver.clone(), &output)?;
    let port53 = port53.ok().filter(|_| nameserver.is_ok());
    if args.silent() {
        // The fallback still matters to a silent run: the grade of a client that cannot
        // resolve the name says little (certify said a refusal once, before its first run).
        if let Some(n) = note.filter(|_| refused.is_none()) {
            crate::present::output::terminal::to_stderr(&n);
        }
        return Ok((Some(client), port53, capture));
    }
    let mut out = Header::new(std::io::stdout().lock(), terminal::stdout_columns());
    let resolv = match (&note, &nameserver) {
        (None, Ok(ip)) => format!("resolving through its own /etc/resolv.conf: nameserver {ip}"),
        _ => "MAINTWATCH_SIM_* in its environment only".into(),
    };
    writeln!(
        out,
        "  client    {} ({resolv}); its output goes to {}",
        crate::shared::escape::sanitize(&cmd.command[0].to_string_lossy()),
        crate::shared::escape::sanitize(&output.to_string_lossy())
    )?;
    if let Some(n) = note {
        writeln!(out, "{n}")?;
    }
    if crate::simulator::sim::isolation::chosen()
        == crate::simulator::sim::isolation::Isolation::Namespace
    {
        writeln!(
            out,
            "  note      {}",
            crate::simulator::sim::isolation::NAMESPACE_NOTE
        )?;
    }
    if let Some(c) = &capture {
        let path = crate::shared::escape::sanitize(&c.path().to_string_lossy()).to_string();
        writeln!(out, "  pcap      the run's packets go to {path}")?;
    }
    out.flush()?;
    Ok((Some(client), port53, capture))
}

/// Why the run stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// The scenario ended (or the narration closed).
    Ended,
    /// The client (CMD) exited by itself.
    ClientExited,
    /// The scenario's clock had not started `start_deadline` after the client's first
    /// connection (it waits for opt-ins the client never made), or the client had not connected
    /// within [`FIRST_CONNECTION_FACTOR`] times that, each bound moved on by the time the client
    /// waited for a CPU (`start`); with why load may be the cause, when it may.
    NeverStarted(Option<TooLoaded>),
    /// A signal: its name and the exit code it means.
    Signal(&'static str, i32),
}

impl Stop {
    /// The exit code of a run that stopped so: a signal's, else success.
    pub fn code(self) -> i32 {
        match self {
            Stop::Signal(_, code) => code,
            _ => exit::SUCCESS,
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP, registered at once (a later registration would leave a window in
/// which the default action kills the process with the simulator's children behind).
pub struct Signals(Signal, Signal, Signal);

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals(
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    }

    /// A signal that already came, without waiting for one.
    pub async fn pending(&mut self) -> Option<Stop> {
        tokio::select! {
            biased;
            stop = self.recv() => Some(stop),
            _ = std::future::ready(()) => None,
        }
    }

    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.0.recv() => Stop::Signal("SIGINT", exit::INTERRUPTED),
            _ = self.1.recv() => Stop::Signal("SIGTERM", exit::TERMINATED),
            _ = self.2.recv() => Stop::Signal("SIGHUP", exit::HANGUP),
        }
    }
}

/// Where a narration line's continuation starts: under the text after the clock.
pub(super) const NARRATION_INDENT: &str = "            ";

/// What the narration followed: how many events it lost, and, once the run is over, every event
/// the simulator kept for a grade.
#[derive(Default)]
pub(super) struct Narration {
    pub(super) seen: Vec<SimEvent>,
    pub(super) lost: u64,
    /// The terminal's width, read once (`None` inside: not read yet).
    pub(super) width: Option<Option<usize>>,
    /// Source addresses whose first DNS query was printed: later ones are only counted, unless
    /// `--verbose` (a client may resolve the name hundreds of times, burying the story).
    pub(super) asked: std::collections::HashSet<std::net::IpAddr>,
    /// DNS queries not printed for that reason.
    pub(super) dns_hidden: u64,
}

impl Narration {
    /// Prints and keeps events until the scenario ends, the client exits or a signal comes.
    pub(super) async fn follow(
        &mut self,
        events: &mut Receiver<SimEvent>,
        signals: &mut Signals,
        mut client: Option<&mut Client>,
        args: &SimulationSettings,
    ) -> anyhow::Result<Stop> {
        // A scenario that waits for opt-ins waits in real time, whatever --speed, counted in the
        // client's own time (`start`): from its start to its first connection, then from that
        // connection to the clock's start.
        let waits = |c: &Option<&mut Client>| c.as_deref().and_then(Client::cpu_waits);
        let mut watch = args
            .start_deadline
            .map(|d| (StartWatch::to_connect(Instant::now(), d), waits(&client)));
        let mut connected = false;
        let mut started = false;
        loop {
            let bound = watch.as_ref().filter(|_| !started).map(|w| w.0.deadline());
            let never_started = async {
                match bound {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let exited = async {
                match client.as_deref_mut() {
                    Some(c) => c.exited().await.map(|_| ()),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = events.recv() => match event {
                    Ok(e) => {
                        started |= matches!(e.what, What::Started { .. });
                        if !connected && matches!(e.what, What::Connected { .. }) {
                            connected = true;
                            watch = args.start_deadline.map(|d| {
                                (StartWatch::to_start(Instant::now(), d), waits(&client))
                            });
                        }
                        let done = !args.repeat && matches!(e.what, What::Finished { .. });
                        self.take(e, args)?;
                        if done {
                            return Ok(Stop::Ended);
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        // The start may be among the events lost: never stop on a guess.
                        started = true;
                        self.lagged(n, args)?
                    }
                    Err(RecvError::Closed) => return Ok(Stop::Ended),
                },
                _ = exited => return Ok(Stop::ClientExited),
                _ = never_started => {
                    let Some((w, before)) = watch.as_mut() else { continue };
                    let waited = match (waits(&client), before.as_ref()) {
                        (Some(now), Some(before)) => Some(now.longest_since(before)),
                        _ => None,
                    };
                    if let AtBound::GiveUp(why) = w.at_bound(Instant::now(), waited) {
                        return Ok(Stop::NeverStarted(why));
                    }
                }
                stop = signals.recv() => return Ok(stop),
            }
        }
    }

    /// Takes the events already sent when the run stopped.
    pub(super) fn drain(
        &mut self,
        events: &mut Receiver<SimEvent>,
        args: &SimulationSettings,
    ) -> anyhow::Result<()> {
        loop {
            match events.try_recv() {
                Ok(e) => self.take(e, args)?,
                Err(TryRecvError::Lagged(n)) => self.lagged(n, args)?,
                Err(_) => return Ok(()),
            }
        }
    }

    pub(super) fn take(&mut self, e: SimEvent, args: &SimulationSettings) -> anyhow::Result<()> {
        let quiet = args.narration == Verbosity::Quiet;
        let repeated = match &e.what {
            What::Resolved { from, .. } => !args.verbose && !self.asked.insert(from.ip()),
            _ => false,
        };
        if repeated && shown(&e, quiet) {
            self.dns_hidden += 1;
        }
        if !args.silent() && !repeated && shown(&e, quiet) {
            let width = *self.width.get_or_insert_with(terminal::stdout_columns);
            let line = e.to_string();
            let mut out = std::io::stdout().lock();
            match width {
                // Continuations hang under the text, past `+  9.700 s  `.
                Some(w) => {
                    for part in human::wrap_with(&line, w, NARRATION_INDENT) {
                        writeln!(out, "{part}")?;
                    }
                }
                None => writeln!(out, "{line}")?,
            }
            out.flush()?;
        }
        Ok(())
    }

    /// The count of DNS queries left out of the narration, at its end.
    pub(super) fn dns_count(&mut self, args: &SimulationSettings) -> anyhow::Result<()> {
        if args.silent() || self.dns_hidden == 0 {
            return Ok(());
        }
        let n = self.dns_hidden;
        let queries = if n == 1 { "query" } else { "queries" };
        let line = format!(
            "({n} more DNS {queries} answered, from addresses whose first is shown above; \
             --verbose shows every one)"
        );
        let mut out = std::io::stdout().lock();
        match self.width.flatten() {
            Some(w) => {
                for part in human::wrap_with(&line, w, " ") {
                    writeln!(out, "{part}")?;
                }
            }
            None => writeln!(out, "{line}")?,
        }
        Ok(())
    }

    pub(super) fn lagged(&mut self, n: u64, args: &SimulationSettings) -> anyhow::Result<()> {
        self.lost += n;
        if args.silent() {
            return Ok(());
        }
        writeln!(
            std::io::stdout().lock(),
            "({n} events not shown: the terminal was too slow)"
        )?;
        Ok(())
    }
}

/// Which events a `--quiet` run still prints: the scenario's own steps.
pub(super) fn shown(e: &SimEvent, quiet: bool) -> bool {
    // Traffic is for the grade: one line per read would drown the narration.
    if matches!(e.what, What::Traffic { .. }) {
        return false;
    }
    !quiet
        || !matches!(
            e.what,
            What::Connected { .. }
                | What::Command { .. }
                | What::OptIn { .. }
                | What::Sent { .. }
                | What::Disconnected { .. }
                | What::ClientInfo { .. }
                | What::Resolved { .. }
        )
}

/// The header's columns: a row's value starts here (`  proxies   127.0.0.2:...`).
pub(super) const VALUE_COLUMN: usize = 12;

/// Where the header goes: each line wrapped at spaces to a terminal's width, never inside a word
/// or an address, continued under its value; piped (`width` `None`), as it is. `writeln!` works on
/// it as on any writer.
pub(super) struct Header<W: Write> {
    pub(super) out: W,
    pub(super) width: Option<usize>,
    /// Text written but not ended by a newline yet.
    pub(super) pending: String,
}

impl<W: Write> Header<W> {
    pub(super) fn new(out: W, width: Option<usize>) -> Header<W> {
        Header {
            out,
            width,
            pending: String::new(),
        }
    }

    pub(super) fn write_fmt(&mut self, args: std::fmt::Arguments) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let _ = self.pending.write_fmt(args);
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            self.put(line.trim_end_matches('\n'))?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    pub(super) fn put(&mut self, line: &str) -> std::io::Result<()> {
        let Some(width) = self.width else {
            return writeln!(self.out, "{line}");
        };
        for piece in human::wrap_with(line, width, &" ".repeat(hang(line))) {
            writeln!(self.out, "{piece}")?;
        }
        Ok(())
    }

    /// A command to paste as it is: `lead` (the row's label or indent), the command, and `note`
    /// after it. Wrapped, each break ends in a shell's ` \` so that the lines still paste as one
    /// command, and the note moves to a line of its own if it no longer fits.
    pub(super) fn command(&mut self, lead: &str, command: &str, note: &str) -> std::io::Result<()> {
        let whole = format!("{lead}{command}{note}");
        let width = match self.width {
            Some(w) if whole.chars().count() > w => w,
            _ => return writeln!(self.out, "{whole}"),
        };
        let hang = " ".repeat(VALUE_COLUMN + 2);
        let mut pieces = human::wrap_with(&format!("{lead}{command}"), width - 2, &hang);
        let last = pieces.pop().unwrap_or_default();
        for piece in pieces {
            writeln!(self.out, "{piece} \\")?;
        }
        if last.chars().count() + note.chars().count() <= width {
            writeln!(self.out, "{last}{note}")
        } else {
            writeln!(self.out, "{last}")?;
            self.put(&format!(
                "{}{}",
                " ".repeat(VALUE_COLUMN),
                note.trim_start()
            ))
        }
    }
}

/// Where a wrapped header line continues: under the value of a `  label     value` row, else two
/// columns in from the line's own start (and never less than 4, as the demo's header).
pub(super) fn hang(line: &str) -> usize {
    let label = line.get(..VALUE_COLUMN).unwrap_or("");
    let is_row = label.starts_with("  ")
        && label.ends_with(' ')
        && label.trim().chars().all(|c| c.is_ascii_lowercase())
        && !label.trim().is_empty();
    if is_row {
        return VALUE_COLUMN;
    }
    let indent = line.len() - line.trim_start().len();
    (indent + 2).max(4)
}

pub(super) fn banner(
    out: &mut Header<impl Write>,
    sim: &Simulator,
    args: &SimulationSettings,
) -> std::io::Result<()> {
    let s = sim.scenario();
    writeln!(
        out,
        "maintwatch simulator: scenario {} ({}), speed {}x{}",
        s.name,
        s.source,
        args.speed,
        if args.repeat { ", looping" } else { "" }
    )?;
    writeln!(out, "  {}", s.about)?;
    let proxies: Vec<String> = sim
        .proxies()
        .iter()
        .zip(&s.proxies)
        .map(|(addr, ip)| {
            if s.initially_down.contains(ip) {
                format!("{addr} (not listening yet)")
            } else {
                addr.to_string()
            }
        })
        .collect();
    writeln!(out, "  proxies   {}", proxies.join("  "))?;
    let records: Vec<String> = s.dns.iter().map(|a| a.to_string()).collect();
    writeln!(
        out,
        "  DNS       {} (UDP and TCP): {} -> {} (TTL {} s)",
        sim.dns_addr(),
        sim.hostname(),
        records.join(" "),
        sim.ttl()
    )?;
    // Says whether a password is needed and for whom, never what it is.
    let auth = match (&args.password, &args.user) {
        (None, _) => "none".to_string(),
        (Some(_), Some(u)) => format!("password required for user {u}"),
        (Some(_), None) => "password required (user default)".to_string(),
    };
    writeln!(out, "  auth      {auth}")?;
    let mode = match s.mode {
        Mode::Enterprise => "enterprise: the opt-in is accepted",
        Mode::Refusing => "refusing: the opt-in gets Redis OSS's error",
    };
    writeln!(
        out,
        "  server    {mode}{}",
        if s.is_cluster() {
            ", OSS cluster API"
        } else {
            ""
        }
    )?;
    let start = match s.start {
        Start::Now => "started".to_string(),
        Start::Connect => "starts when a client connects".into(),
        Start::Subscribe => "starts when a client subscribes to AzureRedisEvents".into(),
        Start::OptIn(1) => "starts when a client opts in (CLIENT MAINT_NOTIFICATIONS ON)".into(),
        Start::OptIn(n) => format!("starts when {n} connections are opted in at once"),
        Start::OptInSsubscribe(n) => format!(
            "starts when {n} connection(s) are opted in at once and a sharded channel is subscribed to (SSUBSCRIBE)"
        ),
    };
    if s.end.is_finite() {
        writeln!(out, "  clock     {start}; the scenario lasts {} s", s.end)?;
    } else {
        writeln!(out, "  clock     {start}; no end: it runs until stopped")?;
    }
    try_lines(out, sim, args)
}

/// The variable the password travels in: `simulate` reads it (as `--password`'s environment
/// variable), and the `try` lines pass it on, so the password is never printed.
pub(super) const PASSWORD_VAR: &str = "MAINTWATCH_SIM_PASSWORD";

/// Commands that work against this simulator as printed: with a password they take it from
/// `$MAINTWATCH_SIM_PASSWORD` through `REDISCLI_AUTH`, which both maintwatch and redis-cli read.
pub(super) fn try_lines(
    out: &mut Header<impl Write>,
    sim: &Simulator,
    args: &SimulationSettings,
) -> std::io::Result<()> {
    let first = sim.proxies()[0];
    let dns = sim.dns_addr();
    let host = sim.host();
    let speed = if args.speed == 1.0 {
        String::new()
    } else {
        format!(" --sim-speed {}", args.speed)
    };
    let (auth, user) = match (&args.password, &args.user) {
        (None, _) => (String::new(), String::new()),
        (Some(_), u) => (
            format!("REDISCLI_AUTH=\"${PASSWORD_VAR}\" "),
            u.as_ref()
                .map(|u| format!(" --user {u}"))
                .unwrap_or_default(),
        ),
    };
    let indent = " ".repeat(VALUE_COLUMN);
    out.command(
        "  try       ",
        &format!(
            "{auth}maintwatch watch redis://{host}:{}{user} --dns-server {dns}{speed}",
            first.port()
        ),
        "",
    )?;
    out.command(
        &indent,
        &format!(
            "{auth}redis-cli -3 -h {} -p {}{user}",
            first.ip(),
            first.port()
        ),
        "    then: CLIENT MAINT_NOTIFICATIONS ON",
    )?;
    out.command(
        &indent,
        &format!("dig @{} -p {} {host}", dns.ip(), dns.port()),
        "",
    )?;
    if args.password.is_some() {
        writeln!(
            out,
            "            (the password is not shown: in that shell, export {PASSWORD_VAR}=<the \
             password>; started with that variable instead of --password, it is already set)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::sim::{scenarios, SimOptions};
    use crate::simulator::simulation::ScenarioChoice;

    async fn banner_of(password: Option<&str>, user: Option<&str>) -> String {
        let mut args = SimulationSettings::new(ScenarioChoice::Named(scenarios::DEFAULT.into()));
        args.password = password.map(String::from);
        args.user = user.map(String::from);
        let mut opts = SimOptions::new(scenarios::by_name(scenarios::DEFAULT).unwrap());
        opts.password = args.password.clone();
        opts.user = args.user.clone();
        let sim = Simulator::start(opts).await.unwrap();
        let mut out = Header::new(Vec::new(), None);
        banner(&mut out, &sim, &args).unwrap();
        sim.shutdown().await;
        String::from_utf8(out.out).unwrap()
    }

    /// With `--password` the `try` lines had no way to authenticate.
    #[tokio::test]
    async fn try_lines_authenticate_without_showing_the_password() {
        let text = banner_of(Some("s3cret-Pw"), Some("app")).await;
        assert!(!text.contains("s3cret-Pw"), "{text}");
        let tries: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("try "))
            .take(2)
            .collect();
        assert_eq!(tries.len(), 2, "{text}");
        for line in tries {
            assert!(
                line.contains("REDISCLI_AUTH=\"$MAINTWATCH_SIM_PASSWORD\" "),
                "{line}"
            );
            assert!(line.contains("--user app"), "{line}");
        }
        assert!(text.contains("export MAINTWATCH_SIM_PASSWORD="), "{text}");

        let open = banner_of(None, None).await;
        assert!(
            !open.contains("REDISCLI_AUTH") && !open.contains("--user"),
            "{open}"
        );
    }
}
