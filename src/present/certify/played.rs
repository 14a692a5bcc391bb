//! What certify's reports are written from: each scenario's result ([`Outcome`]), its part of
//! the `--report` page ([`Page`]), and the worst verdict over them. Plain data, so that the
//! renderers beside it read a certification without knowing how its scenarios were played; the
//! simulator settles each play into one (`simulation::settled`).

use crate::grading::judge::{Grade, Observations, Verdict};
use crate::present::report::Collected;

/// One scenario's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: String,
    /// Which run this was, out of how many, with `--runs` above 1.
    pub run: Option<(usize, usize)>,
    pub grade: Grade,
    /// Wall-clock seconds the scenario took, for the JUnit `time`.
    pub seconds: f64,
    /// What `--report` draws the scenario's section from, when it was asked for.
    pub page: Option<Page>,
}

/// A scenario's part of the `--report` page: the judge's observations, the frames sent, and
/// how the run ended.
#[derive(Debug, Clone)]
pub struct Page {
    pub obs: Observations,
    pub lines: Collected,
    pub notes: Vec<String>,
}

/// The worst verdict over the scenarios: fail, then not judged, then pass (nothing played is not
/// a pass).
pub fn worst(outcomes: &[Outcome]) -> Verdict {
    outcomes
        .iter()
        .map(|o| o.grade.verdict)
        .max()
        .unwrap_or(Verdict::NotJudged)
}

/// A play's name: the scenario's, with its run when there were several (`failover, run 3/20`).
pub fn played(o: &Outcome) -> String {
    match o.run {
        Some((k, n)) => format!("{}, run {k}/{n}", o.scenario),
        None => o.scenario.clone(),
    }
}
