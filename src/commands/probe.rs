//! `maintwatch probe`: gathers the endpoints, probes them with `conn::probe`, writes JSON lines or
//! a table (what to do on each endpoint's line, the whole texts in notes under it) through the
//! same `output::sink` switch as every command with `--json`, and returns the most severe
//! outcome's exit code.
//!
//! Everything that decides something lives in `conn::probe` (the remedies too, as texts), the
//! endpoints come from `conn::endpoints`, the table from `output::probe_table` and where it goes
//! from `output::probe_screen`; this file only wires the settings, the output and the exit code.

use std::io::{self, Read, Write};

use crate::cli::probe::ProbeSettings;
use crate::exit;
use crate::network::conn::endpoints;
use crate::network::conn::probe::{self, ProbeReport};
use crate::present::output::probe_screen::Output;
use crate::present::output::terminal;
use crate::shared::escape::sanitize;

pub use crate::present::output::probe_table::Layout;

/// Runs `probe` on the process's stdin, stdout and stderr.
pub async fn run(settings: ProbeSettings<'_>) -> anyhow::Result<i32> {
    run_with(
        settings,
        &mut io::stdin(),
        &mut io::stdout(),
        &mut io::stderr(),
        Layout::detect(),
    )
    .await
}

/// `run` with its streams and table layout given, for tests.
pub async fn run_with(
    settings: ProbeSettings<'_>,
    stdin: &mut (dyn Read + Send),
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    layout: Layout,
) -> anyhow::Result<i32> {
    let setup = endpoints::setup(
        settings.endpoints.request,
        &settings.endpoints.config,
        stdin,
    )?;
    for e in &setup.skipped {
        let line = e.to_string();
        writeln!(
            err,
            "{}",
            terminal::about("probe", &format!("error: {} (skipped)", sanitize(&line)))
        )?;
    }
    for w in &setup.warnings {
        writeln!(err, "{}", terminal::message("warning", w))?;
    }
    if let Some(w) = &settings.endpoints.password_warning {
        terminal::tell("warning", w);
    }
    for note in &setup.notes {
        writeln!(err, "{}", terminal::message("note", note))?;
    }
    let dns = setup.resolver()?;
    let bad_lines = !setup.skipped.is_empty();
    let options = setup.options;

    let mut output = Output::new(out, settings.json, settings.quiet);
    let reports = probe::probe_all(options, dns, settings.concurrency, settings.linger, |r| {
        output.report(r)
    })
    .await;
    output.finish(&reports, layout)?;
    Ok(run_exit_code(&reports, bad_lines))
}

/// The exit code of a run. Bad lines in `--from` make it a usage error (2), unless an endpoint
/// that was probed did worse (3-6): every code above 2 is about a server, which is what a
/// script gating on the probe most needs to hear, and the bad lines are on stderr either way.
fn run_exit_code(reports: &[ProbeReport], bad_lines: bool) -> i32 {
    let probed = probe::exit_code(reports);
    if bad_lines {
        probed.max(exit::USAGE)
    } else {
        probed
    }
}
