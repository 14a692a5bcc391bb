//! `maintwatch doctor`: "why am I not getting notifications?" on one screen. This wires it:
//! the endpoint from the flags, the diagnosis from `grading::doctor`, the screen and the
//! spinner from `present::output::doctor_screen`, the exit code out.

use std::io::Write;

use crate::cli::doctor::DoctorSettings;
use crate::grading::doctor::diagnose::diagnose;
use crate::network::conn::endpoints;
use crate::present::output::doctor_screen::{Progress, Wrapped};
use crate::present::output::terminal;

/// Runs `doctor` on the process's stdout and stderr.
pub async fn run(settings: DoctorSettings<'_>) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    run_with(settings, &mut out, &mut std::io::stderr()).await
}

/// `run` with its streams given.
pub async fn run_with(
    settings: DoctorSettings<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut setup = endpoints::setup(
        settings.endpoints.request,
        &settings.endpoints.config,
        &mut std::io::empty(),
    )?;
    if let Some(w) = &settings.endpoints.password_warning {
        terminal::tell("warning", w);
    }
    for w in &setup.warnings {
        writeln!(err, "{}", terminal::message("warning", w))?;
    }
    for note in &setup.notes {
        writeln!(err, "{}", terminal::message("note", note))?;
    }
    let dns = setup.resolver()?;
    let opts = setup.options.remove(0);
    let azure = settings.azure_events || crate::protocol::azure::is_azure_host(opts.host());
    let progress = if settings.json {
        Progress::none()
    } else {
        Progress::on_stderr(&opts.display_endpoint())
    };
    let diagnosis = diagnose(&opts, dns.as_deref(), azure, &|what| progress.step(what)).await;
    progress.clear();
    let all_versions = settings.all_versions;
    let text = Wrapped(&diagnosis, terminal::stdout_width(), all_versions);
    crate::present::output::sink::one(out, settings.json, &diagnosis, &text)?;
    out.flush()?;
    Ok(diagnosis.exit_code)
}
