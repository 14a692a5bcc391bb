//! The watch's settings, validated where they are built: the engine never sees clap, and a front
//! end other than `watch` (the demo) starts from [`WatchSettings::new`] instead of listing every
//! field.

use crate::cli::watch::WatchArgs;
use crate::conn::ConnectOptions;
use crate::output::countdown::Countdown;
use crate::output::human::{self, Style};
pub use crate::output::sink::CaptureMode;
use crate::output::sink::{self, CaptureFile, Rotation, Sinks};
use crate::timeline::ScenarioClock;
use anyhow::Context;
use std::time::Duration;

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
    /// The DNS poll interval while a maintenance window is open.
    pub dns_interval_open: Duration,
    pub dns: bool,
    pub handoff: bool,
    pub handoff_poll: Duration,
    /// Scenario seconds per real second (1 outside the simulator), shared with everything that
    /// reads or waits in scenario time.
    pub clock: ScenarioClock,
    /// `--sim-speed` was given: a speed the simulator announces is compared, not adopted.
    pub speed_given: bool,
    pub color: bool,
    /// How a human line shows its time (`--time-format`).
    pub time: human::TimeFormat,
    /// Show detail lines (each successful PING) in human output.
    pub verbose: bool,
    /// `--clients`: a line under each notification saying what each known client does with it.
    pub clients: bool,
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
    /// `--heartbeat`: a heartbeat line this often.
    pub heartbeat: Option<Duration>,
    /// `--capture-max-size`, `--capture-keep`.
    pub rotation: Option<Rotation>,
    /// `--metrics` and `--exec`: what runs beside the watch (`crate::service`).
    pub service: crate::service::ServiceSettings,
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
            require: false,
            duration: None,
            count: None,
            json: false,
            capture: None,
            capture_mode: CaptureMode::New,
            traffic: None,
            dns_interval: Duration::from_millis(500),
            dns_interval_open: Duration::from_millis(100),
            dns: true,
            handoff: true,
            handoff_poll: Duration::from_secs(1),
            clock: ScenarioClock::default(),
            speed_given: false,
            color: false,
            time: human::TimeFormat::Compact,
            verbose: false,
            clients: false,
            countdown: true,
            connections: 1,
            subscribe: Vec::new(),
            tracking: false,
            cluster: ClusterMode::Auto,
            masters_only: false,
            heartbeat: None,
            rotation: None,
            service: Default::default(),
        }
    }

    /// The watch's sinks: the capture file (if asked for), `out` (JSON or human lines) and the
    /// countdown (human output, stderr a terminal).
    pub fn sinks<'a>(&self, out: impl std::io::Write + 'a) -> anyhow::Result<Sinks<'a>> {
        let mut sinks = Sinks::new();
        if let Some(path) = &self.capture {
            let capture = CaptureFile::open(path, self.capture_mode)?.rotating(self.rotation);
            sinks.add(Box::new(capture));
        }
        let style = Style {
            color: self.color,
            time: self.time,
        };
        let lines = sink::lines(out, self.json, style, self.verbose);
        if self.clients && !self.json {
            let asked = match self.connect.endpoint_type() {
                crate::conn::EndpointTypeChoice::InternalIp => {
                    Some(crate::conn::EndpointType::InternalIp)
                }
                crate::conn::EndpointTypeChoice::InternalFqdn => {
                    Some(crate::conn::EndpointType::InternalFqdn)
                }
                crate::conn::EndpointTypeChoice::ExternalIp => {
                    Some(crate::conn::EndpointType::ExternalIp)
                }
                crate::conn::EndpointTypeChoice::ExternalFqdn => {
                    Some(crate::conn::EndpointType::ExternalFqdn)
                }
                crate::conn::EndpointTypeChoice::None => Some(crate::conn::EndpointType::None),
                crate::conn::EndpointTypeChoice::Auto
                | crate::conn::EndpointTypeChoice::ServerDefault => None,
            };
            sinks.add(Box::new(sink::ClientLines::new(lines, asked)));
        } else {
            sinks.add(lines);
        }
        if self.countdown {
            sinks.set_countdown(Countdown::on_terminal(self.clock.clone()));
        }
        Ok(sinks)
    }

    /// Validates the command line of `watch`.
    pub fn from_args(args: &WatchArgs) -> anyhow::Result<WatchSettings> {
        let clock = ScenarioClock::new(args.sim_speed.unwrap_or(1.0))
            .map_err(|e| anyhow::anyhow!("--sim-speed: {e}"))?;
        if args.count == Some(0) {
            anyhow::bail!("--count must be at least 1");
        }
        let connect = match args.urls.first() {
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
            dns_interval_open: args.dns_interval_open,
            dns: !args.no_dns,
            handoff: !args.no_handoff,
            handoff_poll: args.handoff_poll,
            clock,
            speed_given: args.sim_speed.is_some(),
            color: args.color.style(args.json).color,
            time: args.time_format,
            verbose: args.verbose,
            clients: args.clients,
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
            heartbeat: args.heartbeat,
            rotation: args.capture_max_size.map(|max_size| Rotation {
                max_size,
                keep: args.capture_keep,
            }),
            service: crate::service::ServiceSettings::from_args(&args.service)?,
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

/// The endpoints of a fleet (several URLs, or `--from FILE` as `probe --from` reads it), each
/// with its label and the settings of `base` for its own endpoint; `None` for one endpoint.
/// A bad line in the file is a usage error naming the line (a watch meant to run for days does
/// not start with an endpoint silently left out).
pub fn fleet_from_args(
    args: &WatchArgs,
    base: &WatchSettings,
) -> anyhow::Result<Option<Vec<(String, WatchSettings)>>> {
    let mut urls = args.urls.clone();
    if let Some(from) = &args.from {
        let read = crate::conn::probe::read_endpoint_text;
        let (text, source) = if from == "-" {
            let source = "standard input".to_string();
            let text = read(&mut std::io::stdin(), &source).context("--from -")?;
            (text, source)
        } else {
            let mut file =
                std::fs::File::open(from).map_err(|e| anyhow::anyhow!("--from {from}: {e}"))?;
            (read(&mut file, from).context("--from")?, from.clone())
        };
        let list = crate::conn::probe::parse_endpoint_list(&text, &source);
        if let Some(e) = list.errors.into_iter().next() {
            return Err(anyhow::Error::new(e).context("--from"));
        }
        if list.urls.is_empty() {
            return Err(anyhow::Error::new(crate::conn::ConfigError::Invalid(
                format!("--from: no endpoint in {source}"),
            )));
        }
        urls.extend(list.urls);
    }
    if urls.len() < 2 && args.from.is_none() {
        return Ok(None);
    }
    let config = args.connect.config();
    let mut options = Vec::with_capacity(urls.len());
    for url in &urls {
        options.push(config.options_for(url)?);
    }
    config.check_tls_flags_apply(&options)?;
    let labels = labels(&options);
    Ok(Some(
        options
            .into_iter()
            .zip(labels)
            .map(|(connect, label)| {
                (
                    label,
                    WatchSettings {
                        connect,
                        ..base.clone()
                    },
                )
            })
            .collect(),
    ))
}

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
