//! The end-of-watch summary: one row per logical event and what followed it, then totals per
//! connection, as comfy-tables that fit 80 columns.

use crate::record::line;
use crate::record::WatchLine;
use comfy_table::{
    presets::UTF8_FULL_CONDENSED, ColumnConstraint, ContentArrangement, Table, Width,
};

/// Keeps a column at least `width` wide so names such as `FAILING_OVER 12` never break.
fn keep(table: &mut Table, column: usize, width: u16) {
    if let Some(c) = table.column_mut(column) {
        c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(width)));
    }
}

fn s(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("+{x:.1} s"))
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
fn legend(events: &[crate::record::EventRow]) -> Vec<String> {
    // Each line within 80 columns.
    let mut out = vec![
        "after the event: done = its closing notification (MIGRATED, FAILED_OVER or".to_string(),
        "SMIGRATED); DNS = the record changed; socket = the server closed our connection"
            .to_string(),
        "(in brackets: how far past the declared window)".to_string(),
    ];
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
fn traffic(p: &crate::record::PingStats) -> Vec<String> {
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

/// Renders a `Summary` line; other lines render as nothing.
pub fn render(line: &WatchLine) -> Vec<String> {
    let WatchLine::Summary(line::Summary {
        reason,
        events,
        conns,
        t,
        opt_in,
        pings,
        notes,
        scenario_s,
        ..
    }) = line
    else {
        return Vec::new();
    };
    // In scenario seconds, like every offset on the screen, when a simulator set the speed.
    let t = scenario_s.unwrap_or(*t);
    let mut out = vec![format!("summary: watched {t:.1} s, stopped ({reason})")];
    out.extend(opt_in.iter().map(opt_in_line));
    if events.is_empty() {
        out.push("no maintenance notification was seen".into());
    } else {
        out.extend(events_table(events));
        out.extend(legend(events));
    }
    if let Some(p) = pings {
        out.extend(traffic(p));
    }
    out.extend(note_lines(notes));
    if !conns.is_empty() {
        out.extend(totals_table(conns));
    }
    out
}

/// How many connections got one opt-in outcome.
fn opt_in_line(tally: &crate::record::OptInTally) -> String {
    let what = match tally.opt_in {
        crate::record::OptInOutcome::Accepted => "opt-in accepted",
        crate::record::OptInOutcome::Refused => "opt-in refused",
        crate::record::OptInOutcome::Resp3Unavailable => "RESP3 unavailable",
        crate::record::OptInOutcome::AuthFailed => "authentication failed",
    };
    // An authentication failure's text and remedy are on its own line already.
    let text = match (tally.opt_in, tally.text.as_deref()) {
        (crate::record::OptInOutcome::AuthFailed, _) | (_, None) => String::new(),
        (_, Some(t)) => format!(": {t}"),
    };
    format!("{what} on {} connection(s){text}", tally.conns)
}

/// One row per event: what closed it and when, the dry-run and its margin.
fn events_table(events: &[crate::record::EventRow]) -> Vec<String> {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(80)
        .set_header(vec![
            "event", "window", "done", "DNS", "socket", "dry-run", "margin",
        ]);
    for e in events {
        table.add_row(event_row(e));
    }
    keep(&mut table, 0, 17);
    table.to_string().lines().map(str::to_string).collect()
}

fn event_row(e: &crate::record::EventRow) -> Vec<String> {
    let socket = match (e.socket_closed_s, e.overshoot_s) {
        (Some(c), _) if e.silent_close => format!("+{c:.1} s (silent)"),
        (Some(c), Some(o)) => format!("+{c:.1} s ({o:+.1})"),
        (Some(c), None) => format!("+{c:.1} s"),
        _ => "-".into(),
    };
    let handoff = match (&e.handoff, e.handoff_s) {
        (Some(h), Some(at)) => format!("{} +{at:.1} s", short(h)),
        (Some(h), None) => short(h).to_string(),
        _ => "-".into(),
    };
    let name = match e.seq {
        Some(seq) => format!("{} {seq}", e.kind),
        None => format!("{} ?", e.kind),
    };
    let name = if e.copies > 0 {
        format!("{name} (x{})", e.copies + 1)
    } else {
        name
    };
    let joined = if e.joined_open { "*" } else { "" };
    vec![
        name,
        e.window_s.map_or("-".into(), |w| format!("{w} s{joined}")),
        s(e.closed_by_notification_s),
        s(e.dns_moved_s),
        socket,
        handoff,
        match (e.margin_s, &e.superseded_by) {
            (Some(m), _) => format!("{m:.1} s"),
            (None, Some(by)) => format!("superseded by {}", by.replace(" seq ", " ")),
            (None, None) => "-".into(),
        },
    ]
}

/// Totals per connection.
fn totals_table(conns: &[crate::record::ConnTotals]) -> Vec<String> {
    let mut totals = Table::new();
    totals
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(80)
        .set_header(vec![
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
    keep(&mut totals, 1, 34);
    totals.to_string().lines().map(str::to_string).collect()
}

/// One sentence per nonzero count of [`SummaryNotes`](crate::record::SummaryNotes).
fn note_lines(notes: &crate::record::SummaryNotes) -> Vec<String> {
    let mut out = Vec::new();
    if notes.retired_events > 0 {
        out.push(format!(
            "{} earlier event(s) not shown: the summary keeps the last {}",
            notes.retired_events,
            crate::timeline::KEPT_EVENTS
        ));
    }
    if notes.skipped_dry_runs > 0 {
        out.push(format!(
            "{} dry-run(s) skipped: at most {} run at once",
            notes.skipped_dry_runs,
            crate::handoff::MAX_DRY_RUNS
        ));
    }
    if notes.capped_windows > 0 {
        out.push(format!(
            "{} declared window(s) capped at {} s for the dry-run",
            notes.capped_windows,
            crate::handoff::MAX_DRY_RUN_WINDOW_S
        ));
    }
    if notes.session_errors > 0 {
        out.push(format!(
            "{} permanent error(s) when reconnecting after a session existed (retried)",
            notes.session_errors
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::note_lines;
    use crate::record::SummaryNotes;

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
