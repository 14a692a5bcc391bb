//! The report's geometry (issue 50, section 6): the time axis covers the whole observation and
//! each open bar reaches its end; no label of the drawing passes its edges; a connection that
//! moved only after the close has an arrow of its own; the grade table never breaks inside a
//! name. tests/it/report.rs checks what the page holds; this checks where it is drawn.
//!
//! Each is checked twice: on the written file, from the coordinates and the label widths the page
//! was laid out with (`maintwatch::present::report::labels`), and, when Chromium is there, on the boxes
//! Chromium lays out: a copy of the page with a measuring script (the page itself has none)
//! writes each label's box and each table cell's line count into the DOM it dumps. Without
//! Chromium that part prints a SKIP line.

use std::path::Path;

use maintwatch::grading::judge::{
    Closed, Connection, NodeClose, Notification, Observations, OptIn, Reached, Received, Side,
};
use maintwatch::present::report::{Collected, Report};

use crate::common;
use crate::report::{attr, chromium, headless, tags};

/// The drawing's width in its own units (`viewBox`).
const WIDTH: f64 = 1200.0;

/// Appended to a copy of the page: each label's box (`getBBox`, in the drawing's units) and each
/// table cell's number of lines, written where `--dump-dom` shows them.
const MEASURE: &str = r#"<script>
for (const svg of document.querySelectorAll('svg.timeline')) {
  const w = svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll('text')) {
    const b = t.getBBox();
    t.setAttribute('data-box', [b.x, b.x + b.width, w].map(v => v.toFixed(1)).join(' '));
  }
}
for (const c of document.querySelectorAll('td, th, .nobr')) {
  const r = document.createRange();
  r.selectNodeContents(c);
  const rects = Array.from(r.getClientRects()).filter(x => x.width > 0);
  c.setAttribute('data-lines', new Set(rects.map(x => Math.round(x.top))).size);
}
</script>"#;

/// The window's width the tables are laid out in: narrower than the drawing, so that a column
/// that can break does.
const WINDOW: &str = "--window-size=900,900";

/// Chromium's layout of `page`: every label of the drawing inside it, and every cell that holds
/// a name, a verdict or a number on one line. `None` (after a SKIP line) without Chromium.
pub fn measured_layout(page: &Path) -> Option<String> {
    let Some(bin) = chromium() else {
        println!(
            "SKIP: chromium not installed (set MAINTWATCH_CHROMIUM to measure the report's layout)"
        );
        return None;
    };
    let html = std::fs::read_to_string(page).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("measured.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let dom =
        String::from_utf8(headless(&bin, &copy, &["--dump-dom".into(), WINDOW.into()])).unwrap();
    let labels = tags(&dom, "<text ");
    assert!(!labels.is_empty(), "no label measured");
    for t in labels {
        let b: Vec<f64> = attr(t, "data-box")
            .unwrap_or_else(|| panic!("not measured: {t}"))
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        assert!(
            b[0] >= 0.0 && b[1] <= b[2],
            "a label clipped: {t} in {page:?}"
        );
    }
    let mut cells = tags(&dom, "<td ");
    cells.extend(tags(&dom, "<th"));
    cells.extend(tags(&dom, "<span class=\"nobr\""));
    for cell in cells {
        let class = attr(cell, "class").unwrap_or("");
        let kept = cell.starts_with("<th")
            || ["name", "num", "pass", "fail", "not-judged", "nobr"]
                .iter()
                .any(|c| class.split(' ').any(|w| w == *c));
        if kept {
            let lines: u32 = attr(cell, "data-lines").unwrap().parse().unwrap();
            assert!(
                lines <= 1,
                "a cell broken over {lines} lines: {cell} in {page:?}"
            );
        }
    }
    Some(dom)
}

/// `&lt;` and its kind back to characters: a label's width is that of its text.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every label of every drawing in `html`, with its text: `(start tag, text)`.
fn labels(html: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    for svg in html.split("<svg class=\"timeline\"").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        for tag in tags(svg, "<text ") {
            let rest = &svg[svg.find(tag).unwrap() + tag.len()..];
            let mut body = &rest[..rest.find("</text>").unwrap()];
            if let Some(i) = body.find("</title>") {
                body = &body[i + "</title>".len()..];
            }
            out.push((tag, unescape(body)));
        }
    }
    out
}

/// On the file: each label's box, as the page placed it, within the drawing.
fn assert_labels_inside(html: &str, whose: &str) {
    let all = labels(html);
    assert!(!all.is_empty(), "{whose}: no labels");
    for (tag, text) in all {
        let px = if attr(tag, "class") == Some("quiet-label") {
            10.0
        } else {
            11.0
        };
        let w = maintwatch::present::report::labels::width(&text, px);
        let x: f64 = attr(tag, "x").unwrap().parse().unwrap();
        let left = match attr(tag, "text-anchor").unwrap_or("start") {
            "end" => x - w,
            "middle" => x - w / 2.0,
            _ => x,
        };
        assert!(
            left >= 0.0 && left + w <= WIDTH,
            "{whose}: the label {text:?} spans {left:.1}..{:.1}: {tag}",
            left + w
        );
    }
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        .parse()
        .unwrap()
}

/// On the file: the drawing's end is the observation's, the axis's last tick is at or past it,
/// and each bar still open reaches it.
fn assert_covers(html: &str, end: f64, whose: &str) {
    let svg = tags(html, "<svg class=\"timeline\"")[0];
    let drawn = num(svg, "data-end");
    assert!(
        (drawn - end).abs() < 0.01,
        "{whose}: drawn to {drawn}, observed until {end}"
    );
    let last_tick = tags(html, "<line class=\"tick-mark\"")
        .iter()
        .map(|t| num(t, "data-t"))
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        last_tick >= end,
        "{whose}: the axis ends at {last_tick} s, the run at {end} s"
    );
    let end_x = num(tags(html, "<line class=\"observed-end\"")[0], "x1");
    let open = tags(html, "<rect class=\"bar open\"");
    for bar in &open {
        let right = num(bar, "x") + num(bar, "width");
        assert!(
            (right - end_x).abs() < 0.2,
            "{whose}: an open bar ends at {right}, the run at {end_x}: {bar}"
        );
    }
}

/// On the file of a real run: drawn until `at_least` or later (the scenario's end), with the
/// axis and the open bars reaching that end.
pub fn assert_drawn_to_the_end(html: &str, at_least: f64, whose: &str) {
    let end = num(tags(html, "<svg class=\"timeline\"")[0], "data-end");
    assert!(
        end >= at_least,
        "{whose}: observed until {end} s, before {at_least} s"
    );
    assert_covers(html, end, whose);
    assert_labels_inside(html, whose);
}

/// `demo --scenario NAME --speed 10` with its capture and its page; the observation's end in
/// scenario seconds (the summary's), and the page.
fn demo(name: &str, dir: &Path) -> (f64, String, std::path::PathBuf) {
    let (capture, page) = (
        dir.join(format!("{name}.jsonl")),
        dir.join(format!("{name}.html")),
    );
    let out = common::maintwatch([
        "demo",
        "--scenario",
        name,
        "--speed",
        "10",
        "--color",
        "never",
    ])
    .arg("--capture")
    .arg(&capture)
    .arg("--report")
    .arg(&page)
    .output()
    .unwrap();
    assert!(out.status.success(), "{name}: {out:?}");
    let text = std::fs::read_to_string(&capture).unwrap();
    let summary: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("a summary line");
    let end = summary["scenario_s"]
        .as_f64()
        .expect("scenario seconds at speed 10");
    (end, std::fs::read_to_string(&page).unwrap(), page)
}

/// The pages of three demos: failover (31 s, where the page stopped at +7 s and cut the last
/// marker's label to `FAILE`), oss-cluster, and single-proxy, whose watch is cut by the close and
/// reconnects after it: that reconnect has the arrow of a move after the close.
#[test]
fn demo_pages_cover_the_whole_run_clip_no_label_and_draw_the_reconnect_after_the_close() {
    let dir = tempfile::tempdir().unwrap();
    for (name, at_least) in [
        ("failover", 31.0),
        ("oss-cluster", 6.0),
        ("single-proxy", 18.0),
    ] {
        let (end, html, page) = demo(name, dir.path());
        assert!(end >= at_least, "{name}: observed until {end} s");
        assert_covers(&html, end, name);
        assert_labels_inside(&html, name);
        if name == "single-proxy" {
            let late = tags(&html, "<path class=\"successor after-close\"");
            assert_eq!(late.len(), 1, "{late:?}");
            assert_eq!(
                (attr(late[0], "data-from"), attr(late[0], "data-to")),
                (Some("1"), Some("1"))
            );
            assert!(
                html.contains("only after the close"),
                "the legend and title say it"
            );
        }
        measured_layout(&page);
    }
}

/// The failover's frames as the simulator sends them, and nothing after: the last marker is at
/// the drawing's right edge. Its label goes to the left of its line; a marker and a client whose
/// names are wider than the drawing are cut to fit (their titles keep them whole).
#[test]
fn a_marker_at_the_right_edge_keeps_its_label_inside() {
    let mut lines = Collected::default();
    lines.sent(
        5.0,
        1,
        b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n",
    );
    lines.sent(
        7.0,
        1,
        b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n",
    );
    let long = format!("MIGRATED{}", "W".repeat(300));
    let mut obs = Observations::default();
    let mut c = conn(1, "127.0.0.2:6379", 0.0);
    c.lib_name = Some("redis-py".repeat(60));
    obs.connections.push(c);
    for (at, kind, seq) in [
        (5.0, "FAILING_OVER", 0),
        (7.0, "FAILED_OVER", 1),
        (6.0, long.as_str(), 2),
    ] {
        obs.notifications.push(notification(at, kind, seq, 0.0));
    }
    let g = maintwatch::grading::judge::judge(&obs);
    let report = Report {
        command: "simulate --grade",
        source: "scenario failover".into(),
        lines: &lines,
        observations: Some(&obs),
        grade: Some(&g),
        notes: Vec::new(),
    };
    let html = report.render();
    let last = tags(
        &html,
        "<g class=\"notification\" data-name=\"FAILED_OVER seq 1\"",
    );
    assert_eq!(last.len(), 1);
    let label = labels(&html)
        .into_iter()
        .find(|(_, t)| t == "FAILED_OVER seq 1")
        .expect("the last marker's label, whole");
    assert_eq!(attr(label.0, "text-anchor"), Some("end"), "{}", label.0);
    assert!(
        labels(&html)
            .iter()
            .any(|(_, t)| t.starts_with("MIGRATEDWWW") && t.ends_with('…')),
        "the wide name cut"
    );
    assert_labels_inside(&html, "right edge");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("edge.html");
    report.write(&page).unwrap();
    measured_layout(&page);
}

fn conn(id: u64, server: &str, opened: f64) -> Connection {
    let mut c = Connection::opened(
        id,
        (
            format!("127.0.0.1:{}", 50000 + id).parse().unwrap(),
            server.parse().unwrap(),
        ),
        opened,
        Reached::Name {
            name: "db.example.test".into(),
        },
        OptIn::Accepted {
            endpoint_type: None,
        },
    );
    c.lib_name = Some("redis-py".into());
    c.lib_ver = Some("8.2.0".into());
    c
}

fn notification(at: f64, kind: &str, seq: i64, window: f64) -> Notification {
    Notification {
        at,
        kind: kind.into(),
        seq: Some(seq),
        window,
        target: None,
        retiring: vec!["127.0.0.2:6379".parse().unwrap()],
        moves: Vec::new(),
    }
}

/// A MOVING at 1 s, the close of 127.0.0.2 at 16.6 s. Connection 3 moves to 127.0.0.3 before
/// it (connection 4); connection 1 stays and is cut, and its client reconnects to 127.0.0.3 only
/// after the close (connection 2).
fn moved_after_the_close() -> Observations {
    let mut obs = Observations {
        source: "scenario single-proxy".into(),
        ..Observations::default()
    };
    // The judge pairs each connection told with the next one opened, in order of receipt:
    // connection 3 is told first.
    let told = |c: &mut Connection, at: f64| {
        c.received.push(Received {
            notification: 0,
            at,
        })
    };
    let mut cut = conn(1, "127.0.0.2:6379", 0.0);
    told(&mut cut, 1.1);
    cut.closed = Some(Closed {
        at: 16.6,
        by: Side::Server,
    });
    let mut moved = conn(3, "127.0.0.2:6379", 0.0);
    told(&mut moved, 1.0);
    moved.closed = Some(Closed {
        at: 5.0,
        by: Side::Client,
    });
    obs.connections = vec![
        cut,
        moved,
        conn(4, "127.0.0.3:6379", 4.9),
        conn(2, "127.0.0.3:6379", 16.8),
    ];
    obs.notifications.push(Notification {
        target: Some(maintwatch::grading::judge::Target::Null),
        ..notification(1.0, "MOVING", 0, 15.0)
    });
    obs.closes.push(NodeClose {
        at: 16.6,
        server: "127.0.0.2:6379".parse().unwrap(),
    });
    obs
}

/// The judge says "moved to 127.0.0.3 after the close" of a cut connection; the page draws that
/// move as an arrow of its own (`path.successor.after-close`, dashed, its title saying so), and
/// the move before the close as the usual `line.successor`. Each arrow is one the verdicts name.
#[test]
fn a_connection_that_moved_after_the_close_has_an_arrow_of_its_own() {
    let obs = moved_after_the_close();
    let g = maintwatch::grading::judge::judge(&obs);
    let verdicts: Vec<_> = g.clients[0].notifications[0]
        .moving
        .as_ref()
        .unwrap()
        .verdicts
        .clone();
    let text = |id: u64| verdicts.iter().find(|v| v.conn == id).unwrap().text.clone();
    assert!(
        text(1).ends_with("moved to 127.0.0.3 after the close"),
        "{verdicts:?}"
    );
    assert!(text(3).starts_with("moved to 127.0.0.3"), "{verdicts:?}");
    let lines = Collected::default();
    let report = Report {
        command: "replay --grade",
        source: obs.source.clone(),
        lines: &lines,
        observations: Some(&obs),
        grade: Some(&g),
        notes: Vec::new(),
    };
    let html = report.render();
    assert_arrows_say_the_verdicts(&html, &g);
    let late = tags(&html, "<path class=\"successor after-close\"");
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(
        (attr(late[0], "data-from"), attr(late[0], "data-to")),
        (Some("1"), Some("2"))
    );
    assert!(attr(late[0], "marker-end") == Some("url(#arrow-after-close)"));
    assert!(html.contains("conn 1 was followed by conn 2 at +16.800 s, only after the close"));
    let plain = tags(&html, "<line class=\"successor\"");
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(
        (attr(plain[0], "data-from"), attr(plain[0], "data-to")),
        (Some("3"), Some("4"))
    );
    // Its style is its own.
    assert!(
        html.contains("svg .successor.after-close {"),
        "no style for it"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("late.html");
    report.write(&page).unwrap();
    if let Some(dom) = measured_layout(&page) {
        assert_eq!(tags(&dom, "<path class=\"successor after-close\"").len(), 1);
    }
}

/// Every arrow of a graded page is one a verdict names, and every verdict that names a move
/// after the close has its dashed arrow. Shared with tests/it/report.rs's real runs.
pub fn assert_arrows_say_the_verdicts(html: &str, g: &maintwatch::grading::judge::Grade) {
    let late: Vec<u64> = g
        .clients
        .iter()
        .flat_map(|c| &c.notifications)
        .filter_map(|n| n.moving.as_ref())
        .flat_map(|m| &m.verdicts)
        .filter(|v| v.text.contains(" after the close") && v.text.contains("moved to"))
        .map(|v| v.conn)
        .collect();
    let mut drawn: Vec<u64> = tags(html, "<path class=\"successor after-close\"")
        .iter()
        .map(|t| attr(t, "data-from").unwrap().parse().unwrap())
        .collect();
    drawn.sort();
    let mut want = late.clone();
    want.sort();
    want.dedup();
    assert_eq!(drawn, want, "arrows after the close");
}

/// The grade table of a redis-py client: its name, the notification, the rule and the verdict
/// each on one line however long the reason beside them (it was `redis-` / `py/8.2.0` and
/// `MOVING seq` / `0`); the reason wraps instead, between words but never between a value and
/// its unit.
#[test]
fn the_grade_table_never_breaks_inside_a_name() {
    let obs = moved_after_the_close();
    let g = maintwatch::grading::judge::judge(&obs);
    let lines = Collected::default();
    let report = Report {
        command: "replay --grade",
        source: obs.source.clone(),
        lines: &lines,
        observations: Some(&obs),
        grade: Some(&g),
        notes: Vec::new(),
    };
    let html = report.render();
    let rows = tags(&html, "<tr class=\"rule ");
    assert!(rows.len() > 3, "{rows:?}");
    // On the file: the first four cells of each row are kept whole by the style.
    for row in html.split("<tr class=\"rule ").skip(1) {
        let row = &row[..row.find("</tr>").unwrap()];
        let cells = tags(row, "<td");
        assert_eq!(cells.len(), 5, "{row}");
        for c in &cells[..4] {
            let class = attr(c, "class").unwrap_or_else(|| panic!("a cell that may break: {c}"));
            assert!(
                ["name", "pass", "fail", "not-judged"].contains(&class),
                "{c}"
            );
        }
    }
    assert!(html.contains("redis-py/8.2.0") && html.contains(">MOVING seq 0<"));
    // In the reasons, a value keeps its unit (`+15.6 s` could break as `+15.6` / `s`).
    assert!(
        html.contains("<span class=\"nobr\">+15.6 s</span>"),
        "{html}"
    );
    let style = &html[html.find("<style>").unwrap()..html.find("</style>").unwrap()];
    let rule = style
        .lines()
        .find(|l| l.contains("white-space: nowrap"))
        .expect("a nowrap rule");
    for sel in [
        "td.name",
        "tr.rule > td.pass",
        "tr.rule > td.fail",
        "tr.rule > td.not-judged",
    ] {
        assert!(rule.contains(sel), "{sel} not kept whole: {rule}");
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("grade.html");
    report.write(&page).unwrap();
    if let Some(dom) = measured_layout(&page) {
        // The reason did wrap in this narrow window: the test can see a break.
        let broke = tags(&dom, "<td").iter().any(|c| {
            attr(c, "class").is_none()
                && attr(c, "data-lines").is_some_and(|n| n != "1" && n != "0")
        });
        assert!(
            broke,
            "no reason wrapped at this width: the check would see nothing"
        );
    }
}
