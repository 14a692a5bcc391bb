//! `maintwatch watch`: the live watch. Settings from the command line, stdout as the sink, the
//! engine in [`crate::watch`] does the rest.

use crate::cli::watch::WatchArgs;
use crate::service::Services;
use crate::watch::{self, StopReason, WatchSettings};

pub async fn run(args: &WatchArgs) -> anyhow::Result<i32> {
    let settings = WatchSettings::from_args(args)?;
    args.connect.warn_command_line_password(args.url.as_slice());
    for note in settings.connect.notes() {
        eprintln!("maintwatch: note: {note}");
    }
    if settings.connect.insecure() {
        eprintln!(
            "maintwatch: warning: --insecure: the server's certificate is NOT verified; anyone on the path can read and change this session"
        );
    }
    let stdout = std::io::stdout();
    // Rust's stdout flushes at every newline; the watch decides when to flush instead.
    let out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let services = Services::start(&settings.service, settings.connect.password_text())?;
    if let Some(server) = &services.server {
        eprintln!(
            "maintwatch: metrics at http://{}/metrics",
            server.local_addr()
        );
    }
    let mut sinks = settings.sinks(out)?;
    services.add_endpoint_sinks(&mut sinks, &settings.connect);
    let end = watch::watch(&settings, &mut sinks, std::future::pending::<()>(), None).await?;
    // The hooks' queue closes with their sinks; then the last runs are waited for.
    drop(sinks);
    services.finish().await;
    if let Some(message) = &end.fatal {
        eprintln!("maintwatch: {message}");
    }
    if !end.established && end.reason == StopReason::Duration {
        eprintln!("maintwatch: no session was established before --duration ended the watch");
    }
    Ok(end.exit_code())
}
