//! `simulate --grade`: the simulator's narration ([`SimEvent`]s) turned into the judge's
//! observations ([`crate::grading::judge`]), then judged.
//!
//! The simulator sees everything from the server's side: every connection and from where, the
//! opt-in and the endpoint type asked for, `CLIENT SETINFO`, every notification written, the
//! commands and their errors, who closed what, the DNS records it serves and every query it
//! answered. A connection counts as reached by name when its host asked the simulator's DNS for
//! the hostname before it connected and was answered with the proxy it connected to; otherwise
//! by address. The rules themselves live in the judge (docs/protocol.md, section 8).
//!
//! Times are scenario seconds (the clock is scaled back by the speed), so a sped-up run grades
//! like a real-time one; events before the clock started count as second -1.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::grading::judge::{
    self, Closed, Connection, DnsAnswer, NodeClose, Notification, Observations, OptIn, Publication,
    Reached, Received, Redirect, Side, SlotMove, Stall, Subscription, Target, Traffic, Wait,
};
pub use crate::grading::judge::{ClientGrade, Grade, MovingGrade, NotificationGrade, Rule};

use crate::simulator::sim::scenario::{Action, Endpoint, Push, Scenario, StructuredPush};
use crate::simulator::sim::{SimEvent, What, HOSTNAME};

/// Grades a finished run from its narration (every event, in order).
pub fn grade(scenario: &Scenario, events: &[SimEvent], speed: f64) -> Grade {
    judge::judge(&observations(scenario, events, speed))
}

/// The judge's observations of a run at `speed`, from its narration. Stalls and waits last real
/// seconds (a client's timeout runs on the wall clock); their place on the timeline is scenario
/// seconds like everything else.
pub fn observations(scenario: &Scenario, events: &[SimEvent], speed: f64) -> Observations {
    let mut c = Collector {
        obs: Observations {
            source: format!("scenario {}", scenario.name),
            speed: Some(speed),
            ended: Some(scenario.end),
            ..Observations::default()
        },
        index: HashMap::new(),
        records: scenario.dns.clone(),
        queries: Vec::new(),
    };
    c.answer(-1.0, None);
    for e in events {
        c.feed(scenario, e);
    }
    c.finish()
}

struct Collector {
    obs: Observations,
    /// Connection id to its index in `obs.connections`.
    index: HashMap<u64, usize>,
    /// The records DNS serves now.
    records: Vec<IpAddr>,
    /// (clock, host, records answered) of each query for the hostname.
    queries: Vec<(f64, IpAddr, Vec<IpAddr>)>,
}

impl Collector {
    fn conn(&mut self, id: u64) -> Option<&mut Connection> {
        let i = *self.index.get(&id)?;
        self.obs.connections.get_mut(i)
    }

    fn speed(&self) -> f64 {
        self.obs.speed.unwrap_or(1.0)
    }

    fn answer(&mut self, t: f64, to: Option<IpAddr>) {
        self.obs.dns.push(DnsAnswer {
            at: t,
            name: HOSTNAME.trim_end_matches('.').into(),
            records: self.records.clone(),
            to,
            ttl: None,
        });
    }

    fn feed(&mut self, scenario: &Scenario, e: &SimEvent) {
        let t = e.clock.unwrap_or(-1.0);
        match &e.what {
            What::Connected { conn, proxy, peer } => self.connected(t, *conn, *proxy, *peer),
            What::OptIn {
                conn,
                on: true,
                accepted,
                endpoint_type,
                ..
            } => self.opted_in(*conn, *accepted, endpoint_type),
            What::ClientInfo {
                conn, field, value, ..
            } => self.client_info(*conn, field, value),
            What::Traffic {
                conn,
                commands,
                errors,
                unanswered,
                ..
            } => {
                if let Some(c) = self.conn(*conn) {
                    c.traffic.push(Traffic {
                        at: t,
                        commands: u64::from(*commands),
                        errors: u64::from(*errors),
                        unanswered: u64::from(*unanswered),
                    });
                }
            }
            What::Sent { conn, proxy, .. } => self.sent(t, *conn, *proxy),
            What::Disconnected {
                conn, by_server, ..
            } => {
                if let Some(c) = self.conn(*conn) {
                    let by = if *by_server {
                        Side::Server
                    } else {
                        Side::Client
                    };
                    c.closed.get_or_insert(Closed { at: t, by });
                }
            }
            What::Pushed {
                line,
                summary,
                seq,
                proxies,
                ..
            } => self.pushed(scenario, t, *line, summary, *seq, proxies),
            What::Dns { records, .. } => {
                self.records = records.clone();
                self.answer(t, None);
            }
            What::Resolved { from, name }
                if crate::observe::evidence::same_name(name, HOSTNAME) =>
            {
                self.queries.push((t, from.ip(), self.records.clone()));
                self.answer(t, Some(from.ip()));
            }
            What::Closed { proxy, .. } => self.obs.closes.push(NodeClose {
                at: t,
                server: *proxy,
            }),
            What::Stalled {
                proxies, seconds, ..
            } => self.stalled(t, proxies, *seconds),
            What::Redirected { conn, slot, to, .. } => {
                if let Some(c) = self.conn(*conn) {
                    c.redirects.push(Redirect {
                        at: t,
                        slot: Some(*slot),
                        to: Some(*to),
                    });
                }
            }
            What::Command { conn, command, .. } if topology_query(command) => {
                if let Some(c) = self.conn(*conn) {
                    c.topology_queries.push(t);
                }
            }
            What::Waited {
                conn,
                waited,
                gave_up,
                writes,
                ..
            } => self.waited(t, *conn, *waited, *gave_up, writes),
            What::Sharded { .. } | What::Published { .. } => self.pubsub(t, &e.what),
            What::Injected { .. } => self.injected(t, &e.what),
            What::Intercepted { conn, command, .. } if topology_query(command) => {
                if let Some(c) = self.conn(*conn) {
                    c.topology_queries.push(t);
                }
            }
            _ => {}
        }
    }

    /// Sharded subscriptions and the simulator's publications on them.
    fn pubsub(&mut self, t: f64, what: &What) {
        match what {
            What::Sharded {
                conn,
                channel,
                slot,
                on,
                by_server,
                ..
            } => {
                if let Some(c) = self.conn(*conn) {
                    c.sharded.push(Subscription {
                        at: t,
                        channel: channel.clone(),
                        slot: *slot,
                        on: *on,
                        by_server: *by_server,
                    });
                }
            }
            What::Published {
                channel,
                slot,
                recipients,
                ..
            } => self.obs.publications.push(Publication {
                at: t,
                channel: channel.clone(),
                slot: *slot,
                recipients: recipients.clone(),
            }),
            _ => {}
        }
    }

    fn opted_in(&mut self, conn: u64, accepted: bool, endpoint_type: &Option<String>) {
        if let Some(c) = self.conn(conn) {
            c.opt_in = if accepted {
                OptIn::Accepted {
                    endpoint_type: endpoint_type.clone(),
                }
            } else {
                OptIn::Refused
            };
        }
    }

    fn client_info(&mut self, conn: u64, field: &str, value: &str) {
        if let Some(c) = self.conn(conn) {
            let v = Some(value.to_string());
            match field {
                "lib-name" => c.lib_name = v,
                "lib-ver" => c.lib_ver = v,
                _ => c.name = v,
            }
        }
    }

    /// A stall began: it ends `seconds` of real time later, on the scenario clock.
    fn stalled(&mut self, t: f64, proxies: &[SocketAddr], seconds: f64) {
        let until = t + seconds * self.speed();
        self.obs.stalls.push(Stall {
            at: t,
            until,
            seconds,
            servers: proxies.to_vec(),
        });
    }

    /// A command held by a stall stopped waiting at `t`: it had waited since `waited` real
    /// seconds before, and the client wrote more at `writes` (real seconds after it was held).
    fn waited(&mut self, t: f64, conn: u64, waited: f64, gave_up: bool, writes: &[f64]) {
        let at = t - waited * self.speed();
        if let Some(c) = self.conn(conn) {
            c.waits.push(Wait {
                at,
                waited,
                gave_up,
                writes: writes.to_vec(),
            });
        }
    }

    /// A new connection: by address until [`Collector::finish`] finds it resolved the name.
    fn connected(&mut self, t: f64, id: u64, proxy: SocketAddr, peer: SocketAddr) {
        self.index.insert(id, self.obs.connections.len());
        self.obs.connections.push(Connection::opened(
            id,
            (peer, proxy),
            t,
            Reached::Address,
            OptIn::NotSent,
        ));
    }

    /// A notification written to a connection: the latest one pushed on its proxy.
    fn sent(&mut self, t: f64, conn: u64, proxy: SocketAddr) {
        let latest = self
            .obs
            .notifications
            .iter()
            .rposition(|n| n.retiring.contains(&proxy) && n.at <= t);
        if let (Some(notification), Some(c)) = (latest, self.conn(conn)) {
            c.received.push(Received {
                notification,
                at: t,
            });
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
        let port = proxies.first().map_or(0, |p| p.port()).to_string();
        let moves = match step.map(|s| &s.action) {
            Some(Action::Push {
                push: Push::Structured(StructuredPush { moves, .. }),
                ..
            }) => moves
                .iter()
                .map(|m| SlotMove {
                    source: m.source.replace("{port}", &port),
                    target: m.target.replace("{port}", &port),
                    slots: m.slots.clone(),
                })
                .collect(),
            _ => Vec::new(),
        };
        let (window, target) = match step.map(|s| &s.action) {
            Some(Action::Push {
                push: Push::Structured(StructuredPush { time, target, .. }),
                ..
            }) => (
                time.unwrap_or(0) as f64,
                target.as_ref().map(|t| {
                    let port = proxies.first().map_or(0, |p| p.port());
                    match t {
                        Endpoint::Null => Target::Null,
                        Endpoint::Text(text) => {
                            Target::parse(&text.replace("{port}", &port.to_string()))
                        }
                        // Written per connection in the form it asked for (`explicit-target`):
                        // whatever the form, it names the replacement proxy.
                        Endpoint::Asked(ip) => Target::Address(format!("{ip}:{port}")),
                    }
                }),
            ),
            _ => (0.0, None),
        };
        self.obs.notifications.push(Notification {
            at: t,
            kind: summary.split(' ').next().unwrap_or("").to_string(),
            seq,
            window,
            target,
            retiring: proxies.to_vec(),
            moves,
        });
    }

    /// A frame injected through the proxy API: a notification of the nodes it went to, when it
    /// reads as one (the API module parsed it; anything else is only traffic).
    fn injected(&mut self, t: f64, what: &What) {
        let What::Injected {
            kind: Some(kind),
            seq,
            window,
            target,
            proxies,
            ..
        } = what
        else {
            return;
        };
        self.obs.notifications.push(Notification {
            at: t,
            kind: kind.clone(),
            seq: *seq,
            window: *window,
            target: target.as_deref().map(Target::parse),
            retiring: proxies.clone(),
            moves: Vec::new(),
        });
    }

    /// How each connection reached its proxy: by name when its host was last answered, before
    /// it connected, with that proxy among the records.
    fn finish(mut self) -> Observations {
        for c in &mut self.obs.connections {
            let last = self
                .queries
                .iter()
                .rfind(|(at, host, _)| *at <= c.opened && *host == c.client.ip());
            if last.is_some_and(|(_, _, records)| records.contains(&c.server.ip())) {
                c.reached = Reached::Name {
                    name: HOSTNAME.trim_end_matches('.').into(),
                };
            }
        }
        self.obs
    }
}

/// CLUSTER SLOTS, SHARDS or NODES: the client reading the topology.
fn topology_query(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let (name, sub) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    name.eq_ignore_ascii_case("CLUSTER")
        && ["SLOTS", "SHARDS", "NODES"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(sub))
}
