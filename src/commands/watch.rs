//! `maintwatch watch`: the live watch. Settings from the command line, stdout as the sink, the
//! engine in [`crate::watch`] does the rest: for one endpoint, or for a fleet of them (several
//! URLs or `--from FILE`) in one process.

use crate::cli::watch::WatchArgs;
use crate::watch::{self, Endpoint, StopReason, WatchEnd, WatchSettings};

pub async fn run(args: &WatchArgs) -> anyhow::Result<i32> {
    let mut settings = WatchSettings::from_args(args)?;
    let fleet = watch::fleet_from_args(args, &settings)?;
    args.connect.warn_command_line_password(&args.urls);
    if let Some(fleet) = &fleet {
        // One countdown cannot show a thousand endpoints' windows.
        settings.countdown = false;
        settings.connect = fleet[0].1.connect.clone();
    }
    let mut seen_notes = std::collections::BTreeSet::new();
    let all = fleet.iter().flatten().map(|(_, s)| &s.connect);
    for connect in std::iter::once(&settings.connect).chain(all) {
        for note in connect.notes() {
            if seen_notes.insert(note.clone()) {
                eprintln!("maintwatch: note: {note}");
            }
        }
    }
    if settings.connect.insecure() {
        eprintln!(
            "maintwatch: warning: --insecure: the server's certificate is NOT verified; anyone on the path can read and change this session"
        );
    }
    let stdout = std::io::stdout();
    // Rust's stdout flushes at every newline; the watch decides when to flush instead.
    let out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut sinks = settings.sinks(out)?;
    let endpoints: Vec<Endpoint> = match fleet {
        None => vec![endpoint(settings.clone(), None)],
        Some(fleet) => fleet
            .into_iter()
            .map(|(label, s)| endpoint(s, Some(label)))
            .collect(),
    };
    let end = watch::watch_fleet(
        &settings,
        endpoints,
        &mut sinks,
        std::future::pending::<()>(),
        None,
    )
    .await?;
    for (label, one) in &end.ends {
        report(label.as_deref(), one);
    }
    Ok(end.exit_code())
}

/// One endpoint of the watch, with the sinks that serve it alone: where a per-endpoint
/// destination (metrics, hooks) is added, one sink per endpoint, getting its lines untagged.
fn endpoint<'o>(settings: WatchSettings, label: Option<String>) -> Endpoint<'o> {
    Endpoint::new(settings, label)
}

/// What stderr says about how an endpoint ended.
fn report(label: Option<&str>, end: &WatchEnd) {
    let who = label.map(|l| format!("{l}: ")).unwrap_or_default();
    if let Some(message) = &end.fatal {
        eprintln!("maintwatch: {who}{message}");
    }
    if !end.established && end.reason == StopReason::Duration {
        eprintln!("maintwatch: {who}no session was established before --duration ended the watch");
    }
}
