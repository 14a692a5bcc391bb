//! The flags of `maintwatch certify`, and the settings they become ([`settings`]): the command
//! and the worker pool below see a [`CertifySettings`], never a flag.
//!
//! The help lists the scenarios certify plays by default, each with how long it lasts, generated
//! from the scenario files, so that a client author can budget a CI job from `--help` alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Args;

use super::settings::upstream_choice;
use super::simulate::positive_speed;
use super::usage::flagged;
use crate::simulator::sim::scenario::{Start, START_DEADLINE};
use crate::simulator::sim::scenarios;
use crate::simulator::simulation::{
    CertifySettings, ClientSettings, ScenarioChoice, SimulationSettings, UpstreamChoice, Verbosity,
};

/// Scenarios that show a reader odd frames rather than give a client anything to act on: left
/// out by default.
pub const NOT_CERTIFIED: [&str; 1] = ["peer-variants"];

/// How many scenarios `certify` plays at once by default (`--jobs`; measured in docs/benchmarks.md).
pub const DEFAULT_JOBS: u16 = 8;

/// A feature a scenario needs of the client beyond taking the push notifications on one
/// connection. A scenario that needs one is played only when asked for, by its group's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing more: every client that opts in can act in it (group `default`).
    Nothing,
    /// A cluster client: the clock waits for several connections opted in at once, one per
    /// node (group `cluster`).
    Cluster,
    /// A subscriber to Azure Cache's `AzureRedisEvents` channel (group `azure`).
    Azure,
    /// Nothing more, but the scenario asks whether the client survives odd frames rather than
    /// how it handles a maintenance (group `robustness`, scenarios/README.md): played when
    /// asked for, so that the default set and the matrix's first tables stay what they were.
    Robustness,
}

impl Needs {
    /// The group's name in `--scenarios`.
    pub fn group(self) -> &'static str {
        match self {
            Needs::Nothing => "default",
            Needs::Cluster => "cluster",
            Needs::Azure => "azure",
            Needs::Robustness => "robustness",
        }
    }

    /// What the scenario's clock waits for: the feature a client must have.
    pub fn of(s: &crate::simulator::sim::scenario::Scenario) -> Needs {
        if scenarios::is_robustness(&s.name) {
            return Needs::Robustness;
        }
        match s.start {
            Start::Subscribe => Needs::Azure,
            Start::OptIn(n) if n > 1 => Needs::Cluster,
            // SSUBSCRIBE is a cluster command: only a cluster client's subscriber sends it.
            Start::OptInSsubscribe(_) => Needs::Cluster,
            _ => Needs::Nothing,
        }
    }
}

const GROUPS: [Needs; 4] = [
    Needs::Nothing,
    Needs::Cluster,
    Needs::Azure,
    Needs::Robustness,
];

/// The certified scenarios (all but [`NOT_CERTIFIED`]) of one group, in `--list` order.
///
/// Why a group is played only when asked for: a client without the feature (a single-endpoint
/// client under a cluster scenario, any client but StackExchange.Redis under an Azure one)
/// never starts the scenario's clock, waits the start deadline in it and is judged on nothing,
/// which would turn every such client's exit 0 into 9 and cost 30 s a scenario.
pub fn group(needs: Needs) -> Vec<&'static str> {
    let all = scenarios::all();
    scenarios::names()
        .into_iter()
        .filter(|n| !NOT_CERTIFIED.contains(n))
        .filter(|n| all.iter().any(|s| s.name == *n && Needs::of(s) == needs))
        .collect()
}

/// The scenarios certify plays when `--scenarios` is not given, in `--list` order.
pub fn default_scenarios() -> Vec<&'static str> {
    group(Needs::Nothing)
}

/// The scenarios to play for `--scenarios` as given: the default group when empty, each group
/// name expanded in place, each scenario once.
pub fn to_play(asked: &[String]) -> Vec<String> {
    if asked.is_empty() {
        return default_scenarios().into_iter().map(String::from).collect();
    }
    let mut out: Vec<String> = Vec::new();
    for name in asked {
        let names = match GROUPS.iter().find(|g| g.group() == name) {
            Some(&g) => group(g).into_iter().map(String::from).collect(),
            None => vec![name.clone()],
        };
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// `--scenarios`' values: every scenario's name, and the groups' names.
fn certify_scenario_names() -> clap::builder::PossibleValuesParser {
    let mut names = scenarios::names();
    names.extend(GROUPS.iter().map(|g| g.group()));
    clap::builder::PossibleValuesParser::new(names)
}

/// The scenario clock of a list of scenarios, in seconds: what a CI job budgets.
pub fn clock_seconds(names: &[&str]) -> f64 {
    scenarios::all()
        .iter()
        .filter(|s| names.contains(&s.name.as_str()))
        .map(|s| s.end)
        .sum()
}

/// The long description of `certify`. The `Command::Certify` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str = "Certifies a client application: runs CMD under each scenario in \
which a client can act, up to --jobs of them at once, each with a fresh simulator, a fresh redis-server \
behind it (--upstream spawn) and a fresh CMD process, exactly as `simulate --upstream spawn \
--grade -- CMD` would. It prints one line per finished scenario, then the client's row of the \
client matrix and every rule's verdict with its reason; --junit writes the same as JUnit XML for a \
CI system to show test by test.";

fn after_help() -> String {
    let all = scenarios::all();
    let listed = |needs: Needs| -> String {
        group(needs)
            .iter()
            .filter_map(|n| all.iter().find(|s| s.name == *n))
            .flat_map(|s| {
                let lead = format!("  {:24} {:>4} s  ", s.name, s.end);
                let width = super::help_width();
                let room = width.saturating_sub(lead.len()).max(ROOM);
                crate::present::output::human::hanging(&lead, &first_words(&s.about, room), width)
            })
            .map(|row| row + "\n")
            .collect()
    };
    format!(
        "Scenarios played by default, `default` in --scenarios (their length at --speed 1, {} s \
         together; a scenario that starts on a client's opt-in waits for it):\n{}\
         Played only when asked for, since a client without the feature would wait {} s in each \
         and be judged on nothing (exit 9):\n\
         `cluster`, for a cluster client (the clock waits for one opted-in connection per \
         node):\n{}\
         `azure`, for a client that subscribes to Azure Cache's AzureRedisEvents \
         (StackExchange.Redis):\n{}\
         `robustness`, {} frames a server may send, odd, malformed or badly placed, one per \
         scenario, each judged on whether the client keeps working after it ({} s together; \
         scenarios/README.md lists them).\n\
         Left out: {}.\n\n\
         Exit codes:\n  \
         0    every rule of every scenario passed\n  \
         1    a rule failed in some scenario\n  \
         2    usage error\n  \
         9    no rule failed, but some rule was NOT JUDGED (or nothing was judged)\n  \
         10   the client's command could not be started (the report so far is written)\n  \
         130  interrupted (Ctrl-C); 143: SIGTERM; 129: SIGHUP: the servers and the client were \
         stopped and the report so far written\n\n\
         Examples:\n  \
         maintwatch certify -- python3 app.py\n  \
         maintwatch certify --junit certify.xml -- node app.js\n  \
         maintwatch certify --scenarios failover,refusing --grade-json grades.jsonl -- ./app\n  \
         maintwatch certify --scenarios default,cluster -- python3 cluster_app.py",
        clock_seconds(&default_scenarios()),
        listed(Needs::Nothing),
        crate::simulator::sim::scenario::START_DEADLINE.as_secs(),
        listed(Needs::Cluster),
        listed(Needs::Azure),
        group(Needs::Robustness).len(),
        clock_seconds(&group(Needs::Robustness)),
        NOT_CERTIFIED.join(", ")
    )
}

/// The fewest columns a scenario's description is cut to in the help's table.
const ROOM: usize = 40;

/// A scenario's description cut to its first words, so that each fits one row of `room`
/// columns (on a terminal too narrow for that, the row wraps under its column).
fn first_words(about: &str, room: usize) -> String {
    if about.chars().count() <= room {
        return about.to_string();
    }
    // Room for the ` ...` that says the description goes on; cut where a line may break, so a
    // value keeps its unit (the glue is a no-break space until then).
    let glued = crate::present::output::human::glue_units(about);
    let cut: String = glued.chars().take(room - 4).collect();
    let end = cut.rfind(' ').unwrap_or(cut.len());
    let words = cut[..end].trim_end_matches([',', ';', ':']);
    format!("{} ...", words.replace('\u{a0}', " "))
}

/// `maintwatch certify`.
#[derive(Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = after_help())]
pub struct CertifyArgs {
    /// The scenarios to play, comma-separated, in this order (default: every scenario listed
    /// below as played by default); `default`, `cluster`, `azure` and `robustness` name the
    /// groups below.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', value_parser = certify_scenario_names(),
          hide_possible_values = true)]
    pub scenarios: Vec<String>,

    /// Write a JUnit XML report to FILE: one testsuite per scenario, one testcase per rule and
    /// notification (FAIL: <failure>, NOT JUDGED: <skipped>).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write every scenario's grade to FILE as JSON lines (`grade_input` and `grade`, each
    /// naming its scenario), as `simulate --grade-json` does for one.
    #[arg(long, value_name = "FILE")]
    pub grade_json: Option<PathBuf>,

    /// Write one self-contained HTML page to FILE with a section per scenario: its verdict, its
    /// timeline drawn, and its grade (docs/report.md).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,

    /// Run each scenario's clock this many times faster. Above 1 the timeout rules are NOT
    /// JUDGED, and a client acting on a MOVING's declared window acts late.
    #[arg(long, value_name = "N", default_value_t = 1.0, value_parser = positive_speed, allow_negative_numbers = true)]
    pub speed: f64,

    /// The Redis every command the simulator does not own is relayed to: `spawn` starts a fresh
    /// redis-server from PATH for each scenario; or redis://[user:pass@]host:port, or
    /// unix://[user:pass@]/path.
    #[arg(long, value_name = "URL|spawn", default_value = "spawn")]
    pub upstream: String,

    /// The directory for the client's output, one `SCENARIO.log` per scenario (default: a new
    /// directory in the temporary directory, named at the end).
    #[arg(long, value_name = "DIR")]
    pub client_output: Option<PathBuf>,

    /// Capture each scenario's packets into DIR/SCENARIO.pcap (as `simulate --pcap`): how a run
    /// in a network namespace of its own is kept as a capture. Needs CAP_NET_RAW (root, or the
    /// namespace's).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,

    /// How many scenarios play at once. Each plays in a process and a network namespace of its
    /// own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach
    /// another's; the longest start first, and the reports keep the list's order. 1 plays them
    /// one after another, in order. The default, 8, is what was measured on 2 cores
    /// (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the
    /// default set to the length of its longest scenario (47 s, against 294 s one at a time and
    /// 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain
    /// nothing. Only with --upstream spawn: one shared server is played one scenario at a time.
    #[arg(long, short = 'j', value_name = "N", default_value_t = DEFAULT_JOBS,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// Play each scenario N times, each time with a fresh simulator, redis-server and client.
    /// Each cell then says how often each verdict came (`F mov 1/20`: moved-before-close failed
    /// in 1 of 20 runs), JUnit has each test case once per run (`run 3/20`), and the exit code is
    /// the worst run's. For a client whose behaviour depends on its own scheduling, a cell of
    /// one run says what happened once; of 20, how often.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub runs: u16,

    /// The client application, after `--`, started afresh for each scenario with
    /// MAINTWATCH_SIM_URL, _HOST, _PORT and _DNS and (on Linux) a private /etc/resolv.conf
    /// naming the simulator's DNS, as `simulate -- CMD`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Validates the command line of `certify` into one scenario's settings per scenario to play,
/// each as `simulate --scenario NAME --upstream ... --grade --quiet -- CMD` would have made it,
/// silent, and stopped when the client never starts it.
pub fn settings(args: &CertifyArgs) -> anyhow::Result<CertifySettings> {
    let upstream = upstream_choice(Some(&args.upstream), flagged)?;
    let names = to_play(&args.scenarios);
    let dir = match &args.client_output {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("maintwatch-certify-{}", std::process::id())),
    };
    let runs = usize::from(args.runs);
    // With several runs each run's files go to a folder of their own: the same scenario may be
    // playing twice at once.
    let folder = |d: &Path, run: usize| match runs {
        1 => d.to_path_buf(),
        _ => d.join(format!("run-{run}")),
    };
    let scenarios = (1..=runs)
        .flat_map(|run| names.iter().map(move |name| (run, name)))
        .map(|(run, name)| SimulationSettings {
            speed: args.speed,
            upstream: upstream.clone(),
            client: Some(ClientSettings {
                command: args.command.clone(),
                output: Some(folder(&dir, run).join(format!("{name}.log"))),
            }),
            grade: true,
            pcap: args
                .pcap
                .as_ref()
                .map(|d| folder(d, run).join(format!("{name}.pcap"))),
            narration: Verbosity::Silent,
            start_deadline: Some(START_DEADLINE),
            ..SimulationSettings::new(ScenarioChoice::Named(name.clone()))
        })
        .collect();
    Ok(CertifySettings {
        scenarios,
        runs,
        // One shared upstream server is one scenario's at a time.
        jobs: match upstream {
            UpstreamChoice::Spawn => usize::from(args.jobs),
            _ => 1,
        },
        junit: args.junit.clone(),
        grade_json: args.grade_json.clone(),
        report: args.report.clone(),
        client_output: dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_set_leaves_out_peer_variants_and_what_needs_a_feature() {
        let d = default_scenarios();
        assert!(!d.contains(&"peer-variants"));
        assert_eq!(
            group(Needs::Cluster),
            ["oss-cluster", "cascading-smigrated"]
        );
        assert_eq!(
            group(Needs::Azure),
            ["azure-failover", "azure-replica", "azure-scale"]
        );
        let robustness = group(Needs::Robustness);
        assert!(robustness.iter().all(|n| n.starts_with("robust-")));
        assert!(d.iter().all(|n| !robustness.contains(n)));
        assert_eq!(
            d.len() + 1 + 2 + 3 + robustness.len(),
            scenarios::names().len()
        );
        let help = after_help();
        assert!(help.contains("`cluster`, for a cluster client"), "{help}");
        assert!(
            help.contains(&format!("{} s together", clock_seconds(&d))),
            "{help}"
        );
    }

    #[test]
    fn groups_expand_in_place_and_each_scenario_is_played_once() {
        let asked = |v: &[&str]| to_play(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            asked(&["refusing", "azure", "azure-scale"]),
            ["refusing", "azure-failover", "azure-replica", "azure-scale"]
        );
        assert_eq!(asked(&[]).len(), default_scenarios().len());
        let both = asked(&["default", "cluster", "oss-cluster"]);
        assert_eq!(both.len(), default_scenarios().len() + 2, "{both:?}");
    }
}
