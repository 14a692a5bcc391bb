//! What the timeline drawing shows, taken from what the command already has: the judge's
//! observations and grade when it graded, else the timeline's own lines.
//!
//! Nothing here judges. A bar's class is the grade's verdict word for its connection when the
//! judge gave one; otherwise it says only how the connection ended as the lines record it.

use std::collections::{BTreeMap, HashMap};

use super::collect::{self, bounded, Capped, Collected, DnsChange};
use crate::grading::judge::moving::Followed;
use crate::grading::judge::{Grade, Observations, Side};
use crate::observe::record::ClosedBy;

/// Bars drawn at most; the rest are counted by group under the drawing.
pub const MAX_BARS: usize = 1000;

/// How a connection ended, as the bar's class says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    Moved,
    Recycled,
    Cut,
    Stayed,
    Closed,
    Open,
}

impl End {
    pub fn word(self) -> &'static str {
        match self {
            End::Moved => "moved",
            End::Recycled => "recycled",
            End::Cut => "cut",
            End::Stayed => "stayed",
            End::Closed => "closed",
            End::Open => "open",
        }
    }

    /// The judge's verdict word (`ConnVerdict::verdict`), or `pcap`'s (`pcap_verdict`).
    fn from_word(word: &str) -> Option<End> {
        Some(match word {
            "moved" | "moved_before_close" => End::Moved,
            "recycled" => End::Recycled,
            "cut" | "cut_by_close" => End::Cut,
            "stayed" => End::Stayed,
            "closed" => End::Closed,
            "open" | "open_at_end" => End::Open,
            _ => return None,
        })
    }
}

/// One connection (one session of it, for the watch's reconnecting connections).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// `conn 3`, `conn 3 #2`.
    pub label: String,
    /// The client it belongs to; bars are grouped by it.
    pub group: String,
    /// Where it went (the server's address).
    pub server: String,
    pub conn: u64,
    pub start: f64,
    pub end: Option<f64>,
    pub class: End,
    /// Who closed it, in words, when known.
    pub closed_by: Option<String>,
    /// The index of the bar of the connection that followed it.
    pub successor: Option<usize>,
    /// That connection was opened only after the server's close cut this one (or, for a
    /// connection the client closed late, after the close): its arrow is drawn apart.
    pub after_close: bool,
}

/// A maintenance notification: a marker and its declared window.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub t: f64,
    pub name: String,
    pub window: Option<f64>,
    pub frame: Option<Capped>,
}

/// A node-wide close by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeClose {
    pub t: f64,
    pub server: String,
}

/// Everything the SVG draws, bounded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawing {
    pub bars: Vec<Bar>,
    pub markers: Vec<Marker>,
    pub dns: Vec<DnsChange>,
    pub closes: Vec<NodeClose>,
    /// Sentences saying what was left out, and how it was grouped.
    pub left_out: Vec<String>,
    /// The axis's unit: `seconds`, or `scenario seconds` for a simulator run at another speed.
    pub unit: &'static str,
    /// The end of the observation, when known: the run went on after its last event, and the
    /// axis and the bars still open reach it.
    pub observed: Option<f64>,
}

impl Drawing {
    /// The span of time drawn: from the first thing to the last (a window's end and the end of
    /// the observation included).
    pub fn span(&self) -> (f64, f64) {
        let ts = self.times();
        let t0 = ts.iter().copied().fold(f64::INFINITY, f64::min);
        let t1 = ts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !t0.is_finite() {
            return (0.0, 1.0);
        }
        // Times count from the start of the run: the axis starts at 0 unless something came before.
        let t0 = t0.min(0.0);
        (t0, t1.max(t0 + 1.0))
    }

    /// Every time at which something drawn begins or ends (a window's end included).
    pub fn times(&self) -> Vec<f64> {
        let mut ts: Vec<f64> = Vec::new();
        for b in &self.bars {
            ts.push(b.start);
            ts.extend(b.end);
        }
        for m in &self.markers {
            ts.push(m.t);
            ts.push(m.t + m.window.unwrap_or(0.0).max(0.0));
        }
        ts.extend(self.dns.iter().map(|d| d.t));
        ts.extend(self.closes.iter().map(|c| c.t));
        ts.extend(self.observed);
        ts.into_iter().filter(|t| t.is_finite()).collect()
    }
}

/// The drawing from the judge's observations, classed by the grade's verdicts; frames for the
/// markers' titles come from `lines` when the command has them.
pub fn from_observations(obs: &Observations, grade: Option<&Grade>, lines: &Collected) -> Drawing {
    let verdicts = grade.map(verdicts).unwrap_or_default();
    let mut bars: Vec<Bar> = obs
        .connections
        .iter()
        .map(|c| {
            let class = verdicts
                .get(&c.id)
                .copied()
                .unwrap_or(if c.closed.is_some() {
                    End::Closed
                } else {
                    End::Open
                });
            Bar {
                label: format!("conn {}", c.id),
                group: bounded(&crate::grading::judge::client_of(c)),
                server: c.server.to_string(),
                conn: c.id,
                start: c.opened,
                end: c.closed.map(|x| x.at),
                class,
                closed_by: c.closed.map(|x| {
                    match x.by {
                        Side::Client => "the client",
                        Side::Server => "the server",
                    }
                    .to_string()
                }),
                successor: None,
                after_close: false,
            }
        })
        .collect();
    let mut drawing = Drawing {
        unit: "seconds",
        observed: lines.until().map(|t| t * speed(lines)),
        ..Drawing::default()
    };
    sort_and_cap(&mut bars, &mut drawing.left_out);
    link_movers(&mut bars, obs);
    drawing.bars = bars;
    drawing.markers = obs
        .notifications
        .iter()
        .take(collect::MAX_MARKS)
        .map(|n| Marker {
            t: n.at,
            name: bounded(&n.name()),
            window: (n.window > 0.0).then_some(n.window),
            frame: lines.frame_of(&n.name()).cloned(),
        })
        .collect();
    let past = |n: usize, cap: usize| n.saturating_sub(cap) as u64;
    left(
        &mut drawing.left_out,
        past(obs.notifications.len(), collect::MAX_MARKS),
        "notification(s)",
    );
    left(
        &mut drawing.left_out,
        past(obs.closes.len(), collect::MAX_MARKS),
        "node-wide close(s)",
    );
    drawing.dns = dns_changes(obs);
    drawing.closes = obs
        .closes
        .iter()
        .take(collect::MAX_MARKS)
        .map(|c| NodeClose {
            t: c.at,
            server: c.server.to_string(),
        })
        .collect();
    drawing
}

/// Each connection's verdict word from the grade: the last notification's that named it.
fn verdicts(g: &Grade) -> HashMap<u64, End> {
    let mut out = HashMap::new();
    for c in &g.clients {
        for n in &c.notifications {
            for v in n.moving.iter().flat_map(|m| &m.verdicts) {
                if let Some(end) = End::from_word(&v.verdict) {
                    out.insert(v.conn, end);
                }
            }
        }
    }
    out
}

/// A connection told of a MOVING points at the connection that followed it wherever its verdict
/// names one (`moved to ...`, `recycled ...`): the judge's own pairing
/// ([`crate::grading::judge::successions`]), so the arrow and the sentence agree. A move only after the
/// close is marked, to be drawn apart. Of several MOVINGs, the last that names a connection wins,
/// as for its class.
fn link_movers(bars: &mut [Bar], obs: &Observations) {
    let index: HashMap<u64, usize> = bars.iter().enumerate().map(|(i, b)| (b.conn, i)).collect();
    for s in crate::grading::judge::successions(obs) {
        let (Some(&i), Some(&j)) = (index.get(&s.conn), index.get(&s.next)) else {
            continue;
        };
        bars[i].successor = Some(j);
        bars[i].after_close = s.followed == Followed::After;
    }
}

/// DNS answers that differ from the previous answer for the same name. An empty answer is not a
/// change: a capture holds the AAAA queries' empty answers beside the A queries' (the answer
/// does not say which type was asked).
fn dns_changes(obs: &Observations) -> Vec<DnsChange> {
    let mut last: HashMap<String, Vec<String>> = HashMap::new();
    let mut out = Vec::new();
    for a in obs.dns.iter().filter(|a| !a.records.is_empty()) {
        let mut records: Vec<String> = a.records.iter().map(|r| r.to_string()).collect();
        records.sort();
        let key = a.name.trim_end_matches('.').to_ascii_lowercase();
        let before = last.insert(key, records.clone());
        match before {
            Some(b) if b != records && out.len() < collect::MAX_DNS => out.push(DnsChange {
                t: a.at,
                host: bounded(&a.name),
                before: collect::addrs(&b),
                after: collect::addrs(&records),
            }),
            _ => {}
        }
    }
    out
}

/// The drawing from the timeline's lines alone (a watch, a replay, a capture not graded).
///
/// The lines' `t` is the watch's own seconds; a watch of the simulator at another speed reads
/// offsets and windows in scenario seconds, so everything is drawn in scenario seconds then.
pub fn from_lines(c: &Collected) -> Drawing {
    let speed = speed(c);
    let mut bars: Vec<Bar> = c
        .sessions
        .iter()
        .map(|s| session_bar(c, s, speed))
        .collect();
    let mut drawing = Drawing {
        unit: if speed == 1.0 {
            "seconds"
        } else {
            "scenario seconds"
        },
        observed: c.until().map(|t| t * speed),
        ..Drawing::default()
    };
    if c.left_out.sessions > 0 {
        drawing.left_out.push(format!(
            "{} connection(s) past the first {} were not kept",
            c.left_out.sessions,
            collect::MAX_SESSIONS
        ));
    }
    sort_and_cap(&mut bars, &mut drawing.left_out);
    link_sessions(&mut bars, c);
    drawing.bars = bars;
    drawing.markers = c
        .marks
        .iter()
        .map(|m| Marker {
            t: m.t * speed,
            name: m.name.clone(),
            window: m.window.filter(|&w| w > 0).map(|w| w as f64),
            frame: Some(m.frame.clone()),
        })
        .collect();
    drawing.dns = c
        .dns
        .iter()
        .map(|d| DnsChange {
            t: d.t * speed,
            ..d.clone()
        })
        .collect();
    drawing.closes = summary_closes(c, speed);
    left(&mut drawing.left_out, c.left_out.marks, "notification(s)");
    left(&mut drawing.left_out, c.left_out.dns, "DNS change(s)");
    drawing
}

/// A note of `n` things past their cap, when there are some.
fn left(notes: &mut Vec<String>, n: u64, what: &str) {
    if n > 0 {
        notes.push(format!("{n} more {what} past the cap are not drawn"));
    }
}

/// Scenario seconds per second of the watch (1 but for a simulator run faster).
fn speed(c: &Collected) -> f64 {
    match c.start.as_ref().map(|s| s.speed) {
        Some(s) if s > 0.0 && s.is_finite() => s,
        _ => 1.0,
    }
}

fn session_bar(c: &Collected, s: &collect::Session, speed: f64) -> Bar {
    let class = c
        .pcap_verdicts
        .get(&s.conn)
        .and_then(|w| End::from_word(w))
        .unwrap_or(match s.closed {
            None => End::Open,
            Some((_, ClosedBy::Server | ClosedBy::Error)) => End::Cut,
            Some(_) => End::Closed,
        });
    let group = c
        .pcap_clients
        .get(&s.conn)
        .map(|a| host_of(a).to_string())
        .unwrap_or_else(|| "maintwatch".into());
    Bar {
        label: if s.session > 1 {
            format!("conn {} #{}", s.conn, s.session)
        } else {
            format!("conn {}", s.conn)
        },
        group,
        server: s.addr.clone(),
        conn: u64::from(s.conn),
        start: s.opened * speed,
        end: s.closed.map(|(t, _)| t * speed),
        class,
        closed_by: s.closed.map(|(_, by)| by.as_str().to_string()),
        successor: None,
        after_close: false,
    }
}

/// A watch's reconnect is the next session of the same connection; a capture's is the
/// `pcap_reconnect` line's new connection. A reconnect after the server cut the connection is
/// one after the close, drawn apart as the judge's are.
fn link_sessions(bars: &mut [Bar], c: &Collected) {
    link_reconnects(bars, c);
    for i in 0..bars.len() {
        if let (Some(j), Some(end)) = (bars[i].successor, bars[i].end) {
            bars[i].after_close = bars[i].class == End::Cut && bars[j].start >= end;
        }
    }
}

fn link_reconnects(bars: &mut [Bar], c: &Collected) {
    let mut first_of: HashMap<u64, usize> = HashMap::new();
    for (i, b) in bars.iter().enumerate() {
        first_of.entry(b.conn).or_insert(i);
    }
    let mut by_conn: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, b) in bars.iter().enumerate() {
        by_conn.entry(b.conn).or_default().push(i);
    }
    for list in by_conn.values() {
        for w in list.windows(2) {
            bars[w[0]].successor = Some(w[1]);
        }
    }
    for (after, conn) in &c.successors {
        let (Some(&a), Some(&n)) = (
            first_of.get(&u64::from(*after)),
            first_of.get(&u64::from(*conn)),
        ) else {
            continue;
        };
        if bars[a].successor.is_none() {
            bars[a].successor = Some(n);
        }
    }
}

/// The node-wide closes the summary's event rows give: each event's socket close.
fn summary_closes(c: &Collected, speed: f64) -> Vec<NodeClose> {
    let Some(s) = &c.summary else {
        return Vec::new();
    };
    let mut out: Vec<NodeClose> = Vec::new();
    for e in &s.events {
        let Some(after) = e.socket_closed_s else {
            continue;
        };
        // Offsets after an event are scenario seconds already.
        let t = e.t * speed + after;
        if out.len() < collect::MAX_MARKS && !out.iter().any(|c| (c.t - t).abs() < 1e-3) {
            out.push(NodeClose {
                t,
                server: format!("after {}", bounded(&e.kind)),
            });
        }
    }
    out
}

/// `10.0.0.5` of `10.0.0.5:51000` (and of `[::1]:6379`).
fn host_of(addr: &str) -> &str {
    match addr.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h.trim_start_matches('[').trim_end_matches(']'),
        _ => addr,
    }
}

/// Sorts bars by group and opening time and keeps the first [`MAX_BARS`]; what is left out is
/// counted per group (the five largest named).
fn sort_and_cap(bars: &mut Vec<Bar>, notes: &mut Vec<String>) {
    bars.sort_by(|a, b| {
        a.group
            .cmp(&b.group)
            .then(a.start.total_cmp(&b.start))
            .then(a.conn.cmp(&b.conn))
    });
    if bars.len() <= MAX_BARS {
        return;
    }
    let mut per_group: BTreeMap<&str, usize> = BTreeMap::new();
    for b in &bars[MAX_BARS..] {
        *per_group.entry(b.group.as_str()).or_default() += 1;
    }
    let mut groups: Vec<(&str, usize)> = per_group.into_iter().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let named: Vec<String> = groups
        .iter()
        .take(5)
        .map(|(g, n)| format!("{n} of {g}"))
        .collect();
    let more = groups.len().saturating_sub(5);
    notes.push(format!(
        "{} connection(s) past the first {MAX_BARS} are not drawn ({}{})",
        bars.len() - MAX_BARS,
        named.join(", "),
        if more > 0 {
            format!(", and {more} more client(s)")
        } else {
            String::new()
        }
    ));
    bars.truncate(MAX_BARS);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_strips_the_port() {
        assert_eq!(host_of("10.0.0.5:51000"), "10.0.0.5");
        assert_eq!(host_of("[::1]:6379"), "::1");
        assert_eq!(host_of("name"), "name");
    }

    #[test]
    fn bars_past_the_cap_are_counted_by_group() {
        let bar = |i: usize| Bar {
            label: format!("conn {i}"),
            group: if i % 2 == 0 { "a".into() } else { "b".into() },
            server: String::new(),
            conn: i as u64,
            start: i as f64,
            end: None,
            class: End::Open,
            closed_by: None,
            successor: None,
            after_close: false,
        };
        let mut bars: Vec<Bar> = (0..MAX_BARS + 10).map(bar).collect();
        let mut notes = Vec::new();
        sort_and_cap(&mut bars, &mut notes);
        assert_eq!(bars.len(), MAX_BARS);
        assert!(notes[0].starts_with("10 connection(s)"), "{notes:?}");
    }
}
