//! `maintwatch simulate`: run a scenario on loopback and narrate it, for a person pointing a
//! client at it.
//!
//! The first thing printed is everything needed to connect (proxy addresses, the DNS server, the
//! hostname, whether a password is needed), then one line per thing the simulator does, as it does
//! it. Without `--loop` the command ends with the scenario.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::cli::settings::SimulateSettings;
use crate::exit;
use crate::grading::judge::Observations;
use crate::present::output::human;
use crate::simulator::sim::scenarios;
use crate::simulator::simulation::grade::Grade;
use crate::simulator::simulation::{
    graded, play, report_parts, Graded, Signals, SimulationSettings, Stop,
};

/// Runs `maintwatch simulate`.
pub async fn run(settings: SimulateSettings) -> anyhow::Result<i32> {
    let SimulateSettings::Simulation(args) = settings else {
        let mut out = std::io::stdout().lock();
        let columns = crate::present::output::terminal::stdout_columns();
        let row = |lead: &str, about: &str| human::hanging_at(lead, about, columns);
        write!(out, "{}", scenarios::listing_by(row))?;
        out.flush()?;
        return Ok(exit::SUCCESS);
    };
    // Registered first: a Ctrl-C right after the `try` lines appeared must end the run with the
    // simulator shut down (and the grade so far), not kill the process.
    let mut signals = Signals::new()?;
    let args = &*args;
    if !args.grading() {
        return Ok(match play(args, &mut signals).await? {
            Some(played) => played.stop.code(),
            None => exit::USAGE,
        });
    }
    let Some(g) = graded(args, &mut signals).await? else {
        return Ok(exit::USAGE);
    };
    if let Some(path) = &args.report {
        write_report(path, &g)?;
    }
    report(&g, args)
}

/// `--report`: the page of the run, drawn from the judge's observations and grade, with the
/// frames the simulator sent.
fn write_report(path: &std::path::Path, run: &Graded) -> anyhow::Result<()> {
    let (lines, notes) = report_parts(run);
    crate::present::report::Report {
        command: &crate::present::report::command_line("simulate --grade"),
        source: format!("scenario {}", run.scenario.name),
        lines: &lines,
        observations: Some(&run.obs),
        grade: Some(&run.grade),
        notes,
    }
    .write(path)
}

/// Prints the grade (and writes it with `--grade-json`); the exit code is the grade's, or the
/// signal's.
fn report(graded: &Graded, args: &SimulationSettings) -> anyhow::Result<i32> {
    let Graded {
        grade: g,
        obs,
        lost,
        stop,
        ..
    } = graded;
    let (lost, stop) = (*lost, *stop);
    let mut out = std::io::stdout().lock();
    super::write_grade_table(&mut out, g)?;
    if lost > 0 {
        writeln!(
            out,
            "grade: {lost} events were lost (the output was too slow); figures may be low"
        )?;
    }
    match stop {
        Stop::Signal(name, _) => writeln!(
            out,
            "grade: stopped by {name} before the scenario ended: this is what happened so far"
        )?,
        Stop::ClientExited => writeln!(
            out,
            "grade: the client exited before the scenario ended: this is what happened so far"
        )?,
        Stop::NeverStarted(_) => writeln!(
            out,
            "grade: the scenario never started (it waits for opt-ins): this is what happened"
        )?,
        Stop::Ended => {}
    }
    out.flush()?;
    if let Some(path) = &args.grade_json {
        write_json(obs, g, path)?;
    }
    // Interrupted, the grade covers part of the run: the exit code says it was interrupted, as
    // without a grade (130 for Ctrl-C), rather than give a verdict on part of a run. A client
    // that died on its own fails `survives`, so the grade's verdict covers it.
    Ok(match stop {
        Stop::Signal(_, code) => code,
        _ => g.verdict.exit_code(),
    })
}

/// The grade's JSON lines: the observations it was made from, then the grade (docs/jsonl.md).
fn write_json(obs: &Observations, g: &Grade, path: &PathBuf) -> anyhow::Result<()> {
    let json = crate::grading::judge::grade_lines::write(obs, g)?;
    std::fs::write(path, json).with_context(|| format!("writing the grade to {}", path.display()))
}
