//! The flags of `maintwatch certify`.
//!
//! The help lists the scenarios certify plays by default, each with how long it lasts, generated
//! from the scenario files, so that a client author can budget a CI job from `--help` alone.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::simulate::{positive_speed, scenario_names};
use crate::sim::scenarios;

/// Scenarios that show a reader odd frames rather than give a client anything to act on: left
/// out by default.
pub const NOT_CERTIFIED: [&str; 1] = ["peer-variants"];

/// How many scenarios `certify` plays at once by default (`--jobs`; measured in BENCHMARKS.md).
pub const DEFAULT_JOBS: u16 = 6;

/// The scenarios certify plays when `--scenarios` is not given, in `--list` order.
pub fn default_scenarios() -> Vec<&'static str> {
    scenarios::names()
        .into_iter()
        .filter(|n| !NOT_CERTIFIED.contains(n))
        .collect()
}

/// The long description of `certify`. The `Command::Certify` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str = "Certifies a client application: runs CMD under each scenario in \
which a client can act, one after another, each with a fresh simulator, a fresh redis-server \
behind it (--upstream spawn) and a fresh CMD process, exactly as `simulate --upstream spawn \
--grade -- CMD` would. It prints one line per finished scenario, then the client's row of the \
client matrix and every rule's verdict with its reason; --junit writes the same as JUnit XML for a \
CI system to show test by test.";

fn after_help() -> String {
    let listed: String = scenarios::all()
        .iter()
        .filter(|s| !NOT_CERTIFIED.contains(&s.name.as_str()))
        .map(|s| {
            format!(
                "  {:24} {:>4} s  {}\n",
                s.name,
                s.end,
                first_words(&s.about)
            )
        })
        .collect();
    format!(
        "Scenarios played by default (their length at --speed 1; a scenario that starts on a \
         client's opt-in waits for it):\n{listed}\
         Left out by default: {}.\n\n\
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
         maintwatch certify --scenarios failover,refusing --grade-json grades.jsonl -- ./app",
        NOT_CERTIFIED.join(", ")
    )
}

/// A scenario's description cut to its first clause, so each fits one help line.
fn first_words(about: &str) -> String {
    const ROOM: usize = 60;
    if about.chars().count() <= ROOM {
        return about.to_string();
    }
    let cut: String = about.chars().take(ROOM).collect();
    let end = cut.rfind(' ').unwrap_or(cut.len());
    format!("{} ...", cut[..end].trim_end_matches([',', ';', ':']))
}

/// `maintwatch certify`.
#[derive(Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = after_help())]
pub struct CertifyArgs {
    /// The scenarios to play, comma-separated, in this order (default: every scenario listed
    /// below).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', value_parser = scenario_names(),
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
    #[arg(long, value_name = "N", default_value_t = 1.0, value_parser = positive_speed)]
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
    /// another's; the reports keep the order of the list whatever order they finish in. 1 plays
    /// them one after another, in order. The default, 6, is what 2 cores bear (docs/certify.md):
    /// the scenarios mostly wait on their clocks, and six at once bring the default set to about
    /// the length of its longest scenarios with the same verdicts as one at a time. Only with
    /// --upstream spawn: one shared server is played one scenario at a time.
    #[arg(long, short = 'j', value_name = "N", default_value_t = DEFAULT_JOBS,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// The client application, after `--`, started afresh for each scenario with
    /// MAINTWATCH_SIM_URL, _HOST, _PORT and _DNS and (on Linux) a private /etc/resolv.conf
    /// naming the simulator's DNS, as `simulate -- CMD`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_but_peer_variants_is_certified_by_default() {
        let d = default_scenarios();
        assert!(!d.contains(&"peer-variants"));
        assert_eq!(d.len() + 1, scenarios::names().len());
        assert!(after_help().contains("failover"));
    }
}
