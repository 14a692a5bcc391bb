//! The timeline itself: observations in, lines and actions out, one connection's events at a
//! time. Kept apart from the folder's root, which is its map of the timeline's parts.

use super::ping::PingTally;
use crate::network::dns::DnsEventKind;
use crate::observe::record::{
    line, wall, wall_into, ConnTotals, DnsEvent, DryRunOutcome, EventRow, OptInOutcome, OptInTally,
    OursChange, Rel, WatchLine, SCHEMA_VERSION,
};
use crate::observe::timeline::{azure_events, event, kept, DryRun, Observation, What};
use crate::protocol::notification::{HostPort, Kind};
use crate::shared::clock::ScenarioClock;
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

/// Work the timeline asks the watch to start; the watch feeds the results back as observations.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new MOVING: run the handoff decision in dry-run.
    StartHandoff {
        conn: u32,
        event: usize,
        window_s: i64,
        successor: Option<HostPort>,
        current: Option<IpAddr>,
    },
    /// A MIGRATED arrived: ask DNS whether `addr` is still advertised.
    CheckAdvertised { conn: u32, addr: IpAddr },
    /// A new SMIGRATED moved slots away from nodes we watch: refresh the topology once.
    RefreshTopology {
        conn: u32,
        event: usize,
        sources: Vec<String>,
    },
}

/// What one observation produced.
#[derive(Debug, Default)]
pub struct Step {
    pub lines: Vec<WatchLine>,
    pub actions: Vec<Action>,
    /// New maintenance events in this step (for `--count`): a copy of an event already seen
    /// (re-sent, from another cluster node, replayed to the opt-in) is not counted again.
    pub notifications: u32,
}

/// Where and when an observation happened, as every handler reads it.
pub(super) struct Ctx {
    /// When it was seen.
    pub(super) now: Instant,
    /// Seconds since the watch started.
    pub(super) t: f64,
    /// The wall clock, formatted.
    pub(super) at: String,
    /// Which watched connection.
    pub(super) conn: u32,
}

pub(super) struct Event {
    pub(super) kind: Announced,
    pub(super) seq: Option<i64>,
    pub(super) at: Instant,
    pub(super) row: EventRow,
    /// Set when the dry-run reported a move (seconds after the event).
    pub(super) moved_s: Option<f64>,
    pub(super) stale: bool,
    /// The dry-run never got an address from DNS (a kind of stale worth its own words).
    pub(super) unresolved: bool,
    pub(super) verdict_done: bool,
    pub(super) conn: u32,
}

impl Event {
    pub(super) fn name(&self) -> String {
        match self.kind {
            Announced::Push(k) => crate::protocol::notification::event_name(k, self.seq),
            Announced::Azure(k) => k.wire_name().to_string(),
        }
    }
}

/// What announced an event: a maintenance push, or a message on Azure Cache's channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Announced {
    Push(Kind),
    Azure(crate::protocol::azure::AzureKind),
}

impl Announced {
    /// Whether it opens a window, which later lines are relative to.
    pub(super) fn opens(self) -> bool {
        match self {
            Announced::Push(k) => k.opens(),
            Announced::Azure(k) => k.opens_window(),
        }
    }
}

#[derive(Default)]
pub(super) struct Conn {
    pub(super) endpoint: String,
    pub(super) addr: Option<SocketAddr>,
    /// The MOVING this connection was told about, whose close is announced.
    pub(super) moving: Option<usize>,
    /// The latest opening event this connection received (first or as a copy): what its
    /// lines are relative to.
    pub(super) opened: Option<usize>,
    /// The simulator marked its scenario's end on this connection: its next close is that end.
    pub(super) scenario_end: bool,
    pub(super) sessions: u32,
    pub(super) totals_notifications: u32,
    pub(super) totals_other: u32,
    pub(super) totals_closes: u32,
}

/// The state machine. Feed it observations in arrival order.
pub struct Timeline {
    pub(super) start: Instant,
    /// The recent events only (see [`kept`]): a long watch keeps bounded state.
    pub(super) events: kept::Events<Event>,
    /// The latest new opening event: what "+s.mmm" is relative to.
    pub(super) anchor: Option<usize>,
    /// Recent `(type, seq)` keys and the event each opened, to recognise a re-send.
    pub(super) keys: kept::RecentKeys<(Kind, i64)>,
    /// Recent Azure messages (a hash of their bytes) and the event each opened.
    pub(super) azure_keys: azure_events::AzureKeys,
    pub(super) conns: ConnMap,
    /// Connections per opt-in outcome and text, in the order they reported it.
    pub(super) opt_in: HashMap<(OptInOutcome, Option<String>), Vec<u32>>,
    /// Scenario seconds per real second: offsets after an event are reported in scenario time so
    /// a sped-up simulator run reads like the measurements it reproduces.
    pub(super) clock: ScenarioClock,
    /// `--traffic` latencies and failures, for the summary.
    pub(super) pings: PingTally,
    /// The latest times a line was stamped with: sources stamp what they see on their own
    /// threads, so one may arrive a moment after a later one; its line then shows the later
    /// time, and the screen's timestamps never go backwards.
    pub(super) shown: (Instant, SystemTime),
    /// The cluster's topology changes after its discovery, the most recent kept.
    pub(super) topology: std::collections::VecDeque<line::TopologyRow>,
}

/// Topology changes the summary keeps (a long watch of a flapping cluster stays bounded).
const MAX_TOPOLOGY_ROWS: usize = 100;

/// The connections by id. Ids are the process's own counters, not input from the network, so
/// they need no keyed hash: SipHash, looked up twice for every frame of a flood, was 3 % of its
/// CPU.
pub(super) type ConnMap = HashMap<u32, Conn, std::hash::BuildHasherDefault<ConnIdHasher>>;

/// A multiplicative hash of a connection id (other keys never reach it, but are mixed too).
#[derive(Default)]
pub(super) struct ConnIdHasher(u64);

impl std::hash::Hasher for ConnIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

impl Timeline {
    pub fn new(start: Instant) -> Timeline {
        Timeline {
            start,
            events: kept::Events::default(),
            anchor: None,
            keys: kept::RecentKeys::default(),
            azure_keys: azure_events::AzureKeys::default(),
            conns: ConnMap::default(),
            opt_in: HashMap::new(),
            clock: ScenarioClock::default(),
            pings: PingTally::default(),
            shown: (start, SystemTime::UNIX_EPOCH),
            topology: Default::default(),
        }
    }

    /// The index of the latest kept event named `name` (`MOVING seq 3`), as a dry-run refers to it.
    pub fn event_named(&self, name: &str) -> Option<usize> {
        self.events.rposition(|e| e.name() == name)
    }

    /// Reads offsets after events on `clock` (see the field), from now on.
    pub fn set_clock(&mut self, clock: ScenarioClock) {
        self.clock = clock;
    }

    /// An offset between two instants, in scenario seconds.
    pub(super) fn span(&self, from: Instant, to: Instant) -> f64 {
        secs_f(self.clock.scenario_secs(to.saturating_duration_since(from)))
    }

    /// The first line of a watch.
    pub fn start_line(&self, wall_at: SystemTime, endpoint: &str) -> WatchLine {
        WatchLine::Start(line::Start {
            v: SCHEMA_VERSION,
            t: 0.0,
            at: wall(wall_at),
            endpoint: endpoint.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            speed: self.clock.speed(),
        })
    }

    pub(super) fn t(&self, at: Instant) -> f64 {
        secs(at.saturating_duration_since(self.start))
    }

    pub(super) fn rel_to(&self, event: Option<usize>, at: Instant) -> Option<Rel> {
        event.and_then(|i| self.events.get(i)).map(|e| Rel {
            to: e.name(),
            s: self.span(e.at, at),
        })
    }

    /// Relative to what connection `conn` itself received last, or else to the latest event.
    pub(super) fn rel_for(&self, conn: u32, at: Instant) -> Option<Rel> {
        let own = self.conns.get(&conn).and_then(|c| c.opened);
        let own = own.filter(|&i| self.events.get(i).is_some());
        self.rel_to(own.or(self.anchor), at)
    }

    /// Processes one observation.
    pub fn observe(&mut self, obs: Observation) -> Step {
        // Nearly every observation makes one line. Room for exactly one: a `Vec`'s first growth
        // would reserve four lines, a block large enough that glibc consolidates its free lists
        // to find it, once per frame of a flood.
        let mut step = Step {
            lines: Vec::with_capacity(1),
            ..Step::default()
        };
        self.observe_into(obs, &mut step);
        step
    }

    /// [`Timeline::observe`] into a step the caller keeps between observations (emptied
    /// first): the watch loop's way, with no allocation per frame for the step.
    pub fn observe_into(&mut self, obs: Observation, step: &mut Step) {
        // The last step's push line gives its `at` text's room to this one: under a flood that
        // was one allocation (and free) per line.
        let mut at = match step.lines.first_mut() {
            Some(WatchLine::Push(p)) => std::mem::take(&mut p.at),
            _ => String::new(),
        };
        step.lines.clear();
        step.actions.clear();
        step.notifications = 0;
        self.shown = (self.shown.0.max(obs.at), self.shown.1.max(obs.wall));
        wall_into(&mut at, self.shown.1);
        // Offsets too are read at the time shown, so a replay of the lines computes them again.
        let cx = Ctx {
            now: self.shown.0,
            t: self.t(self.shown.0),
            at,
            conn: obs.conn,
        };
        match obs.what {
            What::Connected(e) => self.on_connected(step, cx, e),
            What::ConnectFailed(e) => step.lines.push(connect_failed(cx, e)),
            What::Handshake(e) => self.on_handshake(step, cx, e),
            // The membership (watch::membership) resolved the nodes a reply named into this change.
            What::Topology(e) => self.on_topology(step, cx, e),
            What::Refresh(e) => self.on_refresh(step, cx, e),
            What::Frame(e) => self.frame(step, cx, e),
            What::AzureRefused(e) => step.lines.push(azure_events::refused(cx, e)),
            What::Malformed(e) => step.lines.push(malformed(cx, e)),
            What::Closed(e) => self.closed(step, cx, e),
            What::Dns(e) => self.dns(step, cx, e),
            What::Handoff(e) => {
                let dry_run = DryRun::from_outcome(&e.outcome);
                self.handoff(step, cx, e.event, dry_run)
            }
            What::DryRun(e) => self.handoff(step, cx, e.event, e.dry_run),
            What::Advertised(e) => self.on_advertised(step, cx, e),
            What::Ping(e) => self.on_ping(step, cx, e),
        }
    }

    /// A connection (re)established: its session count and address.
    pub(super) fn on_connected(&mut self, step: &mut Step, cx: Ctx, e: event::Connected) {
        let rel = self.rel_for(cx.conn, cx.now);
        let c = self.conns.entry(cx.conn).or_default();
        c.sessions += 1;
        c.addr = Some(e.addr);
        c.endpoint = e.endpoint;
        step.lines.push(WatchLine::Connected(line::Connected {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            addr: e.addr.to_string(),
            tls: e.tls,
            session: c.sessions,
            rel: if c.sessions > 1 { rel } else { None },
        }));
    }

    /// The cluster's nodes, as the membership resolved them.
    pub(super) fn on_topology(&mut self, step: &mut Step, cx: Ctx, e: event::Topology) {
        let rel = self.rel_to(self.anchor, cx.now);
        let line = line::Topology {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            reason: e.reason,
            nodes: e.nodes,
            added: e.added,
            removed: e.removed,
            replicas: e.replicas,
            roles: e.roles,
            moved: e.moved,
            rel,
        };
        if line.reason != crate::observe::record::TopologyReason::Discovered && line.changed() {
            if self.topology.len() == MAX_TOPOLOGY_ROWS {
                self.topology.pop_front();
            }
            self.topology.push_back(line::TopologyRow {
                t: line.t,
                reason: line.reason,
                added: line.added.clone(),
                removed: line.removed.clone(),
                roles: line.roles.clone(),
                moved: line.moved.clone(),
            });
        }
        step.lines.push(WatchLine::Topology(line))
    }

    /// The dry-run's topology refresh after an SMIGRATED naming our nodes.
    pub(super) fn on_refresh(&mut self, step: &mut Step, cx: Ctx, e: event::Refresh) {
        let rel = self.rel_to(Some(e.event), cx.now);
        let name = self
            .events
            .get(e.event)
            .map(Event::name)
            .unwrap_or_default();
        let jitter_s = e.jitter_s;
        step.lines.push(WatchLine::Handoff(line::Handoff {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            event: name,
            outcome: DryRunOutcome::RefreshTopology,
            at_s: secs_f(jitter_s),
            moves: false,
            text: format!(
                "a client would refresh the topology once, after a jitter of {jitter_s:.2} s, for source(s) {}",
                e.sources.join(", ")
            ),
            rel,
            to: None,
        }));
    }

    /// Whether our address is still advertised, after a MIGRATED.
    pub(super) fn on_advertised(&mut self, step: &mut Step, cx: Ctx, e: event::Advertised) {
        let rel = self.rel_for(cx.conn, cx.now);
        step.lines.push(WatchLine::Advertised(line::Advertised {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            addr: e.addr.to_string(),
            answer: e.answer,
            rel,
        }))
    }

    /// A `--traffic` PING: tallied, attributed to the open window.
    pub(super) fn on_ping(&mut self, step: &mut Step, cx: Ctx, e: event::Ping) {
        let window = self.open_window(cx.now);
        self.pings
            .record(e.latency, e.error.is_some(), window.as_deref());
        step.lines.push(WatchLine::Ping(line::Ping {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            latency_ms: e.latency.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3),
            error: e.error,
            window,
        }))
    }

    /// A handshake's outcome: one line, tallied by outcome (a cluster's repeated refusal once).
    pub(super) fn on_handshake(&mut self, step: &mut Step, cx: Ctx, e: event::Handshake) {
        let opt_in = e.opt_in;
        let tally = self.opt_in.entry((opt_in, e.text.clone())).or_default();
        let repeat_of = tally.first().copied().filter(|&c| c != cx.conn);
        if !tally.contains(&cx.conn) {
            tally.push(cx.conn);
        }
        step.lines.push(WatchLine::Handshake(line::Handshake {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            opt_in,
            text: e.text,
            server: e.server,
            version: e.version,
            mode: e.mode,
            sent: e.sent,
            // Accepted opt-ins are each worth a line; a refusal repeated by every node
            // of a cluster is one fact.
            repeat_of: repeat_of.filter(|_| opt_in != OptInOutcome::Accepted),
            sim_speed: e.sim_speed,
        }))
    }

    /// Until when a maintenance window is open, if one is: the latest end among the kept opening
    /// events that no notification closed, each lasting its declared time (at most
    /// `max_window_s`) plus the same 5 s of slack as [`Self::open_window`], in real time at the
    /// current speed. A MOVING's window outlives its socket's close: the DNS change comes later.
    pub fn window_open_until(&self, max_window_s: i64) -> Option<Instant> {
        self.events
            .iter()
            .filter(|e| e.kind.opens() && e.row.closed_by_notification_s.is_none())
            .filter_map(|e| {
                let window = e.row.window_s.unwrap_or(0).clamp(0, max_window_s) as f64 + 5.0;
                e.at.checked_add(Duration::try_from_secs_f64(self.clock.real_secs(window)).ok()?)
            })
            .max()
    }

    /// The window a failure at `at` falls into: an opening event whose declared window (plus the
    /// measured slack, since closes come up to ~4 s late) has not ended and that nothing closed.
    pub(super) fn open_window(&self, at: Instant) -> Option<String> {
        let e = self.events.get(self.anchor?)?;
        if e.row.closed_by_notification_s.is_some() || e.row.socket_closed_s.is_some() {
            return None;
        }
        let window = e.row.window_s.unwrap_or(0).max(0) as f64 + 5.0;
        (self.span(e.at, at) <= window).then(|| e.name())
    }

    /// A DNS answer: which of our addresses left or rejoined, and the open event's row.
    pub(super) fn dns(&mut self, step: &mut Step, cx: Ctx, e: event::Dns) {
        let (now, kind) = (cx.now, e.kind);
        let ours: Vec<IpAddr> = self
            .conns
            .values()
            .filter_map(|c| c.addr.map(|a| a.ip()))
            .collect();
        let list = |s: &BTreeSet<IpAddr>| s.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        // The first answer is where the watch starts from, not something that followed an
        // event: the poller and the connection race at the start, and a MOVING sent as soon as
        // the opt-in is accepted can be taken first.
        let initial = matches!(kind, DnsEventKind::Initial { .. });
        let rel = self.rel_to(self.anchor.filter(|_| !initial), now);
        let (event, before, after, ttl, reason) = match &kind {
            DnsEventKind::Initial { addrs, ttl } => {
                (DnsEvent::Initial, vec![], list(addrs), *ttl, None)
            }
            DnsEventKind::Changed { before, after, ttl } => {
                (DnsEvent::Changed, list(before), list(after), *ttl, None)
            }
            DnsEventKind::CannotTell { reason } => (
                DnsEvent::CannotTell,
                vec![],
                vec![],
                None,
                Some(reason.clone()),
            ),
            DnsEventKind::Recovered { addrs, ttl } => {
                (DnsEvent::Recovered, vec![], list(addrs), *ttl, None)
            }
            DnsEventKind::Waiting { what } => {
                (DnsEvent::Waiting, vec![], vec![], None, Some(what.clone()))
            }
        };
        let mut ours_change = None;
        if let DnsEventKind::Changed { before, after, .. } = &kind {
            if ours
                .iter()
                .any(|a| before.contains(a) && !after.contains(a))
            {
                ours_change = Some(OursChange::Left);
            } else if ours
                .iter()
                .any(|a| !before.contains(a) && after.contains(a))
            {
                ours_change = Some(OursChange::Rejoined);
            }
            // The first change after an open MOVING is "DNS moved" for the summary; after another
            // opening event, the change that drops our address (a silent shrink's only signal).
            let left = ours_change == Some(OursChange::Left);
            if let Some(i) = self.anchor.filter(|&i| self.events.get(i).is_some()) {
                let since = self.span(self.events[i].at, now);
                let e = &mut self.events[i];
                if (e.kind == Announced::Push(Kind::Moving) || left) && e.row.dns_moved_s.is_none()
                {
                    e.row.dns_moved_s = Some(since);
                }
            }
        }
        step.lines.push(WatchLine::Dns(line::Dns {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            host: e.host,
            event,
            before,
            after,
            ttl,
            reason,
            ours: ours_change,
            rel,
        }));
    }

    /// The final line.
    pub fn summary(&self, now: Instant, wall_at: SystemTime, reason: &str) -> WatchLine {
        let mut conns: Vec<ConnTotals> = self
            .conns
            .iter()
            .map(|(id, c)| ConnTotals {
                conn: *id,
                endpoint: c.endpoint.clone(),
                notifications: c.totals_notifications,
                other_pushes: c.totals_other,
                closes: c.totals_closes,
                reconnects: c.sessions.saturating_sub(1),
            })
            .collect();
        conns.sort_by_key(|c| c.conn);
        WatchLine::Summary(line::Summary {
            v: SCHEMA_VERSION,
            t: self.t(now),
            at: wall(wall_at),
            reason: reason.into(),
            events: self.events.iter().map(|e| e.row.clone()).collect(),
            notes: crate::observe::record::SummaryNotes {
                retired_events: self.events.retired(),
                ..Default::default()
            },
            conns,
            opt_in: {
                let mut tallies: Vec<OptInTally> = self
                    .opt_in
                    .iter()
                    .map(|((opt_in, text), conns)| OptInTally {
                        opt_in: *opt_in,
                        text: text.clone(),
                        conns: conns.len() as u32,
                    })
                    .collect();
                tallies.sort_by(|a, b| b.conns.cmp(&a.conns).then(a.text.cmp(&b.text)));
                tallies
            },
            pings: self.pings.stats(),
            scenario_s: (self.clock.speed() != 1.0).then(|| {
                secs_f(
                    self.clock
                        .scenario_secs(now.saturating_duration_since(self.start)),
                )
            }),
            topology: self.topology.iter().cloned().collect(),
        })
    }
}

pub(super) fn connect_failed(cx: Ctx, e: event::ConnectFailed) -> WatchLine {
    WatchLine::ConnectFailed(line::ConnectFailed {
        v: SCHEMA_VERSION,
        t: cx.t,
        at: cx.at,
        conn: cx.conn,
        error: e.error,
        retry_in_s: e.retry_in.map(secs),
    })
}

pub(super) fn malformed(cx: Ctx, e: event::Malformed) -> WatchLine {
    WatchLine::Malformed(line::Malformed {
        v: SCHEMA_VERSION,
        t: cx.t,
        at: cx.at,
        conn: cx.conn,
        offset: e.offset,
        error: e.error,
    })
}

pub(super) fn secs_f(s: f64) -> f64 {
    (s * 1e6).round() / 1e6
}
