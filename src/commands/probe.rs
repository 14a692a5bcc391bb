//! `maintwatch probe`: gathers the endpoints, probes them with `conn::probe`, prints a table or
//! JSON lines, and returns the most severe outcome's exit code.
//!
//! Everything that decides something lives in `conn::probe`; this file only wires the
//! arguments, the output and the exit code, so the library tests cover the behaviour.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Read, Write};
use std::sync::Arc;

use anyhow::Context;
use comfy_table::{presets, ContentArrangement, Table};

use crate::cli::probe::ProbeArgs;
use crate::conn::probe::{self, ProbeReport, TABLE_HEADER};
use crate::conn::{ConnectOptions, RedisUrl};
use crate::dns::DnsResolver;
use crate::exit;

/// Runs `probe` on the process's stdin, stdout and stderr.
pub async fn run(args: &ProbeArgs) -> anyhow::Result<i32> {
    let terminal = io::stdout().is_terminal();
    run_with(
        args,
        &mut io::stdin(),
        &mut io::stdout(),
        &mut io::stderr(),
        terminal,
    )
    .await
}

/// `run` with its streams given, for tests. `terminal` picks the table style.
pub async fn run_with(
    args: &ProbeArgs,
    stdin: &mut (dyn Read + Send),
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    terminal: bool,
) -> anyhow::Result<i32> {
    let urls = match endpoints(args, stdin)? {
        Ok(urls) => urls,
        Err(message) => {
            writeln!(err, "maintwatch probe: error: {message}")?;
            return Ok(exit::USAGE);
        }
    };
    let config = args.connect.config();
    let mut options = Vec::with_capacity(urls.len());
    for url in &urls {
        match config.options_for(url) {
            Ok(o) => options.push(o),
            Err(e) => {
                writeln!(err, "maintwatch probe: error: {e}")?;
                return Ok(exit::USAGE);
            }
        }
    }
    if let Err(e) = config.check_tls_flags_apply(&options) {
        writeln!(err, "maintwatch probe: error: {e}")?;
        return Ok(exit::USAGE);
    }
    warn_insecure(&options, err)?;
    args.connect.warn_command_line_password(&args.urls);
    for note in options.iter().flat_map(ConnectOptions::notes) {
        writeln!(err, "maintwatch: note: {note}")?;
    }

    // A resolver only when some endpoint is a name: probing addresses must work even where the
    // system resolver configuration is missing.
    let dns = match options.iter().find(|o| !o.host_is_ip()) {
        None => None,
        Some(o) => Some(Arc::new(
            DnsResolver::new(&o.dns_options()).context("cannot set up the DNS resolver")?,
        )),
    };

    let mut output = Output::new(out, args.json, args.quiet);
    let reports = probe::probe_all(options, dns, args.concurrency as usize, args.linger, |r| {
        output.report(r)
    })
    .await;
    output.finish(&reports, terminal)?;
    Ok(probe::exit_code(&reports))
}

/// The endpoints to probe, or a usage error message.
fn endpoints(
    args: &ProbeArgs,
    stdin: &mut (dyn Read + Send),
) -> anyhow::Result<Result<Vec<RedisUrl>, String>> {
    let mut urls = args.urls.clone();
    urls.extend(args.connect.uri.clone());
    if let Some(from) = &args.from {
        let (text, source) = if from == "-" {
            let mut text = String::new();
            stdin
                .read_to_string(&mut text)
                .context("cannot read endpoints from standard input")?;
            (text, "standard input".to_string())
        } else {
            let text = std::fs::read_to_string(from)
                .with_context(|| format!("cannot read endpoints from {from}"))?;
            (text, from.clone())
        };
        match probe::parse_endpoint_list(&text, &source) {
            Ok(list) => {
                if list.is_empty() {
                    return Ok(Err(format!("no endpoint in {source}")));
                }
                urls.extend(list);
            }
            Err(e) => return Ok(Err(e.to_string())),
        }
    }
    if urls.is_empty() {
        return Ok(args
            .connect
            .endpoint()
            .map(|u| vec![u])
            .map_err(|e| e.to_string()));
    }
    if args.connect.has_host_or_port() {
        return Ok(Err(
            "-h/-p cannot be combined with endpoint URLs: put the host and port in the URLs".into(),
        ));
    }
    Ok(Ok(urls))
}

/// One warning for `--insecure`, however many endpoints it affects.
fn warn_insecure(options: &[ConnectOptions], err: &mut (dyn Write + Send)) -> io::Result<()> {
    let insecure: Vec<&ConnectOptions> = options.iter().filter(|o| o.insecure()).collect();
    match insecure.as_slice() {
        [] => Ok(()),
        [one] => {
            for w in one.warnings() {
                writeln!(err, "maintwatch: warning: {w}")?;
            }
            Ok(())
        }
        many => writeln!(
            err,
            "maintwatch: warning: --insecure: the certificates of {} TLS endpoints are NOT \
             verified; anyone on the path can read and change these sessions",
            many.len()
        ),
    }
}

/// Writes reports as they come (JSON lines) or at the end (the table). A closed pipe
/// (`| head`) stops the output quietly; the probe still finishes and exits with its code.
struct Output<'a> {
    out: &'a mut (dyn Write + Send),
    json: bool,
    quiet: bool,
    closed: bool,
    error: Option<io::Error>,
}

impl<'a> Output<'a> {
    fn new(out: &'a mut (dyn Write + Send), json: bool, quiet: bool) -> Self {
        Output {
            out,
            json,
            quiet,
            closed: false,
            error: None,
        }
    }

    fn write(&mut self, text: &str) {
        if self.closed {
            return;
        }
        let result = writeln!(self.out, "{text}").and_then(|_| self.out.flush());
        if let Err(e) = result {
            self.closed = true;
            if e.kind() != io::ErrorKind::BrokenPipe {
                self.error = Some(e);
            }
        }
    }

    fn report(&mut self, r: &ProbeReport) {
        if self.json && !self.quiet {
            self.write(&r.json_line());
        }
    }

    fn finish(mut self, reports: &[ProbeReport], terminal: bool) -> io::Result<()> {
        if !self.json && !self.quiet {
            let mut table = Table::new();
            if terminal {
                table
                    .load_style(presets::UTF8_FULL_CONDENSED)
                    .set_content_arrangement(ContentArrangement::Dynamic);
            } else {
                // Piped or redirected: a Markdown table pastes into tickets and chat as is.
                table.load_style(presets::ASCII_MARKDOWN);
            }
            table.set_header(TABLE_HEADER);
            for r in reports {
                table.add_row(r.cells());
            }
            self.write(&table.to_string());
            self.write(&summary(reports));
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `3 endpoints: 1 accepted, 1 refused, 1 unreachable`.
fn summary(reports: &[ProbeReport]) -> String {
    let mut counts: BTreeMap<(probe::Severity, &str), usize> = BTreeMap::new();
    for r in reports {
        *counts
            .entry((r.outcome.severity(), r.outcome.name()))
            .or_default() += 1;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|((_, name), n)| format!("{n} {}", name.replace('_', " ")))
        .collect();
    let noun = if reports.len() == 1 {
        "endpoint"
    } else {
        "endpoints"
    };
    format!("{} {noun}: {}", reports.len(), parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::StreamReader;
    use clap::Parser;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const HELLO: &[u8] = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n";
    const REFUSAL: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        probe: ProbeArgs,
    }

    fn args(list: &[&str]) -> ProbeArgs {
        T::try_parse_from(std::iter::once("probe").chain(list.iter().copied()))
            .unwrap()
            .probe
    }

    /// Answers HELLO with a map and the opt-in with `opt_in`, one reply per command.
    async fn responder(opt_in: &'static [u8]) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut reader = StreamReader::default();
                    let mut replies = [HELLO, opt_in].into_iter();
                    let mut buf = [0u8; 1024];
                    while let Ok(n @ 1..) = s.read(&mut buf).await {
                        reader.extend(&buf[..n]);
                        let mut commands = 0;
                        if reader.drain(|_, _, _| commands += 1).is_err() {
                            return;
                        }
                        for _ in 0..commands {
                            let reply = replies.next().unwrap_or(b"+PONG\r\n");
                            if s.write_all(reply).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    fn closed_port() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    async fn run_capture(a: &ProbeArgs, stdin: &str) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(a, &mut stdin.as_bytes(), &mut out, &mut err, false)
            .await
            .unwrap();
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[tokio::test]
    async fn json_lines_come_in_input_order_and_the_worst_code_wins() {
        let ok = responder(b"+OK\r\n").await;
        let closed = closed_port();
        let a = args(&[
            &format!("redis://{closed}"),
            &format!("redis://{ok}"),
            "--json",
            "--linger",
            "0",
        ]);
        let (code, out, _) = run_capture(&a, "").await;
        assert_eq!(code, exit::CONNECTION_FAILED);
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "unreachable");
        assert_eq!(lines[0]["endpoint"], format!("redis://{closed}"));
        assert_eq!(lines[1]["outcome"], "accepted");
        assert_eq!(lines[1]["hello"]["version"], "7.4.0");
    }

    #[tokio::test]
    async fn the_table_shows_every_endpoint_and_a_summary() {
        let ok = responder(b"+OK\r\n").await;
        let refusing = responder(REFUSAL).await;
        let a = args(&[&format!("{ok}"), &format!("{refusing}"), "--linger", "0"]);
        let (code, out, _) = run_capture(&a, "").await;
        assert_eq!(code, exit::REFUSED);
        assert!(out.contains(&format!("redis://{ok}")), "{out}");
        assert!(
            out.contains("ERR unknown subcommand 'MAINT_NOTIFICATIONS'"),
            "{out}"
        );
        assert!(out.contains("redis 7.4.0"), "{out}");
        assert!(
            out.trim_end()
                .ends_with("2 endpoints: 1 accepted, 1 refused"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn quiet_prints_nothing_and_keeps_the_code() {
        let refusing = responder(REFUSAL).await;
        let a = args(&["-q", &format!("redis://{refusing}")]);
        let (code, out, err) = run_capture(&a, "").await;
        assert_eq!((code, out.as_str(), err.as_str()), (exit::REFUSED, "", ""));
    }

    #[tokio::test]
    async fn endpoints_come_from_stdin_and_a_bad_line_is_a_usage_error() {
        let ok = responder(b"+OK\r\n").await;
        let a = args(&["--from", "-", "--json"]);
        let (code, out, _) = run_capture(&a, &format!("# fleet\n\nredis://{ok}\n{ok}\n")).await;
        assert_eq!((code, out.lines().count()), (exit::SUCCESS, 2));

        let (code, out, err) = run_capture(&a, "redis://a\nredis://u:hunter2@h:x\n").await;
        assert_eq!((code, out.as_str()), (exit::USAGE, ""));
        assert!(err.contains("standard input, line 2"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");

        let (code, _, err) = run_capture(&a, "# nothing\n").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("no endpoint"), "{err}");
    }

    #[tokio::test]
    async fn host_flags_do_not_mix_with_urls() {
        let (code, _, err) = run_capture(&args(&["redis://a", "-h", "b"]), "").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("-h/-p"), "{err}");
    }

    #[test]
    fn insecure_warns_once_for_many_endpoints() {
        let a = args(&["rediss://a", "rediss://b", "redis://c", "--insecure"]);
        let config = a.connect.config();
        let options: Vec<ConnectOptions> = a
            .urls
            .iter()
            .map(|u| config.options_for(u).unwrap())
            .collect();
        let mut err = Vec::new();
        warn_insecure(&options, &mut err).unwrap();
        let err = String::from_utf8(err).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("2 TLS endpoints are NOT verified"), "{err}");
    }

    #[test]
    fn help_documents_the_exit_codes() {
        use clap::CommandFactory;
        let help = T::command().render_long_help().to_string();
        for needle in [
            "Exit codes",
            "  3  refused",
            "  6  connection or TLS failure",
            "--concurrency",
        ] {
            assert!(help.contains(needle), "{needle:?} missing from:\n{help}");
        }
    }
}
