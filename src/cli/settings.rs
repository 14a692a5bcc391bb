//! The one place where a command line becomes settings: the watch's (the engine's, the output's
//! and the services') and a simulation's, each validated here (a certification's in
//! `cli::certify`), so the engine,
//! the sinks, the services and the simulation never see a clap type. The defaults they fall back to are in `crate::defaults`, shared with clap's own.

use super::service::ServiceArgs;
use super::simulate::SimulateArgs;
use super::usage::{flagged, usage};
use super::watch::WatchArgs;
use crate::network::conn::endpoints::{self, BadLines};
use crate::network::conn::ConnectOptions;
use crate::observe::timeline::ScenarioClock;
use crate::present::service::{otlp, ExecOn, HookSettings, ServiceSettings};
use crate::simulator::sim::upstream::Upstream;
use crate::simulator::simulation::{
    ApiSettings, ClientSettings, ScenarioChoice, SimulationSettings, UpstreamChoice, Verbosity,
};
use crate::watch::{
    CaptureMode, ClusterMode, EngineSettings, OutputSettings, WatchSettings, TRAFFIC_FLOOR,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What `watch` runs: the first endpoint's settings (and the whole run's), the fleet's when
/// several endpoints are named, and what to tell the user before it starts.
pub struct WatchRun {
    pub settings: WatchSettings,
    /// Each endpoint of a fleet with its label; `None` for one endpoint named without `--from`.
    pub fleet: Option<Vec<(String, WatchSettings)>>,
    /// The warning for a password on the command line, if one is.
    pub password_warning: Option<String>,
    /// Notes, then warnings, to show before connecting.
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// `--report`: the page to write.
    pub report: Option<PathBuf>,
}

/// Validates the command line of `watch`: its endpoints (`--from -` reads standard input),
/// their settings, and what to tell the user.
pub fn watch_run(args: &WatchArgs) -> anyhow::Result<WatchRun> {
    let named = args
        .connect
        .endpoint_settings(&args.urls, args.from.as_deref(), BadLines::Refuse);
    let setup = endpoints::setup(named.request, &named.config, &mut std::io::stdin())?;
    let mut settings = watch_settings(args, setup.options[0].clone())?;
    let fleet = fleet_settings(args, &settings, setup.options);
    if fleet.is_some() {
        // One countdown cannot show a thousand endpoints' windows.
        settings.output.countdown = false;
    }
    let mut warnings = setup.warnings;
    warnings.extend(traffic_warning(args));
    Ok(WatchRun {
        settings,
        fleet,
        password_warning: named.password_warning,
        notes: setup.notes,
        warnings,
        report: args.report.clone(),
    })
}

/// Validates the command line of `watch`, for the endpoint `connect` (the first of a fleet).
pub fn watch_settings(args: &WatchArgs, connect: ConnectOptions) -> anyhow::Result<WatchSettings> {
    let clock =
        ScenarioClock::new(args.sim_speed.unwrap_or(1.0)).map_err(|e| usage("--sim-speed", e))?;
    if args.count == Some(0) {
        return Err(usage("--count", "must be at least 1"));
    }
    let mut engine = engine_settings(args);
    // As StackExchange.Redis decides (by the host name), unless told otherwise.
    engine.azure_events = args.azure_events
        || (!args.no_azure_events && crate::protocol::azure::is_azure_host(connect.host()));
    Ok(WatchSettings {
        connect,
        clock,
        speed_given: args.sim_speed.is_some(),
        engine,
        output: output_settings(args),
        service: service_settings(&args.service)?,
    })
}

fn engine_settings(args: &WatchArgs) -> EngineSettings {
    EngineSettings {
        require: args.require,
        duration: args.duration,
        count: args.count,
        traffic: args.traffic.map(traffic_floor),
        dns: !args.no_dns,
        dns_interval: args.dns_interval,
        dns_interval_open: args.dns_interval_open,
        handoff: !args.no_handoff,
        handoff_poll: args.handoff_poll,
        connections: args.connections,
        subscribe: args.subscribe.clone(),
        azure_events: false,
        tracking: args.tracking,
        cluster: if args.cluster {
            ClusterMode::On
        } else if args.no_cluster {
            ClusterMode::Off
        } else {
            ClusterMode::Auto
        },
        masters_only: args.masters_only,
        topology_interval: args.topology_interval,
        heartbeat: args.heartbeat,
    }
}

fn output_settings(args: &WatchArgs) -> OutputSettings {
    let style = args.color.style(args.json);
    OutputSettings {
        json: args.json,
        capture: args.capture.clone(),
        capture_mode: if args.append {
            CaptureMode::Append
        } else if args.force {
            CaptureMode::Truncate
        } else {
            CaptureMode::New
        },
        rotation: args
            .capture_max_size
            .map(|max_size| crate::present::output::sink::Rotation {
                max_size,
                keep: args.capture_keep,
            }),
        color: style.color,
        time: args.time_format.into(),
        width: style.width,
        verbose: args.verbose,
        clients: args.clients,
        countdown: !args.json,
    }
}

/// Validates `--metrics`, `--otlp` and `--exec` with their companions.
pub fn service_settings(args: &ServiceArgs) -> anyhow::Result<ServiceSettings> {
    let hooks = if args.exec.is_empty() {
        None
    } else {
        if args.exec_timeout.is_zero() {
            return Err(usage("--exec-timeout", "must be above zero"));
        }
        Some(HookSettings {
            commands: args.exec.clone(),
            on: ExecOn::parse(&args.exec_on).map_err(|e| flagged("--exec-on", e))?,
            timeout: args.exec_timeout,
        })
    };
    let otlp = match &args.otlp {
        None => None,
        Some(url) => {
            if args.otlp_interval.is_zero() {
                return Err(usage("--otlp-interval", "must be above zero"));
            }
            // The URL or the OTEL_* variables it reads: a usage error (exit 2) too.
            let env = crate::present::service::otlp_config::process_env;
            let settings = otlp::OtlpSettings::new(url, args.otlp_interval, &env);
            Some(settings.map_err(|e| flagged("--otlp", e))?)
        }
    };
    Ok(ServiceSettings {
        metrics: args.metrics,
        otlp,
        hooks,
    })
}

/// Raises a `--traffic` interval to [`TRAFFIC_FLOOR`] (the command says so: see
/// [`traffic_warning`]).
fn traffic_floor(interval: Duration) -> Duration {
    interval.max(TRAFFIC_FLOOR)
}

/// What to tell the user when `--traffic` is below [`TRAFFIC_FLOOR`]: this module prints
/// nothing, the command shows it with its other warnings.
pub fn traffic_warning(args: &WatchArgs) -> Option<String> {
    let interval = args.traffic.filter(|&t| t < TRAFFIC_FLOOR)?;
    let floor = TRAFFIC_FLOOR.as_millis();
    Some(format!(
        "--traffic {interval:?} is below the {floor} ms floor: sending a PING every {floor} ms"
    ))
}

/// The endpoints of a fleet (several URLs, or `--from FILE`), each with its label and the
/// settings of `base` for its own endpoint; `None` for one endpoint named without `--from`.
pub fn fleet_settings(
    args: &WatchArgs,
    base: &WatchSettings,
    options: Vec<ConnectOptions>,
) -> Option<Vec<(String, WatchSettings)>> {
    if options.len() < 2 && args.from.is_none() {
        return None;
    }
    let labels = crate::watch::labels(&options);
    let fleet = options.into_iter().zip(labels).map(|(connect, label)| {
        let settings = WatchSettings {
            connect,
            ..base.clone()
        };
        (label, settings)
    });
    Some(fleet.collect())
}

/// What `simulate` runs: the scenario list, or a simulation.
pub enum SimulateSettings {
    /// `--list`: checked before any other flag, so it answers whatever else is given.
    List,
    Simulation(Box<SimulationSettings>),
}

/// Validates the command line of `simulate`: `--list`, else the one scenario it plays.
pub fn simulate_settings(args: &SimulateArgs) -> anyhow::Result<SimulateSettings> {
    if args.list {
        return Ok(SimulateSettings::List);
    }
    let simulation = simulation_settings(args)?;
    Ok(SimulateSettings::Simulation(Box::new(simulation)))
}

/// Validates the command line of `simulate` into the one scenario it plays.
pub fn simulation_settings(args: &SimulateArgs) -> anyhow::Result<SimulationSettings> {
    // `--proxy-api` alone plays no scenario: frames are sent when its API asks.
    let scenario = match args.play.asked() {
        Some(asked) => asked,
        None if args.proxy_api.is_some() => ScenarioChoice::ApiOnly,
        None if args.fault_injector_api.is_some() => ScenarioChoice::FaultInjector,
        None => args.play.choice(),
    };
    let client = (!args.command.is_empty()).then(|| ClientSettings {
        command: args.command.clone(),
        output: args.client_output.clone(),
    });
    Ok(SimulationSettings {
        speed: args.play.speed,
        repeat: args.repeat,
        port: args.port,
        password: args.password.clone(),
        user: args.user.clone(),
        catch_up: !args.no_catch_up,
        upstream: upstream_choice(args.upstream.as_deref(), usage)?,
        client,
        grade: args.grade,
        grade_json: args.grade_json.clone(),
        report: args.report.clone(),
        pcap: args.pcap.clone(),
        narration: if args.quiet {
            Verbosity::Quiet
        } else {
            Verbosity::Full
        },
        verbose: args.verbose,
        api: api_settings(args)?,
        fault_injector: fault_injector_settings(args)?,
        ..SimulationSettings::new(scenario)
    })
}

/// `--proxy-api`, `--listen`, `--default-interceptors` and `--announce`; a bad address is a
/// usage error.
fn api_settings(args: &SimulateArgs) -> anyhow::Result<Option<ApiSettings>> {
    let Some(addr) = &args.proxy_api else {
        return Ok(None);
    };
    if let Some(host) = &args.announce {
        let fine = |c: char| c.is_ascii_alphanumeric() || ".:-_".contains(c);
        if host.is_empty() || !host.chars().all(fine) {
            return Err(usage(
                "--announce",
                "expected a host name or an IP address, such as 0.0.0.0",
            ));
        }
    }
    let addr = loopback_or(addr).map_err(|e| usage("--proxy-api", e))?;
    let listen = if args.listen.is_empty() {
        vec![SocketAddr::from(([127, 0, 0, 1], 6379))]
    } else {
        args.listen
            .iter()
            .map(|l| loopback_or(l))
            .collect::<Result<_, _>>()
            .map_err(|e| usage("--listen", e))?
    };
    Ok(Some(ApiSettings {
        addr,
        listen,
        defaults: args.default_interceptors.clone(),
        announce: args.announce.clone(),
    }))
}

/// `--fault-injector-api` and `--endpoints-file`; a bad address is a usage error.
fn fault_injector_settings(
    args: &SimulateArgs,
) -> anyhow::Result<Option<crate::simulator::sim::fault_injector::FaultInjectorOptions>> {
    let Some(addr) = &args.fault_injector_api else {
        return Ok(None);
    };
    let addr = loopback_or(addr).map_err(|e| usage("--fault-injector-api", e))?;
    Ok(Some(
        crate::simulator::sim::fault_injector::FaultInjectorOptions {
            addr,
            endpoints_file: args.endpoints_file.clone(),
        },
    ))
}

/// `PORT` on 127.0.0.1, or `HOST:PORT` as given (an IP address, `[v6]:port` for IPv6).
fn loopback_or(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!(
            "expected PORT or HOST:PORT with an IP address, such as 4000 or 127.0.0.1:4000, found {:?}",
            crate::simulator::sim::notation::escape(text.as_bytes())
        )
    })
}

/// `--upstream`: none, `spawn`, or a URL (a bad one is a usage error, its text already free of
/// the password). `error` makes the usage error, as each command words it.
pub(super) fn upstream_choice(
    url: Option<&str>,
    error: fn(&str, String) -> anyhow::Error,
) -> anyhow::Result<UpstreamChoice> {
    Ok(match url {
        None => UpstreamChoice::None,
        Some("spawn") => UpstreamChoice::Spawn,
        Some(url) => UpstreamChoice::At(
            Upstream::parse(url).map_err(|e| error("--upstream", e.to_string()))?,
        ),
    })
}
