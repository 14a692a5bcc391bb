//! `maintwatch watch`: the live watch. Settings from the command line, stdout as the sink, the
//! engine in [`crate::watch`] does the rest: for one endpoint, or for a fleet of them (several
//! URLs or `--from FILE`) in one process.

use crate::cli::settings::WatchRun;
use crate::exit;
use crate::present::output::sink::KeptSummaries;
use crate::present::output::stdout::{Outcome, Stdout};
use crate::present::output::terminal::tell;
use crate::present::service::Services;
use crate::watch::{self, Endpoint, StopReason, WatchEnd, WatchSettings};

pub async fn run(run: WatchRun) -> anyhow::Result<i32> {
    let WatchRun {
        settings,
        fleet,
        password_warning,
        notes,
        warnings,
        report: page_path,
    } = run;
    if let Some(w) = &password_warning {
        tell("warning", w);
    }
    for note in &notes {
        tell("note", note);
    }
    for warning in &warnings {
        tell("warning", warning);
    }
    // A reader that stops reading must not make the watch deaf to signals and `--duration`.
    let deadline = settings
        .engine
        .duration
        .map(|d| std::time::Instant::now() + d);
    let (out, stdout) = Stdout::start(deadline)?;
    let flag = match (&settings.service.metrics, &settings.service.otlp) {
        (Some(_), _) => Some("--metrics"),
        (None, Some(_)) => Some("--otlp"),
        (None, None) => None,
    };
    if let Some(flag) = flag {
        refuse_shared_series(flag, fleet.as_deref())?;
    }
    // Every endpoint's password is kept out of the hooks' environment, not only the first's.
    let passwords: Vec<&str> = std::iter::once(&settings.connect)
        .chain(fleet.iter().flatten().map(|(_, s)| &s.connect))
        .filter_map(|c| c.password_text())
        .collect();
    let mut services = Services::start(&settings.service, &passwords)?;
    let notices = services.notices.take().map(|mut rx| {
        tokio::spawn(async move {
            while let Some(text) = rx.recv().await {
                tell("", &text);
            }
        })
    });
    if let Some(server) = &services.server {
        let at = format!("metrics at http://{}/metrics", server.local_addr());
        tell("", &at);
    }
    let mut sinks = settings.sinks(out)?;
    let summaries = KeptSummaries::default();
    sinks.add(Box::new(summaries.clone()));
    let host = settings.connect.host();
    let page = page_path.as_ref().map(|path| page_sink(path, &host));
    if let Some(p) = &page {
        sinks.add(Box::new(p.clone()));
    }
    let endpoints: Vec<Endpoint> = match fleet {
        None => vec![endpoint(&services, settings.clone(), None)],
        Some(fleet) => fleet
            .into_iter()
            .map(|(label, s)| endpoint(&services, s, Some(label)))
            .collect(),
    };
    let gone = stdout.clone();
    let end = watch::watch_fleet(&settings, endpoints, &mut sinks, gone.gone(), None).await?;
    // The hooks' queue closes with their sinks; then the last runs are waited for.
    drop(sinks);
    if let Some(p) = &page {
        p.write()?;
    }
    let written = stdout.finish();
    services.finish().await;
    // Every sender is gone with the services: the last notices are shown before the end.
    if let Some(printer) = notices {
        let _ = printer.await;
    }
    for (label, one) in &end.ends {
        report(label.as_deref(), one, !settings.output.json);
    }
    let code = end.exit_code();
    if !written.gone && written.dropped == 0 {
        return Ok(code);
    }
    // stderr gone too (`2>&1 | head`): the summary is lost, the code is still stdout's.
    match summary_on_stderr(&settings, written, summaries.take()) {
        Err(e) if !exit::closed_pipe(&e) => return Err(e),
        _ => {}
    }
    // A signal's code stands; otherwise the watch stopped because nobody read it.
    Ok(if written.gone && code < exit::HANGUP {
        exit::FAILURE
    } else {
        code
    })
}

/// stdout lost lines (its reader stopped reading, or went away): say so, and write the
/// summaries again where they can be read.
fn summary_on_stderr(
    settings: &WatchSettings,
    written: Outcome,
    summaries: Vec<(Option<String>, crate::observe::record::WatchLine)>,
) -> anyhow::Result<()> {
    let why = if written.gone {
        "its reader went away"
    } else {
        "its reader stopped reading"
    };
    let n = written.dropped;
    let lines = if n == 1 { "line" } else { "lines" };
    let lost = format!("stdout: {n} {lines} not written ({why}); the summary follows here");
    tell("", &lost);
    let style = crate::present::output::human::Style {
        color: false,
        time: settings.output.time,
        width: settings.output.width,
        azure: settings.engine.azure_events,
    };
    let mut err =
        crate::present::output::sink::lines(std::io::stderr(), settings.output.json, style, false);
    for (label, line) in &summaries {
        match label {
            Some(label) => err.line_of(label, line)?,
            None => err.line(line)?,
        }
    }
    err.flush()?;
    Ok(())
}

/// One endpoint of the watch, with the sinks that serve it alone: where a per-endpoint
/// destination (metrics, hooks) is added, one sink per endpoint, getting its lines untagged.
fn endpoint<'o>(
    services: &Services,
    settings: WatchSettings,
    label: Option<String>,
) -> Endpoint<'o> {
    let mut endpoint = Endpoint::new(settings, label);
    services.add_endpoint_sinks(
        &mut endpoint.extra,
        &endpoint.settings.connect,
        endpoint.label.as_deref(),
        &endpoint.settings.clock,
    );
    endpoint
}

/// Metrics are labelled by server address and port: two endpoints of a fleet on the same
/// `host:port` (another db, another user) would overwrite each other's gauges, so they are
/// refused rather than shown wrong. Compared as the labels will read, after sanitising: `a"b`
/// and `a_b` are one series.
fn refuse_shared_series(
    flag: &str,
    fleet: Option<&[(String, WatchSettings)]>,
) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for (label, s) in fleet.unwrap_or_default() {
        let address = crate::present::service::metrics::label_text(s.connect.host());
        let key = (address, s.connect.port());
        if let Some(first) = seen.insert(key, label) {
            return Err(anyhow::Error::new(
                crate::network::conn::ConfigError::Invalid(format!(
                    "{flag}: endpoints {first} and {label} share a server address and port; \
                 metrics are per address and port, so watch them in separate processes"
                )),
            ));
        }
    }
    Ok(())
}

/// What stderr says about how an endpoint ended.
fn report(label: Option<&str>, end: &WatchEnd, human: bool) {
    let who = label.map(|l| format!("{l}: ")).unwrap_or_default();
    match &end.fatal {
        // The human timeline's line has the server's text and what to change: say it once.
        Some(_) if human && end.reason == StopReason::Failed(crate::exit::AUTH_FAILED) => {
            tell(
                "",
                &format!(
                    "{who}stopped: the server refused the credentials (the timeline has its reply \
                     and what to change)"
                ),
            );
        }
        Some(message) => tell("", &format!("{who}{message}")),
        None => {}
    }
    if !end.established && end.reason == StopReason::Duration {
        tell(
            "",
            &format!("{who}no session was established before --duration ended the watch"),
        );
    }
}

/// `--report`: the page of this watch, headed by its whole command line (secrets withheld).
fn page_sink(
    path: &std::path::Path,
    host: &impl std::fmt::Display,
) -> crate::present::report::page_sink::PageSink {
    let source = format!("watch of {host}");
    let command = crate::present::report::command_line("watch");
    crate::present::report::page_sink::PageSink::new(command, path.to_path_buf(), source)
}
