//! `maintwatch probe`: gathers the endpoints, probes them with `conn::probe`, writes JSON lines or
//! a table (what to do on each endpoint's line, the whole texts in notes under it) through the
//! same `output::sink` switch as every command with `--json`, and returns the most severe
//! outcome's exit code.
//!
//! Everything that decides something lives in `conn::probe` (the remedies too, as texts); this
//! file only wires the arguments, the output and the exit code, and lays out the table.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Read, Write};

use crate::cli::probe::ProbeArgs;
use crate::conn::endpoints;
use crate::conn::probe::{self, ProbeOutcome, ProbeReport};
use crate::escape::sanitize;
use crate::exit;
use crate::output::human::Style;
use crate::output::json;
use crate::output::sink::{self, Sink};

/// How the human table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A terminal this many columns wide: the table fits it, long cells end in an ellipsis.
    Terminal { width: usize },
    /// Piped or redirected: the same aligned columns, nothing shortened.
    Piped,
}

impl Layout {
    /// The layout for the process's stdout: its terminal's width (80 when it cannot be read).
    pub fn detect() -> Layout {
        if !io::stdout().is_terminal() {
            return Layout::Piped;
        }
        let width = comfy_table::Table::new().width().map_or(80, usize::from);
        Layout::Terminal { width }
    }
}

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
            "maintwatch probe: error: {} (skipped)",
            sanitize(&line)
        )?;
    }
    for w in &setup.warnings {
        writeln!(err, "maintwatch: warning: {w}")?;
    }
    args.connect.warn_command_line_password(&args.urls);
    for note in &setup.notes {
        writeln!(err, "maintwatch: note: {note}")?;
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
            let text = format!("{}{}", render_table(&rows, layout), summary(reports));
            self.write(|s| s.note(&text));
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Column names of the table.
const HEADER: [&str; 6] = [
    "endpoint",
    "address",
    "outcome",
    "server",
    "maintenance",
    "what to do",
];

/// One endpoint's line of the table, and what goes in its note under the table.
struct Row {
    /// In [`HEADER`] order.
    cells: [String; 6],
    /// The server's text or the error, whole, then what to do when the hint is not all of it.
    note: Vec<String>,
}

impl Row {
    fn of(r: &ProbeReport) -> Row {
        let [endpoint, address, _, server, maintenance, _] = r.cells();
        // The outcome's name alone: the TLS failure or the stage is in the note, whole.
        let outcome = match &r.outcome {
            ProbeOutcome::TlsFailed { .. } => "TLS failed".to_string(),
            other => other.name().replace('_', " "),
        };
        let remedy = r.outcome.remedy();
        let hint = remedy.map_or("", |m| m.hint).to_string();
        let note = r.outcome.note().into_iter();
        let note = note.chain(remedy.and_then(|m| m.more).map(str::to_string));
        Row {
            cells: [endpoint, address, outcome, server, maintenance, hint],
            note: note.collect(),
        }
    }
}

/// How a column of the table gives way when the terminal is narrow.
#[derive(Clone, Copy)]
struct Column {
    /// Shortened (with an ellipsis) down to this many characters; `usize::MAX`: never.
    min: usize,
    /// Left out entirely, in this order (1 first), when shortening is not enough.
    drop: Option<u8>,
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

const fn column(min: usize, drop: Option<u8>) -> Column {
    Column { min, drop }
}

/// In [`HEADER`] order. The endpoint is never shortened (it is what a reader looks up); the
/// address is dropped rather than cut (a cut address is a wrong address); the outcome is one or
/// two words and what to do at most [`probe::HINT_WIDTH`] characters: both always whole. The
/// maintenance, when it is cut or left out, is whole in the endpoint's note.
const COLUMNS: [Column; 6] = [
    column(usize::MAX, None),    // endpoint
    column(usize::MAX, Some(1)), // address
    column(usize::MAX, None),    // outcome
    column(10, Some(2)),         // server
    column(18, Some(3)),         // maintenance
    column(usize::MAX, None),    // what to do
];

/// The columns that shorten; among equally wide ones, the last here gives way first.
const SHRINKABLE: [usize; 2] = [3, 4];

const MAINTENANCE: usize = 4;

const GAP: &str = "  ";

/// The table as aligned columns (a header, then one line per endpoint, no borders), then a note
/// per endpoint that has more to say: `endpoint: the server's text or the error, whole. What to
/// do.` Every cell is sanitised (server texts are untrusted) and an empty cell shows `-`, so
/// each line splits on whitespace into the same columns. On a terminal it fits `width` columns
/// where it can: empty columns are left out, the maintenance and server texts end in `…` at a
/// word's end, then the address and server columns go; the notes wrap between words.
fn render_table(rows: &[Row], layout: Layout) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.cells
                .iter()
                .map(|c| match sanitize(c) {
                    t if t.is_empty() => "-".to_string(),
                    t => t.into_owned(),
                })
                .collect()
        })
        .collect();
    let natural: Vec<usize> = (0..6)
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([HEADER[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let whole_maintenance = natural[MAINTENANCE];
    let (shown, widths) = match layout {
        Layout::Piped => ((0..6).collect(), natural),
        Layout::Terminal { width } => fit(&cells, natural, width),
    };
    let mut out = String::new();
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(&cells) {
        let line: Vec<String> = shown
            .iter()
            .map(|&i| pad(&shorten(&row[i], widths[i]), widths[i]))
            .collect();
        out.push_str(line.join(GAP).trim_end());
        out.push('\n');
    }
    let maintenance_cut = !shown.contains(&MAINTENANCE) || whole_maintenance > widths[MAINTENANCE];
    out.push_str(&notes(rows, &cells, maintenance_cut, layout));
    out
}

/// The most characters of one note on a terminal; piped, a note is whole.
const NOTE_ON_TERMINAL: usize = 600;

/// The notes under the table, after a blank line; nothing when no endpoint has one.
fn notes(rows: &[Row], cells: &[Vec<String>], maintenance_cut: bool, layout: Layout) -> String {
    let mut out = String::new();
    for (row, cells) in rows.iter().zip(cells) {
        let maintenance = &cells[MAINTENANCE];
        let cut = maintenance_cut && maintenance != "-";
        let parts: Vec<String> = cut
            .then(|| maintenance.clone())
            .into_iter()
            .chain(row.note.iter().map(|t| sanitize(t).into_owned()))
            .collect();
        if parts.is_empty() {
            continue;
        }
        let text = sentences(&parts);
        match layout {
            Layout::Piped => out.push_str(&format!("{}: {text}", cells[0])),
            Layout::Terminal { width } => {
                // A screenful at most: a hostile server's 4 KiB text would push the table away.
                let text = match shorten(&text, NOTE_ON_TERMINAL) {
                    cut if cut.len() < text.len() => format!("{cut} (whole in --json)"),
                    _ => text,
                };
                let line = format!("{}: {text}", cells[0]);
                out.push_str(&crate::output::human::wrap_with(&line, width, "    ").join("\n"))
            }
        }
        out.push('\n');
    }
    if out.is_empty() {
        return out;
    }
    format!("\n{out}")
}

/// `parts` as one text, a full stop after each part that does not end a sentence itself.
fn sentences(parts: &[String]) -> String {
    let mut out = String::new();
    for part in parts {
        if !out.is_empty() {
            if !out.ends_with(['.', '?', '!']) {
                out.push('.');
            }
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// The columns to show and every column's width, for a terminal `width` wide.
fn fit(cells: &[Vec<String>], natural: Vec<usize>, width: usize) -> (Vec<usize>, Vec<usize>) {
    // A column nobody has anything to say in costs room and tells nothing.
    let mut shown: Vec<usize> = (0..6)
        .filter(|&i| i == 0 || i == 2 || cells.iter().any(|r| r[i] != "-"))
        .collect();
    let mut drops: Vec<usize> = (0..6).filter(|&i| COLUMNS[i].drop.is_some()).collect();
    drops.sort_by_key(|&i| COLUMNS[i].drop);
    let mut drops = drops.into_iter();
    loop {
        let mut widths = natural.clone();
        let total = |w: &[usize], shown: &[usize]| {
            shown.iter().map(|&i| w[i]).sum::<usize>() + GAP.len() * shown.len().saturating_sub(1)
        };
        // The widest text gives up a character first, so that no one column is cut to its
        // minimum while another keeps everything.
        while total(&widths, &shown) > width {
            let widest = SHRINKABLE
                .iter()
                .filter(|&&i| shown.contains(&i) && widths[i] > floor(i))
                .max_by_key(|&&i| widths[i]);
            match widest {
                Some(&i) => widths[i] -= 1,
                None => break,
            }
        }
        if total(&widths, &shown) <= width {
            return (shown, widths);
        }
        match drops.next() {
            Some(d) => shown.retain(|&i| i != d),
            // Nothing left to give: the line overflows rather than cut an endpoint.
            None => return (shown, widths),
        }
    }
}

/// The narrowest a column may get: its minimum, and never below its header.
fn floor(i: usize) -> usize {
    COLUMNS[i].min.max(HEADER[i].len())
}

/// `text` cut to `width` characters, the last one an ellipsis when anything was cut: at the end
/// of a word when one ends in the first half, so that no word is shown in part.
fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(1);
    let mut cut: String = text.chars().take(keep).collect();
    let whole_word = text.chars().nth(keep) == Some(' ');
    if !whole_word {
        if let Some(space) = cut.rfind(' ').filter(|&at| at >= keep / 2) {
            cut.truncate(space);
        }
    }
    let cut = cut.trim_end();
    format!("{cut}…")
}

fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(n)))
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

/// A scripted server for the tests of `probe` and `doctor`: what they read of a handshake.
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
        crate::conn::test_server::serve(vec![hello, opt_in], b"+PONG\r\n").await
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
                for line in crate::output::terminal::error_lines(&e, None) {
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
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[6], "", "header, one line per endpoint, notes:\n{out}");
        for line in &lines {
            assert!(
                line.chars().count() <= width,
                "wider than {width}: {line:?}\n{out}"
            );
        }
        for (row, endpoint) in lines[1..6].iter().zip(&endpoints) {
            assert!(
                row.starts_with(endpoint.as_str()),
                "{endpoint} not whole in {row:?}"
            );
        }
        assert!(lines[0].ends_with("what to do"), "{out}");
        assert!(lines[4].contains(" unreachable "), "{out}");
        assert!(lines[4].ends_with(" check host and port"), "{out}");
        assert!(lines[2].contains("under way: MOVING"), "{out}");
        assert!(
            out.contains('…'),
            "the maintenance is cut in the table:\n{out}"
        );
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(lines[5].contains(" refused "), "{out}");
        assert!(lines[5].ends_with(" unsupported here"), "{out}");
        let notes = notes_of(&out);
        assert_eq!(notes.len(), 4, "{out}");
        assert_eq!(
            notes[0],
            format!("redis://{moving}: under way: MOVING seq 7 window 15 s target none (null)")
        );
        assert!(
            notes[1].starts_with(&format!(
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

    fn row(e: &str, a: &str, o: &str, d: &str) -> Row {
        let outcome = match o {
            "accepted" => ProbeOutcome::Accepted,
            _ => ProbeOutcome::Refused { text: d.into() },
        };
        let mut report = ProbeReport::failed(e.into(), false, outcome);
        report.address = a.parse().ok();
        Row::of(&report)
    }

    #[test]
    fn a_narrow_terminal_drops_the_address_before_cutting_an_endpoint() {
        let refusal = "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.";
        let rows = [
            row(
                "redis://db-1.example.net:12000",
                "10.0.0.5:12000",
                "accepted",
                "",
            ),
            row(
                "redis://db-2.example.net:12000",
                "10.0.0.6:12000",
                "refused",
                refusal,
            ),
        ];
        let text = render_table(&rows, Layout::Terminal { width: 60 });
        assert_eq!(
            text,
            "endpoint                        outcome   what to do\n\
             redis://db-1.example.net:12000  accepted  -\n\
             redis://db-2.example.net:12000  refused   unsupported here\n\
             \n\
             redis://db-2.example.net:12000: ERR unknown subcommand\n    \
             'MAINT_NOTIFICATIONS'. Try CLIENT HELP. Redis Open\n    \
             Source and Valkey send no notifications; Redis Software\n    \
             (8.0.2+) does with client_maint_notifications on\n"
        );
        let wide = render_table(&rows, Layout::Terminal { width: 200 });
        assert!(
            wide.contains("10.0.0.6:12000  refused   unsupported here\n"),
            "{wide}"
        );
        assert!(
            wide.contains(&format!("redis://db-2.example.net:12000: {refusal} ")),
            "{wide}"
        );
        assert!(
            !wide.contains("server"),
            "an empty column is left out: {wide}"
        );
    }

    #[test]
    fn on_a_terminal_a_long_note_is_cut_and_says_where_it_is_whole() {
        let long = format!("ERR {}", "word ".repeat(1000));
        let rows = [row("redis://h:1", "10.0.0.5:1", "refused", long.trim_end())];
        let text = render_table(&rows, Layout::Terminal { width: 80 });
        let note = text.split_once("\n\n").unwrap().1.replace("\n    ", " ");
        assert!(note.len() < NOTE_ON_TERMINAL + 100, "{note}");
        assert!(
            note.trim_end().ends_with("word… (whole in --json)"),
            "{note}"
        );
        let piped = render_table(&rows, Layout::Piped);
        assert!(piped.contains(long.trim_end()), "{piped}");
    }

    #[test]
    fn a_cut_text_ends_at_a_word() {
        assert_eq!(shorten("under way: MOVING seq 7", 18), "under way: MOVING…");
        assert_eq!(shorten("under way: MOVING seq 7", 21), "under way: MOVING…");
        assert_eq!(
            shorten("redis 7.0.15 standalone master", 14),
            "redis 7.0.15…"
        );
        // No word ends in the first half: cut inside it rather than show almost nothing.
        assert_eq!(shorten("abcdefghijkl mn", 8), "abcdefg…");
        assert_eq!(shorten("short", 8), "short");
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
            format!("ERR {}...", "y".repeat(crate::conn::MAX_ERROR_TEXT - 4))
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
