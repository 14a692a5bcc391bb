//! `pcap --grade`: what the capture showed, as the judge's observations ([`evidence`](super::super::evidence)).
//!
//! The capture sees the application's side: each connection from its first bytes (or its SYN),
//! its handshake when captured, `CLIENT SETINFO`, the notifications it got, its commands and
//! error replies, who closed it, and the DNS answers when the capture holds them. Two things
//! are inferred, and documented as such: the server's node-wide close of a retiring address is
//! its first server-side close after the MOVING, and a connection was reached by name when its
//! host was answered, before it connected, with the address it connected to, and no other client
//! on that host went where those answers pointed ([`reach`]: an answer names a host, not the
//! process that asked); by address when the capture holds DNS answers but none such; unknown
//! when it holds none, or the connection began before the capture.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};

use crate::observe::evidence::{
    client_of, Closed, Connection, DnsAnswer, NodeClose, Notification, Observations, OptIn,
    Reached, Received, Side, Target, Traffic,
};
use crate::protocol::notification::{event_name, Kind, Notification as Parsed};

/// Traffic is kept in buckets of this many seconds per connection.
const BUCKET: f64 = 1.0;
/// At most this many buckets per connection; later traffic joins the last one.
const BUCKETS: usize = 4096;
/// At most this many DNS answers are kept (a capture of a busy resolver); the grade says when
/// more were passed over.
const DNS_ANSWERS: usize = 1 << 16;

/// The observations, built as the capture is read.
#[derive(Default)]
pub struct Recorder {
    obs: Observations,
    /// Connection id to its index.
    index: HashMap<u32, usize>,
    /// (event name) to the notification's index.
    notes: HashMap<String, usize>,
    /// Whether each connection's SYN was captured.
    syn: HashMap<u32, bool>,
    /// Commands and errors of each connection already recorded.
    counted: HashMap<u32, (u64, u64)>,
    /// DNS answers past [`DNS_ANSWERS`].
    pub dns_dropped: u64,
    /// DNS messages seen on ports not read as DNS, per server port (at most [`UNREAD_PORTS`]).
    unread: HashMap<u16, u64>,
}

/// At most this many ports of DNS not read are counted (a capture of a busy host).
const UNREAD_PORTS: usize = 16;

impl Recorder {
    pub fn new(source: String) -> Recorder {
        Recorder {
            obs: Observations {
                source,
                ..Observations::default()
            },
            ..Recorder::default()
        }
    }

    fn conn(&mut self, id: u32) -> Option<&mut Connection> {
        let i = *self.index.get(&id)?;
        self.obs.connections.get_mut(i)
    }

    pub fn opened(&mut self, id: u32, client: SocketAddr, server: SocketAddr, syn: bool, t: f64) {
        self.index.insert(id, self.obs.connections.len());
        self.syn.insert(id, syn);
        let opt_in = if syn { OptIn::NotSent } else { OptIn::Unknown };
        self.obs.connections.push(Connection::opened(
            u64::from(id),
            (client, server),
            t,
            Reached::Unknown,
            opt_in,
        ));
    }

    /// The handshake's outcome, as `pcap_handshake` names it.
    pub fn handshake(&mut self, id: u32, outcome: &str, endpoint_type: Option<String>) {
        let Some(c) = self.conn(id) else {
            return;
        };
        c.opt_in = match outcome {
            "accepted" => OptIn::Accepted { endpoint_type },
            "refused" => OptIn::Refused,
            "not_captured" => OptIn::Unknown,
            _ => OptIn::NotSent,
        };
    }

    pub fn named(
        &mut self,
        id: u32,
        lib_name: &Option<String>,
        lib_ver: &Option<String>,
        name: &Option<String>,
    ) {
        if let Some(c) = self.conn(id) {
            c.lib_name.clone_from(lib_name);
            c.lib_ver.clone_from(lib_ver);
            c.name.clone_from(name);
        }
    }

    /// A connection's running totals of commands and error replies, at `t`.
    pub fn totals(&mut self, id: u32, t: f64, commands: u64, errors: u64) {
        let (c, e) = self
            .counted
            .insert(id, (commands, errors))
            .unwrap_or((0, 0));
        self.traffic(
            id,
            t,
            commands.saturating_sub(c),
            errors.saturating_sub(e),
            0,
        );
    }

    /// Commands sent and error replies read since the last call, at `t`.
    pub fn traffic(&mut self, id: u32, t: f64, commands: u64, errors: u64, unanswered: u64) {
        if commands == 0 && errors == 0 && unanswered == 0 {
            return;
        }
        let Some(c) = self.conn(id) else {
            return;
        };
        let full = c.traffic.len() >= BUCKETS;
        match c.traffic.last_mut() {
            Some(last) if t - last.at < BUCKET || full => {
                last.commands += commands;
                last.errors += errors;
                last.unanswered += unanswered;
            }
            _ => c.traffic.push(Traffic {
                at: t,
                commands,
                errors,
                unanswered,
            }),
        }
    }

    /// A maintenance notification read on a connection.
    pub fn notification(&mut self, id: u32, n: &Parsed, t: f64) {
        let Some(&i) = self.index.get(&id) else {
            return;
        };
        let server = self.obs.connections[i].server;
        let name = event_name(n.kind, n.seq);
        let index = match self.notes.get(&name) {
            Some(&k) => k,
            None => {
                let k = self.obs.notifications.len();
                self.notes.insert(name, k);
                self.obs.notifications.push(Notification {
                    at: t,
                    kind: n.type_text.to_ascii_uppercase(),
                    seq: n.seq,
                    window: n.time.unwrap_or(0) as f64,
                    target: (n.kind == Kind::Moving).then(|| target(n)),
                    retiring: Vec::new(),
                    moves: moves(n),
                });
                k
            }
        };
        let note = &mut self.obs.notifications[index];
        if !note.retiring.contains(&server) {
            note.retiring.push(server);
        }
        let c = &mut self.obs.connections[i];
        if !c.received.iter().any(|r| r.notification == index) {
            c.received.push(Received {
                notification: index,
                at: t,
            });
        }
    }

    pub fn closed(&mut self, id: u32, by_client: bool, t: f64, unanswered: u64) {
        self.counted.remove(&id);
        self.traffic(id, t, 0, 0, unanswered);
        if let Some(c) = self.conn(id) {
            let by = if by_client {
                Side::Client
            } else {
                Side::Server
            };
            c.closed.get_or_insert(Closed { at: t, by });
        }
    }

    pub fn dns(&mut self, a: super::dns_answers::Answer, t: f64) {
        if self.obs.dns.len() >= DNS_ANSWERS {
            self.dns_dropped += 1;
            return;
        }
        self.obs.dns.push(DnsAnswer {
            at: t,
            name: a.name,
            records: a.records,
            to: Some(a.to),
            ttl: a.ttl,
        });
    }

    /// A DNS message on a port not read as DNS (`--dns-port`), by its server's port.
    pub fn dns_elsewhere(&mut self, port: u16) {
        if self.unread.len() < UNREAD_PORTS || self.unread.contains_key(&port) {
            *self.unread.entry(port).or_default() += 1;
        }
    }

    /// The observations, with the inferred closes and how each connection was reached.
    pub fn finish(mut self) -> Observations {
        let mut unread: Vec<(u16, u64)> = self.unread.drain().collect();
        unread.sort_by_key(|&(port, n)| (std::cmp::Reverse(n), port));
        self.obs.unread_dns_ports = unread.into_iter().map(|(port, _)| port).collect();
        let mut closes: Vec<NodeClose> = Vec::new();
        for n in self.obs.notifications.iter().filter(|n| n.is_moving()) {
            for server in &n.retiring {
                let first = self
                    .obs
                    .connections
                    .iter()
                    .filter(|c| c.server == *server)
                    .filter_map(|c| c.closed.filter(|x| x.by == Side::Server && x.at >= n.at))
                    .map(|x| x.at)
                    .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))));
                if let Some(at) = first {
                    if !closes.iter().any(|c| c.server == *server && c.at == at) {
                        closes.push(NodeClose {
                            at,
                            server: *server,
                        });
                    }
                }
            }
        }
        self.obs.closes = closes;
        let syn = &self.syn;
        reach(&mut self.obs.connections, &self.obs.dns, |c| {
            syn.get(&(c.id as u32)).copied().unwrap_or(false)
        });
        self.obs
    }
}

/// At most this many other clients are named beside a connection whose DNS was not told apart.
const OTHERS: usize = 8;

/// How each connection reached its server, from the DNS answers the capture holds.
///
/// An answer names the host it went to, not the process that asked: the query's UDP source port
/// is the resolver's, tied to no TCP connection, and two applications on one host share its
/// address. So an answer counts for a client only where it can be tied to it. A connection
/// opened after an answer to its host naming its address was reached by that name when no other
/// client of that host (as the grade groups clients: `CLIENT SETINFO`, the connection's name, or
/// the host) opened a connection, after such an answer, to an address the same answers named;
/// when another did, which of them asked cannot be told ([`Reached::SharedHost`]). A client whose
/// connections never went where an answer pointed did not connect by name, and leaves the answers
/// to the others. No answer naming its address: by address when the capture holds DNS and the
/// connection's opening was seen, else not observed. Timing is no tie: a watch polling DNS every
/// second puts an answer before any other client's connection, and how close a query comes
/// before a connection moves with the machine's load.
fn reach(conns: &mut [Connection], dns: &[DnsAnswer], syn: impl Fn(&Connection) -> bool) {
    type Pair = (IpAddr, IpAddr);
    // Per (host answered, address named): the answers in time order, and every address named
    // beside it.
    let mut named: HashMap<Pair, Vec<(f64, usize)>> = HashMap::new();
    let mut beside: HashMap<Pair, BTreeSet<IpAddr>> = HashMap::new();
    for (i, a) in dns.iter().enumerate() {
        let Some(to) = a.to else {
            continue;
        };
        for ip in &a.records {
            named.entry((to, *ip)).or_default().push((a.at, i));
            beside.entry((to, *ip)).or_default().extend(&a.records);
        }
    }
    for answers in named.values_mut() {
        answers.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // The last answer before each connection naming its address to its host.
    let answered: Vec<Option<usize>> = conns
        .iter()
        .map(|c| {
            let answers = named.get(&(c.client.ip(), c.server.ip()))?;
            let before = answers.partition_point(|(at, _)| *at <= c.opened);
            before.checked_sub(1).map(|k| answers[k].1)
        })
        .collect();
    // Who may have asked: the clients that opened a connection where an answer had pointed.
    let mut askers: HashMap<Pair, BTreeSet<String>> = HashMap::new();
    for (c, a) in conns.iter().zip(&answered) {
        if a.is_some() && syn(c) {
            let pair = (c.client.ip(), c.server.ip());
            askers.entry(pair).or_default().insert(client_of(c));
        }
    }
    let any_dns = !dns.is_empty();
    for (i, a) in answered.into_iter().enumerate() {
        let c = &conns[i];
        let reached = match a {
            None if any_dns && syn(c) => Reached::Address,
            None => Reached::Unknown,
            Some(a) => {
                let (host, me) = (c.client.ip(), client_of(c));
                let others: BTreeSet<&String> = beside[&(host, c.server.ip())]
                    .iter()
                    .filter_map(|ip| askers.get(&(host, *ip)))
                    .flatten()
                    .filter(|o| **o != me)
                    .collect();
                let name = dns[a].name.clone();
                match others.is_empty() {
                    true => Reached::Name { name },
                    false => Reached::SharedHost {
                        name,
                        others: others.into_iter().take(OTHERS).cloned().collect(),
                    },
                }
            }
        };
        conns[i].reached = reached;
    }
}

/// A MOVING's target as the client reads it.
fn target(n: &Parsed) -> Target {
    match n.target.as_ref().and_then(|t| t.address.as_ref()) {
        Some(a) => Target::parse(&a.to_string()),
        None => Target::Null,
    }
}

/// An SMIGRATED's triplets, for the judge (a pair without a source names none).
fn moves(
    n: &crate::protocol::notification::Notification,
) -> Vec<crate::observe::evidence::SlotMove> {
    let Some(m) = &n.migrations else {
        return Vec::new();
    };
    m.moves
        .iter()
        .map(|t| crate::observe::evidence::SlotMove {
            source: t.source.clone().unwrap_or_default(),
            target: t.target.clone(),
            slots: t.slots.raw.clone(),
        })
        .collect()
}
