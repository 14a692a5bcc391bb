//! The page around the drawing: the header with the verdict at a glance, the grade table, the
//! summary tables and the raw frames.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::collect::{bounded, bounded_to, Collected, FRAME_CAP};
use super::model::Drawing;
use super::svg::{self, secs};
use super::Report;
use crate::grading::judge::{Grade, Rule};

/// Bytes kept of a rule's reason.
const DETAIL_CAP: usize = 1024;
/// Grade rows shown at most.
const MAX_ROWS: usize = 1000;
/// Rows of each summary table shown at most.
const MAX_SUMMARY_ROWS: usize = 500;

const CSS: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.4em 0 .4em; border-bottom: 1px solid #ddd; }
dl.head { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; margin: 0; }
dl.head dt { font-weight: 600; }
dl.head dd { margin: 0; }
table.contents { margin: .5em 0 1em; }
.counts span { display: inline-block; padding: .1em .6em; margin-right: .4em; border-radius: 3px; font-weight: 600; }
.pass { background: #dff3e2; color: #15602a; }
.fail { background: #fbe0e0; color: #8a1414; }
.not-judged { background: #eee; color: #555; }
table { border-collapse: collapse; margin: .3em 0; }
th, td { border: 1px solid #ddd; padding: .15em .5em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th, td.num, td.name, tr.rule > td.pass, tr.rule > td.fail, tr.rule > td.not-judged { white-space: nowrap; }
table.grade { width: 100%; }
pre { white-space: pre-wrap; word-break: break-all; background: #f8f8f8; padding: .4em; margin: .2em 0 .8em; }
.note { color: #555; font-style: italic; }
.nobr { white-space: nowrap; }
svg.timeline { display: block; max-width: 100%; height: auto; font: 11px sans-serif; }
svg .group { font-weight: 600; fill: #333; }
svg .conn-label { fill: #555; }
svg rect.moved { fill: #2e9d4a; }
svg rect.recycled { fill: #2a8c8c; }
svg rect.cut { fill: #d12f2f; }
svg rect.stayed { fill: #e08a1e; }
svg rect.closed { fill: #8a8a8a; }
svg rect.open { fill: #3a6fd1; }
svg .window { fill: #f4c542; fill-opacity: .18; }
svg .quiet-break { fill: #d9d9d9; fill-opacity: .55; stroke: #888; stroke-dasharray: 3 3; }
svg .quiet-label { font-size: 10px; fill: #555; }
svg .marker { stroke: #b07800; stroke-width: 1.5; }
svg .marker-label { fill: #7a5300; font-weight: 600; }
svg .dns-line { stroke: #7b3fb5; stroke-dasharray: 4 3; }
svg .dns-label { fill: #7b3fb5; }
svg .node-close { stroke: #d12f2f; stroke-width: 2; }
svg .successor { stroke: #444; stroke-width: 1; }
svg .arrowhead { fill: #444; }
svg .successor.after-close { fill: none; stroke: #b0187a; stroke-width: 1.5; stroke-dasharray: 4 2; }
svg .arrowhead.after-close { fill: #b0187a; }
svg .observed-end { stroke: #999; stroke-dasharray: 1 3; }
svg .axis line { stroke: #444; }
svg .tick, svg .axis-label { fill: #444; }
.legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: 1.2em; height: .7em; margin-right: .3em; }
"#;

/// One row of the grade table.
pub struct GradeRow {
    pub client: String,
    /// The notification the rule is about.
    pub scope: String,
    pub rule: String,
    pub words: &'static str,
    pub detail: String,
}

/// The CSS class of a verdict's words.
fn class_of(words: &str) -> &'static str {
    match words {
        "PASS" => "pass",
        "FAIL" => "fail",
        _ => "not-judged",
    }
}

/// The grade's rows as the page shows them: the first [`MAX_ROWS`] (a capture of 10,000 hosts
/// has 50,000 rows), and how many there are; the header's counts are the judge's, over all.
pub struct GradeRows {
    pub shown: Vec<GradeRow>,
    pub total: usize,
}

/// Every rule of the grade in the table's order: the run's own rules, then per client and
/// notification.
pub fn grade_rows(g: &Grade) -> GradeRows {
    let mut out = GradeRows {
        shown: Vec::new(),
        total: 0,
    };
    let run = g.rules.iter().map(|r| ("", "the whole run", r));
    let per_client = g.clients.iter().flat_map(|c| {
        c.notifications.iter().flat_map(move |n| {
            n.rules
                .iter()
                .map(move |r| (c.client.as_str(), n.notification.as_str(), r))
        })
    });
    for (client, scope, r) in run.chain(per_client) {
        out.total += 1;
        if out.shown.len() < MAX_ROWS {
            out.shown.push(row(client, scope, r));
        }
    }
    out
}

/// A reason as text that wraps between words but never between a value and its unit (`+36.0 s`,
/// `15 s`, `1.5 ms`): each such pair is kept in a `span.nobr`.
fn kept_with_units(text: &str) -> Markup {
    let words: Vec<&str> = text.split(' ').collect();
    let mut parts: Vec<(bool, String)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if i > 0 {
            parts.push((false, " ".into()));
        }
        match words
            .get(i + 1)
            .filter(|u| is_value(words[i]) && is_unit(u))
        {
            Some(unit) => {
                parts.push((true, format!("{} {unit}", words[i])));
                i += 2;
            }
            None => {
                parts.push((false, words[i].to_string()));
                i += 1;
            }
        }
    }
    html! {
        @for (kept, part) in parts {
            @if kept { span class="nobr" { (part) } } @else { (part) }
        }
    }
}

/// `+36.0`, `15`, `(0.2`: a number, maybe signed or after an opening bracket.
fn is_value(word: &str) -> bool {
    let w = word.trim_start_matches(['(', '+', '-']);
    w.starts_with(|c: char| c.is_ascii_digit()) && w.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `s`, `ms`, `s),`, `s;`: a unit of time, maybe followed by punctuation.
fn is_unit(word: &str) -> bool {
    let w = word.trim_end_matches([')', ',', ';', '.', ':']);
    matches!(w, "s" | "ms" | "min" | "h")
}

fn row(client: &str, scope: &str, r: &Rule) -> GradeRow {
    GradeRow {
        client: bounded(client),
        scope: bounded(scope),
        rule: bounded(&r.rule),
        words: r.verdict.words(),
        detail: bounded_to(&r.detail, DETAIL_CAP),
    }
}

pub fn page(r: &Report<'_>) -> Markup {
    let drawing = r.drawing();
    let rows = r.grade.map(grade_rows);
    let body = html! {
        (header(r))
        h2 id="timeline" { "Timeline" }
        (legend())
        (svg::draw(&drawing))
        @for note in &drawing.left_out { p class="note left-out" { (note) } }
        @if let (Some(g), Some(rows)) = (r.grade, &rows) { (grade_section(g, rows, "grade")) }
        (summary_section(r, &drawing))
        (frames_section(r.lines))
    };
    document(&bounded(&r.source), body)
}

/// The page around a body: one file, its CSS inline.
fn document(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "maintwatch report: " (title) }
                style { (PreEscaped(CSS)) }
            }
            body { (body) }
        }
    }
}

/// One page for several runs (`certify --report`): a header over all of them, then a section
/// per run with its verdict, its drawing and its grade.
pub fn book(command: &str, reports: &[Report<'_>]) -> Markup {
    let written = chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let grades = reports.iter().filter_map(|r| r.grade);
    let (pass, fail, nj) = grades.fold((0, 0, 0), |(p, f, n), g| {
        (
            p + g.counts.pass,
            f + g.counts.fail,
            n + g.counts.not_judged,
        )
    });
    let body = html! {
        h1 { "maintwatch report" }
        dl class="head" {
            dt { "Command" } dd { "maintwatch " (command) }
            dt { "Runs" } dd { (reports.len()) }
            dt { "Written" } dd { (written) }
            dt { "Tool" } dd class="version" { "maintwatch " (env!("CARGO_PKG_VERSION")) }
            dt { "Verdict" }
            dd class="counts" {
                @for (w, n) in [("PASS", pass), ("FAIL", fail), ("NOT JUDGED", nj)] {
                    span class=(class_of(w)) data-count=(w) { (w) ": " (n) }
                }
            }
        }
        (contents(reports))
        (legend())
        @for (i, r) in reports.iter().enumerate() { (run_section(r, i + 1)) }
    };
    document(command, body)
}

/// The book's summary, first: every run with its verdict and counts, each linking to its
/// section, the failures first (then NOT JUDGED, then PASS; the runs' order within each).
fn contents(reports: &[Report<'_>]) -> Markup {
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(reports[i].grade.map(|g| g.verdict)));
    html! {
        table class="contents" {
            tr { th { "run" } th { "verdict" } th { "passed" } th { "failed" } th { "not judged" } }
            @for i in order {
                @let r = &reports[i];
                @let words = r.grade.map_or("-", |g| g.verdict.words());
                tr class=(format!("run-row {}", class_of(words))) {
                    td { a href=(format!("#run-{}", i + 1)) { (bounded(&r.source)) } }
                    td class=(class_of(words)) data-verdict=(words) { (words) }
                    @if let Some(g) = r.grade {
                        td { (g.counts.pass) } td { (g.counts.fail) } td { (g.counts.not_judged) }
                    } @else {
                        td { "-" } td { "-" } td { "-" }
                    }
                }
            }
        }
    }
}

/// One run of a book: what it was, its verdict, its drawing and its grade. Its ids (its own,
/// its grade's heading, its drawing's arrowheads) carry its number `n`: a book holds several
/// runs, and an id is the page's one element.
fn run_section(r: &Report<'_>, n: usize) -> Markup {
    let drawing = r.drawing();
    let prefix = format!("run-{n}-");
    let drawn = svg::draw(&drawing)
        .into_string()
        .replace("id=\"arrow", &format!("id=\"{prefix}arrow"))
        .replace("url(#arrow", &format!("url(#{prefix}arrow"));
    html! {
        section class="run" id=(format!("run-{n}")) data-source=(bounded(&r.source)) {
            h2 { (bounded(&r.source)) }
            @if let Some(g) = r.grade {
                p class="verdict-line" {
                    span class=(format!("overall {}", class_of(g.verdict.words()))) data-verdict=(g.verdict.words()) { (g.verdict.words()) }
                    " " (bounded_to(&g.verdict_line(), DETAIL_CAP))
                }
            }
            @for note in &r.notes { p class="note" { (bounded_to(note, DETAIL_CAP)) } }
            (PreEscaped(drawn))
            @for note in &drawing.left_out { p class="note left-out" { (note) } }
            @if let Some(g) = r.grade { (grade_section(g, &grade_rows(g), &format!("{prefix}grade"))) }
        }
    }
}

fn header(r: &Report<'_>) -> Markup {
    let written = chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let started = r.lines.start.as_ref().map(|s| bounded(&s.at));
    html! {
        h1 { "maintwatch report" }
        dl class="head" {
            dt { "Read" } dd class="source" { (bounded(&r.source)) }
            dt { "Command" } dd { "maintwatch " (r.command) }
            @if let Some(at) = started { dt { "Started" } dd { (at) } }
            dt { "Written" } dd { (written) }
            dt { "Tool" } dd class="version" { "maintwatch " (env!("CARGO_PKG_VERSION")) }
            dt { "Verdict" }
            dd class="counts" {
                @if let Some(g) = r.grade {
                    @let c = g.counts;
                    span class=(format!("overall {}", class_of(g.verdict.words()))) data-verdict=(g.verdict.words()) { (g.verdict.words()) }
                    @for (w, n) in [("PASS", c.pass), ("FAIL", c.fail), ("NOT JUDGED", c.not_judged)] {
                        span class=(class_of(w)) data-count=(w) { (w) ": " (n) }
                    }
                    div class="verdict-line" { (bounded_to(&g.verdict_line(), DETAIL_CAP)) }
                } @else {
                    span class="not-judged" { "not graded (no --grade)" }
                }
            }
        }
        @for note in &r.notes { p class="note" { (bounded_to(note, DETAIL_CAP)) } }
    }
}

fn legend() -> Markup {
    html! {
        p class="legend" {
            @for w in ["moved", "recycled", "cut", "stayed", "closed", "open"] {
                span { svg width="18" height="10" { rect class=(format!("swatch {w}")) width="18" height="10" {} } " " (w) }
            }
            span { "Markers: notifications (band: declared window), dashed: DNS change, red line: node-wide close, arrow: the connection that followed" }
            span class="after-close-key" {
                svg width="26" height="10" { path class="key successor after-close" d="M 1 5 L 25 5" {} }
                " dashed magenta arrow: the connection that followed only after the close"
            }
        }
    }
}

fn grade_section(g: &Grade, rows: &GradeRows, id: &str) -> Markup {
    html! {
        h2 id=(id) { "Grade" }
        @if let Some(p) = &g.client_process {
            p class="client-process" {
                // The words of the terminal's grade (`survives`), so the two agree.
                "Client process " (bounded(&p.program)) ": " (p.how_it_ended())
                " at " (secs(p.at))
            }
            @if !p.stderr_tail.is_empty() {
                pre class="stderr" { @for l in p.stderr_tail.iter().take(50) { (bounded(l)) "\n" } }
            }
        }
        table class="grade" {
            tr { th { "client" } th { "notification" } th { "rule" } th { "verdict" } th { "detail" } }
            @for row in &rows.shown {
                tr class=(format!("rule {}", class_of(row.words))) data-rule=(row.rule) {
                    td class="name" { (row.client) } td class="name" { (row.scope) } td class="name" { (row.rule) }
                    td class=(class_of(row.words)) { (row.words) } td { (kept_with_units(&row.detail)) }
                }
            }
        }
        @if rows.total > rows.shown.len() {
            p class="note" { (rows.total - rows.shown.len()) " more rule row(s) not shown; the counts above include them" }
        }
        @for ne in g.not_exercised.iter().take(MAX_ROWS) {
            p class="note not-exercised" { "not exercised: " (bounded(&ne.rule)) " (" (bounded_to(&ne.why, DETAIL_CAP)) ")" }
        }
    }
}

fn summary_section(r: &Report<'_>, d: &Drawing) -> Markup {
    html! {
        h2 id="summary" { "Summary" }
        @if let Some(g) = r.grade { (grade_tables(g)) }
        @if let Some(s) = &r.lines.summary { (watch_tables(s)) }
        h3 { "Connections drawn" }
        table class="connections" {
            tr { th { "connection" } th { "client" } th { "server" } th { "opened" } th { "closed" } th { "end" } }
            @for b in &d.bars {
                tr data-conn=(b.conn) {
                    td class="name" { (b.label) } td class="name" { (b.group) } td class="name" { (b.server) } td class="num" { (secs(b.start)) }
                    td class="num" { (b.end.map(secs).unwrap_or_default()) } td { (b.class.word()) }
                }
            }
        }
    }
}

fn grade_tables(g: &Grade) -> Markup {
    html! {
        h3 { "Clients" }
        table class="clients" {
            tr { th { "client" } th { "connections" } th { "reached" } th { "opted in" } th { "never opted in" } th { "commands" } th { "errors" } }
            @for c in g.clients.iter().take(MAX_SUMMARY_ROWS) {
                tr {
                    td class="name" { (bounded(&c.client)) } td class="num" { (c.connections) } td { (bounded(&c.reached)) }
                    td { (bounded(&c.opted_in.iter().map(|(t, n)| format!("{n} {t}")).collect::<Vec<_>>().join(", "))) }
                    td class="num" { (c.never_opted_in) } td class="num" { (c.commands) } td class="num" { (c.errors) }
                }
            }
        }
        h3 { "Notifications" }
        table class="notifications" {
            tr { th { "client" } th { "notification" } th { "at" } th { "window" } th { "received by" } th { "commands inside / outside" } th { "failed inside / outside" } }
            @for (c, n) in g.clients.iter().flat_map(|c| c.notifications.iter().map(move |n| (c, n))).take(MAX_SUMMARY_ROWS) {
                    tr {
                        td class="name" { (bounded(&c.client)) } td class="name" { (bounded(&n.notification)) } td class="num" { (secs(n.at)) }
                        td class="num" { (n.window) " s" } td class="num" { (n.received) }
                        td class="num" { (n.commands_inside) " / " (n.commands_outside) }
                        td class="num" { (n.failed_inside) " / " (n.failed_outside) }
                    }
            }
        }
        @if g.clients.len() > MAX_SUMMARY_ROWS {
            p class="note" { "the first " (MAX_SUMMARY_ROWS) " of " (g.clients.len()) " clients' rows are shown" }
        }
    }
}

/// The watch's summary: one row per event, one per connection.
fn watch_tables(s: &crate::observe::record::line::Summary) -> Markup {
    let opt = |v: Option<f64>| v.map(|x| format!("{x:+.3} s")).unwrap_or_default();
    html! {
        h3 { "Events" }
        table class="events" {
            tr { th { "event" } th { "at" } th { "window" } th { "closed by notification" } th { "DNS moved" } th { "socket closed" } th { "past the window" } th { "handoff" } }
            @for e in s.events.iter().take(MAX_SUMMARY_ROWS) {
                tr {
                    td class="name" { (bounded(&e.kind)) @if let Some(q) = e.seq { " seq " (q) } }
                    td class="num" { (secs(e.t)) }
                    td class="num" { (e.window_s.map(|w| format!("{w} s")).unwrap_or_default()) }
                    td class="num" { (opt(e.closed_by_notification_s)) }
                    td class="num" { (opt(e.dns_moved_s)) }
                    td class="num" { (opt(e.socket_closed_s)) }
                    td class="num" { (opt(e.overshoot_s)) }
                    td { (e.handoff.as_deref().map(bounded).unwrap_or_default()) }
                }
            }
        }
        @if s.events.len() > MAX_SUMMARY_ROWS { p class="note" { (s.events.len() - MAX_SUMMARY_ROWS) " more event(s) not shown" } }
        h3 { "Connections (watch)" }
        table class="conn-totals" {
            tr { th { "conn" } th { "endpoint" } th { "notifications" } th { "other pushes" } th { "closes" } th { "reconnects" } }
            @for c in s.conns.iter().take(MAX_SUMMARY_ROWS) {
                tr {
                    td class="num" { (c.conn) } td class="name" { (bounded(&c.endpoint)) }
                    td class="num" { (c.notifications) } td class="num" { (c.other_pushes) }
                    td class="num" { (c.closes) } td class="num" { (c.reconnects) }
                }
            }
        }
        @if s.conns.len() > MAX_SUMMARY_ROWS { p class="note" { (s.conns.len() - MAX_SUMMARY_ROWS) " more connection(s) not shown" } }
        (topology_table(&s.topology))
    }
}

/// A cluster watch's topology changes (a failover, a node's return, a reshard), as the summary
/// lists them; nothing when there were none.
fn topology_table(rows: &[crate::observe::record::line::TopologyRow]) -> Markup {
    use crate::present::output::human::topology_change;
    html! {
        @if !rows.is_empty() {
            h3 { "Cluster topology changes" }
            table class="topology" {
                tr { th { "at" } th { "read" } th { "change" } }
                @for r in rows.iter().take(MAX_SUMMARY_ROWS) {
                    tr data-reason=(r.reason.as_str()) {
                        td class="num" { (secs(r.t)) } td { (r.reason.as_str()) }
                        td class="name" { (bounded_to(&topology_change(&r.added, &r.removed, &r.roles, &r.moved).join(", "), DETAIL_CAP)) }
                    }
                }
            }
        }
    }
}

fn frames_section(c: &Collected) -> Markup {
    html! {
        h2 id="frames" { "Raw frames" }
        details class="frames" {
            summary {
                (c.frames.len()) " frame(s), escaped as on the terminal"
                @if c.left_out.frames > 0 { "; " (c.left_out.frames) " more not kept" }
            }
            @for f in &c.frames {
                div class="frame" data-conn=(f.conn) {
                    p { (secs(f.t)) " conn " (f.conn) ", " (f.frame.len) " bytes" }
                    pre { (f.frame.text) }
                    @if f.frame.cut {
                        p class="note" { "cut at " (FRAME_CAP) " bytes of escaped text; the frame is " (f.frame.len) " bytes long" }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topology_change_is_a_row_in_the_words_of_its_line_and_none_is_no_table() {
        use crate::observe::record::line::{SlotsMoved, TopologyRow};
        use crate::observe::record::TopologyReason;
        assert_eq!(topology_table(&[]).into_string(), "");
        let row = TopologyRow {
            t: 12.5,
            reason: TopologyReason::Interval,
            added: Vec::new(),
            removed: vec!["a:1".into()],
            roles: Vec::new(),
            moved: vec![SlotsMoved {
                first: 0,
                last: 99,
                from: Some("a:1".into()),
                to: Some("<b>:1".into()),
            }],
        };
        let html = topology_table(&[row]).into_string();
        assert!(html.contains(r#"<table class="topology">"#), "{html}");
        assert!(html.contains(r#"data-reason="interval""#), "{html}");
        assert!(
            html.contains("removed a:1, slots 0-99 (100) a:1 -&gt; &lt;b&gt;:1"),
            "{html}"
        );
    }

    #[test]
    fn values_keep_their_units() {
        let m = kept_with_units("still running when the scenario ended (+36.0 s); stopped at 15 s")
            .into_string();
        assert_eq!(
            m,
            "still running when the scenario ended <span class=\"nobr\">(+36.0 s);</span> \
             stopped at <span class=\"nobr\">15 s</span>"
        );
        // Text without a value and its unit is left as it is, escaped.
        assert_eq!(
            kept_with_units("a <b> 3 seq").into_string(),
            "a &lt;b&gt; 3 seq"
        );
    }
}
