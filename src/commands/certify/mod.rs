//! `maintwatch certify`: every scenario a client can act in, played to one client application,
//! graded, and reported as a matrix row, a table and JUnit XML.
//!
//! A client library's CI wants one command, one exit code and a report its CI shows test by
//! test. Each scenario is played by `simulate`'s own code ([`simulation::graded`]), so a certify
//! run grades a client exactly as `simulate --upstream spawn --grade -- CMD` does. Scenarios run
//! one after another: the timing rules must not change with the machine's load.

mod jobs;
mod runner;

pub use crate::simulator::simulation::worker::{take_input, worker, WorkerSettings, WORKER};

pub use crate::simulator::sim::scenario::START_DEADLINE;

pub use crate::present::certify::{
    cases, finished_line, junit, junit_not_started, played, summary, worst, xml, Case, Outcome,
    Page,
};
pub use crate::simulator::simulation::settled::{settle, Done, Run, STARTED};
pub use runner::run;
