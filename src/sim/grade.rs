//! `simulate --grade`: how each client behaved during the scenario, judged from outside.
//!
//! Client libraries test their handoff code from inside (their own assertions, their own fake
//! server); nobody checks from the server's side what a client actually did with a MOVING. The
//! simulator sees it all: who opted in and how, every connection and from where, every command
//! and error, the close. This module turns the simulator's narration ([`SimEvent`]s) into a grade,
//! per client (grouped by `CLIENT SETINFO lib-name/lib-ver`, else its `SETNAME`, else its source
//! address) and per notification, with a few rules taken from docs/protocol.md:
//!
//! | rule | holds when | from |
//! |---|---|---|
//! | `opt-in` | every connection of the client opted in | section 1 (the opt-in is per connection) |
//! | `moved-before-close` | no connection was still on the retiring proxy when the server closed it, unless nothing else was ever offered (no named successor, and DNS named only retiring proxies until the close) | sections 4 and 5 (the close is node-wide; "window expired with the record still stale" is normal) |
//! | `no-lost-commands` | no command was cut without its reply | section 4 (a handoff ahead of the close loses nothing) |
//! | `no-storm` | at most 3 new connections after the MOVING per connection of the client's peak (one recycle and one forced reconnect each are normal) | section 6 (go-redis: 3 retries) |
//! | `no-loop` | fewer than 2 connections that were opened after the client first acted on the MOVING, received the re-sent MOVING (same seq), and were then closed by the client before the close | section 5 rule 5 (the loop seen live: twelve recycles) |
//!
//! Times are scenario seconds counted from the notification (the clock is scaled back by the
//! speed), so a sped-up run grades like a real-time one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use super::scenario::{Action, Endpoint, Push, PushKind, Scenario};
use super::{SimEvent, What, Why};

/// New connections per connection before it is a storm.
const STORM_PER_CONNECTION: usize = 3;
/// Connections closed by the client after a re-sent MOVING before it is a loop.
const LOOP_REACTIONS: usize = 2;

/// The whole grade.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Grade {
    pub scenario: String,
    pub clients: Vec<ClientGrade>,
    /// True when every rule held for every client.
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientGrade {
    /// `lib-name/lib-ver`, the connection name, or the source address.
    pub client: String,
    pub connections: usize,
    /// Connections that opted in, by the endpoint type asked for (`default` for a bare ON).
    pub opted_in: BTreeMap<String, usize>,
    pub never_opted_in: usize,
    pub commands: u64,
    pub errors: u64,
    pub notifications: Vec<NotificationGrade>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NotificationGrade {
    /// e.g. `MOVING seq 0`.
    pub notification: String,
    /// Scenario clock when it was pushed, and its declared window (seconds).
    pub at: f64,
    pub window: f64,
    /// Connections of this client it was written to.
    pub received: usize,
    pub commands_inside: u64,
    pub commands_outside: u64,
    /// Error replies plus commands cut without a reply.
    pub failed_inside: u64,
    pub failed_outside: u64,
    /// MOVING only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moving: Option<MovingGrade>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MovingGrade {
    /// Seconds after the MOVING of the first connection to a proxy that is not retiring.
    pub first_new_connection: Option<f64>,
    /// Seconds after the MOVING the server closed the retiring proxy.
    pub close: Option<f64>,
    /// Connections still on the retiring proxy at the close.
    pub cut: usize,
    /// Commands to the retiring proxy after the window ended.
    pub commands_to_old_after_window: u64,
    /// New connections after the MOVING, per connection the client had open at its peak.
    pub reconnects_per_connection: f64,
    /// Connections that received the re-sent MOVING, and of those, opened after the client first
    /// acted on the MOVING (its first close of a connection) and closed by the client before the
    /// server's close: acting on the same event again.
    pub resent: usize,
    pub reacted_to_resent: usize,
    /// Whether anything but a retiring proxy was offered before the close.
    pub alternative_offered: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Rule {
    pub rule: &'static str,
    pub held: bool,
    /// The figures the verdict rests on.
    pub detail: String,
}

#[derive(Default)]
struct ConnInfo {
    proxy: Option<SocketAddr>,
    peer: Option<SocketAddr>,
    opened: f64,
    closed: Option<(f64, bool)>,
    opted_in: Option<String>,
    lib_name: Option<String>,
    lib_ver: Option<String>,
    name: Option<String>,
    /// (clock, commands, failed)
    traffic: Vec<(f64, u64, u64, u64)>,
    /// (clock, why) of each notification written.
    sent: Vec<(f64, Why)>,
}

impl ConnInfo {
    fn client(&self) -> String {
        match (&self.lib_name, &self.lib_ver, &self.name) {
            (Some(n), Some(v), _) => format!("{n}/{v}"),
            (Some(n), None, _) => n.clone(),
            (None, _, Some(name)) => name.clone(),
            _ => self
                .peer
                .map(|p| p.ip().to_string())
                .unwrap_or_else(|| "unknown".into()),
        }
    }
}

struct Pushed {
    at: f64,
    kind: Option<PushKind>,
    summary: String,
    seq: Option<i64>,
    window: f64,
    named_target: bool,
    proxies: Vec<SocketAddr>,
    close: Option<f64>,
    /// Connections live on its proxies at its close.
    cut: HashSet<u64>,
    alternative: bool,
}

/// Grades a finished run from its narration (every event, in order).
pub fn grade(scenario: &Scenario, events: &[SimEvent]) -> Grade {
    let mut c = Collector {
        conns: HashMap::new(),
        pushes: Vec::new(),
        dns: scenario.dns.clone(),
    };
    for e in events {
        c.feed(scenario, e);
    }
    build(scenario, &c.conns, &c.pushes)
}

/// What the narration says, per connection and per notification.
struct Collector {
    conns: HashMap<u64, ConnInfo>,
    pushes: Vec<Pushed>,
    /// The records DNS serves now.
    dns: Vec<IpAddr>,
}

impl Collector {
    fn feed(&mut self, scenario: &Scenario, e: &SimEvent) {
        // Before the clock starts, events count as "before everything".
        let t = e.clock.unwrap_or(-1.0);
        match &e.what {
            What::Connected { conn, proxy, peer } => {
                let c = self.conns.entry(*conn).or_default();
                c.proxy = Some(*proxy);
                c.peer = Some(*peer);
                c.opened = t;
            }
            What::OptIn {
                conn,
                on: true,
                accepted: true,
                endpoint_type,
                ..
            } => {
                self.conns.entry(*conn).or_default().opted_in =
                    Some(endpoint_type.clone().unwrap_or_else(|| "default".into()));
            }
            What::ClientInfo {
                conn, field, value, ..
            } => {
                let c = self.conns.entry(*conn).or_default();
                let v = Some(value.clone());
                match *field {
                    "lib-name" => c.lib_name = v,
                    "lib-ver" => c.lib_ver = v,
                    _ => c.name = v,
                }
            }
            What::Traffic {
                conn,
                commands,
                errors,
                unanswered,
                ..
            } => self.conns.entry(*conn).or_default().traffic.push((
                t,
                u64::from(*commands),
                u64::from(*errors),
                u64::from(*unanswered),
            )),
            What::Sent { conn, why, .. } => {
                self.conns.entry(*conn).or_default().sent.push((t, *why));
            }
            What::Disconnected {
                conn, by_server, ..
            } => self.conns.entry(*conn).or_default().closed = Some((t, *by_server)),
            What::Pushed {
                line,
                summary,
                seq,
                proxies,
                ..
            } => self.pushed(scenario, t, *line, summary, *seq, proxies),
            What::Dns { records, .. } => {
                self.dns = records.clone();
                for p in self.pushes.iter_mut().filter(|p| p.close.is_none()) {
                    p.alternative |= offers_other(&self.dns, &p.proxies);
                }
            }
            What::Closed { proxy, .. } => self.closed(t, *proxy),
            _ => {}
        }
    }

    fn pushed(
        &mut self,
        scenario: &Scenario,
        t: f64,
        line: usize,
        summary: &str,
        seq: Option<i64>,
        proxies: &[SocketAddr],
    ) {
        let step = scenario.steps.iter().find(|s| s.line == line);
        let (kind, window, named_target) = match step.map(|s| &s.action) {
            Some(Action::Push {
                push:
                    Push::Structured {
                        kind, time, target, ..
                    },
                ..
            }) => (
                Some(*kind),
                time.unwrap_or(0) as f64,
                matches!(target, Some(Endpoint::Text(_) | Endpoint::Asked(_))),
            ),
            _ => (None, 0.0, false),
        };
        self.pushes.push(Pushed {
            at: t,
            kind,
            summary: summary.split(' ').next().unwrap_or("").to_string(),
            seq,
            window,
            named_target,
            proxies: proxies.to_vec(),
            close: None,
            cut: HashSet::new(),
            alternative: named_target || offers_other(&self.dns, proxies),
        });
    }

    /// A node-wide close: the connections still open on that proxy are cut.
    fn closed(&mut self, t: f64, proxy: SocketAddr) {
        let conns = &self.conns;
        for p in self
            .pushes
            .iter_mut()
            .filter(|p| p.close.is_none() && p.proxies.contains(&proxy))
        {
            p.close = Some(t);
            p.cut = conns
                .iter()
                .filter(|(_, c)| c.proxy == Some(proxy) && c.closed.is_none())
                .map(|(id, _)| *id)
                .collect();
        }
    }
}

/// DNS names an address that is not one of the retiring proxies.
fn offers_other(dns: &[IpAddr], proxies: &[SocketAddr]) -> bool {
    dns.iter().any(|ip| proxies.iter().all(|p| p.ip() != *ip))
}

fn build(scenario: &Scenario, conns: &HashMap<u64, ConnInfo>, pushes: &[Pushed]) -> Grade {
    let mut groups: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (id, c) in conns {
        if c.proxy.is_some() {
            groups.entry(c.client()).or_default().push(*id);
        }
    }
    let clients: Vec<ClientGrade> = groups
        .into_iter()
        .map(|(client, mut ids)| {
            ids.sort_unstable();
            let members: Vec<(u64, &ConnInfo)> = ids.iter().map(|id| (*id, &conns[id])).collect();
            client_grade(client, &members, pushes)
        })
        .collect();
    let passed = clients.iter().all(|c| {
        c.notifications
            .iter()
            .all(|n| n.rules.iter().all(|r| r.held))
    });
    Grade {
        scenario: scenario.name.clone(),
        clients,
        passed,
    }
}

fn client_grade(client: String, members: &[(u64, &ConnInfo)], pushes: &[Pushed]) -> ClientGrade {
    let mut opted_in = BTreeMap::new();
    for (_, c) in members {
        if let Some(t) = &c.opted_in {
            *opted_in.entry(t.clone()).or_insert(0) += 1;
        }
    }
    let never = members.iter().filter(|(_, c)| c.opted_in.is_none()).count();
    let traffic = members.iter().flat_map(|(_, c)| c.traffic.iter());
    let (commands, errors) = traffic.fold((0, 0), |(a, b), t| (a + t.1, b + t.2));
    let notifications = pushes
        .iter()
        .filter(|p| p.seq.is_some())
        .map(|p| notification_grade(p, members, never))
        .collect();
    ClientGrade {
        client,
        connections: members.len(),
        opted_in,
        never_opted_in: never,
        commands,
        errors,
        notifications,
    }
}

fn notification_grade(p: &Pushed, members: &[(u64, &ConnInfo)], never: usize) -> NotificationGrade {
    let end = p.at + p.window;
    let inside = |t: f64| t >= p.at && t <= end;
    let (mut ci, mut co, mut fi, mut fo) = (0, 0, 0, 0);
    for (_, c) in members {
        for &(t, n, err, cut) in &c.traffic {
            if inside(t) {
                ci += n;
                fi += err + cut;
            } else {
                co += n;
                fo += err + cut;
            }
        }
    }
    let received = members
        .iter()
        .filter(|(_, c)| c.sent.iter().any(|(t, _)| *t >= p.at))
        .count();
    let mut rules = vec![Rule {
        rule: "opt-in",
        held: never == 0,
        detail: format!("{never} connection(s) never opted in"),
    }];
    let moving = (p.kind == Some(PushKind::Moving)).then(|| moving_grade(p, members));
    if let Some(m) = &moving {
        rules.extend(moving_rules(p, m, members));
    }
    NotificationGrade {
        notification: match p.seq {
            Some(s) => format!("{} seq {s}", p.summary),
            None => p.summary.clone(),
        },
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

fn moving_grade(p: &Pushed, members: &[(u64, &ConnInfo)]) -> MovingGrade {
    let end = p.at + p.window;
    let old = |c: &ConnInfo| c.proxy.is_some_and(|x| p.proxies.contains(&x));
    let first_new = members
        .iter()
        .filter(|(_, c)| c.opened >= p.at && !old(c))
        .map(|(_, c)| c.opened - p.at)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))));
    let opened_after = members.iter().filter(|(_, c)| c.opened >= p.at).count();
    let to_old: u64 = members
        .iter()
        .filter(|(_, c)| old(c))
        .flat_map(|(_, c)| c.traffic.iter())
        .filter(|t| t.0 > end)
        .map(|t| t.1)
        .sum();
    let close = p.close.unwrap_or(f64::INFINITY);
    // When the client first acted on the MOVING: its first close of a connection after it.
    let acted = members
        .iter()
        .filter_map(|(_, c)| match c.closed {
            Some((t, false)) if t >= p.at => Some(t),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    let resent: Vec<&ConnInfo> = members
        .iter()
        .filter(|(_, c)| c.sent.iter().any(|(t, w)| *t >= p.at && *w == Why::Resent))
        .map(|(_, c)| *c)
        .collect();
    let reacted = resent
        .iter()
        .filter(|c| c.opened >= acted && matches!(c.closed, Some((t, false)) if t < close))
        .count();
    MovingGrade {
        first_new_connection: first_new.map(round),
        close: p.close.map(|c| round(c - p.at)),
        cut: members.iter().filter(|(id, _)| p.cut.contains(id)).count(),
        commands_to_old_after_window: to_old,
        reconnects_per_connection: round(opened_after as f64 / peak(members).max(1) as f64),
        resent: resent.len(),
        reacted_to_resent: reacted,
        alternative_offered: p.alternative,
    }
}

/// The most connections the client had open at once.
fn peak(members: &[(u64, &ConnInfo)]) -> usize {
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for (_, c) in members {
        edges.push((c.opened, 1));
        edges.push((c.closed.map_or(f64::INFINITY, |(t, _)| t), -1));
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

fn moving_rules(p: &Pushed, m: &MovingGrade, members: &[(u64, &ConnInfo)]) -> Vec<Rule> {
    let close = match m.close {
        Some(c) => format!("the close at +{c} s"),
        None => "no close".into(),
    };
    let moved = if m.cut == 0 {
        Rule {
            rule: "moved-before-close",
            held: true,
            detail: format!("no connection on the retiring proxy at {close}"),
        }
    } else if !m.alternative_offered {
        Rule {
            rule: "moved-before-close",
            held: true,
            detail: format!(
                "{} connection(s) cut at {close}, expected: no successor named and DNS named only \
                 the retiring proxy until then (section 5: window expired, record still stale)",
                m.cut
            ),
        }
    } else {
        let offered = if p.named_target {
            "a successor was named".to_string()
        } else {
            "DNS named another proxy".to_string()
        };
        Rule {
            rule: "moved-before-close",
            held: false,
            detail: format!(
                "{} connection(s) still on the retiring proxy at {close} ({offered}; window {} s)",
                m.cut, p.window
            ),
        }
    };
    let lost: u64 = members
        .iter()
        .flat_map(|(_, c)| c.traffic.iter())
        .filter(|t| t.0 >= p.at)
        .map(|t| t.3)
        .sum();
    vec![
        moved,
        Rule {
            rule: "no-lost-commands",
            held: lost == 0,
            detail: format!("{lost} command(s) cut without a reply after the MOVING"),
        },
        Rule {
            rule: "no-storm",
            held: m.reconnects_per_connection <= STORM_PER_CONNECTION as f64,
            detail: format!(
                "{} new connection(s) per connection at the peak (at most {STORM_PER_CONNECTION})",
                m.reconnects_per_connection
            ),
        },
        Rule {
            rule: "no-loop",
            held: m.reacted_to_resent < LOOP_REACTIONS,
            detail: format!(
                "{} of {} connection(s) given the re-sent MOVING after the client had acted were \
                 closed by it before the close (fewer than {LOOP_REACTIONS})",
                m.reacted_to_resent, m.resent
            ),
        },
    ]
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Grade {
    /// The table printed at the end of `simulate --grade`.
    pub fn table(&self) -> String {
        let mut out = format!("grade: scenario {}\n", self.scenario);
        for c in &self.clients {
            let how: Vec<String> = c.opted_in.iter().map(|(t, n)| format!("{n} {t}")).collect();
            let _ = writeln!(
                out,
                "client {}: {} connection(s), opted in: {}, never opted in: {}, {} command(s), {} error(s)",
                super::escape::escape(c.client.as_bytes()),
                c.connections,
                if how.is_empty() { "none".into() } else { how.join(", ") },
                c.never_opted_in,
                c.commands,
                c.errors
            );
            for n in &c.notifications {
                let _ = writeln!(
                    out,
                    "  {} at +{} s (window {} s): received by {}, commands {} inside / {} outside, failed {} inside / {} outside",
                    n.notification, n.at, n.window, n.received, n.commands_inside,
                    n.commands_outside, n.failed_inside, n.failed_outside
                );
                if let Some(m) = &n.moving {
                    let first = m
                        .first_new_connection
                        .map_or("never".to_string(), |t| format!("+{t} s"));
                    let _ = writeln!(
                        out,
                        "    first connection to another proxy {first}, cut at the close {}, commands to the old proxy after the window {}, reconnects per connection {}, re-sent MOVING {} (acted on {})",
                        m.cut, m.commands_to_old_after_window, m.reconnects_per_connection,
                        m.resent, m.reacted_to_resent
                    );
                }
                for r in &n.rules {
                    let verdict = if r.held { "PASS" } else { "FAIL" };
                    let _ = writeln!(out, "    {verdict} {:<19} {}", r.rule, r.detail);
                }
            }
        }
        let _ = writeln!(
            out,
            "grade: {}",
            if self.passed {
                "every rule held"
            } else {
                "a rule failed"
            }
        );
        out
    }
}
