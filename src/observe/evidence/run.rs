//! What the judge is given: observations of one run, from whichever side saw it (the simulator's
//! narration, a packet capture, or a `grade_input` line read back by `replay --grade`).
//!
//! Times are seconds on one clock of the observer's choosing (the scenario clock, or capture
//! seconds scaled by the simulator's speed); the judge only ever subtracts them, so verdicts are
//! offsets from a notification and the same whichever clock was used.

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::process::ClientProcess;

/// Everything observed of one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Observations {
    /// What was observed: the scenario's name, or the capture's files.
    pub source: String,
    pub connections: Vec<Connection>,
    /// Maintenance notifications, each once (a re-sent copy is a second [`Received`]).
    pub notifications: Vec<Notification>,
    /// Node-wide closes by the server.
    pub closes: Vec<NodeClose>,
    /// DNS answers, when known.
    pub dns: Vec<DnsAnswer>,
    /// UDP ports whose packets a capture holds and that read as DNS, but were not read as DNS
    /// (not given with `--dns-port`), the busiest first: what to name when a rule misses DNS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread_dns_ports: Vec<u16>,
    /// The client's own process, when maintwatch started it.
    #[serde(default)]
    pub client_process: Option<ClientProcess>,
    /// Times the server held its replies (the simulator's `stall` steps); a capture sees none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
    /// How much faster than real time the observer's clock ran (`simulate --speed`); `None`
    /// for real time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Messages the server published on sharded channels, and who they were sent to (the
    /// simulator's `spublish` directive); a capture and a watch see none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publications: Vec<Publication>,
    /// When the scenario ended (the simulator's `end`), when known: what a client did after it
    /// is its shutdown, not its work (`keeps-working`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<f64>,
}

/// One message published on a sharded channel by the node that owned its slot then, and the
/// connections it was sent to (those subscribed to the channel on that node).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Publication {
    pub at: f64,
    pub channel: String,
    pub slot: u16,
    pub recipients: Vec<u64>,
}

/// A sharded subscription the server confirmed (`SSUBSCRIBE`), or ended (`SUNSUBSCRIBE`, the
/// client's or the server's own when the slot moved away).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Subscription {
    pub at: f64,
    pub channel: String,
    pub slot: u16,
    pub on: bool,
    pub by_server: bool,
}

/// The server held every reply of these addresses from `at` to `until` (the observer's clock),
/// `seconds` of real time: a stall is real time whatever the speed, since the client's timers
/// run in real seconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    pub at: f64,
    pub until: f64,
    pub seconds: f64,
    pub servers: Vec<SocketAddr>,
}

/// A command that waited on a reply a stall held: since `at`, for `waited` real seconds, until
/// the reply went out, or until the client gave up and closed the connection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    pub at: f64,
    pub waited: f64,
    pub gave_up: bool,
    /// When the client wrote more on the connection while that reply was held, real seconds
    /// after `at` (at most one per 10 ms): other callers' commands, or the next command of a
    /// caller that gave up on its reply and kept the connection (docs/protocol.md section 8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<f64>,
}

/// A `-MOVED` the server answered on a connection: when, and the key's slot and the node the
/// reply named, as the simulator knows them. A `grade_input` line written before they were kept
/// holds the time alone, and still reads.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(from = "RedirectLine")]
pub struct Redirect {
    pub at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<SocketAddr>,
}

/// A [`Redirect`] as a line holds it: the time alone (older lines), or the whole.
#[derive(Deserialize)]
#[serde(untagged)]
enum RedirectLine {
    At(f64),
    Whole {
        at: f64,
        #[serde(default)]
        slot: Option<u16>,
        #[serde(default)]
        to: Option<SocketAddr>,
    },
}

impl From<RedirectLine> for Redirect {
    fn from(line: RedirectLine) -> Redirect {
        match line {
            RedirectLine::At(at) => Redirect {
                at,
                slot: None,
                to: None,
            },
            RedirectLine::Whole { at, slot, to } => Redirect { at, slot, to },
        }
    }
}

/// How the client reached the server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reached {
    /// It resolved this host name and connected to one of the answers.
    Name { name: String },
    /// It connected to the address itself: nothing to re-resolve.
    Address,
    /// Not observed (no DNS in the capture, or a connection older than the capture).
    Unknown,
    /// Not told apart: DNS answers that named this address went to the client's host before it
    /// connected, but `others` (clients as the grade names them) connected to an address those
    /// answers named from the same host too, and a capture cannot tell which of them asked
    /// (docs/protocol.md, section 8). `name` is the name those answers were for.
    SharedHost { name: String, others: Vec<String> },
}

/// The connection's opt-in, as observed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "opt_in", rename_all = "snake_case", deny_unknown_fields)]
pub enum OptIn {
    /// Accepted, with the endpoint type asked for (`None`: a bare `ON`).
    Accepted {
        endpoint_type: Option<String>,
    },
    Refused,
    /// The handshake was seen and carried no opt-in.
    NotSent,
    /// The handshake was not observed (a capture begun mid-connection).
    Unknown,
}

/// Which side closed a connection.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Client,
    Server,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Connection {
    pub id: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub opened: f64,
    pub reached: Reached,
    pub opt_in: OptIn,
    /// `CLIENT SETINFO LIB-NAME / LIB-VER`, `CLIENT SETNAME` (or `HELLO ... SETNAME`).
    #[serde(default)]
    pub lib_name: Option<String>,
    #[serde(default)]
    pub lib_ver: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// Notifications written to this connection, in order.
    #[serde(default)]
    pub received: Vec<Received>,
    #[serde(default)]
    pub traffic: Vec<Traffic>,
    #[serde(default)]
    pub closed: Option<Closed>,
    /// Its commands' waits on stalled replies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<Wait>,
    /// When the server answered `-MOVED` on it (a key of a slot served elsewhere), and where to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<Redirect>,
    /// When it asked for the cluster's topology (CLUSTER SLOTS, SHARDS or NODES).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_queries: Vec<f64>,
    /// Its sharded subscriptions, as they began and ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sharded: Vec<Subscription>,
}

impl Connection {
    /// A connection as first seen: who opened it, where, when, and how it reached the server;
    /// what it says and receives is added as it comes.
    pub fn opened(
        id: u64,
        (client, server): (SocketAddr, SocketAddr),
        opened: f64,
        reached: Reached,
        opt_in: OptIn,
    ) -> Connection {
        Connection {
            id,
            client,
            server,
            opened,
            reached,
            opt_in,
            lib_name: None,
            lib_ver: None,
            name: None,
            received: Vec::new(),
            traffic: Vec::new(),
            closed: None,
            waits: Vec::new(),
            redirects: Vec::new(),
            topology_queries: Vec::new(),
            sharded: Vec::new(),
        }
    }
}

/// One notification written to a connection.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Received {
    /// Index into [`Observations::notifications`].
    pub notification: usize,
    pub at: f64,
}

/// Commands read in one batch (or one time bucket), error replies among their replies, and
/// commands still waiting for a reply when the connection ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    pub at: f64,
    pub commands: u64,
    pub errors: u64,
    #[serde(default)]
    pub unanswered: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Closed {
    pub at: f64,
    pub by: Side,
}

/// A MOVING's target, as the client could read it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "is", content = "value", rename_all = "snake_case")]
pub enum Target {
    /// "Reconnect the way you connected."
    Null,
    /// `ip:port`.
    Address(String),
    /// `name:port`.
    Name(String),
}

impl Target {
    /// Reads a `host:port` (or a bare host) the way a client would.
    pub fn parse(text: &str) -> Target {
        let host = match text.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => h,
            _ => text,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.parse::<IpAddr>().is_ok() {
            Target::Address(text.to_string())
        } else {
            Target::Name(text.to_string())
        }
    }

    /// The address it names, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Target::Address(t) => {
                let host = t.rsplit_once(':').map_or(t.as_str(), |(h, _)| h);
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse()
                    .ok()
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Notification {
    /// When it was first pushed (or first seen).
    pub at: f64,
    /// `MOVING`, `MIGRATING`, ...
    pub kind: String,
    pub seq: Option<i64>,
    /// Declared window, seconds (0 when none).
    pub window: f64,
    /// MOVING only.
    #[serde(default)]
    pub target: Option<Target>,
    /// The server addresses it was pushed on: the retiring ones, for a MOVING.
    pub retiring: Vec<SocketAddr>,
    /// SMIGRATED only: each triplet, source and target as `host:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<SlotMove>,
}

/// One triplet of an SMIGRATED: these slots moved from `source` to `target`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlotMove {
    pub source: String,
    pub target: String,
    pub slots: String,
}

impl Notification {
    /// `MOVING seq 0`.
    pub fn name(&self) -> String {
        match self.seq {
            Some(s) => format!("{} seq {s}", self.kind),
            None => self.kind.clone(),
        }
    }

    pub fn is_moving(&self) -> bool {
        self.kind.eq_ignore_ascii_case("MOVING")
    }
}

/// The server closed every connection of this address.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeClose {
    pub at: f64,
    pub server: SocketAddr,
}

/// What DNS answered for a name at a time: to one host (a query seen), or to anyone (`to` is
/// `None`: the records an authoritative server serves from then on).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DnsAnswer {
    pub at: f64,
    pub name: String,
    pub records: Vec<IpAddr>,
    #[serde(default)]
    pub to: Option<IpAddr>,
    /// The answer's TTL, when a capture saw it: how long the answer said what DNS named. An
    /// answer without `to` is the server's own change of its records, known until the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
}

/// Two DNS names are the same name (case and the final dot aside).
pub fn same_name(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
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
