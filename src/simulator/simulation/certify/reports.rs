//! certify's files, written from what was played so far whatever stopped the run: `--junit`,
//! `--grade-json` and `--report`; and, when the client cannot be started at all, the JUnit file
//! that says so.

use anyhow::Context;

use crate::exit;
use crate::present::certify::book::write_page;
use crate::present::certify::junit::{junit, junit_not_started};
use crate::present::certify::played::Outcome;
use crate::present::output::terminal;
use crate::simulator::simulation::settings::CertifySettings;

/// The client cannot be started: said once, recorded in `--junit` as one error a CI system
/// shows, and certify's own exit code; no scenario is played.
pub fn not_started(args: &CertifySettings, why: &str) -> anyhow::Result<i32> {
    terminal::tell("error", &format!("{why}; no scenario was played"));
    // The page and the grades of nothing played, as when a scenario could not start its client.
    write_reports(args, &[], "")?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit_not_started(why))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    Ok(exit::CLIENT_NOT_STARTED)
}

/// `--junit`, `--grade-json` and `--report`, with what was played so far.
pub fn write_reports(
    args: &CertifySettings,
    outcomes: &[Outcome],
    json: &str,
) -> anyhow::Result<()> {
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(outcomes))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    if let Some(path) = &args.grade_json {
        std::fs::write(path, json)
            .with_context(|| format!("writing the grades to {}", path.display()))?;
    }
    if let Some(path) = &args.report {
        write_page(outcomes, path)?;
    }
    Ok(())
}
