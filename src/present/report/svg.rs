//! The timeline drawn as inline SVG: time across, one bar per connection grouped by client,
//! notification markers with their window bands, DNS changes, node-wide closes, and arrows from
//! a connection to the one that followed it.
//!
//! Every element carries a `<title>`: a browser shows it on hover without any script, and a
//! reader of the source sees it too. Every SVG element is written with a closing tag: inside
//! `<svg>` an HTML parser reads `<rect>` without one as the parent of what follows.

use maud::{html, Markup};

use super::labels::{beside, centred, cut_to, Placed};
use super::model::{Bar, Drawing, Marker, NodeClose};
use super::scale::{short_duration, Scale};
use crate::present::report::collect::DnsChange;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 230.0;
const RIGHT: f64 = 30.0;
/// Rows of labels above the bars: three for markers, two for DNS changes.
const LABEL_ROW: f64 = 13.0;
const TOP: f64 = 20.0 + 5.0 * LABEL_ROW;
const ROW: f64 = 16.0;
const BAR: f64 = 10.0;
/// The labels' font size (the CSS's `svg.timeline` font).
const FONT: f64 = 11.0;
/// A quiet break's label is smaller.
const SMALL: f64 = 10.0;
/// A connection's bar is at least this wide, so that a brief one still shows.
const MIN_BAR: f64 = 2.0;

/// A coordinate, to a tenth of a pixel (the file stays small).
fn n(v: f64) -> String {
    format!("{v:.1}")
}

/// A time for a `data-` attribute (scripts and tests read the drawing's times there): seconds to
/// the millisecond.
fn t3(t: f64) -> String {
    format!("{t:.3}")
}

/// Seconds as every title writes them: `+12.345 s`, and a time before the reference (a
/// connection opened before the clock started) as `-1.000 s`, never `+-1.000 s`.
pub fn secs(t: f64) -> String {
    if t.is_sign_negative() && format!("{t:.3}") != "-0.000" {
        format!("{t:.3} s")
    } else {
        format!("+{:.3} s", t.abs())
    }
}

/// One row per bar, and one above each client's first bar for its name.
struct Rows {
    /// The row of each bar.
    bar: Vec<usize>,
    /// `(row, group)` for each group's heading.
    groups: Vec<(usize, String)>,
    count: usize,
}

fn rows(bars: &[Bar]) -> Rows {
    let mut r = Rows {
        bar: Vec::with_capacity(bars.len()),
        groups: Vec::new(),
        count: 0,
    };
    let mut last: Option<&str> = None;
    for b in bars {
        if last != Some(b.group.as_str()) {
            r.groups.push((r.count, b.group.clone()));
            r.count += 1;
            last = Some(&b.group);
        }
        r.bar.push(r.count);
        r.count += 1;
    }
    r
}

fn row_y(row: usize) -> f64 {
    TOP + row as f64 * ROW
}

/// The whole drawing.
pub fn draw(d: &Drawing) -> Markup {
    let (t0, t1) = d.span();
    let s = axis_scale(t0, t1, d.times());
    // A bar still open is drawn to the end of the observation, not to the axis's round end.
    let last = d.observed.map_or(t1, |o| o.max(t0));
    let rows = rows(&d.bars);
    let bottom = row_y(rows.count) + 6.0;
    let height = bottom + 40.0;
    html! {
        svg class="timeline" xmlns="http://www.w3.org/2000/svg" width=(n(WIDTH)) height=(n(height))
            viewBox=(format!("0 0 {} {}", n(WIDTH), n(height))) role="img" data-end=[d.observed.map(t3)] {
            title { "Timeline: connections, notifications, DNS changes and closes" }
            defs {
                marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse" {
                    path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" {}
                }
                marker id="arrow-after-close" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead after-close" {}
                }
            }
            @for (i, m) in d.markers.iter().enumerate() { (window_band(&s, m, i, bottom)) }
            (quiet_breaks(&s, bottom))
            @for (row, g) in &rows.groups {
                text class="group" x="4" y=(n(row_y(*row) + BAR)) {
                    title { (g) }
                    (cut_to(g, FONT, LEFT - 10.0))
                }
            }
            @for (i, b) in d.bars.iter().enumerate() { (bar(&s, b, row_y(rows.bar[i]), last)) }
            @for (i, m) in d.markers.iter().enumerate() { (marker(&s, m, i, bottom)) }
            @for (i, c) in d.dns.iter().enumerate() { (dns(&s, c, i, bottom)) }
            @for c in &d.closes { (close(&s, c, bottom)) }
            // Over the closes: an arrow after the close starts on the close's line.
            @for (i, b) in d.bars.iter().enumerate() {
                @if let Some(j) = b.successor { (arrow(&s, b, &d.bars[j], row_y(rows.bar[i]), row_y(rows.bar[j]))) }
            }
            @if let Some(o) = d.observed {
                line class="observed-end" data-t=(t3(o)) x1=(n(s.x(o))) y1=(n(TOP - 6.0)) x2=(n(s.x(o))) y2=(n(bottom)) {
                    title { (format!("the observation ended at {}", secs(o))) }
                }
            }
            (axis(&s, bottom, d.unit))
        }
    }
}

/// A label's text element attributes, placed.
fn label(class: &str, p: &Placed, y: f64) -> Markup {
    html! {
        text class=(class) x=(n(p.x)) y=(n(y)) text-anchor=(p.anchor.attr()) { (p.text) }
    }
}

/// The scale of the drawing, its end pushed out to the last stretch's next round tick: the axis
/// then ends on a labelled tick at or past the end of the observation. A wider span can call
/// for a wider step, so this settles in a few rounds.
fn axis_scale(t0: f64, t1: f64, times: Vec<f64>) -> Scale {
    let mut end = t1;
    let mut s = Scale::new(t0, end, LEFT, WIDTH - RIGHT, times.clone());
    for _ in 0..4 {
        let Some((a, b, x0, x1)) = s.stretches().last() else {
            break;
        };
        let step = stretch_step(a, b, x0, x1);
        let round = (b / step - 1e-9).ceil() * step;
        if round <= end + 1e-9 {
            break;
        }
        end = round;
        s = Scale::new(t0, end, LEFT, WIDTH - RIGHT, times.clone());
    }
    s
}

/// The round step of a stretch's ticks: about one per 120 units of its width, at least one.
fn stretch_step(t0: f64, t1: f64, x0: f64, x1: f64) -> f64 {
    let wanted = ((x1 - x0) / 120.0).clamp(1.0, 8.0);
    tick_step_for(t1 - t0, wanted)
}

/// A bar's left and right edges: from its opening to its close (or the observation's end), at
/// least [`MIN_BAR`] wide, and never past the observation's end. A connection opened in the
/// run's last instant is drawn as the run's last [`MIN_BAR`] units: its left edge moves back
/// rather than its right edge past the line that says the observation ended, which would show
/// it open after the run (its `data-opened` keeps the exact time).
fn bar_edges(s: &Scale, b: &Bar, last: f64) -> (f64, f64) {
    let run_end = s.x(last);
    let x1 = s
        .x(b.end.unwrap_or(last))
        .max(s.x(b.start) + MIN_BAR)
        .min(run_end);
    (s.x(b.start).min(x1 - MIN_BAR), x1)
}

fn bar(s: &Scale, b: &Bar, y: f64, last: f64) -> Markup {
    let (x0, x1) = bar_edges(s, b, last);
    let end = match (b.end, &b.closed_by) {
        (Some(t), Some(by)) => format!("closed at {} by {by}", secs(t)),
        (Some(t), None) => format!("closed at {}", secs(t)),
        (None, _) => "open at the end".into(),
    };
    let title = format!(
        "{} of {} to {}: opened at {}, {end}; end: {}",
        b.label,
        b.group,
        b.server,
        secs(b.start),
        b.class.word()
    );
    html! {
        text class="conn-label" x=(n(LEFT - 6.0)) y=(n(y + BAR - 1.0)) text-anchor="end" { (cut_to(&b.label, FONT, LEFT - 10.0)) }
        rect class=(format!("bar {}", b.class.word())) data-conn=(b.conn) data-end=(b.class.word())
            data-opened=(t3(b.start)) data-closed=[b.end.map(t3)]
            x=(n(x0)) y=(n(y)) width=(n(x1 - x0)) height=(n(BAR)) {
            title { (title) }
        }
    }
}

/// An arrow from a connection to the one that followed it. One that followed only after the
/// close is drawn apart, as its verdict says it apart: a dashed magenta curve that leaves the old
/// bar's end to the right and enters the new bar from the left, so that it stays visible beside
/// the close's red line, which it would otherwise run along.
fn arrow(s: &Scale, from: &Bar, to: &Bar, y0: f64, y1: f64) -> Markup {
    let x0 = s.x(from.end.unwrap_or(to.start));
    let x1 = s.x(to.start);
    let (y0, y1) = (y0 + BAR / 2.0, y1 + BAR / 2.0);
    if !from.after_close {
        let title = format!(
            "{} was followed by {} at {}",
            from.label,
            to.label,
            secs(to.start)
        );
        return html! {
            line class="successor" data-from=(from.conn) data-to=(to.conn) x1=(n(x0)) y1=(n(y0))
                x2=(n(x1)) y2=(n(y1)) marker-end="url(#arrow)" {
                title { (title) }
            }
        };
    }
    let title = format!(
        "{} was followed by {} at {}, only after the close",
        from.label,
        to.label,
        secs(to.start)
    );
    let bend = ((x1 - x0).abs() / 2.0).max(18.0);
    let d = format!(
        "M {} {} C {} {}, {} {}, {} {}",
        n(x0),
        n(y0),
        n(x0 + bend),
        n(y0),
        n(x1 - bend),
        n(y1),
        n(x1),
        n(y1)
    );
    html! {
        path class="successor after-close" data-from=(from.conn) data-to=(to.conn) d=(d)
            marker-end="url(#arrow-after-close)" {
            title { (title) }
        }
    }
}

fn window_band(s: &Scale, m: &Marker, i: usize, bottom: f64) -> Markup {
    let Some(w) = m.window else {
        return html! {};
    };
    let x0 = s.x(m.t);
    let x1 = s.x(m.t + w).max(x0 + 1.0);
    let top = 20.0 + (i % 3) as f64 * LABEL_ROW;
    let title = format!(
        "{}: window of {w} s, from {} to {}",
        m.name,
        secs(m.t),
        secs(m.t + w)
    );
    html! {
        rect class="window" data-name=(m.name) x=(n(x0)) y=(n(top)) width=(n(x1 - x0)) height=(n(bottom - top)) {
            title { (title) }
        }
    }
}

fn marker(s: &Scale, m: &Marker, i: usize, bottom: f64) -> Markup {
    let x = s.x(m.t);
    let y = 12.0 + (i % 3) as f64 * LABEL_ROW;
    let mut title = format!("{} at {}", m.name, secs(m.t));
    if let Some(w) = m.window {
        title.push_str(&format!(", window {w} s"));
    }
    if let Some(f) = &m.frame {
        title.push_str(&format!("\nframe ({} bytes): {}", f.len, f.text));
        if f.cut {
            title.push_str(" ... (cut)");
        }
    }
    html! {
        g class="notification" data-name=(m.name) data-t=(t3(m.t)) {
            title { (title) }
            line class="marker" x1=(n(x)) y1=(n(y + 2.0)) x2=(n(x)) y2=(n(bottom)) {}
            (label("marker-label", &beside(x, 3.0, &m.name, FONT, WIDTH), y))
        }
    }
}

fn dns(s: &Scale, c: &DnsChange, i: usize, bottom: f64) -> Markup {
    let x = s.x(c.t);
    let y = 12.0 + (3 + i % 2) as f64 * LABEL_ROW;
    let text = format!(
        "DNS {}: {} -> {}",
        c.host,
        c.before.join(", "),
        c.after.join(", ")
    );
    html! {
        g class="dns" data-t=(t3(c.t)) {
            title { (format!("{text} at {}", secs(c.t))) }
            line class="dns-line" x1=(n(x)) y1=(n(y + 2.0)) x2=(n(x)) y2=(n(bottom)) {}
            (label("dns-label", &beside(x, 3.0, &text, FONT, WIDTH), y))
        }
    }
}

fn close(s: &Scale, c: &NodeClose, bottom: f64) -> Markup {
    let x = s.x(c.t);
    html! {
        line class="node-close" data-t=(t3(c.t)) x1=(n(x)) y1=(n(TOP - 6.0)) x2=(n(x)) y2=(n(bottom)) {
            title { (format!("node-wide close by the server ({}) at {}", c.server, secs(c.t))) }
        }
    }
}

/// The quiet stretches drawn as breaks: a hatched column with its length under the axis.
fn quiet_breaks(s: &Scale, bottom: f64) -> Markup {
    html! {
        @for (from, to, x0, x1) in s.breaks() {
            g class="quiet" data-from=(t3(from)) data-to=(t3(to)) {
                title { (format!("quiet for {}: nothing began or ended from {} to {}", short_duration(to - from), secs(from), secs(to))) }
                rect class="quiet-break" x=(n(x0)) y=(n(TOP - 6.0)) width=(n(x1 - x0)) height=(n(bottom - TOP + 6.0)) {}
                (label("quiet-label", &centred((x0 + x1) / 2.0, &short_duration(to - from), SMALL, WIDTH), bottom + 29.0))
            }
        }
    }
}

/// The time axis: ticks at a round step, labelled in seconds; with breaks, each active stretch
/// has its own ticks.
fn axis(s: &Scale, bottom: f64, unit: &str) -> Markup {
    let mut ticks: Vec<(f64, f64)> = Vec::new();
    for (t0, t1, x0, x1) in s.stretches() {
        let step = stretch_step(t0, t1, x0, x1);
        // A hair of slack: the axis's end is a multiple of the step, up to rounding.
        let first = (t0 / step - 1e-9).ceil() as i64;
        let last = (t1 / step + 1e-9).floor() as i64;
        let before = ticks.len();
        ticks.extend((first..=last).map(|k| (k as f64 * step, step)).take(40));
        if ticks.len() == before {
            ticks.push((t0, step));
        }
    }
    html! {
        g class="axis" {
            line x1=(n(LEFT)) y1=(n(bottom)) x2=(n(WIDTH - RIGHT)) y2=(n(bottom)) {}
            @for (t, step) in ticks {
                line class="tick-mark" data-t=(t3(t)) x1=(n(s.x(t))) y1=(n(bottom)) x2=(n(s.x(t))) y2=(n(bottom + 5.0)) {}
                (label("tick", &centred(s.x(t), &tick_label(t, step), FONT, WIDTH), bottom + 17.0))
            }
            text class="axis-label" x=(n(WIDTH - RIGHT)) y=(n(bottom + 33.0)) text-anchor="end" { "time (" (unit) ")" }
        }
    }
}

/// A round step giving about `wanted` ticks over `span`.
fn tick_step_for(span: f64, wanted: f64) -> f64 {
    tick_step(span * 8.0 / wanted)
}

/// A round step giving about eight ticks: 1, 2 or 5 times a power of ten.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 8.0).max(1e-3);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= raw)
        .unwrap_or(10.0 * p)
}

fn tick_label(t: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{t:.0} s")
    } else {
        let places = (-step.log10().floor()) as usize;
        format!("{t:.places$} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::report::model::End;

    #[test]
    fn a_time_before_the_start_has_one_sign() {
        assert_eq!(secs(-1.0), "-1.000 s");
        assert_eq!(secs(12.3454), "+12.345 s");
        assert_eq!(secs(-0.0001), "+0.000 s");
    }

    fn marker(t: f64, name: &str) -> Marker {
        Marker {
            t,
            name: name.into(),
            window: Some(15.0),
            frame: None,
        }
    }

    #[test]
    fn a_quiet_day_between_two_maintenances_is_one_break_with_its_length() {
        let day = 86_400.0;
        let d = Drawing {
            bars: Vec::new(),
            markers: vec![marker(0.0, "MOVING seq 1"), marker(day, "MOVING seq 2")],
            dns: Vec::new(),
            closes: vec![NodeClose {
                t: day + 16.6,
                server: "127.0.0.2:12000".into(),
            }],
            left_out: Vec::new(),
            unit: "seconds",
            observed: None,
        };
        let svg = draw(&d).into_string();
        assert_eq!(svg.matches("<g class=\"quiet\"").count(), 1, "{svg}");
        assert!(
            svg.contains("data-from=\"15.000\" data-to=\"86400.000\""),
            "{svg}"
        );
        assert!(svg.contains(">24 h<"), "{svg}");
        // Both maintenances keep ticks of their own.
        assert!(
            svg.contains(">86400 s<") || svg.contains(">86405 s<"),
            "{svg}"
        );
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(20.0), 5.0);
        assert_eq!(tick_step(8.0), 1.0);
        assert_eq!(tick_step(0.8), 0.1);
        assert_eq!(tick_label(1.5, 0.5), "1.5 s");
        assert_eq!(tick_label(10.0, 5.0), "10 s");
    }

    fn open_bar(conn: u64, start: f64) -> Bar {
        Bar {
            label: format!("conn {conn}"),
            group: "client".into(),
            server: "127.0.0.1:6379".into(),
            conn,
            start,
            end: None,
            class: End::Open,
            closed_by: None,
            successor: None,
            after_close: false,
        }
    }

    /// A number attribute of the first element whose tag starts with `open`.
    fn attr_of(svg: &str, open: &str, name: &str) -> f64 {
        let tag = &svg[svg.find(open).unwrap_or_else(|| panic!("no {open}: {svg}"))..];
        let tag = &tag[..tag.find('>').unwrap()];
        let value = tag.split(&format!(" {name}=\"")).nth(1).unwrap();
        value[..value.find('"').unwrap()].parse().unwrap()
    }

    /// A connection opened at the run's last instant still shows, and its bar ends where the
    /// run does, like any bar still open: not the minimum width past the observation's end.
    #[test]
    fn a_connection_opened_at_the_last_instant_stays_inside_the_run() {
        let end = 1003.3;
        let d = Drawing {
            bars: vec![open_bar(1, 0.0), open_bar(2, end)],
            markers: vec![marker(500.0, "MOVING seq 1")],
            dns: Vec::new(),
            closes: Vec::new(),
            left_out: Vec::new(),
            unit: "seconds",
            observed: Some(end),
        };
        let svg = draw(&d).into_string();
        let run_end = attr_of(&svg, "<line class=\"observed-end\"", "x1");
        for conn in [1, 2] {
            let rect = format!("<rect class=\"bar open\" data-conn=\"{conn}\"");
            let (x, width) = (attr_of(&svg, &rect, "x"), attr_of(&svg, &rect, "width"));
            assert!(width >= MIN_BAR, "conn {conn} is {width} wide: {svg}");
            assert!(
                (x + width - run_end).abs() < 0.15,
                "conn {conn} ends at {}, the run at {run_end}: {svg}",
                x + width
            );
        }
        assert_eq!(
            attr_of(
                &svg,
                "<rect class=\"bar open\" data-conn=\"2\"",
                "data-opened"
            ),
            end
        );
    }
}
