//! A certification's scenarios settled: each scenario's grade made final and turned into what
//! every report of `certify` is written from ([`settle`]), the same whether the scenario was
//! played in the certifying process or by a worker ([`super::worker`]), and what a whole
//! certification played ([`Run`]). It sits beside the simulation whose results it settles;
//! `certify` plays the scenarios, and `present::certify` shows the outcomes.

use super::play::Stop;
use super::start::{TooLoaded, FIRST_CONNECTION_FACTOR, LOAD_FACTOR};
use crate::grading::judge::{Grade, Rule};
use crate::present::certify::played::{Outcome, Page};
use crate::present::certify::progress::Ended;
use crate::simulator::sim::scenario::{Start, START_DEADLINE};

/// What a certification played: the scenarios finished, in the list's order whatever order
/// they finished in, and why it stopped early if it did.
#[derive(Default)]
pub struct Run {
    pub done: Vec<Done>,
    /// A scenario that could not be played, and why.
    pub failed: Option<(String, anyhow::Error)>,
    /// The exit code of the signal that stopped the run.
    pub interrupted: Option<i32>,
    /// A usage error was printed.
    pub usage: bool,
    /// A scenario's worker said why it could not play (the client could not be started): the
    /// exit code.
    pub said: Option<i32>,
}

/// One scenario finished: its outcome, its grade's JSON lines, and how it stopped.
pub struct Done {
    pub outcome: Outcome,
    pub json: String,
    pub stop: Stop,
}

/// How a play stopped, as its finished line tells it.
impl From<Stop> for Ended {
    fn from(stop: Stop) -> Ended {
        match stop {
            Stop::Ended => Ended::Whole,
            Stop::ClientExited => Ended::ClientExited,
            Stop::NeverStarted(load) => Ended::NeverStarted {
                too_loaded: load.is_some(),
            },
            Stop::Signal(name, _) => Ended::Signal(name),
        }
    }
}

/// A scenario's grade made final (a scenario that never started is NOT JUDGED, with why) and
/// turned into what every report is written from: the same whether it was played here or in a
/// process of its own.
pub fn settle(
    name: &str,
    mut grade: Grade,
    obs: crate::grading::judge::Observations,
    stop: Stop,
    seconds: f64,
    page: Option<(crate::present::report::Collected, Vec<String>)>,
) -> anyhow::Result<Done> {
    if let Stop::NeverStarted(load) = stop {
        never_started(&mut grade, name, load);
    }
    let json = crate::grading::judge::grade_lines::write(&obs, &grade)?;
    let page = page.map(|(lines, notes)| Page { obs, lines, notes });
    let outcome = Outcome {
        scenario: name.to_string(),
        run: None,
        grade,
        seconds,
        page,
    };
    Ok(Done {
        outcome,
        json,
        stop,
    })
}

/// The name of the result certify adds to the grade of a scenario that never started.
pub const STARTED: &str = "scenario-started";

/// A scenario that never started judged nothing of what it exists for, even when the rules it
/// did judge (`survives`) passed: it is NOT JUDGED, with why, and with the load when the client
/// was kept waiting for a CPU past what the start deadline allows for.
fn never_started(grade: &mut Grade, name: &str, load: Option<TooLoaded>) {
    let needs = match crate::simulator::sim::scenarios::by_name(name).map(|s| s.start) {
        Some(Start::OptIn(n)) if n > 1 => {
            format!("{n} connections opted in at once (a cluster client's, one per node)")
        }
        Some(Start::Subscribe) => "a subscription to AzureRedisEvents".into(),
        Some(Start::OptInSsubscribe(n)) => {
            format!("{n} connection(s) opted in at once and a sharded subscription (SSUBSCRIBE)")
        }
        _ => "a connection that opts in".into(),
    };
    let deadline = START_DEADLINE.as_secs();
    let first = deadline * u64::from(FIRST_CONNECTION_FACTOR);
    let why = match load {
        None => format!(
            "the scenario never started: it waits for {needs}, and the client had not within \
             {deadline} s of its first connection (or made none within {first} s)"
        ),
        Some(l) => format!(
            "the run was too loaded to tell: the scenario waits for {needs}, and the client had \
             not {} in the {:.0} s it was given, but its threads waited up to {:.0} s of it for a \
             CPU (a bound of {} s moves on by such waits up to {} times itself)",
            if l.connected { "done it" } else { "connected" },
            l.given_ms as f64 / 1000.0,
            l.waited_ms as f64 / 1000.0,
            if l.connected { deadline } else { first },
            LOAD_FACTOR
        ),
    };
    grade.rules.push(Rule::not_judged(STARTED, why));
    grade.settle();
}
