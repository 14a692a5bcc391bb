//! The MOVING's figures and the per-connection verdicts, on one client's connections and one
//! MOVING: what the client could know (how it connected, the endpoint type it asked for, the
//! target, what DNS answered before the close), where each connection went, re-sent copies and
//! reconnects. The rules in [`super::rules`] read these figures; the grade shows them.

use std::collections::BTreeSet;

use super::rules::{offset, round, Scope};
use super::verdicts::{ConnVerdict, MovingGrade};
use crate::observe::evidence::{same_name, Connection, OptIn, Reached, Side};

/// DNS lines shown per client and notification.
const DNS_LINES: usize = 8;
/// What the client could know before the close.
pub struct Known {
    /// Anything but a retiring address was offered.
    pub offered: bool,
    /// Nothing was, as far as was seen, but what DNS named was not seen from this time on.
    pub dns_unseen_from: Option<f64>,
    /// The facts, in words.
    pub words: Vec<String>,
}

/// What could the client know: whether anything but a retiring address was offered before the
/// close, and the facts, in words.
pub fn offered(s: &Scope<'_>) -> Known {
    let close = s.close().unwrap_or(f64::INFINITY);
    let on_old: Vec<&Connection> = s
        .members
        .iter()
        .copied()
        .filter(|c| s.retiring(c.server) && c.opened < close)
        .collect();
    let mut known = vec![reached_words(&on_old)];
    let mut offered = false;
    let types: BTreeSet<String> = on_old
        .iter()
        .filter_map(|c| match &c.opt_in {
            OptIn::Accepted { endpoint_type } => {
                Some(endpoint_type.clone().unwrap_or_else(|| "default".into()))
            }
            _ => None,
        })
        .collect();
    let target = match &s.n.target {
        Some(crate::observe::evidence::Target::Null) | None => "null".to_string(),
        Some(t @ crate::observe::evidence::Target::Address(a)) => {
            let other = t
                .ip()
                .is_some_and(|ip| s.n.retiring.iter().all(|r| r.ip() != ip));
            offered |= other;
            a.clone()
        }
        Some(crate::observe::evidence::Target::Name(a)) => {
            offered = true;
            a.clone()
        }
    };
    let types: Vec<String> = types.into_iter().collect();
    known.push(format!(
        "the {}'s target was {target} (endpoint type asked: {})",
        s.n.kind,
        if types.is_empty() {
            "none".into()
        } else {
            types.join(", ")
        }
    ));
    let names: Vec<&str> = on_old
        .iter()
        .filter_map(|c| match &c.reached {
            Reached::Name { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let mut dns_unseen_from = None;
    if !names.is_empty() {
        let (dns_offered, lines) = dns_words(s, &names, &on_old, close);
        offered |= dns_offered;
        known.extend(lines);
        if !offered {
            dns_unseen_from = unseen_from(s, &names, close);
        }
        if let (Some(t), Some(last)) = (dns_unseen_from, known.last_mut()) {
            *last = format!(
                "DNS named only the retiring address as long as it was seen, until {} the {}",
                offset(t - s.n.at),
                s.n.name()
            );
        }
    }
    Known {
        offered,
        dns_unseen_from,
        words: known,
    }
}

/// When what DNS named stopped being seen, if before the close: never where the server's own
/// changes of its records are known (the simulator's), else from when the last answer a
/// capture saw went stale (its time plus its TTL), no later answer having come.
fn unseen_from(s: &Scope<'_>, names: &[&str], close: f64) -> Option<f64> {
    let answers: Vec<&crate::observe::evidence::DnsAnswer> = s
        .obs
        .dns
        .iter()
        .filter(|a| names.iter().any(|n| same_name(n, &a.name)) && a.at < close)
        .collect();
    if !close.is_finite() || answers.iter().any(|a| a.to.is_none()) {
        return None;
    }
    let until = answers
        .iter()
        .filter(|a| !a.records.is_empty())
        .map(|a| a.at + f64::from(a.ttl.unwrap_or(0)))
        .fold(f64::NEG_INFINITY, f64::max);
    (until < close).then_some(until)
}

fn reached_words(conns: &[&Connection]) -> String {
    let mut ways = BTreeSet::new();
    for c in conns {
        ways.insert(match &c.reached {
            Reached::Name { name } => format!("by name {name}"),
            Reached::Address => format!("by address {}", c.server),
            Reached::Unknown => "in a way not observed".into(),
            Reached::SharedHost { name, others } => format!(
                "in a way not told apart (by name {name} or by address {}): the DNS answers for {name} went to {}, where {} connected where they pointed too",
                c.server,
                c.client.ip(),
                super::verdicts::clients_in_words(others.iter().map(String::as_str))
            ),
        });
    }
    let ways: Vec<String> = ways.into_iter().collect();
    if ways.is_empty() {
        "no connection on the retiring address".into()
    } else {
        format!("connected {}", ways.join(", "))
    }
}

/// The DNS answers for the names the client resolved, from the last one before the notification
/// to the close: any address that is not retiring was an offer.
fn dns_words(
    s: &Scope<'_>,
    names: &[&str],
    conns: &[&Connection],
    close: f64,
) -> (bool, Vec<String>) {
    let hosts: BTreeSet<std::net::IpAddr> = conns.iter().map(|c| c.client.ip()).collect();
    let ours =
        |a: &&crate::observe::evidence::DnsAnswer| names.iter().any(|n| same_name(n, &a.name));
    let last_before = s
        .obs
        .dns
        .iter()
        .filter(ours)
        .filter(|a| a.at <= s.n.at)
        .map(|a| a.at)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut offered = None;
    let mut lines = Vec::new();
    for a in s.obs.dns.iter().filter(ours) {
        if a.at < last_before || a.at >= close {
            continue;
        }
        let other = a
            .records
            .iter()
            .find(|ip| s.n.retiring.iter().all(|r| r.ip() != **ip));
        if let (Some(ip), None) = (other, offered) {
            offered = Some((a.at, *ip));
        }
        if a.at >= s.n.at && a.to.is_some_and(|h| hosts.contains(&h)) && lines.len() < DNS_LINES {
            let records: Vec<String> = a.records.iter().map(|r| r.to_string()).collect();
            lines.push(format!(
                "resolved {} -> {} ({}) at {} the {}",
                a.name,
                if records.is_empty() {
                    "nothing".into()
                } else {
                    records.join(", ")
                },
                if other.is_some() { "fresh" } else { "stale" },
                offset(a.at - s.n.at),
                s.n.name()
            ));
        }
    }
    match offered {
        Some((at, ip)) => {
            let before = if close.is_finite() {
                format!(", {:.1} s before the close", close - at)
            } else {
                String::new()
            };
            lines.push(format!(
                "DNS named {ip} at {} the {}{before}",
                offset(at - s.n.at),
                s.n.name()
            ));
        }
        None => lines.push("DNS named only the retiring address until the close".into()),
    }
    (offered.is_some(), collapse(lines))
}

/// Identical lines in a row (a pool resolving at once) shown once, with their count.
fn collapse(lines: Vec<String>) -> Vec<String> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for l in lines {
        match out.last_mut() {
            Some((last, n)) if *last == l => *n += 1,
            _ => out.push((l, 1)),
        }
    }
    out.into_iter()
        .map(|(l, n)| if n > 1 { format!("{l} ({n} times)") } else { l })
        .collect()
}

/// The verdict of every connection that received the notification.
pub fn verdicts(s: &Scope<'_>, offered: bool) -> Vec<ConnVerdict> {
    let close = s.close();
    s.successors()
        .into_iter()
        .map(|(c, at, next)| verdict(s, c, at, next, close, offered))
        .collect()
}

/// How a connection told of a MOVING was followed by the next connection of its client, as
/// its verdict words it. The report draws an arrow for each (docs/report.md), so the page and the
/// verdict's sentence come from this one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// Closed by the client and followed by a connection to a retiring address.
    Recycled,
    /// Followed by a connection to another address opened before the close.
    Before,
    /// Followed by a connection to another address only after the close.
    After,
}

/// How `c` was followed by `next`, when its verdict names the next connection.
pub fn followed(s: &Scope<'_>, c: &Connection, next: Option<&Connection>) -> Option<Followed> {
    let n = next?;
    let end = s.close().unwrap_or(f64::INFINITY);
    let when = |close: f64| {
        if n.opened >= close {
            Followed::After
        } else {
            Followed::Before
        }
    };
    if s.cut(c) {
        let close = s.close_of(c.server).unwrap_or(end);
        return (!s.retiring(n.server)).then(|| when(close));
    }
    match c.closed {
        Some(x) if x.by == Side::Client && x.at < end => Some(if s.retiring(n.server) {
            Followed::Recycled
        } else {
            when(end)
        }),
        _ => None,
    }
}

fn verdict(
    s: &Scope<'_>,
    c: &Connection,
    at: f64,
    next: Option<&Connection>,
    close: Option<f64>,
    offered: bool,
) -> ConnVerdict {
    let resent = if c.opened > s.n.at { " (re-sent)" } else { "" };
    let its = format!("its {}{resent}", s.n.name());
    let from = |t: f64| format!("{} {its}", offset(t - at));
    let end = close.unwrap_or(f64::INFINITY);
    let follow = next.zip(followed(s, c, next));
    let (word, text) = match c.closed {
        _ if s.cut(c) => {
            let close = s.close_of(c.server).unwrap_or(end);
            let mut text = format!("cut by the close at {}", from(close));
            let mut word = "cut";
            if !offered && matches!(c.reached, Reached::SharedHost { .. }) {
                // Whether DNS offered it anything is what could not be told.
                text += "; whether anything else was offered is not known (its DNS was not told apart from another client's)";
            } else if !offered {
                text = format!("stayed: nothing else was offered; {text}");
                word = "stayed";
            }
            if let Some((n, f)) = follow {
                let when = if f == Followed::After {
                    "after"
                } else {
                    "before"
                };
                text += &format!("; moved to {} {when} the close", n.server.ip());
            }
            (word, text)
        }
        Some(x) if x.by == Side::Client && x.at < end => match follow {
            Some((n, Followed::Recycled)) => (
                "recycled",
                format!(
                    "recycled at {} onto the same retiring proxy",
                    from(x.at.min(n.opened.max(at)))
                ),
            ),
            Some((n, Followed::Before)) => (
                "moved",
                match close {
                    Some(cl) => format!(
                        "moved to {} at {}, {:.1} s before the close",
                        n.server.ip(),
                        from(n.opened),
                        cl - n.opened
                    ),
                    None => format!("moved to {} at {}", n.server.ip(), from(n.opened)),
                },
            ),
            Some((n, Followed::After)) => (
                "closed",
                format!(
                    "closed by the client at {}; moved to {} after the close",
                    from(x.at),
                    n.server.ip()
                ),
            ),
            None => (
                "closed",
                format!("closed by the client at {}; no new connection", from(x.at)),
            ),
        },
        Some(x) => (
            "closed",
            format!(
                "closed by the {} at {}",
                if x.by == Side::Client {
                    "client"
                } else {
                    "server"
                },
                from(x.at)
            ),
        ),
        None => ("open", "still open at the end".to_string()),
    };
    ConnVerdict {
        conn: c.id,
        verdict: word.into(),
        text,
    }
}

/// The MOVING's figures and its per-connection verdicts.
pub fn moving_grade(s: &Scope<'_>) -> MovingGrade {
    let n = s.n;
    let end = n.at + n.window;
    let first_new = s
        .members
        .iter()
        .filter(|c| c.opened >= n.at && !s.retiring(c.server))
        .map(|c| c.opened - n.at)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))));
    let opened_after = s.members.iter().filter(|c| c.opened >= n.at).count();
    let to_old: u64 = s
        .members
        .iter()
        .filter(|c| s.retiring(c.server))
        .flat_map(|c| c.traffic.iter())
        .filter(|t| t.at > end)
        .map(|t| t.commands)
        .sum();
    let close = s.close();
    let (resent, reacted) = resent(s, close.unwrap_or(f64::INFINITY));
    let known = offered(s);
    let alternative = known.offered;
    MovingGrade {
        first_new_connection: first_new.map(round),
        close: close.map(|c| round(c - n.at)),
        cut: s.members.iter().filter(|c| s.cut(c)).count(),
        commands_to_old_after_window: to_old,
        reconnects_per_connection: round(opened_after as f64 / peak(&s.members).max(1) as f64),
        resent,
        reacted_to_resent: reacted,
        alternative_offered: alternative,
        dns_unseen_from: known.dns_unseen_from.map(|t| round(t - n.at)),
        known: known.words,
        verdicts: verdicts(s, alternative),
    }
}

/// How long before its first close a client may open the connections that replace those it
/// closes, and have them count as opened after it acted. go-redis hands a connection off make
/// before break: it opens the replacement, then closes the old connection a few milliseconds
/// later, so its replacements, which get the re-sent copy, opened *before* its first close; by
/// that close alone, whether they counted depended on milliseconds, and the verdict with them.
/// A second covers that gap under load; a connection the pool opened for another reason within
/// it is counted too, and is only a loop if the client then closes it on the re-sent copy.
pub const MAKE_BEFORE_BREAK: f64 = 1.0;

/// Connections given a re-sent copy, and those of them the client acted on again.
fn resent(s: &Scope<'_>, close: f64) -> (usize, usize) {
    // When the client first acted on the notification: its first close of a connection after it
    // (less MAKE_BEFORE_BREAK, for the replacements it opened just before).
    let acted = s
        .members
        .iter()
        .filter_map(|c| match c.closed {
            Some(x) if x.by == Side::Client && x.at >= s.n.at => Some(x.at),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    let resent: Vec<&Connection> = s
        .members
        .iter()
        .copied()
        .filter(|c| c.opened > s.n.at && s.receipt(c).is_some())
        .collect();
    let reacted = resent
        .iter()
        .filter(|c| {
            c.opened >= acted - MAKE_BEFORE_BREAK
                && c.closed
                    .is_some_and(|x| x.by == Side::Client && x.at < close)
        })
        .count();
    (resent.len(), reacted)
}

/// The most connections the client had open at once.
fn peak(members: &[&Connection]) -> usize {
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for c in members {
        edges.push((c.opened, 1));
        edges.push((c.closed.map_or(f64::INFINITY, |x| x.at), -1));
    }
    // Closes before opens at the same instant: a replacement is not two connections.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}
