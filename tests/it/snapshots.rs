//! Snapshots of what people read: every `--help`, the end-of-watch summary, and a human timeline
//! from the simulator. A change to any of them shows up here as a diff to review.
//!
//! The snapshots are in `tests/it/snapshots/`. After an intended change, review and accept with
//! `cargo insta review`, or rewrite them all with `INSTA_UPDATE=always cargo test --test
//! snapshots` and read the diff. A mismatch always fails the test; outside CI insta also leaves
//! the new version beside the old as `.snap.new` (never commit those).

use crate::common;

use maintwatch::observe::record::line;
use std::process::Output;

use clap::CommandFactory;
use maintwatch::cli::Cli;
use maintwatch::observe::record::{ConnTotals, EventRow, OptInOutcome, OptInTally, WatchLine};
use maintwatch::present::output::human::{render, Style};

/// Runs the built binary with a fixed width and no colour, whatever the terminal running the
/// tests. All three standard streams are pipes or null, so clap falls back to `COLUMNS`.
fn maintwatch(args: &[&str]) -> Output {
    common::maintwatch(args)
        .env("COLUMNS", "100")
        .env_remove("LINES")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("REDISCLI_AUTH")
        .env_remove("MAINTWATCH_SIM_PASSWORD")
        .output()
        .expect("running maintwatch")
}

fn stdout_of(args: &[&str]) -> String {
    let out = maintwatch(args);
    assert!(
        out.status.success(),
        "maintwatch {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the output is UTF-8")
}

/// The subcommands a user can ask help for, from the definitions, so a new one is covered (and
/// fails until its snapshot is reviewed) without editing this file.
fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(|c| c.get_name().to_string())
        .collect()
}

#[test]
fn help_of_maintwatch() {
    insta::assert_snapshot!("help_maintwatch", stdout_of(&["--help"]));
}

#[test]
fn help_of_every_subcommand() {
    let names = subcommands();
    for want in [
        "watch", "decode", "probe", "simulate", "demo", "replay", "pcap",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }
    for name in names {
        let help = stdout_of(&[&name, "--help"]);
        insta::assert_snapshot!(format!("help_{name}"), help);
    }
}

/// Each `--help` ends with examples of that very command.
#[test]
fn every_help_has_examples() {
    let mut missing = Vec::new();
    let root = stdout_of(&["--help"]);
    if !root.contains("\nExamples:\n  maintwatch ") {
        missing.push("maintwatch".to_string());
    }
    for name in subcommands() {
        let help = stdout_of(&[&name, "--help"]);
        let examples = help.split("\nExamples:\n").nth(1).unwrap_or_default();
        if !examples
            .lines()
            .any(|l| l.starts_with(&format!("  maintwatch {name}")))
        {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "no examples in the help of {missing:?}");
}

/// clap's derive lets a variant's doc comment reset the long description of its arguments'
/// struct, so `--help` and the man page would show the one-line summary only. Every variant
/// repeats it with `#[command(long_about = ...)]`; this catches one that does not.
#[test]
fn every_subcommand_keeps_its_long_description() {
    let cli = Cli::command();
    for sub in cli.get_subcommands().filter(|c| c.get_name() != "help") {
        let name = sub.get_name();
        let long = sub.get_long_about().map(|s| s.to_string());
        let short = sub.get_about().map(|s| s.to_string());
        assert!(
            long.as_ref().is_some_and(|l| Some(l) != short.as_ref()),
            "{name} has no long description of its own (a variant doc comment resets it)"
        );
        let help = stdout_of(&[name, "--help"]);
        let opening: Vec<&str> = long
            .as_deref()
            .unwrap()
            .split_whitespace()
            .take(6)
            .collect();
        assert!(
            help.split_whitespace()
                .collect::<Vec<_>>()
                .windows(opening.len())
                .any(|w| w == opening.as_slice()),
            "{name} --help does not show its long description"
        );
    }
}

fn conn(conn: u32, endpoint: &str, notifications: u32, closes: u32) -> ConnTotals {
    ConnTotals {
        conn,
        endpoint: endpoint.into(),
        notifications,
        other_pushes: 0,
        closes,
        reconnects: closes,
    }
}

fn summary(events: Vec<EventRow>, conns: Vec<ConnTotals>, opt_in: Vec<OptInTally>) -> String {
    summary_with(events, conns, opt_in, None)
}

fn summary_with(
    events: Vec<EventRow>,
    conns: Vec<ConnTotals>,
    opt_in: Vec<OptInTally>,
    pings: Option<maintwatch::observe::record::PingStats>,
) -> String {
    let line = WatchLine::Summary(line::Summary {
        v: 1,
        t: 95.4,
        at: "2026-01-01T00:00:00.000000Z".into(),
        reason: "duration".into(),
        events,
        conns,
        opt_in,
        pings,
        notes: Default::default(),
        scenario_s: None,
        topology: Vec::new(),
    });
    render(&line, &Style::default()).join("\n")
}

#[test]
fn summary_table() {
    let moving = EventRow {
        window_s: Some(15),
        dns_moved_s: Some(9.7),
        socket_closed_s: Some(16.6),
        overshoot_s: Some(1.6),
        handoff: Some("move_to_successor".into()),
        handoff_s: Some(10.0),
        margin_s: Some(6.6),
        copies: 1,
        ..EventRow::new("MOVING", Some(0), 3.2)
    };
    let migrating = EventRow {
        window_s: Some(2),
        closed_by_notification_s: Some(2.0),
        ..EventRow::new("MIGRATING", Some(3), 40.1)
    };
    let failing_over = EventRow {
        window_s: Some(2),
        handoff: Some("stale_at_expiry".into()),
        ..EventRow::new("FAILING_OVER", None, 80.0)
    };
    let text = summary(
        vec![
            moving,
            migrating,
            EventRow::new("MIGRATED", Some(4), 42.1),
            failing_over,
        ],
        vec![
            conn(1, "rediss://db.example.net:12000", 4, 1),
            conn(2, "redis://10.0.0.5:12000", 0, 0),
        ],
        vec![
            OptInTally {
                opt_in: OptInOutcome::Accepted,
                text: None,
                conns: 1,
            },
            OptInTally {
                opt_in: OptInOutcome::Refused,
                text: Some("ERR unknown subcommand 'MAINT_NOTIFICATIONS'".into()),
                conns: 1,
            },
        ],
    );
    // What the snapshot is for, said outright: the table fits the 80 columns it promises.
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line}");
    }
    insta::assert_snapshot!("summary_table", text);
}

/// A MOVING that came with the opt-in (possibly open before we joined), a silent shrink's MIGRATING (the DNS drop and the close
/// nothing announced, both relative to it), and the `--traffic` figures.
#[test]
fn summary_table_with_joined_window_silent_close_and_traffic() {
    let joined = EventRow {
        window_s: Some(15),
        socket_closed_s: Some(1.6),
        overshoot_s: Some(-13.4),
        handoff: Some("stepped_sideways".into()),
        handoff_s: Some(0.2),
        margin_s: Some(1.4),
        joined_open: true,
        ..EventRow::new("MOVING", Some(7), 0.3)
    };
    let shrink = EventRow {
        window_s: Some(2),
        closed_by_notification_s: Some(12.3),
        dns_moved_s: Some(17.1),
        socket_closed_s: Some(30.4),
        silent_close: true,
        ..EventRow::new("MIGRATING", Some(8), 20.0)
    };
    let pings = maintwatch::observe::record::PingStats {
        sent: 120,
        answered: 117,
        failures: 3,
        p50_ms: Some(0.212),
        p99_ms: Some(1.905),
        max_ms: Some(3.4),
        failure_windows: vec![maintwatch::observe::record::WindowFailures {
            window: "MOVING seq 7".into(),
            failures: 3,
        }],
    };
    let text = summary_with(
        vec![joined, shrink, EventRow::new("MIGRATED", Some(9), 32.3)],
        vec![conn(1, "redis://db.example.net:12000", 3, 1)],
        Vec::new(),
        Some(pings),
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line}");
    }
    assert!(
        text.contains("+30.4 s") && text.contains("(silent)"),
        "{text}"
    );
    assert!(text.contains("+17.1 s"), "{text}");
    assert!(
        text.contains("3 failed, all 3 during MOVING seq 7"),
        "{text}"
    );
    insta::assert_snapshot!("summary_table_marks_traffic", text);
}

#[test]
fn summary_without_events() {
    let text = summary(
        Vec::new(),
        vec![conn(1, "redis://127.0.0.1:6379", 0, 0)],
        Vec::new(),
    );
    assert!(
        text.contains("no maintenance notification was seen"),
        "{text}"
    );
    insta::assert_snapshot!("summary_without_events", text);
}

/// `maintwatch demo` on the shard-migration scenario, as a reader sees it, with what legitimately
/// differs from run to run taken out (see [`stable_demo`]).
#[test]
fn demo_timeline_shard_migration() {
    let out = stdout_of(&[
        "demo",
        "--scenario",
        "shard-migration",
        "--speed",
        "20",
        "--color",
        "never",
    ]);
    insta::assert_snapshot!("demo_shard_migration", stable_demo(&out));
}

/// `maintwatch demo` on Azure Cache's failover at 80 columns: each AzureRedisEvents message beside
/// its bytes and the reference client's reaction, the close timed after NodeMaintenanceStarting,
/// and the summary's rows with their outcome. Normalised as [`stable_demo`] says (the start
/// times are to the second, so at `--speed 5` the windows vary too: their digits are masked).
#[test]
fn demo_timeline_azure_failover_at_80_columns() {
    let out = common::maintwatch([
        "demo",
        "--scenario",
        "azure-failover",
        "--speed",
        "5",
        "--color",
        "never",
    ])
    .env("COLUMNS", "80")
    .env_remove("LINES")
    .env_remove("CLICOLOR_FORCE")
    .output()
    .expect("running maintwatch");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line:?}");
    }
    let stable = mask_azure(&stable_demo(&text), &text);
    assert!(
        stable.contains("after NodeMaintenanceStarting: closed by the server"),
        "{stable}"
    );
    insta::assert_snapshot!("demo_azure_failover", stable);
}

/// What else varies in an Azure scenario's demo: the simulator's port inside the messages
/// (`NonSSLPort`), their start times, and the windows computed from those (to the second, so
/// at a high speed they vary by several scenario seconds).
fn mask_azure(stable: &str, raw: &str) -> String {
    let port = raw
        .lines()
        .find_map(|l| l.strip_prefix("  simulator: "))
        .and_then(|l| l.rsplit(':').next())
        .expect("the simulator's port")
        .to_string();
    // A run of digits becomes one N: how many digits a varying figure has varies too.
    let digits = |l: &str| {
        let mut out = String::new();
        for c in l.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('N') {
                out.push('N');
            }
        }
        out
    };
    stable
        .lines()
        .map(|l| {
            let l = l
                .replace(&format!("/{port}"), "/PORT")
                .replace(&format!("|{port}"), "|PORT");
            let timed = l.contains("StartTimeInUTC|")
                || l.contains(" starts 20")
                || l.contains("closed by the server, window");
            let l = if timed || l.starts_with("│ azure") {
                digits(&l)
            } else {
                l
            };
            // Whether the close came before, at or after a start known to the second varies,
            // and so does whether Ended's start (its own moment) is just before or after it.
            l.replace("(+N.N)", "(±N.N)")
                .replace("(-N.N)", "(±N.N)")
                .replace("s before it ended", "s past")
                .replace(", at its end", ", N.N s past")
                .replace("(started N.N s ago)", "(starts in N.N s)")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The demo's output with what differs between runs of the same scenario taken out:
///
/// - wall-clock times, the simulator's port and its DNS server's port (picked by the OS), and the
///   crate version;
/// - every measured duration: offsets after an event, the simulator's clock, the summary's times.
///   At `--speed 20` a few milliseconds of scheduling become a tenth of a scenario second or more
///   (MIGRATED was seen anywhere from +1.93 to +2.10), so digits are masked, not rounded;
/// - the order between independent sources. The simulator's narration (`sim |`), the DNS watch
///   (`[-]`) and each connection (`[1]` ...) are printed as they happen, so their interleaving is
///   chance; each source's own order is not. The lines are grouped by source, each group in the
///   order printed;
/// - for the same reason, whether the initial DNS answer came after the first push (and so
///   carries an offset and the name of what it is measured from), and whether that push, sent right after the opt-in's `+OK`, was read
///   together with it (`[with opt-in]`, about one run in ten, and then the note under it that
///   its window may have opened before we joined).
///
/// comfy-table wraps a long cell at a point that depends on its length (here the endpoint and its
/// port), so wrapped table rows are joined into one line before the port is redacted.
fn stable_demo(out: &str) -> String {
    let last_number = |prefix: &str, what: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|l| l.rsplit(':').next())
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no {what} in:\n{out}"))
            .to_string()
    };
    let port = last_number("  simulator: ", "simulator's port");
    let dns_port = last_number("  proxies ", "DNS server's port");

    let lines = unwrap_table_rows(unwrap_entries(out));
    let mut head = Vec::new();
    let mut untied = Vec::new();
    let mut conns: Vec<(String, Vec<String>)> = Vec::new();
    let mut sim = Vec::new();
    let mut tail = Vec::new();
    // Which group a continuation line (an entry's bytes, its `sent ...`) belongs to.
    let mut current: Option<String> = None;
    let mut at_end = false;
    for raw in &lines {
        let line = replace_token(&redact_clock(raw), &format!(":{port}"), ":PORT");
        let line = replace_token(&line, &format!(":{dns_port}"), ":DNSPORT");
        let line = line
            .replace(
                &format!("maintwatch {}", env!("CARGO_PKG_VERSION")),
                "maintwatch VERSION",
            )
            .replace(&format!("(v{})", env!("CARGO_PKG_VERSION")), "(vVERSION)");
        // The summary comes last, once every source has stopped.
        at_end |= line.starts_with("summary: ");
        if at_end {
            tail.push(mask_numbers(&line));
        } else if let Some(rest) = line.strip_prefix("    sim | ") {
            sim.push(format!("    sim | {}", mask_numbers(rest)));
        } else if let Some(rest) = line.strip_prefix(&format!("{CLOCK} ")) {
            let tag_end = rest.find(']').expect("a [conn] tag") + 1;
            let (tag, entry) = rest.split_at(tag_end);
            let entry = mask_numbers(entry).replace(" [with opt-in]", "");
            if tag == "[-]" {
                // With its reference, which is named: `+N.NNN after MIGRATING seq N: `.
                let entry = match entry.strip_prefix(" +N.NNN") {
                    Some(rest) => {
                        match rest.strip_prefix(" after ").and_then(|r| r.split_once(':')) {
                            Some((_, rest)) => rest.to_string(),
                            None => rest.to_string(),
                        }
                    }
                    None => entry.clone(),
                };
                untied.push(format!("{CLOCK} {tag}{entry}"));
            } else {
                let group = match conns.iter_mut().find(|(t, _)| t == tag) {
                    Some(g) => g,
                    None => {
                        conns.push((tag.to_string(), Vec::new()));
                        conns.last_mut().unwrap()
                    }
                };
                group.1.push(format!("{CLOCK} {tag}{entry}"));
            }
            current = Some(tag.to_string());
        } else if line.starts_with("      note: came with the opt-in") {
            continue;
        } else if line.starts_with("      ") && current.is_some() {
            let tag = current.as_deref().unwrap();
            match conns.iter_mut().find(|(t, _)| t == tag) {
                Some((_, group)) => group.push(line),
                None => untied.push(line),
            }
        } else if current.is_none() {
            head.push(line);
        } else {
            panic!("a line the normalisation does not know: {line:?}\nin:\n{out}");
        }
    }

    let mut text = head;
    text.push("== not tied to a connection, in order:".into());
    text.extend(untied);
    for (tag, group) in conns {
        text.push(format!("== connection {tag}, in order:"));
        text.extend(group);
    }
    text.push("== simulator narration, in order:".into());
    text.extend(sim);
    text.push("== at the end:".into());
    let tail: Vec<&str> = tail.iter().map(String::as_str).collect();
    text.extend(squeeze_table(&tail));
    text.join("\n")
}

/// A table's lines with its columns' widths taken out: a cell's width is its widest value's,
/// and a measured time's digits vary between runs. Borders become one `─`/`═` per column,
/// cells lose their padding. Other lines are kept.
fn squeeze_table(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            if let Some(inner) = line.strip_prefix('│').and_then(|l| l.strip_suffix('│')) {
                let cells: Vec<&str> = inner.split('┆').map(str::trim).collect();
                return format!("│ {} │", cells.join(" ┆ "));
            }
            if line.starts_with(['┌', '╞', '├', '└']) {
                let mut out = String::new();
                for c in line.chars() {
                    if !(matches!(c, '─' | '═') && out.ends_with(c)) {
                        out.push(c);
                    }
                }
                return out;
            }
            line.to_string()
        })
        .collect()
}

/// Joins an entry wrapped at 80 columns (continued on lines indented by 8 spaces) back into one
/// line: where it wraps depends on the width of the numbers in it, which vary between runs.
fn unwrap_entries(out: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in out.lines() {
        // The demo's narration lines continue under their text, past `    sim | +  0.000 s  `.
        let cont = line
            .strip_prefix("                      ")
            .or_else(|| line.strip_prefix("        "));
        match (cont, lines.last_mut()) {
            (Some(rest), Some(last)) if !rest.starts_with(' ') => {
                last.push(' ');
                last.push_str(rest);
            }
            _ => lines.push(line.to_string()),
        }
    }
    lines
}

/// `HH:MM:SS.ffffff` for every `\d\d:\d\d:\d\d\.\d{6}` (`--time-format full`), and
/// `HH:MM:SS.mmm` for every `\d\d:\d\d:\d\d\.\d{3}` (the compact default).
/// The redacted compact clock that starts every timeline line of the demo.
const CLOCK: &str = "HH:MM:SS.mmm";

fn redact_clock(line: &str) -> String {
    const FULL: &[u8] = b"dd:dd:dd.dddddd";
    const COMPACT: &[u8] = b"dd:dd:dd.ddd";
    let bytes = line.as_bytes();
    let fits = |at: usize, shape: &[u8]| {
        bytes.len() >= at + shape.len()
            && shape.iter().zip(&bytes[at..]).all(|(&s, &b)| match s {
                b'd' => b.is_ascii_digit(),
                _ => b == s,
            })
    };
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line.is_char_boundary(i) && fits(i, FULL) {
            out.push_str("HH:MM:SS.ffffff");
            i += FULL.len();
        } else if line.is_char_boundary(i) && fits(i, COMPACT) {
            out.push_str(CLOCK);
            i += COMPACT.len();
        } else {
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Replaces `token` where it is not followed by another digit (`:4050` must not match `:40503`).
fn replace_token(line: &str, token: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(token) {
        let after = &rest[at + token.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(token);
        } else {
            out.push_str(with);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Masks every decimal number (`1.931`, `12.2`) as `N` and its fraction's digits (`N.NNN`,
/// `N.N`): the fraction's width is the format's, the integer part's is how late the run was (on
/// a loaded machine a step at `--speed 20` can land ten scenario seconds late). Padding that
/// right-aligns a number (`+  N.NNN s`) goes with it: one space after a `+`. Integers (seq
/// numbers, windows, counts, addresses' parts) stay, and so does a dotted address like
/// `127.0.0.2`, which has more than one dot.
fn mask_numbers(line: &str) -> String {
    squeeze_after_plus(&mask_decimals(line))
}

fn squeeze_after_plus(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut after_plus = false;
    for c in line.chars() {
        if !(after_plus && c == ' ' && out.ends_with(' ')) {
            out.push(c);
        }
        after_plus = (after_plus && c == ' ') || c == '+';
    }
    out
}

fn mask_decimals(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit()
            || (i > 0 && (chars[i - 1].is_ascii_digit() || chars[i - 1] == '.'))
        {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // A run of digits and dots starting here.
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
            j += 1;
        }
        let run: String = chars[i..j].iter().collect();
        let run = run.trim_end_matches('.');
        match run.split_once('.').filter(|(_, frac)| !frac.contains('.')) {
            Some((_, frac)) => {
                out.push_str("N.");
                out.extend(frac.chars().map(|_| 'N'));
            }
            None => out.push_str(run),
        }
        i += run.chars().count();
    }
    out
}

/// Joins each multi-line row of a comfy-table into one line: a column's pieces are joined
/// without a space where the previous piece filled the column (a word split), with one where it
/// did not (a wrap at a space). Rows on one line, and all other lines, are kept as they are.
fn unwrap_table_rows(lines: Vec<String>) -> Vec<String> {
    fn cells(line: &str) -> Option<Vec<&str>> {
        let inner = line.strip_prefix('│')?.strip_suffix('│')?;
        Some(inner.split('┆').collect())
    }
    let mut out: Vec<String> = Vec::new();
    let mut row: Vec<Vec<&str>> = Vec::new();
    let flush = |row: &mut Vec<Vec<&str>>, out: &mut Vec<String>| {
        match row.len() {
            0 => {}
            1 => out.push(format!("│{}│", row[0].join("┆"))),
            _ => {
                let joined: Vec<String> = (0..row[0].len())
                    .map(|col| {
                        let width = row[0][col].chars().count().saturating_sub(2);
                        let mut text = String::new();
                        let mut filled = false;
                        for piece in row.iter().map(|r| r.get(col).copied().unwrap_or("").trim()) {
                            if piece.is_empty() {
                                continue;
                            }
                            if !text.is_empty() && !filled {
                                text.push(' ');
                            }
                            text.push_str(piece);
                            filled = piece.chars().count() == width;
                        }
                        text
                    })
                    .collect();
                out.push(format!("│ {} │", joined.join(" ┆ ")));
            }
        }
        row.clear();
    };
    for line in &lines {
        match cells(line) {
            Some(c) => {
                let continues = !row.is_empty() && c.first().is_some_and(|f| f.trim().is_empty());
                if !continues {
                    flush(&mut row, &mut out);
                }
                row.push(c);
            }
            None => {
                flush(&mut row, &mut out);
                out.push(line.clone());
            }
        }
    }
    flush(&mut row, &mut out);
    out
}

#[test]
fn the_demo_normalisation_removes_only_what_varies() {
    let table = [
        "│ 1    ┆ redis://db.sim.m ┆ 2             │",
        "│      ┆ aintwatch.test:4 ┆               │",
        "│      ┆ 0503             ┆               │",
        "│ 2    ┆ a b              ┆ 3             │",
        "│      ┆ c                ┆               │",
    ];
    assert_eq!(
        unwrap_table_rows(table.iter().map(|s| s.to_string()).collect()),
        [
            "│ 1 ┆ redis://db.sim.maintwatch.test:40503 ┆ 2 │",
            "│ 2 ┆ a b c ┆ 3 │"
        ]
    );
    assert_eq!(
        redact_clock("00:22:35.686521 [-] at 1:2"),
        "HH:MM:SS.ffffff [-] at 1:2"
    );
    assert_eq!(
        redact_clock("00:22:35.686 [-] at 1:2"),
        "HH:MM:SS.mmm [-] at 1:2"
    );
    assert_eq!(
        replace_token("a:4050 b:40503", ":4050", ":P"),
        "a:P b:40503"
    );
    assert_eq!(
        mask_numbers(" +1.931 MIGRATED seq 1 on 127.0.0.2 window 2 s +  0.024 s (+1.6) x2."),
        " +N.NNN MIGRATED seq 1 on 127.0.0.2 window 2 s + N.NNN s (+N.N) x2."
    );
    // A late run's numbers look like an early one's.
    assert_eq!(
        mask_numbers("+ 12.345 s  step; +12.3 s"),
        mask_numbers("+  2.345 s  step; +2.3 s")
    );
    assert_eq!(
        squeeze_table(&[
            "┌────┬───────┐",
            "│ a  ┆ +NN s │",
            "╞════╪═══════╡",
            "│ bb ┆ -     │",
        ]),
        ["┌─┬─┐", "│ a ┆ +NN s │", "╞═╪═╡", "│ bb ┆ - │"]
    );
}
