//! What a played scenario needs, free of clap: `simulate` turns its command line into one
//! [`SimulationSettings`], `certify` into a [`CertifySettings`] holding one per scenario (both in
//! `cli::settings`), and the simulation below never sees a flag. `--speed`, say, is parsed once
//! into [`SimulationSettings::speed`] and goes from there to the simulator's clock
//! ([`SimulationSettings::sim_options`]) and to the judge's, nowhere else.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::simulator::sim::scenario::Scenario;
use crate::simulator::sim::upstream::Upstream;
use crate::simulator::sim::{scenarios, SimOptions};

/// Which scenario to play.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioChoice {
    /// An embedded scenario, by name.
    Named(String),
    /// A scenario file from disk.
    File(PathBuf),
    /// None: `simulate --proxy-api` alone, where frames are sent when its HTTP API asks.
    ApiOnly,
    /// None: `simulate --fault-injector-api`, where maintenances are played when its HTTP API
    /// asks.
    FaultInjector,
}

impl ScenarioChoice {
    /// The scenario itself; a name that is not embedded, or a file that does not parse, says so.
    pub fn load(&self) -> anyhow::Result<Scenario> {
        match self {
            ScenarioChoice::Named(name) => scenarios::chosen(name, None),
            ScenarioChoice::File(path) => scenarios::chosen("", Some(path)),
            ScenarioChoice::ApiOnly => Ok(Scenario::api_only()),
            ScenarioChoice::FaultInjector => Ok(Scenario::fault_injector()),
        }
    }

    /// The name a report gives it: the embedded name, or the file's path.
    pub fn name(&self) -> String {
        match self {
            ScenarioChoice::Named(name) => name.clone(),
            ScenarioChoice::File(path) => path.display().to_string(),
            ScenarioChoice::ApiOnly => Scenario::api_only().name,
            ScenarioChoice::FaultInjector => Scenario::fault_injector().name,
        }
    }
}

/// Where the commands the simulator does not own go.
#[derive(Clone, Debug)]
pub enum UpstreamChoice {
    /// Nowhere: the simulator answers what it knows and refuses the rest.
    None,
    /// A fresh redis-server from PATH, started for the run and stopped at its end.
    Spawn,
    /// A server already running (its URL validated, its password never printed).
    At(Upstream),
}

/// How much of the run is printed as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// The banner and every event: `simulate`.
    Full,
    /// The banner and the scenario's own steps: `simulate --quiet`.
    Quiet,
    /// Nothing: `certify` prints its own lines.
    Silent,
}

/// `simulate --proxy-api`: cae-resp-proxy's HTTP API beside the scenario, its addresses
/// already parsed (where its nodes relay to is the run's upstream).
#[derive(Clone, Debug)]
pub struct ApiSettings {
    /// Where the HTTP API listens.
    pub addr: SocketAddr,
    /// The nodes started with the simulator.
    pub listen: Vec<SocketAddr>,
    /// The proxy's default interceptors to install.
    pub defaults: Vec<String>,
    /// The host the `cluster` interceptor names every node by.
    pub announce: Option<String>,
}

/// The client application played to, after `--`.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub command: Vec<OsString>,
    /// Where its stdout and stderr go (default: a new file in the temporary directory).
    pub output: Option<PathBuf>,
}

/// One scenario played: everything `simulate` and each scenario of `certify` need.
#[derive(Clone)]
pub struct SimulationSettings {
    pub scenario: ScenarioChoice,
    /// The scenario clock runs this many times faster than the wall clock (> 0).
    pub speed: f64,
    /// Play again and again (no grade then).
    pub repeat: bool,
    /// The port every proxy shares (0: a free one).
    pub port: u16,
    /// Required of clients; never printed.
    pub password: Option<String>,
    pub user: Option<String>,
    /// Replay the last MIGRATED/FAILED_OVER after an opt-in's `+OK`.
    pub catch_up: bool,
    pub upstream: UpstreamChoice,
    pub client: Option<ClientSettings>,
    /// Print the grade table at the end.
    pub grade: bool,
    /// Write the grade as JSON lines here.
    pub grade_json: Option<PathBuf>,
    /// Write the run's HTML page here.
    pub report: Option<PathBuf>,
    /// Capture the run's packets here.
    pub pcap: Option<PathBuf>,
    pub narration: Verbosity,
    /// Narrate every DNS query, not only each source address's first.
    pub verbose: bool,
    /// The proxy API served beside the scenario.
    pub api: Option<ApiSettings>,
    /// The fault injector API served in place of a scenario.
    pub fault_injector: Option<crate::simulator::sim::fault_injector::FaultInjectorOptions>,
    /// Stop when the scenario's clock has not started this long after the client's first
    /// connection (a scenario that starts on opt-ins waits for them forever otherwise), or when
    /// the client has made none within `FIRST_CONNECTION_FACTOR` times this.
    pub start_deadline: Option<Duration>,
}

impl SimulationSettings {
    /// A scenario at speed 1 on a free port, nothing asked beyond playing it, narrated in full.
    pub fn new(scenario: ScenarioChoice) -> SimulationSettings {
        SimulationSettings {
            scenario,
            speed: 1.0,
            repeat: false,
            port: 0,
            password: None,
            user: None,
            catch_up: true,
            upstream: UpstreamChoice::None,
            client: None,
            grade: false,
            grade_json: None,
            report: None,
            pcap: None,
            narration: Verbosity::Full,
            verbose: false,
            api: None,
            fault_injector: None,
            start_deadline: None,
        }
    }

    /// Whether the run ends in a grade (asked for directly, or by one of its outputs).
    pub fn grading(&self) -> bool {
        self.grade || self.grade_json.is_some() || self.report.is_some()
    }

    pub fn silent(&self) -> bool {
        self.narration == Verbosity::Silent
    }

    /// The simulator's options for `scenario`, relaying to `upstream`.
    pub fn sim_options(&self, scenario: Scenario, upstream: Option<Upstream>) -> SimOptions {
        SimOptions {
            upstream,
            traffic: self.grading(),
            keep: self.grading(),
            speed: self.speed,
            port: self.port,
            password: self.password.clone(),
            user: self.user.clone(),
            catch_up: self.catch_up,
            repeat: self.repeat,
            fault_injector: self.fault_injector.clone(),
            ..SimOptions::new(scenario)
        }
    }
}

/// `certify`: the scenarios to play, each fully settled, and where the reports go.
#[derive(Clone)]
pub struct CertifySettings {
    /// In the order given (or the default order): the order of every report. With several
    /// runs, the list once per run, run after run.
    pub scenarios: Vec<SimulationSettings>,
    /// How many times each scenario is played (`--runs`), each time afresh.
    pub runs: usize,
    /// How many scenarios play at once (1: one after another, in order).
    pub jobs: usize,
    pub junit: Option<PathBuf>,
    pub grade_json: Option<PathBuf>,
    pub report: Option<PathBuf>,
    /// The directory of the client's output, one `SCENARIO.log` per scenario.
    pub client_output: PathBuf,
}

impl CertifySettings {
    pub fn names(&self) -> Vec<String> {
        self.scenarios.iter().map(|s| s.scenario.name()).collect()
    }

    /// Which run the `i`th play of the list is, counted from 1, and out of how many: `None` with
    /// one run.
    pub fn run_of(&self, i: usize) -> Option<(usize, usize)> {
        let per_run = self.scenarios.len() / self.runs.max(1);
        (self.runs > 1 && per_run > 0).then(|| (i / per_run + 1, self.runs))
    }

    /// The `i`th play's name on screen: the scenario's, with its run when there are several
    /// (`failover, run 3/20`).
    pub fn label(&self, i: usize) -> String {
        let name = self.scenarios[i].scenario.name();
        match self.run_of(i) {
            Some((k, n)) => format!("{name}, run {k}/{n}"),
            None => name,
        }
    }

    pub fn output_dir(&self) -> &Path {
        &self.client_output
    }
}
