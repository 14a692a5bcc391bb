//! The table `maintwatch probe` shows people: a header, one line per endpoint (its outcome, the
//! maintenance under way, what to do), then a note per endpoint that has more to say, and the
//! count of outcomes.
//!
//! comfy-table lays the lines out, as it does the watch's summary; what this module decides is
//! what a terminal has room for, because the rule is the table's own: an endpoint's line stays
//! one line (a script or a reader finds it by its endpoint, whole). When every column does not
//! fit whole, the endpoint, its outcome and what to do stay the table, and the address, server
//! and maintenance go on a labelled line under it, wrapped between words: nothing is cut or
//! left out (a cut server read `redis…`, a cut address is a wrong one). Widths are terminal
//! columns (`unicode-width`, as comfy-table measures them), so a name in CJK or with emoji
//! keeps the columns aligned. On a terminal the width is `COLUMNS` or the terminal's, as on
//! every other screen; piped, one line per endpoint with every column.

use std::collections::BTreeMap;

use comfy_table::presets::NOTHING;
use comfy_table::{ContentArrangement, Table};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::network::conn::probe::{self, ProbeOutcome, ProbeReport};
use crate::network::conn::HelloInfo;
use crate::present::output::human::wrap_with;
use crate::shared::escape::sanitize;

/// How the human table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A terminal this many columns wide: the table fits it, long cells end in an ellipsis.
    Terminal { width: usize },
    /// Piped or redirected: the same aligned columns, nothing shortened.
    Piped,
}

impl Layout {
    /// The layout for the process's stdout: its terminal's width, `COLUMNS` first as on every
    /// other screen ([`super::terminal::stdout_columns`]).
    pub fn detect() -> Layout {
        match super::terminal::stdout_columns() {
            Some(width) => Layout::Terminal { width },
            None => Layout::Piped,
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
pub struct Row {
    /// In [`HEADER`] order.
    cells: [String; 6],
    /// The server's text or the error, whole, then what to do when the hint is not all of it.
    note: Vec<String>,
}

impl Row {
    pub fn of(r: &ProbeReport) -> Row {
        let address = r.address.map(|a| a.to_string()).unwrap_or_default();
        let server = r
            .hello
            .as_ref()
            .map(HelloInfo::describe)
            .unwrap_or_default();
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
            cells: [
                r.endpoint.clone(),
                address,
                outcome,
                server,
                r.maintenance_text(),
                hint,
            ],
            note: note.collect(),
        }
    }
}

const MAINTENANCE: usize = 4;

const GAP: &str = "  ";

/// The table as aligned columns (a header, then one line per endpoint, no borders), then a note
/// per endpoint that has more to say: `endpoint: the server's text or the error, whole. What to
/// do.` Every cell is sanitised (server texts are untrusted) and an empty cell shows `-`, so
/// each line splits on whitespace into the same columns. On a terminal it fits `width` columns
/// where it can: empty columns are left out, the maintenance and server texts end in `…` at a
/// word's end, then the address and server columns go; the notes wrap between words.
pub fn render(rows: &[Row], layout: Layout) -> String {
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
                .map(|r| r[i].width())
                .chain([HEADER[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    if let Layout::Terminal { width } = layout {
        let present = present_columns(&cells);
        if total(&natural, &present) > width {
            let mut out = two_line(&cells, &natural, &present, width);
            out.push_str(&notes(rows, &cells, false, layout));
            return out;
        }
    }
    let whole_maintenance = natural[MAINTENANCE];
    let (shown, widths) = match layout {
        Layout::Piped => ((0..6).collect(), natural),
        Layout::Terminal { .. } => (present_columns(&cells), natural),
    };
    let mut out = lines(&cells, &shown, &widths);
    let maintenance_cut = !shown.contains(&MAINTENANCE) || whole_maintenance > widths[MAINTENANCE];
    out.push_str(&notes(rows, &cells, maintenance_cut, layout));
    out
}

/// The columns that have something to say (the endpoint and the outcome always).
fn present_columns(cells: &[Vec<String>]) -> Vec<usize> {
    (0..6)
        .filter(|&i| i == 0 || i == 2 || cells.iter().any(|r| r[i] != "-"))
        .collect()
}

/// The width of the columns `shown` at `widths`, with the gaps between them.
fn total(widths: &[usize], shown: &[usize]) -> usize {
    shown.iter().map(|&i| widths[i]).sum::<usize>() + GAP.len() * shown.len().saturating_sub(1)
}

/// The columns that are never cut, in the table: the endpoint, the outcome, what to do.
const MAIN: [usize; 3] = [0, 2, 5];

/// A terminal too narrow for every column whole: the endpoint, its outcome and what to do stay
/// the table's one line per endpoint, and the address, server and maintenance go on the line
/// under it, labelled and wrapped between words, whole: nothing is cut and no column is left
/// out (the server read `redis…`, and the address and maintenance were dropped).
fn two_line(cells: &[Vec<String>], natural: &[usize], present: &[usize], width: usize) -> String {
    let main: Vec<usize> = MAIN
        .iter()
        .copied()
        .filter(|i| present.contains(i))
        .collect();
    let table = lines(cells, &main, natural);
    let mut rows = table.lines();
    let mut out = String::new();
    if let Some(header) = rows.next() {
        out.push_str(header);
        out.push('\n');
    }
    for (row, line) in cells.iter().zip(rows) {
        out.push_str(line);
        out.push('\n');
        let more: Vec<String> = [1, 3, 4]
            .into_iter()
            .filter(|&i| present.contains(&i) && row[i] != "-")
            .map(|i| format!("{} {}", HEADER[i], row[i]))
            .collect();
        if more.is_empty() {
            continue;
        }
        for piece in wrap_with(&format!("    {}", more.join("; ")), width, "      ") {
            out.push_str(&piece);
            out.push('\n');
        }
    }
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
                // Continued four spaces in, under the endpoint rather than the table's columns.
                out.push_str(&wrap_with(&line, width, "    ").join("\n"))
            }
        }
        out.push('\n');
    }
    if out.is_empty() {
        return out;
    }
    format!("\n{out}")
}

/// One endpoint's failure on one line, as probe's note says it: `ENDPOINT: the error. What to
/// do.` (sanitised), for a command that stops at it (`doctor`). A refused password says so
/// first, since the server's own words (`WRONGPASS ...`) are a code.
pub fn note_line(endpoint: &str, outcome: &crate::network::conn::probe::ProbeOutcome) -> String {
    use crate::network::conn::probe::ProbeOutcome;
    let mut parts: Vec<String> = Vec::new();
    if let ProbeOutcome::AuthFailed { text } = outcome {
        if !text.starts_with("NOAUTH") {
            parts.push(format!(
                "the server refused the password: {}",
                sanitize(text)
            ));
        }
    }
    if parts.is_empty() {
        parts.extend(outcome.note().map(|t| sanitize(&t).into_owned()));
    }
    parts.extend(outcome.remedy().and_then(|r| r.more).map(str::to_string));
    format!("{}: {}", sanitize(endpoint), sentences(&parts))
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

/// `text` cut to `width` terminal columns, the last one an ellipsis when anything was cut: at the end
/// of a word when one ends in the first half, so that no word is shown in part.
fn shorten(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    // The characters that fit in `width - 1` columns, the ellipsis taking the last one.
    let keep = width.saturating_sub(1);
    let (mut cut, mut used) = (String::new(), 0);
    for c in text.chars() {
        used += c.width().unwrap_or(0);
        if used > keep {
            break;
        }
        cut.push(c);
    }
    let whole_word = text[cut.len()..].starts_with(' ');
    if !whole_word {
        if let Some(space) = cut.rfind(' ').filter(|&at| cut[..at].width() >= keep / 2) {
            cut.truncate(space);
        }
    }
    let cut = cut.trim_end();
    format!("{cut}…")
}

/// The header and a line per endpoint, laid out by comfy-table: no borders, the columns
/// `shown` each `widths[i]` terminal columns wide (cells already cut to fit: a row stays one
/// line), two spaces between columns, nothing after the last.
fn lines(cells: &[Vec<String>], shown: &[usize], widths: &[usize]) -> String {
    let mut table = Table::new();
    table
        .load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(shown.iter().map(|&i| HEADER[i]));
    for row in cells {
        table.add_row(shown.iter().map(|&i| shorten(&row[i], widths[i])));
    }
    let last = shown.len().saturating_sub(1);
    for (at, column) in table.column_iter_mut().enumerate() {
        let gap = if at == last { 0 } else { GAP.len() as u16 };
        column.set_padding((0, gap));
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
/// `3 endpoints: 1 accepted, 1 refused, 1 unreachable`.
pub fn summary(reports: &[ProbeReport]) -> String {
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
    fn a_narrow_terminal_puts_the_address_under_its_endpoint_rather_than_drop_it() {
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
        let text = render(&rows, Layout::Terminal { width: 60 });
        assert_eq!(
            text,
            "endpoint                        outcome   what to do\n\
             redis://db-1.example.net:12000  accepted  -\n    \
             address 10.0.0.5:12000\n\
             redis://db-2.example.net:12000  refused   unsupported here\n    \
             address 10.0.0.6:12000\n\
             \n\
             redis://db-2.example.net:12000: ERR unknown subcommand\n    \
             'MAINT_NOTIFICATIONS'. Try CLIENT HELP. Redis Open\n    \
             Source and Valkey send no notifications; Redis Software\n    \
             (8.0.2+) does with client_maint_notifications on\n"
        );
        let wide = render(&rows, Layout::Terminal { width: 200 });
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
        let text = render(&rows, Layout::Terminal { width: 80 });
        let note = text.split_once("\n\n").unwrap().1.replace("\n    ", " ");
        assert!(note.len() < NOTE_ON_TERMINAL + 100, "{note}");
        assert!(
            note.trim_end().ends_with("word… (whole in --json)"),
            "{note}"
        );
        let piped = render(&rows, Layout::Piped);
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

    /// Columns start at the same terminal column on every line, whatever the endpoint's script:
    /// a CJK name takes two columns a character, and the padding says so.
    #[test]
    fn a_wide_character_endpoint_keeps_the_columns_aligned() {
        let rows = [
            row(
                "redis://数据库-主.example:6379",
                "10.0.0.5:6379",
                "accepted",
                "",
            ),
            row(
                "redis://db.example:6379",
                "10.0.0.6:6379",
                "refused",
                "ERR no",
            ),
        ];
        for layout in [Layout::Terminal { width: 80 }, Layout::Piped] {
            let text = render(&rows, layout);
            let lines: Vec<&str> = text.lines().take(3).collect();
            let column_of = |line: &str, word: &str| line[..line.find(word).unwrap()].width();
            let at = column_of(lines[0], "outcome");
            assert_eq!(column_of(lines[1], "accepted"), at, "{text}");
            assert_eq!(column_of(lines[2], "refused"), at, "{text}");
        }
        let text = render(&rows, Layout::Terminal { width: 80 });
        assert!(text.lines().all(|l| l.width() <= 80), "{text}");
    }

    #[test]
    fn a_cut_wide_text_fits_its_columns() {
        let cut = shorten("维护 正在 进行 中", 9);
        assert!(cut.width() <= 9 && cut.ends_with('…'), "{cut:?}");
    }
}
