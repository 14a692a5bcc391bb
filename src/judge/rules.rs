//! The five rules and the per-connection verdicts, on one client's connections and one
//! notification. What the client could know decides `moved-before-close`: how it connected, the
//! endpoint type it asked for, the MOVING's target and what DNS answered before the close.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use super::input::{same_name, Connection, Notification, Observations, OptIn, Reached, Side};
use super::output::{ConnVerdict, MovingGrade, Rule};

/// New connections per connection before it is a storm.
pub const STORM_PER_CONNECTION: usize = 3;
/// Connections closed by the client after a re-sent MOVING before it is a loop.
pub const LOOP_REACTIONS: usize = 2;
/// DNS lines shown per client and notification.
const DNS_LINES: usize = 8;

/// One client's connections and one notification, with what follows from them.
pub struct Scope<'a> {
    pub obs: &'a Observations,
    pub index: usize,
    pub n: &'a Notification,
    pub members: Vec<&'a Connection>,
}

impl Scope<'_> {
    fn retiring(&self, server: SocketAddr) -> bool {
        self.n.retiring.contains(&server)
    }

    /// When the server closed this retiring address after the notification.
    pub fn close_of(&self, server: SocketAddr) -> Option<f64> {
        if !self.retiring(server) {
            return None;
        }
        self.obs
            .closes
            .iter()
            .filter(|c| c.server == server && c.at >= self.n.at)
            .map(|c| c.at)
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// The first node-wide close of a retiring address.
    pub fn close(&self) -> Option<f64> {
        self.n
            .retiring
            .iter()
            .filter_map(|s| self.close_of(*s))
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// This connection was still open on a retiring address when the server closed it.
    pub fn cut(&self, c: &Connection) -> bool {
        self.close_of(c.server).is_some_and(|close| {
            c.opened < close
                && c.closed
                    .is_none_or(|x| x.at >= close && x.by == Side::Server)
        })
    }

    /// When the connection received this notification (its first copy).
    pub fn receipt(&self, c: &Connection) -> Option<f64> {
        c.received
            .iter()
            .filter(|r| r.notification == self.index)
            .map(|r| r.at)
            .next()
    }

    fn receivers(&self) -> Vec<(&Connection, f64)> {
        let mut r: Vec<(&Connection, f64)> = self
            .members
            .iter()
            .filter_map(|c| self.receipt(c).map(|t| (*c, t)))
            .collect();
        r.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.id.cmp(&b.0.id)));
        r
    }

    /// Each receiver's successor: the earliest connection of the client opened after its
    /// receipt and not already another's, taken in order of receipt.
    fn successors(&self) -> Vec<(&Connection, f64, Option<&Connection>)> {
        let mut opened: Vec<&Connection> = self.members.clone();
        opened.sort_by(|a, b| a.opened.total_cmp(&b.opened).then(a.id.cmp(&b.id)));
        let mut taken = BTreeSet::new();
        self.receivers()
            .into_iter()
            .map(|(c, at)| {
                let next = opened
                    .iter()
                    .find(|s| s.id != c.id && s.opened >= at && !taken.contains(&s.id))
                    .copied();
                if let Some(s) = next {
                    taken.insert(s.id);
                }
                (c, at, next)
            })
            .collect()
    }
}

/// What could the client know: whether anything but a retiring address was offered before the
/// close, and the facts, in words.
pub fn offered(s: &Scope<'_>) -> (bool, Vec<String>) {
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
        Some(super::input::Target::Null) | None => "null".to_string(),
        Some(t @ super::input::Target::Address(a)) => {
            let other = t
                .ip()
                .is_some_and(|ip| s.n.retiring.iter().all(|r| r.ip() != ip));
            offered |= other;
            a.clone()
        }
        Some(super::input::Target::Name(a)) => {
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
    if !names.is_empty() {
        let (dns_offered, lines) = dns_words(s, &names, &on_old, close);
        offered |= dns_offered;
        known.extend(lines);
    }
    (offered, known)
}

fn reached_words(conns: &[&Connection]) -> String {
    let mut ways = BTreeSet::new();
    for c in conns {
        ways.insert(match &c.reached {
            Reached::Name { name } => format!("by name {name}"),
            Reached::Address => format!("by address {}", c.server),
            Reached::Unknown => "in a way not observed".into(),
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
    let ours = |a: &&super::input::DnsAnswer| names.iter().any(|n| same_name(n, &a.name));
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

/// `+7.5 s after`, or `0.2 s before`.
pub fn offset(d: f64) -> String {
    if d < 0.0 {
        format!("{:.1} s before", -d)
    } else {
        format!("+{d:.1} s after")
    }
}

/// The verdict of every connection that received the notification.
pub fn verdicts(s: &Scope<'_>, offered: bool) -> Vec<ConnVerdict> {
    let close = s.close();
    s.successors()
        .into_iter()
        .map(|(c, at, next)| verdict(s, c, at, next, close, offered))
        .collect()
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
    let (word, text) = match c.closed {
        _ if s.cut(c) => {
            let close = s.close_of(c.server).unwrap_or(end);
            let mut text = format!("cut by the close at {}", from(close));
            let mut word = "cut";
            if !offered {
                text = format!("stayed: nothing else was offered; {text}");
                word = "stayed";
            }
            if let Some(n) = next.filter(|n| !s.retiring(n.server)) {
                let when = if n.opened >= close { "after" } else { "before" };
                text += &format!("; moved to {} {when} the close", n.server.ip());
            }
            (word, text)
        }
        Some(x) if x.by == Side::Client && x.at < end => match next {
            Some(n) if s.retiring(n.server) => (
                "recycled",
                format!(
                    "recycled at {} onto the same retiring proxy",
                    from(x.at.min(n.opened.max(at)))
                ),
            ),
            Some(n) if n.opened < end => (
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
            Some(n) => (
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
    let (alternative, known) = offered(s);
    MovingGrade {
        first_new_connection: first_new.map(round),
        close: close.map(|c| round(c - n.at)),
        cut: s.members.iter().filter(|c| s.cut(c)).count(),
        commands_to_old_after_window: to_old,
        reconnects_per_connection: round(opened_after as f64 / peak(&s.members).max(1) as f64),
        resent,
        reacted_to_resent: reacted,
        alternative_offered: alternative,
        known,
        verdicts: verdicts(s, alternative),
    }
}

/// Connections given a re-sent copy, and those of them the client acted on again.
fn resent(s: &Scope<'_>, close: f64) -> (usize, usize) {
    // When the client first acted on the notification: its first close of a connection after it.
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
            c.opened >= acted
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

/// The four MOVING rules, on its figures.
pub fn moving_rules(s: &Scope<'_>, m: &MovingGrade) -> Vec<Rule> {
    let name = s.n.name();
    // The rule's reason names what was offered; the resolutions are in the table above it.
    let known: Vec<&str> = m
        .known
        .iter()
        .map(String::as_str)
        .filter(|k| !k.starts_with("resolved "))
        .collect();
    let close = match m.close {
        Some(c) => format!("the close at +{c:.1} s after the {name}"),
        None => "no close".into(),
    };
    let moved = if m.cut == 0 {
        rule(
            "moved-before-close",
            true,
            format!("no connection on the retiring address at {close}"),
        )
    } else if !m.alternative_offered {
        rule(
            "moved-before-close",
            true,
            format!(
                "stayed: nothing else was offered ({}); {} connection(s) cut by {close}",
                known.join("; "),
                m.cut
            ),
        )
    } else {
        rule(
            "moved-before-close",
            false,
            format!(
                "{} connection(s) still on the retiring address at {close}, though another was offered ({}; window {} s)",
                m.cut,
                known.join("; "),
                s.n.window
            ),
        )
    };
    vec![
        moved,
        lost_rule(s, m),
        rule(
            "no-storm",
            m.reconnects_per_connection <= STORM_PER_CONNECTION as f64,
            format!(
                "{} new connection(s) per connection at the peak (at most {STORM_PER_CONNECTION})",
                m.reconnects_per_connection
            ),
        ),
        rule(
            "no-loop",
            m.reacted_to_resent < LOOP_REACTIONS,
            format!(
                "{} of {} connection(s) given the re-sent {name} after the client had acted were closed by it before the close (fewer than {LOOP_REACTIONS})",
                m.reacted_to_resent, m.resent
            ),
        ),
    ]
}

/// Commands cut without a reply after the MOVING. Those cut on a connection that had nowhere
/// else to go still count (the application lost them), but the reason says so.
fn lost_rule(s: &Scope<'_>, m: &MovingGrade) -> Rule {
    let (mut lost, mut nowhere) = (0, 0);
    for c in &s.members {
        let n: u64 = c
            .traffic
            .iter()
            .filter(|t| t.at >= s.n.at)
            .map(|t| t.unanswered)
            .sum();
        lost += n;
        if !m.alternative_offered && s.cut(c) {
            nowhere += n;
        }
    }
    let also = if nowhere > 0 {
        format!(" ({nowhere} of them cut by the close on connections that had nowhere else to go)")
    } else {
        String::new()
    };
    rule(
        "no-lost-commands",
        lost == 0,
        format!(
            "{lost} command(s) cut without a reply after the {}{also}",
            s.n.name()
        ),
    )
}

pub fn rule(name: &str, held: bool, detail: String) -> Rule {
    Rule {
        rule: name.into(),
        held,
        detail,
    }
}

pub fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
