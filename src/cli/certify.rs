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
        .flat_map(|s| {
            let lead = format!("  {:24} {:>4} s  ", s.name, s.end);
            let width = super::help_width();
            let room = width.saturating_sub(lead.len()).max(ROOM);
            crate::output::human::hanging(&lead, &first_words(&s.about, room), width)
        })
        .map(|row| row + "\n")
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
    let glued = crate::output::human::glue_units(about);
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
