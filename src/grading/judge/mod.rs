//! One judge of client behaviour during a maintenance, with no I/O.
//!
//! `simulate --grade` (the simulator's narration), `pcap --grade` (a capture of the application's
//! own traffic) and `replay --grade` (either of those read back) all ask the same question: did
//! this client get through the maintenance the way docs/protocol.md says it can? Three pieces of
//! code with three sets of words gave three answers; this module is the one that answers now.
//! The callers turn what they saw into [`Observations`]; [`judge`] returns each rule's result per
//! client and per notification, with a reason in one sentence, and a verdict per connection.
//!
//! The rules are defined in docs/protocol.md (section 8), beside the facts they come from, one
//! file each under [`rules`]. Every result is PASS or FAIL on what was observed, or NOT JUDGED
//! where the evidence is missing, and a grade in which nothing was judged is never a pass: a
//! certifying tool must not pass what it could not see.

pub mod grade_lines;
pub mod moving;
pub mod rules;
pub mod verdicts;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod give_up_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

pub use crate::observe::evidence::ClientProcess;
pub use crate::observe::evidence::{
    client_of, Closed, Connection, DnsAnswer, NodeClose, Notification, Observations, OptIn,
    Publication, Reached, Received, Redirect, Side, SlotMove, Stall, Subscription, Target, Traffic,
    Wait,
};
use rules::{round, OptInCounts, Scope};
pub use verdicts::{
    ClientGrade, ConnVerdict, Counts, Grade, MovingGrade, NotificationGrade, Rule, Verdict,
};

/// Grades every client on every notification.
pub fn judge(obs: &Observations) -> Grade {
    let clients: Vec<ClientGrade> = clients(obs)
        .into_iter()
        .map(|(client, members)| client_grade(obs, client, members))
        .collect();
    let nothing_judged = nothing_judged(obs, &clients);
    let mut g = Grade {
        scenario: obs.source.clone(),
        clients,
        rules: rules::run_rules(obs),
        verdict: Verdict::NotJudged,
        counts: Counts::default(),
        passed: false,
        nothing_judged,
        not_exercised: rules::not_exercised(obs),
        client_process: obs.client_process.clone(),
    };
    g.settle();
    g
}

/// Each client's connections, by id.
fn clients(obs: &Observations) -> BTreeMap<String, Vec<&Connection>> {
    let mut groups: BTreeMap<String, Vec<&Connection>> = BTreeMap::new();
    for c in &obs.connections {
        groups.entry(client_of(c)).or_default().push(c);
    }
    for members in groups.values_mut() {
        members.sort_by_key(|c| c.id);
    }
    groups
}

/// A connection told of a MOVING and the next connection of its client, as its verdict names
/// them (`moved to ... after the close`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Succession {
    pub conn: u64,
    pub next: u64,
    pub followed: moving::Followed,
}

/// Every succession the verdicts of the MOVINGs name, in the grade's order (client, then
/// notification): the report draws them as arrows, from the same decision as the words.
pub fn successions(obs: &Observations) -> Vec<Succession> {
    let mut out = Vec::new();
    for members in clients(obs).into_values() {
        for (index, n) in obs.notifications.iter().enumerate() {
            if n.seq.is_none() || !n.is_moving() {
                continue;
            }
            let s = Scope {
                obs,
                index,
                n,
                members: members.clone(),
                moving: None,
                opt_in: OptInCounts::default(),
            };
            for (c, _, next) in s.successors() {
                if let (Some(f), Some(next)) = (moving::followed(&s, c, next), next) {
                    out.push(Succession {
                        conn: c.id,
                        next: next.id,
                        followed: f,
                    });
                }
            }
        }
    }
    out
}

/// Why no notification rule could be judged, when none could: the client never connected, or
/// no notification reached the run.
fn nothing_judged(obs: &Observations, clients: &[ClientGrade]) -> Option<String> {
    if obs.connections.is_empty() {
        return Some(
            "the client never connected (check that it resolves the simulator's name and reaches its port)".into(),
        );
    }
    let judged = clients
        .iter()
        .any(|c| c.notifications.iter().any(|n| !n.rules.is_empty()));
    (!judged).then(|| "no maintenance notification was observed".to_string())
}

/// The name of every rule the judge has, in the order grades list them.
pub fn rule_names() -> impl Iterator<Item = &'static str> {
    rules::RULES.iter().map(|r| r.name())
}

/// Clients as [`client_of`] names them, for a sentence: one that names itself by neither
/// `CLIENT SETINFO` nor a connection name is called by its host as such.
pub fn clients_in_words<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let words: Vec<String> = names
        .map(|n| match n.parse::<std::net::IpAddr>() {
            Ok(ip) => format!("a client that does not name itself ({ip})"),
            Err(_) => n.to_string(),
        })
        .collect();
    words.join(", ")
}

/// Whether a connection was still open when a notification went out at `at`, or opened after:
/// one closed before could not miss it. A connection a loaded client gives up on in its
/// handshake (its own timeout, before its opt-in) and closes before the maintenance is no
/// connection without warnings; counting it made the opt-in verdict follow the machine's load.
fn open_at(c: &Connection, at: f64) -> bool {
    c.closed.is_none_or(|closed| closed.at >= at)
}

/// How many connections never asked to opt in, how many asked and were refused by the server,
/// and how many had a handshake not seen whole.
fn opt_in_counts<'a>(members: impl Iterator<Item = &'a Connection>) -> OptInCounts {
    let mut n = OptInCounts::default();
    for c in members {
        match &c.opt_in {
            OptIn::Accepted { .. } => {}
            // It asked: the server said no (a server without the feature, or rolled back). The
            // client did its part; what it does next is for the other rules.
            OptIn::Refused => n.refused += 1,
            OptIn::Unknown => n.unknown += 1,
            // The client gave up on its HELLO's reply, held by a stall, before it could opt in:
            // the rest of that handshake was never seen.
            OptIn::NotSent if c.waits.iter().any(|w| w.gave_up) => n.unknown += 1,
            OptIn::NotSent => n.never += 1,
        }
    }
    n
}

fn client_grade(obs: &Observations, client: String, members: Vec<&Connection>) -> ClientGrade {
    let mut opted_in = BTreeMap::new();
    for c in &members {
        if let OptIn::Accepted { endpoint_type } = &c.opt_in {
            let t = endpoint_type.clone().unwrap_or_else(|| "default".into());
            *opted_in.entry(t).or_insert(0) += 1;
        }
    }
    let counts = opt_in_counts(members.iter().copied());
    let traffic = members.iter().flat_map(|c| c.traffic.iter());
    let (commands, errors) = traffic.fold((0, 0), |(a, b), t| (a + t.commands, b + t.errors));
    let reached = reached(&members);
    let notifications = obs
        .notifications
        .iter()
        .enumerate()
        .filter(|(_, n)| n.seq.is_some())
        .map(|(index, n)| {
            let counts = opt_in_counts(members.iter().copied().filter(|c| open_at(c, n.at)));
            notification_grade(obs, index, n, members.clone(), counts)
        })
        .collect();
    ClientGrade {
        client,
        connections: members.len(),
        reached,
        opted_in,
        never_opted_in: counts.never,
        refused_opt_in: counts.refused,
        handshake_unknown: counts.unknown,
        commands,
        errors,
        notifications,
    }
}

fn reached(members: &[&Connection]) -> String {
    let ways: BTreeSet<String> = members
        .iter()
        .map(|c| match &c.reached {
            Reached::Name { name } => format!("by name {name}"),
            Reached::Address => "by address".into(),
            Reached::Unknown => "unknown".into(),
            Reached::SharedHost { name, .. } => {
                format!("by name {name} or by address, not told apart")
            }
        })
        .collect();
    ways.into_iter().collect::<Vec<_>>().join(", ")
}

fn notification_grade<'a>(
    obs: &'a Observations,
    index: usize,
    p: &'a Notification,
    members: Vec<&'a Connection>,
    opt_in: OptInCounts,
) -> NotificationGrade {
    let mut s = Scope {
        obs,
        index,
        n: p,
        members,
        moving: None,
        opt_in,
    };
    let end = p.at + p.window;
    let inside = |t: f64| t >= p.at && t <= end;
    let (mut ci, mut co, mut fi, mut fo) = (0, 0, 0, 0);
    for c in &s.members {
        for t in &c.traffic {
            if inside(t.at) {
                ci += t.commands;
                fi += t.errors + t.unanswered;
            } else {
                co += t.commands;
                fo += t.errors + t.unanswered;
            }
        }
    }
    let received = s.members.iter().filter(|c| s.receipt(c).is_some()).count();
    let moving = p.is_moving().then(|| moving::moving_grade(&s));
    s.moving = moving.as_ref();
    let rules = rules::notification_rules(&s);
    NotificationGrade {
        notification: p.name(),
        at: round(p.at),
        window: p.window,
        received,
        commands_inside: ci,
        commands_outside: co,
        failed_inside: fi,
        failed_outside: fo,
        moving,
        rules,
    }
}
