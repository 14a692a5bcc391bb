//! The end-of-watch summary: one row per logical event and what followed it, then totals per
//! connection, as comfy-tables that fit the terminal (80 columns when piped), both as wide as the
//! wider of the two, and never broken inside a value and its unit.

use crate::observe::record::line;
use crate::observe::record::WatchLine;
use comfy_table::{
    presets::UTF8_FULL_CONDENSED, ColumnConstraint, ContentArrangement, Table, Width,
};

/// Joins a value to its unit inside a cell (`+0.8 s`): comfy-table breaks lines at plain spaces
/// only, so the two stay on one line; [`lines`] turns it back into a space.
const GLUE: char = '\u{a0}';

/// A value and its unit, glued: `+0.8 s`.
fn unit(value: impl std::fmt::Display, unit: &str) -> String {
    format!("{value}{GLUE}{unit}")
}

/// Words up to this long are never broken inside a cell (`recycled`, `(+101.6)`).
const SHORT_WORD: usize = 12;

/// Keeps every column at least as wide as `least` (names such as `FAILING_OVER 12` never break)
/// and as its widest glued value, header word or short word, so that comfy-table never cuts one
/// in two. A longer word (an endpoint) may still be broken inside its cell: a table wider than
/// the terminal would be broken everywhere.
fn keep(table: &mut Table, least: &[(usize, u16)]) {
    let mut widths: Vec<usize> = Vec::new();
    let header = table.header().map(|h| (true, h));
    for (is_header, row) in header
        .into_iter()
        .chain(table.row_iter().map(|r| (false, r)))
    {
        for (i, cell) in row.cell_iter().enumerate() {
            let widest = cell
                .content()
                .split([' ', '\n'])
                .filter(|w| is_header || w.contains(GLUE) || w.chars().count() <= SHORT_WORD)
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0);
            if widths.len() <= i {
                widths.resize(i + 1, 0);
            }
            widths[i] = widths[i].max(widest);
        }
    }
    for (i, widest) in widths.into_iter().enumerate() {
        let asked = least.iter().find(|(c, _)| *c == i).map_or(0, |(_, w)| *w);
        // Plus the padding of one space on each side, which the constraint counts.
        let width = asked.max(u16::try_from(widest + 2).unwrap_or(u16::MAX));
        if let Some(c) = table.column_mut(i) {
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(width)));
        }
    }
}

fn s(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| unit(format_args!("+{x:.1}"), "s"))
}

/// A dry-run outcome in the judge's words (moved, recycled, stayed), short enough for the table;
/// the timeline's verdict line has the sentence.
fn short(outcome: &str) -> &str {
    match outcome {
        "move_to_successor" | "stepped_sideways" => "moved",
        "reconnect_on_clock" => "recycled",
        "stale_at_expiry" | "unresolved" => "stayed",
        "refresh_topology" => "refresh",
        other => other,
    }
}

/// What the columns mean, under the table: "done" beside "socket" is otherwise ambiguous.
fn legend(events: &[crate::observe::record::EventRow]) -> Vec<String> {
    // Each line within 80 columns.
    let mut out = vec![
        "after the event: done = its closing notification (MIGRATED, FAILED_OVER or".to_string(),
        "SMIGRATED); DNS = the record changed; socket = the server closed our connection"
            .to_string(),
        "(in brackets: how far past the declared window)".to_string(),
    ];
    if events.iter().any(|e| e.kind.starts_with("NodeMaintenance")) {
        out.push(
            "azure: Azure Cache's AzureRedisEvents; window = to its announced start; done =".into(),
        );
        out.push(
            "its Ended, FailoverComplete or ScaleComplete (then: how it ended, or nothing".into(),
        );
        out.push("before the watch stopped)".into());
    }
    if events.iter().any(|e| e.joined_open) {
        out.push(
            "*: came with the opt-in, possibly open before we joined: offsets count from".into(),
        );
        out.push("   receipt, so the true overshoot may be larger than shown".into());
    }
    if events.iter().any(|e| e.silent_close) {
        out.push("(silent): closed with no MOVING announcing it".into());
    }
    out
}

/// The `--traffic` figures: latency, then failures and the windows they fell in.
fn traffic(p: &crate::observe::record::PingStats) -> Vec<String> {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let latency = format!(
        "traffic: {} PING(s), {} answered: p50 {} ms, p99 {} ms, max {} ms",
        p.sent,
        p.answered,
        ms(p.p50_ms),
        ms(p.p99_ms),
        ms(p.max_ms)
    );
    if p.failures == 0 {
        return vec![latency, "traffic: none failed".into()];
    }
    let in_windows: u64 = p.failure_windows.iter().map(|w| w.failures).sum();
    let windows: Vec<String> = p
        .failure_windows
        .iter()
        .map(|w| format!("{} during {}", w.failures, w.window))
        .collect();
    let mut line = format!("traffic: {} failed", p.failures);
    if in_windows == p.failures && windows.len() == 1 {
        line.push_str(&format!(
            ", all {} during {}",
            p.failures, p.failure_windows[0].window
        ));
    } else if !windows.is_empty() {
        line.push_str(&format!(
            " ({}; {} outside any window)",
            windows.join(", "),
            p.failures - in_windows
        ));
    } else {
        line.push_str(", none during a window");
    }
    vec![latency, line]
}

/// How long the watch ran: in scenario seconds, like every offset on the screen, when a
/// simulator set a speed other than 1 (only then is `scenario_s` there), and then labelled so,
/// with the clock's seconds beside them (`--speed 4`: 32 s of scenario in 8 s), so that neither
/// is taken for the other.
fn watched(t: f64, scenario_s: Option<f64>) -> String {
    match scenario_s {
        Some(s) => format!("{s:.1} s of scenario time ({t:.1} s real)"),
        None => format!("{t:.1} s"),
    }
}

/// Renders a `Summary` line, its tables within `width` columns; other lines render as nothing.
pub fn render(line: &WatchLine, width: usize) -> Vec<String> {
    let WatchLine::Summary(line::Summary {
        reason,
        events,
        conns,
        t,
        opt_in,
        pings,
        notes,
        scenario_s,
        topology,
        ..
    }) = line
    else {
        return Vec::new();
    };
    // In scenario seconds, like every offset on the screen, when a simulator set the speed.
    // The topology changes' times are read in scenario seconds too.
    let scale = scenario_s.map_or(1.0, |s| if *t > 0.0 { s / *t } else { 1.0 });
    let first = format!(
        "summary: watched {}, stopped ({reason})",
        watched(*t, *scenario_s)
    );
    // Labelled scenario time makes it long: wrapped between words like the lines below it.
    let mut out = super::wrap::wrap_with(&first, width, "  ");
    // The server's refusal text can be long: wrapped between words, continued 2 spaces in.
    let azure = events.iter().any(|e| e.kind.starts_with("NodeMaintenance"));
    for tally in opt_in {
        out.extend(super::wrap::wrap_with(
            &opt_in_line(tally, azure),
            width,
            "  ",
        ));
    }
    let width = u16::try_from(width).unwrap_or(u16::MAX);
    let mut events_at = (!events.is_empty()).then(|| events_table(events, width));
    let mut totals_at = (!conns.is_empty()).then(|| totals_table(conns, width));
    same_width(events_at.iter_mut().chain(totals_at.iter_mut()));
    match events_at {
        None => out.push("no maintenance notification was seen".into()),
        Some(table) => {
            out.extend(lines(&table));
            out.extend(legend(events));
        }
    }
    if let Some(p) = pings {
        out.extend(traffic(p));
    }
    out.extend(note_lines(notes));
    out.extend(topology_lines(topology, scale, usize::from(width)));
    if let Some(table) = totals_at {
        out.extend(lines(&table));
    }
    out
}

/// Widens the narrower tables, each laid out within the width already, to the widest, so that
/// the summary's tables line up.
fn same_width<'a>(tables: impl Iterator<Item = &'a mut Table>) {
    let mut tables: Vec<(&mut Table, u16)> = tables
        .map(|t| {
            let w = table_width(t);
            (t, w)
        })
        .collect();
    let widest = tables.iter().map(|(_, w)| *w).max().unwrap_or(0);
    for (table, natural) in &mut tables {
        if *natural < widest {
            table
                .set_content_arrangement(ContentArrangement::DynamicFullWidth)
                .set_width(widest);
        }
    }
}

/// The columns a table takes as laid out now.
fn table_width(table: &Table) -> u16 {
    let first = table.lines().next().unwrap_or_default();
    u16::try_from(first.chars().count()).unwrap_or(u16::MAX)
}

/// A table's lines as a terminal shows them: the glue inside cells back to plain spaces.
fn lines(table: &Table) -> Vec<String> {
    table.lines().map(|l| l.replace(GLUE, " ")).collect()
}

/// How many connections got one opt-in outcome. `azure`: Azure Cache's events were seen, so a
/// refusal is the expected answer (the channel carried the news), and is said to be.
fn opt_in_line(tally: &crate::observe::record::OptInTally, azure: bool) -> String {
    let what = match tally.opt_in {
        crate::observe::record::OptInOutcome::Accepted => "opt-in accepted",
        crate::observe::record::OptInOutcome::Refused => "opt-in refused",
        crate::observe::record::OptInOutcome::Resp3Unavailable => "RESP3 unavailable",
        crate::observe::record::OptInOutcome::AuthFailed => "authentication failed",
    };
    // An authentication failure's text and remedy are on its own line already.
    let text = match (tally.opt_in, tally.text.as_deref()) {
        (crate::observe::record::OptInOutcome::AuthFailed, _) | (_, None) => String::new(),
        (_, Some(t)) => format!(": {t}"),
    };
    let expected = match (tally.opt_in, azure) {
        (crate::observe::record::OptInOutcome::Refused, true) => {
            " (expected on Azure Cache: its maintenance came on AzureRedisEvents)"
        }
        _ => "",
    };
    format!("{what} on {} connection(s){text}{expected}", tally.conns)
}

/// An empty table in the summary's frame, its columns fitted to `width`.
fn framed(width: u16) -> Table {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    table
}

/// One row per event: what closed it and when, the dry-run and its margin.
fn events_table(events: &[crate::observe::record::EventRow], width: u16) -> Table {
    let mut table = framed(width);
    table.set_header(vec![
        "event", "window", "done", "DNS", "socket", "dry-run", "margin",
    ]);
    for e in events {
        table.add_row(event_row(e));
    }
    // Azure's names are long single words (FailoverComplete): room for one whole.
    let azure = events.iter().any(|e| e.kind.starts_with("NodeMaintenance"));
    keep(&mut table, &[(0, if azure { 20 } else { 17 })]);
    table
}

fn event_row(e: &crate::observe::record::EventRow) -> Vec<String> {
    let socket = match (e.socket_closed_s, e.overshoot_s) {
        (Some(c), _) if e.silent_close => format!("{} (silent)", s(Some(c))),
        // Rounded first, so that a close within 0.05 s of the window's end is `+0.0`, not `-0.0`.
        (Some(c), Some(o)) => format!("{} ({:+.1})", s(Some(c)), (o * 10.0).round() / 10.0 + 0.0),
        (Some(c), None) => s(Some(c)),
        _ => "-".into(),
    };
    let handoff = match (&e.handoff, e.handoff_s) {
        (Some(h), Some(at)) => format!("{} {}", short(h), s(Some(at))),
        (Some(h), None) => short(h).to_string(),
        _ => "-".into(),
    };
    let name = match (e.seq, azure_name(e)) {
        (_, Some(name)) => name,
        (Some(seq), None) => format!("{} {seq}", e.kind),
        (None, None) => format!("{} ?", e.kind),
    };
    let name = if e.copies > 0 {
        format!("{name} (x{})", e.copies + 1)
    } else {
        name
    };
    let joined = if e.joined_open { "*" } else { "" };
    vec![
        name,
        e.window_s
            .map_or("-".into(), |w| unit(w, &format!("s{joined}"))),
        s(e.closed_by_notification_s),
        s(e.dns_moved_s),
        socket,
        handoff,
        match (e.margin_s, &e.superseded_by) {
            (Some(m), _) => unit(format_args!("{m:.1}"), "s"),
            (None, Some(by)) => format!("superseded by {}", by.replace(" seq ", " ")),
            (None, None) => "-".into(),
        },
    ]
}

/// An Azure Cache event's row: `azure Starting, then FailoverComplete`; an announcement that
/// nothing ended before the watch stopped says so. `None` for a notification's row.
fn azure_name(e: &crate::observe::record::EventRow) -> Option<String> {
    let kind = e.kind.strip_prefix("NodeMaintenance")?;
    let ends = ["Ended", "FailoverComplete", "ScaleComplete"].contains(&kind);
    let outcome = match &e.outcome {
        Some(o) => format!(", then {}", o.strip_prefix("NodeMaintenance").unwrap_or(o)),
        None if ends => String::new(),
        None => ", then nothing".into(),
    };
    Some(format!("azure {kind}{outcome}"))
}

/// Totals per connection.
fn totals_table(conns: &[crate::observe::record::ConnTotals], width: u16) -> Table {
    let mut totals = framed(width);
    totals.set_header(vec![
        "conn", "endpoint", "notif.", "other", "closes", "reconn",
    ]);
    for c in conns {
        totals.add_row(vec![
            c.conn.to_string(),
            // The scheme is noise here unless it says TLS.
            c.endpoint
                .strip_prefix("redis://")
                .unwrap_or(&c.endpoint)
                .to_string(),
            c.notifications.to_string(),
            c.other_pushes.to_string(),
            c.closes.to_string(),
            c.reconnects.to_string(),
        ]);
    }
    keep(&mut totals, &[(1, 34)]);
    totals
}

/// The cluster's topology changes, one entry each, wrapped within `width`.
fn topology_lines(
    rows: &[crate::observe::record::line::TopologyRow],
    scale: f64,
    width: usize,
) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("cluster topology changed {} time(s):", rows.len())];
    for r in rows {
        let what = super::topology::topology_change(&r.added, &r.removed, &r.roles, &r.moved);
        let entry = format!(
            "  at {:.1} s ({}): {}",
            r.t * scale,
            r.reason,
            what.join(", ")
        );
        out.extend(super::wrap::wrap_with(&entry, width, "    "));
    }
    out
}

/// One sentence per nonzero count of [`SummaryNotes`](crate::observe::record::SummaryNotes).
fn note_lines(notes: &crate::observe::record::SummaryNotes) -> Vec<String> {
    let counted = [
        (
            notes.retired_events,
            format!(
                "earlier event(s) not shown: the summary keeps the last {}",
                crate::observe::timeline::KEPT_EVENTS
            ),
        ),
        (
            notes.skipped_dry_runs,
            format!(
                "dry-run(s) skipped: at most {} run at once",
                crate::network::handoff::MAX_DRY_RUNS
            ),
        ),
        (
            notes.capped_windows,
            format!(
                "declared window(s) capped at {} s for the dry-run",
                crate::network::handoff::MAX_DRY_RUN_WINDOW_S
            ),
        ),
        (
            notes.session_errors,
            "permanent error(s) when reconnecting after a session existed (retried)".into(),
        ),
    ];
    counted
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{note_lines, watched};

    /// `demo --speed 4` watched 32 s of scenario in 8 s: said as both, never one for the other.
    #[test]
    fn scenario_time_is_labelled_when_the_clock_ran_faster() {
        assert_eq!(
            watched(8.0, Some(32.0)),
            "32.0 s of scenario time (8.0 s real)"
        );
        assert_eq!(watched(95.4, None), "95.4 s");
    }
    use crate::observe::record::{line, ConnTotals, EventRow, SummaryNotes, WatchLine};

    fn summary(events: Vec<EventRow>, endpoint: &str) -> WatchLine {
        WatchLine::Summary(line::Summary {
            v: 1,
            t: 95.4,
            at: "2026-01-01T00:00:00.000000Z".into(),
            reason: "duration".into(),
            events,
            conns: vec![ConnTotals {
                conn: 1,
                endpoint: endpoint.into(),
                notifications: 4,
                other_pushes: 0,
                closes: 1,
                reconnects: 1,
            }],
            opt_in: Vec::new(),
            pings: None,
            notes: Default::default(),
            scenario_s: None,
            topology: Vec::new(),
        })
    }

    fn event(kind: &str, seq: i64) -> EventRow {
        EventRow {
            kind: kind.into(),
            seq: Some(seq),
            t: 1.0,
            window_s: Some(15),
            closed_by_notification_s: Some(12.25),
            dns_moved_s: Some(109.75),
            socket_closed_s: Some(116.6),
            overshoot_s: Some(101.6),
            handoff: Some("reconnect_on_clock".into()),
            handoff_s: Some(107.5),
            margin_s: Some(9.1),
            copies: 2,
            joined_open: true,
            silent_close: false,
            superseded_by: None,
            outcome: None,
        }
    }

    fn cells(row: &str) -> Vec<&str> {
        row.split(['│', '┆']).map(str::trim).collect()
    }

    /// A cell's lines never leave a unit alone under its number, however narrow the table.
    #[test]
    fn a_value_and_its_unit_stay_on_one_line_of_a_cell() {
        let line = summary(
            vec![event("FAILING_OVER", 12), event("MOVING", 3)],
            "rediss://a-rather-long-host-name.example.net:12000",
        );
        for width in [200, 80, 70, 60, 50] {
            let out = super::render(&line, width);
            let rows: Vec<&String> = out.iter().filter(|l| l.starts_with('│')).collect();
            for pair in rows.windows(2) {
                let (a, b) = (cells(pair[0]), cells(pair[1]));
                for (a, b) in a.iter().zip(b) {
                    let unit = b.split(' ').next().is_some_and(|w| w.starts_with('s'));
                    assert!(
                        !(a.ends_with(|c: char| c.is_ascii_digit()) && unit),
                        "{width}:\n{}",
                        out.join("\n")
                    );
                }
            }
            assert!(!out.concat().contains(super::GLUE), "{out:?}");
            // Both tables as wide as each other.
            let widths: Vec<usize> = out
                .iter()
                .filter(|l| l.starts_with('┌'))
                .map(|l| l.chars().count())
                .collect();
            assert_eq!(widths.len(), 2);
            assert_eq!(widths[0], widths[1], "{width}:\n{}", out.join("\n"));
            if width >= 80 {
                assert!(widths[0] <= width, "{width}:\n{}", out.join("\n"));
            }
        }
    }

    #[test]
    fn every_count_left_out_is_said_and_none_when_all_are_zero() {
        assert!(note_lines(&SummaryNotes::default()).is_empty());
        let lines = note_lines(&SummaryNotes {
            retired_events: 99_900,
            skipped_dry_runs: 3,
            capped_windows: 2,
            session_errors: 1,
        });
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0]
            .starts_with("99900 earlier event(s) not shown: the summary keeps the last 100"));
        assert!(lines[1].starts_with("3 dry-run(s) skipped: at most 64"));
        assert!(lines[2].starts_with("2 declared window(s) capped at 3600 s"));
        assert!(lines[3].starts_with("1 permanent error(s)"));
    }
}
