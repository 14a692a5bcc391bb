//! The watch's settings, validated where they are built (the command line's `settings` module):
//! the engine never sees clap, and a front end other than `watch` (the demo) starts from
//! [`WatchSettings::new`] instead of listing every field. They are grouped by concern: what the
//! engine does ([`EngineSettings`]), what it writes and how ([`OutputSettings`]), and what runs
//! beside it (`crate::present::service::ServiceSettings`). The endpoint and the simulator's speed stay at
//! the top: every part reads them.

use crate::defaults;
use crate::network::conn::ConnectOptions;
use crate::observe::timeline::ScenarioClock;
use crate::present::output::countdown::Countdown;
use crate::present::output::human::{self, Style};
pub use crate::present::output::sink::CaptureMode;
use crate::present::output::sink::{self, CaptureFile, Rotation, Sinks};
use std::time::Duration;

/// Everything the watch needs, validated, free of clap.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub connect: ConnectOptions,
    /// Scenario seconds per real second (1 outside the simulator), shared with everything that
    /// reads or waits in scenario time.
    pub clock: ScenarioClock,
    /// `--sim-speed` was given: a speed the simulator announces is compared, not adopted.
    pub speed_given: bool,
    pub engine: EngineSettings,
    pub output: OutputSettings,
    /// `--metrics` and `--exec`: what runs beside the watch (`crate::present::service`).
    pub service: crate::present::service::ServiceSettings,
}

/// What the engine does: when it stops, what it sends and polls, which nodes it watches.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    pub require: bool,
    pub duration: Option<Duration>,
    pub count: Option<u32>,
    pub traffic: Option<Duration>,
    pub dns: bool,
    pub dns_interval: Duration,
    /// The DNS poll interval while a maintenance window is open.
    pub dns_interval_open: Duration,
    pub handoff: bool,
    pub handoff_poll: Duration,
    /// Parallel connections to the endpoint (a node-wide close takes them all).
    pub connections: u32,
    /// Channels to SUBSCRIBE to on each connection, to see pub/sub beside maintenance pushes.
    pub subscribe: Vec<String>,
    /// SUBSCRIBE to Azure Cache's `AzureRedisEvents` on each connection (`--azure-events`, or
    /// an Azure Cache host name).
    pub azure_events: bool,
    /// CLIENT TRACKING ON BCAST on each connection, to see invalidations.
    pub tracking: bool,
    /// Watch every node of an OSS cluster.
    pub cluster: ClusterMode,
    /// With a cluster, watch the masters only.
    pub masters_only: bool,
    /// With a cluster, read the topology again this often (scenario time).
    pub topology_interval: Duration,
    /// `--heartbeat`: a heartbeat line this often.
    pub heartbeat: Option<Duration>,
}

impl Default for EngineSettings {
    /// The engine of `watch` with no flags.
    fn default() -> EngineSettings {
        EngineSettings {
            require: false,
            duration: None,
            count: None,
            traffic: None,
            dns: true,
            dns_interval: defaults::DNS_INTERVAL,
            dns_interval_open: defaults::DNS_INTERVAL_OPEN,
            handoff: true,
            handoff_poll: defaults::HANDOFF_POLL,
            connections: defaults::CONNECTIONS,
            subscribe: Vec::new(),
            azure_events: false,
            tracking: false,
            cluster: ClusterMode::Auto,
            masters_only: false,
            topology_interval: defaults::TOPOLOGY_INTERVAL,
            heartbeat: None,
        }
    }
}

/// Where the watch's lines go and how they look.
#[derive(Debug, Clone)]
pub struct OutputSettings {
    pub json: bool,
    pub capture: Option<std::path::PathBuf>,
    /// What to do with an existing capture file.
    pub capture_mode: CaptureMode,
    /// `--capture-max-size`, `--capture-keep`.
    pub rotation: Option<Rotation>,
    pub color: bool,
    /// How a human line shows its time (`--time-format`).
    pub time: human::TimeFormat,
    /// Columns a human line is wrapped to: the terminal's, 80 when piped.
    pub width: usize,
    /// Show detail lines (each successful PING) in human output.
    pub verbose: bool,
    /// `--clients`: a line under each notification saying what each known client does with it.
    pub clients: bool,
    /// Show the open-window countdown (on stderr, only when it is a terminal).
    pub countdown: bool,
}

impl Default for OutputSettings {
    /// The output of `watch` with no flags.
    fn default() -> OutputSettings {
        OutputSettings {
            json: false,
            capture: None,
            capture_mode: CaptureMode::New,
            rotation: None,
            color: false,
            time: defaults::TIME_FORMAT,
            width: human::WIDTH,
            verbose: false,
            clients: false,
            countdown: true,
        }
    }
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
    /// The settings of `watch` with no flags, watching `connect`: what a front end other than
    /// the command starts from.
    pub fn new(connect: ConnectOptions) -> WatchSettings {
        WatchSettings {
            connect,
            clock: ScenarioClock::default(),
            speed_given: false,
            engine: EngineSettings::default(),
            output: OutputSettings::default(),
            service: Default::default(),
        }
    }

    /// How human lines look: colour, times and width as asked, Azure events if watched.
    pub fn style(&self) -> Style {
        Style {
            color: self.output.color,
            time: self.output.time,
            width: self.output.width,
            azure: self.engine.azure_events,
        }
    }

    /// Metrics are labelled by server address and port: two endpoints of a fleet on the same
    /// `host:port` (another db, another user) would overwrite each other's gauges, so with
    /// `--metrics` or `--otlp` they are refused rather than shown wrong. Compared as the labels
    /// will read, after sanitising: `a"b` and `a_b` are one series.
    pub fn refuse_shared_series(
        &self,
        fleet: Option<&[(String, WatchSettings)]>,
    ) -> anyhow::Result<()> {
        let flag = match (&self.service.metrics, &self.service.otlp) {
            (Some(_), _) => "--metrics",
            (None, Some(_)) => "--otlp",
            (None, None) => return Ok(()),
        };
        let mut seen = std::collections::BTreeMap::new();
        for (label, s) in fleet.unwrap_or_default() {
            let address = crate::present::service::metrics::label_text(s.connect.host());
            let key = (address, s.connect.port());
            if let Some(first) = seen.insert(key, label) {
                return Err(anyhow::Error::new(
                    crate::network::conn::ConfigError::Invalid(format!(
                        "{flag}: endpoints {first} and {label} share a server address and port; \
                 metrics are per address and port, so watch them in separate processes"
                    )),
                ));
            }
        }
        Ok(())
    }

    /// The watch's sinks: the capture file (if asked for), `out` (JSON or human lines) and the
    /// countdown (human output, stderr a terminal).
    pub fn sinks<'a>(&self, out: impl sink::LineWriter + 'a) -> anyhow::Result<Sinks<'a>> {
        let output = &self.output;
        let mut sinks = Sinks::new();
        if let Some(path) = &output.capture {
            let capture = CaptureFile::open(path, output.capture_mode)?.rotating(output.rotation);
            sinks.add(Box::new(capture));
        }
        let lines = sink::lines(out, output.json, self.style(), output.verbose);
        if output.clients && !output.json {
            let asked = match self.connect.endpoint_type() {
                crate::network::conn::EndpointTypeChoice::InternalIp => {
                    Some(crate::network::conn::EndpointType::InternalIp)
                }
                crate::network::conn::EndpointTypeChoice::InternalFqdn => {
                    Some(crate::network::conn::EndpointType::InternalFqdn)
                }
                crate::network::conn::EndpointTypeChoice::ExternalIp => {
                    Some(crate::network::conn::EndpointType::ExternalIp)
                }
                crate::network::conn::EndpointTypeChoice::ExternalFqdn => {
                    Some(crate::network::conn::EndpointType::ExternalFqdn)
                }
                crate::network::conn::EndpointTypeChoice::None => {
                    Some(crate::network::conn::EndpointType::None)
                }
                crate::network::conn::EndpointTypeChoice::Auto
                | crate::network::conn::EndpointTypeChoice::ServerDefault => None,
            };
            sinks.add(Box::new(sink::ClientLines::new(lines, asked)));
        } else {
            sinks.add(lines);
        }
        // The engine's notes and warnings reach stderr through here: it prints nothing itself.
        sinks.add(Box::new(sink::StderrNotices));
        if output.countdown {
            sinks.set_countdown(Countdown::on_terminal(self.clock.clone()));
        }
        Ok(sinks)
    }
}

/// The shortest `--traffic` interval: below it a watch would flood the server it observes
/// (`--traffic 0` meant a PING per millisecond).
pub const TRAFFIC_FLOOR: Duration = Duration::from_millis(10);

/// Short labels for a fleet's lines: `host:port`, with `#2`, `#3` for repeats.
/// Made of the host, port and database only: never a user or a password.
pub fn labels(options: &[ConnectOptions]) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, u32> = Default::default();
    options
        .iter()
        .map(|o| {
            let host = o.host();
            let mut label = if host.contains(':') {
                format!("[{host}]:{}", o.port())
            } else {
                format!("{host}:{}", o.port())
            };
            label.retain(|c| !c.is_control() && !c.is_whitespace());
            let n = seen.entry(label.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                label = format!("{label}#{n}");
            }
            label
        })
        .collect()
}
