//! A scenario: its steps, pushes and actions, as the scenario file format (scenarios/README.md)
//! describes them, and how a push is encoded. The file is read by [`super::statements`]; kept
//! apart from the folder's root, which is its map.

use super::When;
use crate::protocol::resp::Frame;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// Placeholder replaced by the simulator's listening port in endpoint texts.
/// How long a scenario may wait for the client's opt-ins after its first connection: clients opt
/// in within a second or two of connecting; a client that cannot start the scenario (one
/// connection where a cluster scenario waits for three) would otherwise keep certify waiting
/// forever. A client that never connects is given up on after
/// `simulation::FIRST_CONNECTION_FACTOR` times this.
pub const START_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

pub const PORT_PLACEHOLDER: &str = "{port}";

/// A bad scenario file: where, which field, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The name the file was loaded under (`scenarios/single-proxy.scn` or a user's path).
    pub file: String,
    /// 1-based line; `None` for a whole-file problem (a required line missing).
    pub line: Option<usize>,
    /// The keyword or `key=` of the offending field.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(field) = &self.field {
            write!(f, "field '{field}': ")?;
        }
        f.write_str(&self.message)
    }
}

/// When the scenario's clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// As soon as the simulator is listening.
    Now,
    /// When the first client connects to any proxy.
    Connect,
    /// When at least this many connections are opted in at once (usually 1; one per proxy
    /// when every proxy's connection must hear the first step).
    OptIn(usize),
    /// When a connection subscribes to `AzureRedisEvents`: an Azure scenario's first message
    /// must find its listener, whatever the machine's load.
    Subscribe,
    /// As [`Start::OptIn`], and once a sharded channel has been subscribed to (SSUBSCRIBE):
    /// a sharded subscriber that opens its subscription after the cluster's connections, as a
    /// loaded JVM may seconds later, would otherwise meet the slot's move with nothing to lose.
    OptInSsubscribe(usize),
}

/// How the server answers the opt-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Like Redis Enterprise with notifications enabled: `+OK`, then notifications.
    Enterprise,
    /// Like Redis OSS / Valkey: the opt-in is an unknown subcommand, byte for byte.
    Refusing,
}

/// What a hostile server does to a connection (`at T hostile P KIND`): the failures a watcher
/// must survive with bounded memory, a clear message and a reconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// A push whose blob declares 4 GiB, followed by [`HUGE_BLOB_SENT`] bytes of it (more than a
    /// bounded reader would ever hold); the connection stays open for the client to drop.
    HugeBlob,
    /// A push nested [`DEEP_LEVELS`] aggregates deep (about 40 KB); the connection stays open.
    Deep,
    /// A valid push frame ([`TRICKLE_FRAME`]) written one byte per scenario second. Anything
    /// else for that connection (pushes, replies) waits until the frame is complete, so nothing is
    /// ever written into the middle of it.
    Trickle,
    /// The first half of a push frame ([`MID_FRAME`]), then the server closes the connection.
    MidFrame,
}

/// The blob length a `huge-blob` declares: 4 GiB.
pub const HUGE_BLOB_DECLARED: u64 = 4 << 30;

/// How many bytes of that blob are really written (unless the client hangs up first): 64 MiB.
pub const HUGE_BLOB_SENT: usize = 64 << 20;

/// How deep a `deep` frame nests: a push holding arrays holding arrays ... 10,000 levels.
pub const DEEP_LEVELS: usize = 10_000;

/// The frame a `trickle` writes one byte at a time: a valid push, not a notification.
pub const TRICKLE_FRAME: &[u8] = b">2\r\n$7\r\ntrickle\r\n$11\r\nhello world\r\n";

/// The frame whose first half `mid-frame` writes before closing.
pub const MID_FRAME: &[u8] = b">4\r\n$6\r\nMOVING\r\n:999\r\n:15\r\n$14\r\n127.0.0.9:6379\r\n";

impl Hostile {
    pub const ALL: [Hostile; 4] = [
        Hostile::HugeBlob,
        Hostile::Deep,
        Hostile::Trickle,
        Hostile::MidFrame,
    ];

    /// The keyword in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Hostile::HugeBlob => "huge-blob",
            Hostile::Deep => "deep",
            Hostile::Trickle => "trickle",
            Hostile::MidFrame => "mid-frame",
        }
    }

    /// The bytes written at once (for `huge-blob`, the header only: the declared blob follows in
    /// chunks; for `trickle`, the whole frame, written one byte at a time; for `mid-frame`, the
    /// half that is written).
    pub fn bytes(self) -> Vec<u8> {
        match self {
            Hostile::HugeBlob => {
                format!(">2\r\n$9\r\nhuge-blob\r\n${HUGE_BLOB_DECLARED}\r\n").into_bytes()
            }
            Hostile::Deep => {
                let mut out = Vec::with_capacity(DEEP_LEVELS * 4 + 4);
                out.extend_from_slice(b">1\r\n");
                for _ in 1..DEEP_LEVELS {
                    out.extend_from_slice(b"*1\r\n");
                }
                out.extend_from_slice(b":1\r\n");
                out
            }
            Hostile::Trickle => TRICKLE_FRAME.to_vec(),
            Hostile::MidFrame => MID_FRAME[..MID_FRAME.len() / 2].to_vec(),
        }
    }
}

impl fmt::Display for Hostile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The seven notification types, as the simulator writes them. (The simulator keeps its own
/// list rather than the watcher's parse model: they must not share code beyond `resp`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    Moving,
    Migrating,
    Migrated,
    FailingOver,
    FailedOver,
    SMigrating,
    SMigrated,
}

impl PushKind {
    pub(super) const ALL: [PushKind; 7] = [
        PushKind::Moving,
        PushKind::Migrating,
        PushKind::Migrated,
        PushKind::FailingOver,
        PushKind::FailedOver,
        PushKind::SMigrating,
        PushKind::SMigrated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PushKind::Moving => "MOVING",
            PushKind::Migrating => "MIGRATING",
            PushKind::Migrated => "MIGRATED",
            PushKind::FailingOver => "FAILING_OVER",
            PushKind::FailedOver => "FAILED_OVER",
            PushKind::SMigrating => "SMIGRATING",
            PushKind::SMigrated => "SMIGRATED",
        }
    }

    /// The `key=value` fields this type takes, in wire order.
    pub(super) fn fields(self) -> &'static [&'static str] {
        match self {
            PushKind::Moving => &["time", "target"],
            PushKind::Migrating | PushKind::FailingOver => &["time", "shards"],
            PushKind::Migrated | PushKind::FailedOver => &["shards"],
            PushKind::SMigrating => &["slots"],
            PushKind::SMigrated => &["move"],
        }
    }

    /// Enterprise retains the last completion of a shard-scoped event and replays it to every
    /// connection that opts in (docs/protocol.md section 1); nothing else is replayed.
    pub fn is_retained(self) -> bool {
        matches!(self, PushKind::Migrated | PushKind::FailedOver)
    }
}

/// MOVING's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// RESP3 null: "reconnect the way you connected" (every MOVING seen in the field).
    Null,
    /// `host:port`; `{port}` is replaced by the simulator's port.
    Text(String),
    /// That proxy, in the form each connection asked for with `moving-endpoint-type`
    /// (`target=asked:IP`): an ip form is `IP:PORT`, an fqdn form the proxy's own host name
    /// ([`super::super::proxy_host`], served by the simulator's DNS) with the port, `none` a null; a
    /// bare `ON` gets the ip form (the server's pick, not measured).
    Asked(Ipv4Addr),
}

/// The target text of an asked-for endpoint for one connection's `moving-endpoint-type`
/// (`None`: a null target).
pub(super) fn asked_form(ip: Ipv4Addr, port: u16, endpoint_type: Option<&str>) -> Option<String> {
    match endpoint_type.map(str::to_ascii_lowercase).as_deref() {
        Some("none") => None,
        Some(t) if t.ends_with("fqdn") => Some(format!("{}:{port}", super::super::proxy_host(ip))),
        _ => Some(format!("{ip}:{port}")),
    }
}

/// One slot movement of SMIGRATED: source, target (`host:port`, `{port}` allowed) and slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotMove {
    pub source: String,
    pub target: String,
    pub slots: String,
}

/// A notification's fields as a scenario line gives them (`push P MOVING time=15 target=...`);
/// the seq id comes from the database counter when it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructuredPush {
    pub kind: PushKind,
    pub time: Option<i64>,
    pub target: Option<Endpoint>,
    pub shards: Option<String>,
    pub slots: Option<String>,
    pub moves: Vec<SlotMove>,
}

/// What a push step sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Push {
    /// A notification numbered from the database counter, encoded like the captures.
    Structured(StructuredPush),
    /// Exact bytes (already checked to be one RESP3 frame); no counter, no window, no replay.
    Raw(Vec<u8>),
    /// Exact bytes as [`Push::Raw`], written to each connection only once it is in that state
    /// (`push P when STATE raw BYTES`); a connection never in it never gets them.
    RawWhen(Vec<u8>, When),
}

impl Push {
    /// The structured kind, if any.
    pub fn kind(&self) -> Option<PushKind> {
        match self {
            Push::Structured(n) => Some(n.kind),
            Push::Raw(_) | Push::RawWhen(..) => None,
        }
    }

    /// The bytes to write, given the sequence id and the simulator's port.
    pub fn encode(&self, seq: i64, port: u16) -> Vec<u8> {
        self.encode_for(seq, port, None)
    }

    /// Whether the bytes depend on the connection's `moving-endpoint-type` (`target=asked:IP`).
    pub fn asks(&self) -> bool {
        matches!(
            self,
            Push::Structured(StructuredPush {
                target: Some(Endpoint::Asked(_)),
                ..
            })
        )
    }

    /// The bytes for a connection that opted in with this `moving-endpoint-type`.
    pub fn encode_for(&self, seq: i64, port: u16, endpoint_type: Option<&str>) -> Vec<u8> {
        match self {
            Push::Raw(bytes) | Push::RawWhen(bytes, _) => bytes.clone(),
            Push::Structured(n) => n.encode(seq, port, endpoint_type),
        }
    }

    /// A short description for the narration (`MOVING time=15 target=null`), with `{port}`
    /// filled in.
    pub fn summary(&self, port: u16) -> String {
        let text = match self {
            Push::Raw(bytes) => raw_summary(bytes),
            // "raw" first all the same: the grade reads the kind from the first word.
            Push::RawWhen(bytes, when) => format!("{} (when {})", raw_summary(bytes), when.name()),
            Push::Structured(n) => n.summary(),
        };
        text.replace(PORT_PLACEHOLDER, &port.to_string())
    }
}

impl StructuredPush {
    /// Its bytes, numbered `seq`, for a connection that opted in with `endpoint_type`.
    fn encode(&self, seq: i64, port: u16, endpoint_type: Option<&str>) -> Vec<u8> {
        let port_text = port.to_string();
        let fill = |s: &str| s.replace(PORT_PLACEHOLDER, &port_text);
        let owned: Vec<(String, String, String)> = self
            .moves
            .iter()
            .map(|m| (fill(&m.source), fill(&m.target), m.slots.clone()))
            .collect();
        let target_text = match &self.target {
            Some(Endpoint::Text(t)) => Some(fill(t)),
            Some(Endpoint::Asked(ip)) => asked_form(*ip, port, endpoint_type),
            _ => None,
        };
        let mut items = vec![
            Frame::Blob(self.kind.name().as_bytes()),
            Frame::Integer(seq),
        ];
        if let Some(t) = &self.time {
            items.push(Frame::Integer(*t));
        }
        match self.kind {
            PushKind::Moving => items.push(match &target_text {
                Some(t) => Frame::Blob(t.as_bytes()),
                None => Frame::Null,
            }),
            PushKind::Migrating
            | PushKind::Migrated
            | PushKind::FailingOver
            | PushKind::FailedOver => {
                items.push(Frame::Blob(self.shards.as_deref().unwrap_or("").as_bytes()))
            }
            PushKind::SMigrating => {
                items.push(Frame::Blob(self.slots.as_deref().unwrap_or("").as_bytes()))
            }
            PushKind::SMigrated => items.push(Frame::Array(
                owned
                    .iter()
                    .map(|(s, t, sl)| {
                        Frame::Array(vec![
                            Frame::Blob(s.as_bytes()),
                            Frame::Blob(t.as_bytes()),
                            Frame::Blob(sl.as_bytes()),
                        ])
                    })
                    .collect(),
            )),
        }
        Frame::Push(items).to_bytes()
    }

    /// How the narration names it: the kind, then each field given (`{port}` left in).
    fn summary(&self) -> String {
        let mut s = self.kind.name().to_string();
        if let Some(t) = &self.time {
            s.push_str(&format!(" time={t}"));
        }
        match &self.target {
            Some(Endpoint::Null) => s.push_str(" target=null"),
            Some(Endpoint::Text(t)) => s.push_str(&format!(" target={t}")),
            Some(Endpoint::Asked(ip)) => s.push_str(&format!(
                " target=asked:{ip} (the form each connection asked for)"
            )),
            None => {}
        }
        if let Some(sh) = &self.shards {
            s.push_str(&format!(" shards={sh}"));
        }
        if let Some(sl) = &self.slots {
            s.push_str(&format!(" slots={sl}"));
        }
        for m in &self.moves {
            s.push_str(&format!(" move={},{},{}", m.source, m.target, m.slots));
        }
        s
    }
}

/// `raw BYTES`, escaped, cut to 90 characters.
fn raw_summary(bytes: &[u8]) -> String {
    let shown = super::super::notation::escape(bytes);
    if shown.len() > 90 {
        format!("raw {}...", &shown[..87])
    } else {
        format!("raw {shown}")
    }
}

/// Which proxies a push goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// Every proxy (a database-wide event: one seq, delivered once per connection).
    All,
    One(Ipv4Addr),
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send a notification to every opted-in connection of the proxies named.
    Push { to: To, push: Push },
    /// Replace the A records of the database hostname.
    Dns(Vec<IpAddr>),
    /// Close every connection of that proxy (opted in or not); `restart` only labels it.
    Close { proxy: Ipv4Addr, restart: bool },
    /// Stop listening on that proxy (new connections are refused).
    Down(Ipv4Addr),
    /// Listen again on that proxy.
    Up(Ipv4Addr),
    /// Give a slot range to a cluster node (what CLUSTER SLOTS / SHARDS answer from then on).
    Assign {
        slots: Vec<(u16, u16)>,
        node: Ipv4Addr,
    },
    /// A narration line for something with no wire effect (a server-side move, say).
    Say(String),
    /// Misbehave towards every opted-in connection of the proxies named.
    Hostile { to: To, kind: Hostile },
    /// From now on the opt-in is accepted (true) or refused as Redis OSS refuses it (false): a
    /// server upgraded or rolled back mid-maintenance. Connections already opted in stay so.
    OptIn(bool),
    /// Hold every reply of the proxies named for this many milliseconds of real time (not
    /// scaled by the speed: the client's timeouts run in real seconds).
    Stall { to: To, millis: u64 },
    /// Publish one numbered message on every sharded channel a client ever subscribed to, from
    /// the node that owns the channel's slot now (a tick of the `spublish every` directive).
    ShardPublish { tick: u64 },
    /// Publish an Azure Cache maintenance event on `AzureRedisEvents` to the subscribers of the
    /// proxies named.
    Azure {
        to: To,
        message: super::super::azure_channel::Message,
    },
}

/// One timed step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Seconds after the clock started, at speed 1.
    pub at: f64,
    /// Line in the scenario file, for narration and errors.
    pub line: usize,
    pub action: Action,
}

/// A cluster node of the OSS-cluster topology and the slots it starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    pub addr: Ipv4Addr,
    pub slots: Vec<(u16, u16)>,
}

/// A parsed scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// One line for `--list` and `--help`.
    pub about: String,
    /// The name the file was loaded under.
    pub source: String,
    /// One listener per proxy, all on the same port.
    pub proxies: Vec<Ipv4Addr>,
    /// Proxies that are not listening when the scenario starts (brought up by an `up` step).
    pub initially_down: Vec<Ipv4Addr>,
    /// Initial A records of the database hostname.
    pub dns: Vec<IpAddr>,
    /// TTL of those records, seconds (at speed 1).
    pub ttl: u32,
    pub start: Start,
    pub mode: Mode,
    /// `mode silent`: connections are accepted and read, and never answered (not even HELLO).
    pub silent: bool,
    /// Whether the last MIGRATED / FAILED_OVER is replayed after an opt-in's `+OK`.
    pub catch_up: bool,
    /// The database counter's first value (0 on a fresh database).
    pub first_seq: i64,
    /// OSS-cluster topology; empty for a standalone database.
    pub cluster: Vec<ClusterNode>,
    /// Steps in clock order (file order among equal times).
    pub steps: Vec<Step>,
    /// When the scenario ends, seconds.
    pub end: f64,
}

impl Scenario {
    /// The scenario of `simulate --proxy-api` without `--scenario`: no proxies, no steps, a
    /// clock started at once (so the API's events are stamped) and no end. Nothing happens
    /// until the API asks.
    pub fn api_only() -> Scenario {
        Scenario {
            name: "proxy-api".into(),
            about: "The proxy API alone: frames are injected when its HTTP API asks.".into(),
            source: "--proxy-api".into(),
            proxies: Vec::new(),
            initially_down: Vec::new(),
            dns: Vec::new(),
            ttl: 5,
            start: Start::Now,
            mode: Mode::Enterprise,
            silent: false,
            catch_up: false,
            first_seq: 0,
            cluster: Vec::new(),
            steps: Vec::new(),
            end: f64::INFINITY,
        }
    }

    /// Whether the scenario is an Azure Cache one: it publishes on `AzureRedisEvents`, so the
    /// simulator answers SUBSCRIBE itself, even with an upstream.
    pub fn is_azure(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s.action, Action::Azure { .. }))
    }

    /// Whether the database is an OSS cluster (answers CLUSTER SLOTS / SHARDS / NODES).
    pub fn is_cluster(&self) -> bool {
        !self.cluster.is_empty()
    }
}
