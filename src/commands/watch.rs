//! `maintwatch watch`: the live watch. Settings from the command line, stdout as the sink, the
//! engine in [`crate::watch`] does the rest: for one endpoint, or for a fleet of them (several
//! URLs or `--from FILE`) in one process.

use crate::cli::settings::WatchRun;
use crate::exit;
use crate::present::output::sink::KeptSummaries;
use crate::present::output::stdout::Stdout;
use crate::present::output::terminal::tell;
use crate::present::report::command_line;
use crate::present::report::page_sink::PageSink;
use crate::present::service::Services;
use crate::watch::{self, Endpoint, WatchSettings};

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
    settings.refuse_shared_series(fleet.as_deref())?;
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
        tell(
            "",
            &format!("metrics at http://{}/metrics", server.local_addr()),
        );
    }
    let mut sinks = settings.sinks(out)?;
    let summaries = KeptSummaries::default();
    sinks.add(Box::new(summaries.clone()));
    // `--report`: the page of this watch, headed by its whole command line (secrets withheld).
    let source = format!("watch of {}", settings.connect.host());
    let page = page_path.map(|path| PageSink::new(command_line("watch"), path, source));
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
    let human = !settings.output.json;
    for (label, one) in &end.ends {
        for sentence in one.sentences(label.as_deref(), human) {
            tell("", &sentence);
        }
    }
    let code = end.exit_code();
    if !written.gone && written.dropped == 0 {
        return Ok(code);
    }
    // stderr gone too (`2>&1 | head`): the summary is lost, the code is still stdout's.
    match summaries.write_on_stderr(
        (written.gone, written.dropped),
        settings.output.json,
        settings.style(),
    ) {
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
