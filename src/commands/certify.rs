//! `maintwatch certify`: every scenario a client can act in, played to one client application,
//! graded, and reported as a matrix row, a table and JUnit XML.
//!
//! A client library's CI wants one command, one exit code and a report its CI shows test by
//! test. Each scenario is played by `simulate`'s own code (`simulation::graded`), so a certify
//! run grades a client exactly as `simulate --upstream spawn --grade -- CMD` does. Scenarios run
//! one after another unless `--jobs` says otherwise: the timing rules must not change with the
//! machine's load. This is the wiring: the simulator plays the scenarios and writes their files
//! (`simulation::certify`), `present::certify` shows what they gave, and the exit code is the
//! worst verdict's.

pub use crate::simulator::simulation::worker::{take_input, worker};

use crate::exit;
use crate::present::certify::closing::{print_summary, End};
use crate::present::certify::played::{worst, Outcome};
use crate::present::output::terminal;
use crate::simulator::simulation::certify::{
    cannot_start, not_started, one_by_one, output_dir, parallel, say_isolation, write_reports,
};
use crate::simulator::simulation::{client, CertifySettings, Signals};

/// Runs `maintwatch certify`: plays every scenario of `args` and writes the reports.
pub async fn run(args: &CertifySettings) -> anyhow::Result<i32> {
    if let Some(why) = args.scenarios.first().and_then(cannot_start) {
        return not_started(args, &why);
    }
    say_isolation();
    let names = args.names();
    let dir = output_dir(args)?;
    // Registered before anything starts: a Ctrl-C stops the scenarios being played (their
    // servers and clients too) and writes the report so far.
    let mut signals = Signals::new()?;
    let run = if args.jobs > 1 {
        parallel(args, &mut signals).await?
    } else {
        one_by_one(args, &mut signals).await?
    };
    let outcomes: Vec<Outcome> = run.done.iter().map(|d| d.outcome.clone()).collect();
    let json: String = run.done.iter().map(|d| d.json.as_str()).collect();
    write_reports(args, &outcomes, &json)?;
    if run.usage {
        return Ok(exit::USAGE);
    }
    if let Some(code) = run.said {
        return Ok(code);
    }
    if let Some((name, e)) = run.failed {
        // The client could not be started, say: what was played before still counts.
        if client::not_started(&e) {
            let text = format!("scenario {name}: {e}");
            terminal::tell("error", &text);
            return Ok(exit::CLIENT_NOT_STARTED);
        }
        return Err(e.context(format!("scenario {name}")));
    }
    let code = run
        .interrupted
        .unwrap_or_else(|| worst(&outcomes).exit_code());
    let end = End {
        names: &names,
        dir: &dir,
        junit: args.junit.as_deref(),
        report: args.report.as_deref(),
        grades: args.grade_json.as_deref(),
        interrupted: run.interrupted.is_some(),
        code,
    };
    // A closed stdout (`| head`) loses the summary, not the grade: the files are written and
    // the exit code is the one the scenarios earned.
    match print_summary(&outcomes, &end) {
        Err(e) if !exit::closed_pipe(&e) => return Err(e),
        _ => {}
    }
    Ok(code)
}
