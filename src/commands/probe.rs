//! `maintwatch probe`: gathers the endpoints, probes them with `conn::probe`, writes JSON lines or
//! a table (what to do on each endpoint's line, the whole texts in notes under it) through the
//! same `output::sink` switch as every command with `--json`, and returns the most severe
//! outcome's exit code.
//!
//! Everything that decides something lives in `conn::probe` (the remedies too, as texts), the
//! endpoints come from `conn::endpoints` and the table from `output::probe_table`; this file
//! only wires the arguments, the output and the exit code.

use std::io::{self, Read, Write};

use crate::cli::probe::ProbeArgs;
use crate::exit;
use crate::network::conn::endpoints;
use crate::network::conn::probe::{self, ProbeReport};
use crate::observe::record::write as json;
use crate::present::output::human::Style;
use crate::present::output::probe_table::{self, Row};
use crate::present::output::sink::{self, Sink};
use crate::present::output::terminal;
use crate::shared::escape::sanitize;

pub use crate::present::output::probe_table::Layout;

/// Runs `probe` on the process's stdin, stdout and stderr.
pub async fn run(args: &ProbeArgs) -> anyhow::Result<i32> {
    run_with(
        args,
        &mut io::stdin(),
        &mut io::stdout(),
        &mut io::stderr(),
        Layout::detect(),
    )
    .await
}

/// `run` with its streams and table layout given, for tests.
pub async fn run_with(
    args: &ProbeArgs,
    stdin: &mut (dyn Read + Send),
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    layout: Layout,
) -> anyhow::Result<i32> {
    let request =
        args.connect
            .endpoint_request(&args.urls, args.from.as_deref(), endpoints::BadLines::Skip);
    let setup = endpoints::setup(request, &args.connect.config(), stdin)?;
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
    args.connect.warn_command_line_password(&args.urls);
    for note in &setup.notes {
        writeln!(err, "{}", terminal::message("note", note))?;
    }
    let dns = setup.resolver()?;
    let bad_lines = !setup.skipped.is_empty();
    let options = setup.options;

    let mut output = Output::new(out, args.json, args.quiet);
    let reports = probe::probe_all(options, dns, args.concurrency as usize, args.linger, |r| {
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

/// Where the reports go: `output::sink::lines` picks JSON lines or text for people, as for every
/// command with `--json`. A report is written as it comes (a JSON sink writes it, one line per
/// endpoint; the text sink leaves it), the table at the end (the text sink shows it, a JSON sink
/// leaves it); `--quiet` has no sink. A closed pipe (`| head`) stops the output quietly; the
/// probe still finishes and exits with its code.
struct Output<'a> {
    sink: Option<Box<dyn Sink + 'a>>,
    error: Option<io::Error>,
}

impl<'a> Output<'a> {
    fn new(out: &'a mut (dyn Write + Send), json: bool, quiet: bool) -> Self {
        let sink = (!quiet).then(|| sink::lines(out, json, Style::default(), false));
        Output { sink, error: None }
    }

    /// Runs `write` on the sink, if it still takes output.
    fn write(&mut self, write: impl FnOnce(&mut dyn Sink) -> io::Result<()>) {
        let Some(sink) = &mut self.sink else {
            return;
        };
        if let Err(e) = write(sink.as_mut()).and_then(|()| sink.flush()) {
            self.sink = None;
            if e.kind() != io::ErrorKind::BrokenPipe {
                self.error = Some(e);
            }
        }
    }

    fn report(&mut self, r: &ProbeReport) {
        if self.sink.is_none() {
            return;
        }
        self.write(|s| s.record(&Report(r)));
    }

    fn finish(mut self, reports: &[ProbeReport], layout: Layout) -> io::Result<()> {
        if self.sink.is_some() {
            let rows: Vec<Row> = reports.iter().map(Row::of).collect();
            let table = probe_table::render(&rows, layout);
            let text = format!("{table}{}", probe_table::summary(reports));
            self.write(|s| s.note(&text));
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A report as a line of probe's own schema: one JSON object for `--json`; nothing for
/// people, who get the table at the end.
struct Report<'r>(&'r ProbeReport);

impl sink::Record for Report<'_> {
    fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        json::write_value(out, &self.0.json())
    }

    fn render(&self, _style: &Style) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::net::SocketAddr;

    const HELLO: &[u8] = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n";
    /// A HELLO whose `server` holds CR, LF, ESC and a bidi override.
    const HOSTILE_HELLO: &[u8] = b"%2\r\n$6\r\nserver\r\n$27\r\nredis\r\n00:00:00 FAKE\x1b[2J\xe2\x80\xae\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n";
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
        responder_with(HELLO, opt_in).await
    }

    /// Answers HELLO with `hello` and the opt-in with `opt_in`, one reply per command.
    async fn responder_with(hello: &'static [u8], opt_in: &'static [u8]) -> SocketAddr {
        crate::network::conn::test_server::serve(vec![hello, opt_in], b"+PONG\r\n").await
    }

    fn closed_port() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    async fn run_capture(a: &ProbeArgs, stdin: &str) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        // An error is shown and mapped as `main` does.
        let code = match run_with(a, &mut stdin.as_bytes(), &mut out, &mut err, Layout::Piped).await
        {
            Ok(code) => code,
            Err(e) => {
                for line in crate::present::output::terminal::error_lines(&e, None) {
                    writeln!(err, "{line}").unwrap();
                }
                crate::cli::usage::exit_code(&e)
            }
        };
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

    /// The notes under the table, each joined back onto one line.
    fn notes_of(out: &str) -> Vec<String> {
        let (_, notes) = out.split_once("\n\n").expect("notes after a blank line");
        notes
            .replace("\n    ", " ")
            .lines()
            .filter(|l| !l.contains(" endpoints: "))
            .map(str::to_string)
            .collect()
    }

    /// What an operator at 80 columns saw as 40 lines of box table with split words, then as a
    /// table that cut what to do (`NOAUTH HELLO…`).
    #[tokio::test]
    async fn five_endpoints_fit_80_columns_without_splitting_words() {
        let ok = responder(b"+OK\r\n").await;
        let moving = responder(b"+OK\r\n>4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n").await;
        let refusing = responder(REFUSAL).await;
        let hostile = responder(b"-ERR \xe2\x80\xaeopt-in accepted FAKE\r\n").await;
        let closed = closed_port();
        let endpoints: Vec<String> = [ok, moving, refusing, closed, hostile]
            .iter()
            .map(|a| format!("redis://{a}"))
            .collect();
        let mut list: Vec<&str> = endpoints.iter().map(String::as_str).collect();
        list.extend(["--linger", "0"]);
        let a = args(&list);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let width = 80;
        let code = run_with(
            &a,
            &mut "".as_bytes(),
            &mut out,
            &mut err,
            Layout::Terminal { width },
        )
        .await
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, exit::CONNECTION_FAILED);
        let all: Vec<&str> = out.lines().collect();
        for line in &all {
            assert!(
                line.chars().count() <= width,
                "wider than {width}: {line:?}\n{out}"
            );
        }
        // One line per endpoint; under it, 4 in, what did not fit beside it, whole.
        let blank = all.iter().position(|l| l.is_empty()).unwrap();
        let lines: Vec<&str> = all[..blank]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("    "))
            .collect();
        assert_eq!(
            lines.len(),
            6,
            "header, one line per endpoint, notes:\n{out}"
        );
        for (row, endpoint) in lines[1..6].iter().zip(&endpoints) {
            assert!(
                row.starts_with(endpoint.as_str()),
                "{endpoint} not whole in {row:?}"
            );
        }
        assert!(lines[0].ends_with("what to do"), "{out}");
        assert!(lines[4].contains(" unreachable "), "{out}");
        assert!(lines[4].ends_with(" check host and port"), "{out}");
        let under = all[..blank].join("\n").replace("\n      ", " ");
        assert!(
            under.contains("maintenance under way: MOVING seq 7 window 15 s target none (null)"),
            "the maintenance whole under its endpoint:\n{out}"
        );
        assert!(!out.contains('…'), "nothing is cut:\n{out}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(lines[5].contains(" refused "), "{out}");
        assert!(lines[5].ends_with(" unsupported here"), "{out}");
        let notes = notes_of(&out);
        assert_eq!(notes.len(), 3, "{out}");
        assert!(
            notes[0].starts_with(&format!(
                "redis://{refusing}: ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT \
                 HELP. Redis Open Source"
            )),
            "{out}"
        );
        assert!(out
            .trim_end()
            .ends_with("5 endpoints: 2 accepted, 2 refused, 1 unreachable"));
    }

    /// Piped, the table is plain aligned columns, and the notes are whole texts (sanitised), one
    /// line each.
    #[tokio::test]
    async fn piped_the_table_is_plain_aligned_columns_with_whole_texts() {
        let refusing = responder(REFUSAL).await;
        let hostile = responder_with(HOSTILE_HELLO, b"-ERR bad\x1b[31mRED\xc2\x9b\r\n").await;
        let closed = closed_port();
        let a = args(&[
            &format!("redis://{refusing}"),
            &format!("redis://{closed}"),
            &format!("{hostile}"),
            "--linger",
            "0",
        ]);
        let (_, out, _) = run_capture(&a, "").await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 1 + 3 + 1, "{out}");
        assert!(!out.contains('|') && !out.contains('…'), "{out}");
        assert_eq!(
            lines[5],
            format!(
                "redis://{refusing}: ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT \
                 HELP. Redis Open Source and Valkey send no notifications; Redis Software \
                 (8.0.2+) does with client_maint_notifications on"
            )
        );
        assert!(lines[7].contains("ERR bad\\x1b[31mRED\\u{9b}"), "{out}");
        assert!(
            lines[3].contains("redis\\r\\n00:00:00 FAKE\\x1b[2J\\u{202e}"),
            "{out}"
        );
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        // Aligned: the outcome column starts at the same place on every line.
        let at = lines[0].find("outcome").unwrap();
        for (row, word) in lines[1..4]
            .iter()
            .zip(["refused", "unreachable", "refused"])
        {
            assert_eq!(row.find(word), Some(at), "{row:?}\n{out}");
        }
    }

    /// Redis's NOAUTH for HELLO is 220 characters; `--json` cut it at 200, before the part that
    /// says what to do. A hostile server's text is still bounded.
    #[tokio::test]
    async fn json_carries_the_servers_whole_text() {
        const NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
            otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the \
            client and select the RESP protocol version at the same time";
        let hello: &'static [u8] = format!("-{NOAUTH}\r\n").leak().as_bytes();
        let noauth = responder_with(hello, b"+OK\r\n").await;
        let refusal = format!("ERR {}\x1b[2J end", "x".repeat(300));
        let refusing = responder(format!("-{refusal}\r\n").leak().as_bytes()).await;
        let endless = format!("-ERR {}\r\n", "y".repeat(10_000));
        let hostile = responder(endless.leak().as_bytes()).await;
        let a = args(&[
            &format!("redis://{noauth}"),
            &format!("redis://{refusing}"),
            &format!("redis://{hostile}"),
            "--json",
            "--linger",
            "0",
        ]);
        let (_, out, _) = run_capture(&a, "").await;
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["outcome"], "auth_failed");
        assert_eq!(
            lines[0]["detail"],
            format!("{NOAUTH} (no password was given: use -a, --askpass or REDISCLI_AUTH)")
        );
        assert_eq!(lines[1]["detail"], refusal.as_str());
        assert!(
            out.lines().nth(1).unwrap().contains("\\u001b[2J end"),
            "{out}"
        );
        let bounded = lines[2]["detail"].as_str().unwrap();
        assert_eq!(
            bounded,
            format!(
                "ERR {}...",
                "y".repeat(crate::network::conn::MAX_ERROR_TEXT - 4)
            )
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

        let (code, out, err) = run_capture(&a, "redis://u:hunter2@h:x\n").await;
        assert_eq!((code, out.as_str()), (exit::USAGE, ""));
        assert!(err.contains("standard input, line 1"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");

        let (code, _, err) = run_capture(&a, "# nothing\n").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("no endpoint"), "{err}");
    }

    /// An inline comment used to abort the whole run, and one bad line hid every other endpoint.
    #[tokio::test]
    async fn from_accepts_inline_comments_and_probes_past_a_bad_line() {
        let ok = responder(b"+OK\r\n").await;
        let refusing = responder(REFUSAL).await;
        let a = args(&["--from", "-", "--json", "--linger", "0"]);
        let list =
            format!("redis://{ok}   # primary\nredis://u:hunter2@h:x  # typo\n{ok}\t# again\n");
        let (code, out, err) = run_capture(&a, &list).await;
        assert_eq!(
            out.lines().count(),
            2,
            "both good lines probed:\n{out}\n{err}"
        );
        assert!(out.lines().all(|l| l.contains("\"accepted\"")), "{out}");
        assert_eq!(
            code,
            exit::USAGE,
            "all probed fine, but the list had a bad line"
        );
        assert!(err.contains("standard input, line 2"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("hunter2"), "{err}");

        // A worse probe outcome wins over the usage error.
        let list = format!("redis://{refusing}\nnot a url: at all\n");
        let (code, out, err) = run_capture(&a, &list).await;
        assert_eq!((code, out.lines().count()), (exit::REFUSED, 1), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[tokio::test]
    async fn host_flags_do_not_mix_with_urls() {
        let (code, _, err) = run_capture(&args(&["redis://a", "-h", "b"]), "").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("-h/-p"), "{err}");
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
