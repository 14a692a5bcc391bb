//! One judge of client behaviour during a maintenance, with no I/O.
//!
//! `simulate --grade` (the simulator's narration), `pcap --grade` (a capture of the application's
//! own traffic) and `replay --grade` (either of those read back) all ask the same question: did
//! this client get through the maintenance the way docs/protocol.md says it can? Three pieces of
//! code with three sets of words gave three answers; this module is the one that answers now.
//! The callers turn what they saw into [`Observations`]; [`judge`] returns each rule's result per
//! client and per notification, with a reason in one sentence, and a verdict per connection.
//!
//! The rules are defined in docs/protocol.md (section 8), beside the facts they come from. What
//! the client could know decides `moved-before-close`: a client that was offered nothing but the
//! retiring address (connected by address, a null target, DNS still naming the old proxy until
//! the close) stayed, and that is a pass.

pub mod input;
pub mod lines;
pub mod output;
pub mod process;
pub mod rules;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

pub use input::{
    Closed, Connection, DnsAnswer, NodeClose, Notification, Observations, OptIn, Reached, Received,
    Side, Target, Traffic,
};
pub use output::{ClientGrade, ConnVerdict, Grade, MovingGrade, NotificationGrade, Rule};
pub use process::ClientProcess;
use rules::{moving_grade, moving_rules, round, rule, Scope};

/// Grades every client on every notification.
pub fn judge(obs: &Observations) -> Grade {
    let mut groups: BTreeMap<String, Vec<&Connection>> = BTreeMap::new();
    for c in &obs.connections {
        groups.entry(client_of(c)).or_default().push(c);
    }
    let clients: Vec<ClientGrade> = groups
        .into_iter()
        .map(|(client, mut members)| {
            members.sort_by_key(|c| c.id);
            client_grade(obs, client, members)
        })
        .collect();
    let passed = clients.iter().all(|c| {
        c.notifications
            .iter()
            .all(|n| n.rules.iter().all(|r| r.held))
    });
    Grade {
        scenario: obs.source.clone(),
        clients,
        passed,
        client_process: obs.client_process.clone(),
    }
}

/// The client a connection belongs to: `lib-name/lib-ver`, else its name, else its host.
pub fn client_of(c: &Connection) -> String {
    match (&c.lib_name, &c.lib_ver, &c.name) {
        (Some(n), Some(v), _) => format!("{n}/{v}"),
        (Some(n), None, _) => n.clone(),
        (None, _, Some(name)) => name.clone(),
        _ => c.client.ip().to_string(),
    }
}

fn client_grade(obs: &Observations, client: String, members: Vec<&Connection>) -> ClientGrade {
    let mut opted_in = BTreeMap::new();
    let (mut never, mut unknown) = (0, 0);
    for c in &members {
        match &c.opt_in {
            OptIn::Accepted { endpoint_type } => {
                let t = endpoint_type.clone().unwrap_or_else(|| "default".into());
                *opted_in.entry(t).or_insert(0) += 1;
            }
            OptIn::Unknown => unknown += 1,
            OptIn::Refused | OptIn::NotSent => never += 1,
        }
    }
    let traffic = members.iter().flat_map(|c| c.traffic.iter());
    let (commands, errors) = traffic.fold((0, 0), |(a, b), t| (a + t.commands, b + t.errors));
    let reached = reached(&members);
    let notifications = obs
        .notifications
        .iter()
        .enumerate()
        .filter(|(_, n)| n.seq.is_some())
        .map(|(index, n)| {
            let scope = Scope {
                obs,
                index,
                n,
                members: members.clone(),
            };
            notification_grade(&scope, never, unknown)
        })
        .collect();
    ClientGrade {
        client,
        connections: members.len(),
        reached,
        opted_in,
        never_opted_in: never,
        handshake_unknown: unknown,
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
        })
        .collect();
    ways.into_iter().collect::<Vec<_>>().join(", ")
}

fn notification_grade(s: &Scope<'_>, never: usize, unknown: usize) -> NotificationGrade {
    let p = s.n;
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
    let unseen = if unknown > 0 {
        format!(" ({unknown} whose handshake was not observed are not counted)")
    } else {
        String::new()
    };
    let mut rules = vec![rule(
        "opt-in",
        never == 0,
        format!("{never} connection(s) never opted in{unseen}"),
    )];
    let moving = p.is_moving().then(|| moving_grade(s));
    if let Some(m) = &moving {
        rules.extend(moving_rules(s, m));
    }
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
