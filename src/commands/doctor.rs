//! `maintwatch doctor`: "why am I not getting notifications?" on one screen. This wires it:
//! the endpoint from the flags, the diagnosis from `grading::doctor`, the screen and the
//! spinner from `present::output::doctor_screen`, the exit code out.

use std::io::Write;

use crate::cli::doctor::DoctorArgs;
use crate::cli::usage::usage;
use crate::grading::doctor::diagnose::diagnose;
use crate::network::conn::endpoints::{self, BadLines};
use crate::present::output::doctor_screen::{Progress, Wrapped};
use crate::present::output::terminal;

/// Runs `doctor` on the process's stdout and stderr.
pub async fn run(args: &DoctorArgs) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    run_with(args, &mut out, &mut std::io::stderr()).await
}

/// `run` with its streams given.
pub async fn run_with(
    args: &DoctorArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    if args.url.is_some() && (args.connect.has_host_or_port() || args.connect.uri.is_some()) {
        let flag = if args.connect.uri.is_some() {
            "-u"
        } else {
            "-h/-p"
        };
        return Err(usage(
            flag,
            "give the endpoint once: a URL, or -u, or -h/-p",
        ));
    }
    let request = args
        .connect
        .endpoint_request(args.url.as_slice(), None, BadLines::Refuse);
    let mut setup = endpoints::setup(request, &args.connect.config(), &mut std::io::empty())?;
    args.connect.warn_command_line_password(args.url.as_slice());
    for w in &setup.warnings {
        writeln!(err, "{}", terminal::message("warning", w))?;
    }
    for note in &setup.notes {
        writeln!(err, "{}", terminal::message("note", note))?;
    }
    let dns = setup.resolver()?;
    let opts = setup.options.remove(0);
    let azure = args.azure_events || crate::protocol::azure::is_azure_host(opts.host());
    let progress = if args.json {
        Progress::none()
    } else {
        Progress::on_stderr(&opts.display_endpoint())
    };
    let diagnosis = diagnose(&opts, dns.as_deref(), azure, &|what| progress.step(what)).await;
    progress.clear();
    let all_versions = args.clients.is_some();
    let text = Wrapped(&diagnosis, terminal::stdout_width(), all_versions);
    crate::present::output::sink::one(out, args.json, &diagnosis, &text)?;
    out.flush()?;
    Ok(diagnosis.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;
    use clap::Parser;
    use std::net::SocketAddr;

    /// A HELLO whose `server` holds CR, LF, ESC and a bidi override, and a refusal with ESC and
    /// a C1 control: everything a hostile server could put on the screen.
    const HOSTILE_HELLO: &[u8] =
        b"%1\r\n$6\r\nserver\r\n$27\r\nredis\r\n00:00:00 FAKE\x1b[2J\xe2\x80\xae\r\n";
    const HOSTILE_REFUSAL: &[u8] = b"-ERR bad\x1b[31mRED\xc2\x9b\r\n";

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        doctor: DoctorArgs,
    }

    /// Answers the first command of each connection (HELLO) with `HOSTILE_HELLO`, every other
    /// command (the opt-in, INFO) with `HOSTILE_REFUSAL`.
    async fn hostile() -> SocketAddr {
        crate::network::conn::test_server::serve(vec![HOSTILE_HELLO], HOSTILE_REFUSAL).await
    }

    #[tokio::test]
    async fn a_hostile_server_cannot_reach_the_terminal() {
        let addr = hostile().await;
        let args = T::try_parse_from(["doctor", &format!("redis://{addr}")])
            .unwrap()
            .doctor;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(&args, &mut out, &mut err).await.unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, exit::REFUSED, "{out}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(out.contains("refused: ERR bad\\x1b[31mRED\\u{9b}"), "{out}");
        assert!(
            out.contains("errorstats: not measured: ERR bad\\x1b[31mRED"),
            "{out}"
        );
        assert!(
            out.contains("redis\\r\\n00:00:00 FAKE\\x1b[2J\\u{202e}"),
            "{out}"
        );
    }
}
