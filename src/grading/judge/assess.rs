//! The judge at work: each client's connections grouped, each rule applied to each notification
//! and to the run, and the grade settled.

use std::collections::{BTreeMap, BTreeSet};

use super::moving;
use super::rules::{died_at, round, OptInCounts, Scope, RULES};
use super::verdicts::{ClientGrade, Counts, Grade, NotificationGrade, Rule, Verdict};
use crate::observe::evidence::{client_of, Connection, Notification, Observations, OptIn, Reached};

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
        rules: run_rules(obs),
        verdict: Verdict::NotJudged,
        counts: Counts::default(),
        passed: false,
        nothing_judged,
        not_exercised: not_exercised(obs),
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
    RULES.iter().map(|r| r.name())
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
    let rules = notification_rules(&s);
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

/// The rules of one notification for one client. A rule whose evidence ends after the client
/// process died is NOT JUDGED: a dead client neither moved nor stayed.
fn notification_rules(s: &Scope<'_>) -> Vec<Rule> {
    let died = died_at(s.obs);
    RULES
        .iter()
        .filter(|check| check.not_exercised(s.obs).is_none())
        .filter_map(|check| {
            let r = check.on_notification(s)?;
            match died {
                Some(d) if d < check.decided_at(s) && r.verdict != Verdict::NotJudged => {
                    Some(Rule::not_judged(
                        check.name(),
                        format!(
                            "the client process died at +{d:.1} s, before this rule's evidence was complete (+{:.1} s)",
                            check.decided_at(s)
                        ),
                    ))
                }
                _ => Some(r),
            }
        })
        .collect()
}

/// The rules the run never put to the test, with why.
fn not_exercised(obs: &Observations) -> Vec<super::verdicts::NotExercised> {
    RULES
        .iter()
        .filter_map(|c| {
            c.not_exercised(obs)
                .map(|why| super::verdicts::NotExercised {
                    rule: c.name().to_string(),
                    why,
                })
        })
        .collect()
}

/// The rules about the whole run.
fn run_rules(obs: &Observations) -> Vec<Rule> {
    RULES.iter().filter_map(|c| c.on_run(obs)).collect()
}
