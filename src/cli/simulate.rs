//! The flags of `maintwatch simulate` and `maintwatch demo`.
//!
//! Both help texts list every embedded scenario with its one line, generated from the scenario
//! files themselves, so the help cannot drift from what the simulator actually plays.

use std::path::PathBuf;

use clap::Args;

use crate::simulator::sim::scenarios;
use crate::simulator::simulation::ScenarioChoice;

fn simulate_after_help() -> String {
    format!(
        "Scenarios:\n{}\nExamples:\n  \
         maintwatch simulate                         # single-proxy at real speed\n  \
         maintwatch simulate --scenario dns-race --speed 4\n  \
         maintwatch simulate --scenario multi-proxy --loop --port 16379\n  \
         maintwatch simulate --password s3cret --user app\n  \
         maintwatch simulate --scenario-file my.scn  # format: scenarios/README.md\n  \
         maintwatch simulate --list\n  \
         maintwatch simulate --scenario multi-proxy --upstream spawn --grade -- python3 app.py\n\n\
         Then, in another terminal (PORT and DNSPORT as printed):\n  \
         maintwatch watch redis://db.sim.maintwatch.test:PORT --dns-server 127.0.0.1:DNSPORT\n  \
         redis-cli -3 -h 127.0.0.2 -p PORT           # then: CLIENT MAINT_NOTIFICATIONS ON\n  \
         dig @127.0.0.1 -p DNSPORT db.sim.maintwatch.test",
        listing_wrapped(super::help_width())
    )
}

fn demo_after_help() -> String {
    format!(
        "Scenarios:\n{}\nExamples:\n  maintwatch demo\n  maintwatch demo --scenario dns-race --speed 2\n  maintwatch demo --scenario oss-cluster\n  maintwatch demo --scenario-file my.scn      # format: scenarios/README.md",
        listing_wrapped(super::help_width())
    )
}

/// The same listing for help texts, laid out for `width` columns: descriptions wrapped between
/// words under their own column (a value kept with its unit), so the names stay a column however
/// long a description is and no line needs wrapping again.
pub fn listing_wrapped(width: usize) -> String {
    let all = scenarios::all();
    let name_width = all.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in &all {
        let lead = format!("  {:name_width$}  ", s.name);
        for row in crate::present::output::human::hanging(&lead, &s.about, width) {
            out.push_str(&row);
            out.push('\n');
        }
    }
    out
}

/// The long description of `simulate`. The `Command::Simulate` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const SIMULATE_LONG_ABOUT: &str = "Runs a simulated deployment that sends maintenance notifications, on loopback, so \
that maintwatch or any client library can be pointed at it. It is a RESP3 server speaking enough \
Redis for real clients (HELLO 2/3 with AUTH, CLIENT ID/SETNAME/SETINFO/MAINT_NOTIFICATIONS, PING, \
ECHO, GET/SET/DEL, SELECT, QUIT, CLUSTER SLOTS/SHARDS/NODES on the cluster scenario), one listener \
per proxy on 127.0.0.2, 127.0.0.3 ... sharing one port, plus an authoritative DNS server on \
127.0.0.1 for db.sim.maintwatch.test whose A records change on the scenario's clock.\n\n\
The server behaves as Redis Enterprise was measured to: one sequence counter per database shared \
by every type, the last MIGRATED/FAILED_OVER replayed right after an opt-in's +OK, a MOVING re-sent \
(same seq) to connections that opt in while its window is open, notifications only to opted-in \
connections, and MOVING's close node-wide: every connection of that proxy, opted in or not.\n\n\
It prints where it listens, then narrates each step as it happens. Without --loop it exits when \
the scenario ends.";

/// `maintwatch simulate`.
#[derive(Args, Debug, Clone)]
#[command(
    long_about = SIMULATE_LONG_ABOUT,
    after_help = simulate_after_help(),
    // The shared group's text, with what only simulate has.
    mut_arg("scenario", |a| a.help(
        "The embedded scenario to play (see --list; default single-proxy, or none with --proxy-api)"
    ))
)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub play: ScenarioArgs,

    /// Also serve the HTTP API of cae-resp-proxy (the Docker proxy of the client libraries'
    /// maintenance test suites) on [HOST:]PORT, loopback unless a host is given; its nodes are
    /// --listen and relay to --upstream (docs/proxy-api.md). Without --scenario nothing happens
    /// until the API asks.
    #[arg(long, value_name = "[HOST:]PORT", requires = "upstream")]
    pub proxy_api: Option<String>,

    /// Serve the HTTP API of Redis Enterprise's fault injector on [HOST:]PORT, loopback unless a
    /// host is given, in place of a scenario: the client libraries' real-cluster suites create
    /// databases and trigger maintenances through it, each played on the simulator's proxies
    /// (docs/fault-injector.md).
    #[arg(
        long,
        value_name = "[HOST:]PORT",
        conflicts_with_all = ["proxy_api", "scenario", "scenario_file"]
    )]
    pub fault_injector_api: Option<String>,

    /// Write the fault injector's databases here, as the suites read them
    /// (REDIS_ENDPOINTS_CONFIG_PATH), again whenever one is created, deleted or moved.
    #[arg(long, value_name = "PATH", requires = "fault_injector_api")]
    pub endpoints_file: Option<PathBuf>,

    /// The proxy API's nodes, comma-separated: [HOST:]PORT each, loopback unless a host is
    /// given (the proxy's LISTEN_PORT; default 6379).
    #[arg(
        long,
        value_name = "PORTS",
        value_delimiter = ',',
        requires = "proxy_api"
    )]
    pub listen: Vec<String>,

    /// The proxy's default interceptors to install, comma-separated: cluster (CLUSTER SLOTS,
    /// SHARDS, NODES answered with the nodes), hitless (the opt-in answered +OK), logger
    /// (the proxy's DEFAULT_INTERCEPTORS; default none).
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "proxy_api"
    )]
    pub default_interceptors: Vec<String>,

    /// The host the cluster interceptor names every node by instead of its listening address:
    /// `--announce 0.0.0.0` answers as the proxy does behind redis-py's compose file
    /// (LISTEN_HOST=0.0.0.0) while listening on loopback only.
    #[arg(long, value_name = "HOST", requires = "proxy_api")]
    pub announce: Option<String>,

    /// Play the scenario again and again; between rounds DNS and listeners are reset and every
    /// connection is closed so clients start over.
    #[arg(long = "loop")]
    pub repeat: bool,

    /// List the scenarios, one line each, and exit.
    #[arg(long)]
    pub list: bool,

    /// Port shared by every proxy (0 picks a free one).
    #[arg(long, short = 'p', default_value_t = 0)]
    pub port: u16,

    /// Require this password (AUTH / HELLO 3 AUTH). Never printed.
    #[arg(long, env = "MAINTWATCH_SIM_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,

    /// The ACL user the password belongs to (default: default).
    #[arg(long, requires = "password")]
    pub user: Option<String>,

    /// Do not replay the last MIGRATED/FAILED_OVER after an opt-in's +OK.
    #[arg(long)]
    pub no_catch_up: bool,

    /// Print where it listens and the scenario's steps only, not every connection and command.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Print every DNS query the simulator answers. By default only the first from each source
    /// address is printed (a client may ask hundreds of times) and the rest are counted at the end.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Relay every command the simulator does not own (all but HELLO, AUTH, QUIT, CLIENT
    /// SETINFO/MAINT_NOTIFICATIONS and a cluster's topology) to this Redis, one upstream
    /// connection per client connection: redis://[user:pass@]host:port,
    /// unix://[user:pass@]/path/to/redis.sock, or `spawn` to start redis-server from PATH on a
    /// free loopback port (relayed through its Unix socket; stopped at exit).
    #[arg(long, value_name = "URL|spawn")]
    pub upstream: Option<String>,

    /// At the end, grade each client's behaviour against docs/protocol.md (a table on stdout;
    /// exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were
    /// not judged or nothing was). Stalls (`stall` steps) last real seconds whatever --speed,
    /// since the client's timers do; `timeout-restored` is judged only at --speed 1.
    #[arg(long, conflicts_with = "repeat")]
    pub grade: bool,

    /// Also write the grade to FILE as JSON lines: `grade_input` (what was observed, for `replay
    /// --grade`) and `grade` (implies --grade).
    #[arg(long, value_name = "FILE", conflicts_with = "repeat")]
    pub grade_json: Option<PathBuf>,

    /// Also write a self-contained HTML page of the run to FILE: the timeline drawn and classed
    /// by the grade's verdicts, the grade, the summary and the frames sent (docs/report.md;
    /// implies --grade).
    #[arg(long, value_name = "FILE.html", conflicts_with = "repeat")]
    pub report: Option<PathBuf>,

    /// Where the client's (CMD's) stdout and stderr go (default: a new file in the temporary
    /// directory, named in the grade).
    #[arg(long, value_name = "FILE", requires = "command")]
    pub client_output: Option<PathBuf>,

    /// Capture the run's own packets (its proxies and its DNS, on the loopback) into FILE, in
    /// the pcap format `maintwatch pcap` and tcpdump read: the way to keep a capture of a run
    /// that sits in a network namespace of its own, where a tcpdump outside sees nothing.
    /// Needs CAP_NET_RAW (root, or the namespace's).
    #[arg(long, value_name = "FILE", conflicts_with = "repeat")]
    pub pcap: Option<PathBuf>,

    /// The client to run under the simulator, after `--`: it gets MAINTWATCH_SIM_URL, _HOST,
    /// _PORT and _DNS, and on Linux an /etc/resolv.conf of its own naming the simulator's DNS.
    /// The run ends when the scenario ends, when CMD exits or on Ctrl-C; CMD is then stopped
    /// (SIGTERM, SIGKILL 5 s later) and how it ended is part of the grade.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// The scenario and its clock: the flags `simulate` and `demo` share, declared once.
#[derive(Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// The embedded scenario to play (see --list; default single-proxy).
    #[arg(long, value_name = "NAME",
          value_parser = scenario_names(), hide_possible_values = true,
          conflicts_with = "scenario_file")]
    pub scenario: Option<String>,

    /// Play a scenario file from disk instead (format: scenarios/README.md).
    #[arg(long, value_name = "PATH")]
    pub scenario_file: Option<PathBuf>,

    /// Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not
    /// change, so MOVING still declares its real window). Stalls are not shortened: they last
    /// real seconds, because a client's timeouts do.
    #[arg(long, value_name = "N", default_value_t = 1.0, value_parser = positive_speed, allow_negative_numbers = true)]
    pub speed: f64,
}

impl ScenarioArgs {
    /// The scenario asked for by file or name; `None` when neither was given.
    pub fn asked(&self) -> Option<ScenarioChoice> {
        match (&self.scenario_file, &self.scenario) {
            (Some(path), _) => Some(ScenarioChoice::File(path.clone())),
            (None, Some(name)) => Some(ScenarioChoice::Named(name.clone())),
            (None, None) => None,
        }
    }

    /// The scenario asked for, or the default one.
    pub fn choice(&self) -> ScenarioChoice {
        self.asked()
            .unwrap_or_else(|| ScenarioChoice::Named(scenarios::DEFAULT.to_string()))
    }
}

/// The long description of `demo`. The `Command::Demo` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const DEMO_LONG_ABOUT: &str = "Runs the simulator in-process and watches it: a client resolves the database \
hostname through the simulator's DNS, connects, sends HELLO 3 and the opt-in, and prints every push \
frame parsed beside its exact bytes, the DNS changes the simulator makes, and the server's close \
with its offset from the first notification. It needs nothing else running and exits when the \
scenario ends.";

/// `maintwatch demo`.
#[derive(Args, Debug, Clone)]
#[command(
    long_about = DEMO_LONG_ABOUT,
    after_help = demo_after_help()
)]
pub struct DemoArgs {
    #[command(flatten)]
    pub play: ScenarioArgs,

    /// List the scenarios, one line each, and exit (as `simulate --list`).
    #[arg(long)]
    pub list: bool,

    /// Also write the watch's JSON lines to FILE (a capture `replay` reads back).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<std::path::PathBuf>,

    /// Also write a self-contained HTML page of the run to FILE at the end: the watch's timeline
    /// drawn, its summary and the frames it read (docs/report.md).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,

    /// Colour: auto (a terminal and no NO_COLOR), always, never.
    #[arg(long, value_enum, default_value_t = crate::cli::ColorChoice::Auto)]
    pub color: crate::cli::ColorChoice,
}

/// What `demo` runs: the scenario, its speed, and where its lines and page go.
pub struct DemoSettings {
    /// `--list`: the scenarios, and nothing played.
    pub list: bool,
    pub scenario: ScenarioChoice,
    /// Scenario seconds per real second.
    pub speed: f64,
    /// `--capture`: the watch's lines as JSON too.
    pub capture: Option<PathBuf>,
    /// `--report`: the page to write.
    pub report: Option<PathBuf>,
    pub style: crate::present::output::human::Style,
}

impl DemoArgs {
    /// The settings of these flags.
    pub fn settings(&self) -> DemoSettings {
        DemoSettings {
            list: self.list,
            scenario: self.play.choice(),
            speed: self.play.speed,
            capture: self.capture.clone(),
            report: self.report.clone(),
            // Demo's text only goes to a person: no `--json`.
            style: self.color.style(false),
        }
    }
}

/// The embedded scenario names as clap's possible values: a wrong name is a usage error that
/// lists them, and the shell completions offer them (the help lists them with their
/// descriptions, so clap's own list is hidden there).
pub(crate) fn scenario_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(scenarios::names())
}

pub(crate) fn positive_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!(
            "expected a number above 0, such as 1, 4 or 0.5, found {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(subcommand)]
        command: Sub,
    }

    // A test-only parser: the size of its variants does not matter.
    #[allow(clippy::large_enum_variant)]
    #[derive(clap::Subcommand)]
    enum Sub {
        Simulate(SimulateArgs),
        Demo(DemoArgs),
    }

    fn parse(args: &[&str]) -> Result<T, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
    }

    /// Completion offers what clap knows as possible values; a free string offered nothing.
    #[test]
    fn scenario_names_are_possible_values_for_completion() {
        use clap::CommandFactory;
        let cmd = T::command();
        for sub in ["simulate", "demo"] {
            let arg = cmd
                .find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == "scenario"))
                .unwrap();
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            assert_eq!(values, scenarios::names(), "{sub}");
        }
        let e = parse(&["simulate", "--scenario", "nope"]).err().unwrap();
        assert_eq!(e.exit_code(), crate::exit::USAGE);
        assert!(e.to_string().contains("dns-race"), "{e}");
    }

    #[test]
    fn demo_takes_a_scenario_file_but_not_with_a_name() {
        let Sub::Demo(d) = parse(&["demo", "--scenario-file", "my.scn"])
            .unwrap()
            .command
        else {
            panic!("not demo")
        };
        assert_eq!(
            d.play.scenario_file.as_deref(),
            Some(std::path::Path::new("my.scn"))
        );
        assert!(parse(&["demo", "--scenario-file", "a", "--scenario", "dns-race"]).is_err());
    }

    #[test]
    fn wrapped_listing_keeps_names_in_a_column() {
        let text = listing_wrapped(80);
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        for s in scenarios::all() {
            assert!(text.contains(&format!("  {} ", s.name)), "{text}");
        }
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(&text).contains(&words(&scenarios::all()[0].about)));
    }
}
