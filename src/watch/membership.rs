//! Cluster membership: which nodes the watch follows, and the connection watching each.
//!
//! One owner for it: the connection tasks only report the nodes a CLUSTER SHARDS/SLOTS reply
//! named, the timeline only sees the resulting [`What::Topology`], and this module alone decides
//! which connections start and stop.
//!
//! It also decides when the topology is read again: after an SMIGRATED naming a node we watch (a
//! client's refresh), when a watched node's connection closes or cannot be made, and every
//! `--topology-interval`. A failover or a reshard announces nothing, and every cluster client
//! re-reads the topology on a connection error: a watch that did not would go on watching the
//! cluster as it was. The read goes to a connection that has a session now, never to the one
//! that failed.

use super::connection::{observe, ConnCmd, Report, Spawner, Watched};
use crate::network::cluster::{self, ClusterNode};
use crate::observe::record::line::{RoleChange, SlotsMoved};
use crate::observe::record::TopologyReason;
use crate::observe::timeline::{event, CloseCause, ScenarioClock, What};
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

/// How long a topology read may go unanswered before another may be asked for (the asker may
/// have closed meanwhile).
const READ_PATIENCE: Duration = Duration::from_secs(5);

/// The watched connections and the cluster nodes they cover.
pub(super) struct Membership {
    spawner: Spawner,
    watched: HashMap<u32, Watched>,
    next_id: u32,
    /// The nodes last read, once a topology was read.
    nodes: Option<Vec<ClusterNode>>,
    /// Where each connection is connected, to match a node with a connection already open.
    peers: HashMap<u32, SocketAddr>,
    masters_only: bool,
    /// Connections with a session now: the ones a topology read can be asked of.
    up: BTreeSet<u32>,
    /// The read asked for and not yet answered: why, and when it was asked.
    pending: Option<(TopologyReason, tokio::time::Instant)>,
    /// The `--topology-interval` ticker, started with the first topology.
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl Membership {
    /// Starts `connections` connections to the endpoint; only the first reads the topology.
    pub(super) fn start(spawner: Spawner, connections: u32) -> Membership {
        let masters_only = spawner.settings.engine.masters_only;
        let mut watched = HashMap::new();
        for id in 1..=connections.max(1) {
            let w = spawner.spawn(id, spawner.settings.connect.clone(), id == 1);
            watched.insert(id, w);
        }
        Membership {
            spawner,
            watched,
            next_id: connections.max(1) + 1,
            nodes: None,
            peers: HashMap::new(),
            masters_only,
            up: BTreeSet::new(),
            pending: None,
            ticker: None,
        }
    }

    /// Connection `conn` has a session (its handshake completed).
    pub(super) fn session_up(&mut self, conn: u32) {
        self.up.insert(conn);
    }

    /// Connection `conn` lost its session or could not get one (`lost`: by a failure, not by
    /// the watch's own doing): a cluster's topology is read again from another node.
    pub(super) fn session_down(&mut self, conn: u32, lost: bool) {
        self.up.remove(&conn);
        if lost && self.nodes.is_some() {
            self.ask(TopologyReason::ConnectionLost, Some(conn));
        }
    }

    /// Asks a connection with a session (not `avoid`) to read the topology, unless a read is
    /// already under way. Nothing is asked when no connection has a session: the next failure
    /// or tick asks again.
    pub(super) fn ask(&mut self, reason: TopologyReason, avoid: Option<u32>) {
        let now = tokio::time::Instant::now();
        if self
            .pending
            .is_some_and(|(_, at)| now.saturating_duration_since(at) < READ_PATIENCE)
        {
            return;
        }
        let asker = self
            .up
            .iter()
            .filter(|&&id| Some(id) != avoid)
            .find_map(|id| self.watched.get(id));
        if let Some(w) = asker {
            if w.cmds.send(ConnCmd::Topology).is_ok() {
                self.pending = Some((reason, now));
            }
        }
    }

    /// Connection `conn` is connected to `addr`.
    pub(super) fn connected(&mut self, conn: u32, addr: SocketAddr) {
        self.peers.insert(conn, addr);
    }

    /// A topology was read: new nodes get a connection (or adopt one already open to them),
    /// nodes that left lose theirs. Returns what the timeline is told: always the discovery and
    /// the refresh after an SMIGRATED, other reads only when something changed.
    pub(super) fn nodes_read(&mut self, found: &[ClusterNode]) -> Option<What> {
        let found: Vec<ClusterNode> = found
            .iter()
            .filter(|n| !self.masters_only || n.is_master())
            .cloned()
            .collect();
        let asked = self.pending.take().map(|(reason, _)| reason);
        let reason = match (&self.nodes, asked) {
            (None, _) => TopologyReason::Discovered,
            (Some(_), Some(reason)) => reason,
            // The reading connection read it again as its new session started.
            (Some(_), None) => TopologyReason::ConnectionLost,
        };
        if self.nodes.is_none() {
            self.start_ticker();
        }
        let before = self.nodes.take().unwrap_or_default();
        let change = cluster::diff(&before, &found);
        for node in &change.added {
            self.add(node);
        }
        for node in &change.removed {
            self.remove(&node.addr());
        }
        let unchanged = change.is_empty();
        // A discovery lists the slots' masters as from nowhere: nothing moved.
        let moved = match reason {
            TopologyReason::Discovered => Vec::new(),
            _ => change.moved,
        };
        let quiet = matches!(
            reason,
            TopologyReason::Interval | TopologyReason::ConnectionLost
        );
        let nodes = found.iter().map(ClusterNode::addr).collect();
        let replicas = found
            .iter()
            .filter(|n| !n.is_master())
            .map(ClusterNode::addr)
            .collect();
        self.nodes = Some(found);
        if quiet && unchanged {
            return None;
        }
        Some(What::Topology(event::Topology {
            reason,
            nodes,
            added: change.added.iter().map(ClusterNode::addr).collect(),
            removed: change.removed.iter().map(ClusterNode::addr).collect(),
            replicas,
            roles: change
                .roles
                .into_iter()
                .map(|r| RoleChange {
                    node: r.addr,
                    from: r.from,
                    to: r.to,
                })
                .collect(),
            moved: moved
                .into_iter()
                .map(|m| SlotsMoved {
                    first: m.first,
                    last: m.last,
                    from: m.from,
                    to: m.to,
                })
                .collect(),
        }))
    }

    /// Every `--topology-interval` (scenario time, read on each turn: a simulator's speed may
    /// be learnt later), the loop is told to read the topology again.
    fn start_ticker(&mut self) {
        let tx = self.spawner.tx.clone();
        let clock = self.spawner.settings.clock.clone();
        let interval = self.spawner.settings.engine.topology_interval;
        self.ticker = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(clock.to_real(interval)).await;
                if tx.send(Report::Tick).is_err() {
                    return;
                }
            }
        }));
    }

    fn add(&mut self, node: &ClusterNode) {
        let addr = node.addr();
        let peers = &self.peers;
        let covered = self.watched.iter_mut().find(|(id, w)| {
            w.node.is_none() && peers.get(id).is_some_and(|p| p.to_string() == addr)
        });
        match covered {
            Some((_, w)) => w.node = Some(addr),
            None => {
                let opts = self
                    .spawner
                    .settings
                    .connect
                    .for_node(&node.host, node.port);
                let mut w = self.spawner.spawn(self.next_id, opts, false);
                w.node = Some(addr);
                self.watched.insert(self.next_id, w);
                self.next_id += 1;
            }
        }
    }

    fn remove(&mut self, addr: &str) {
        let gone: Vec<u32> = self
            .watched
            .iter()
            .filter(|(_, w)| w.node.as_deref() == Some(addr))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(w) = self.watched.remove(&id) {
                w.task.abort();
                observe(
                    &self.spawner.tx,
                    id,
                    What::Closed(event::Closed {
                        cause: CloseCause::Watch,
                        error: Some(format!(
                            "{addr} is no longer in the cluster topology (marked fail, or \
                             removed)"
                        )),
                        retry_in: None,
                    }),
                );
            }
        }
    }

    /// The dry-run's answer to an SMIGRATED that moved slots off our nodes (reported at once),
    /// then the real refresh after the same jitter (scenario seconds on `clock`), so the new
    /// topology is watched.
    pub(super) fn refresh(
        &mut self,
        clock: &ScenarioClock,
        conn: u32,
        event: usize,
        sources: Vec<String>,
    ) {
        // Up to 1 s of jitter, as clients spread their refreshes (scenario seconds).
        let jitter_s: f64 = rand::random::<f64>();
        observe(
            &self.spawner.tx,
            conn,
            What::Refresh(event::Refresh {
                event,
                jitter_s,
                sources,
            }),
        );
        let asker = self
            .watched
            .get(&1)
            .or_else(|| self.watched.get(&conn))
            .map(|w| w.cmds.clone());
        let delay = Duration::from_secs_f64(clock.real_secs(jitter_s));
        if asker.is_some() {
            // Its reply is this refresh's, whatever else asks meanwhile.
            self.pending = Some((
                TopologyReason::Refreshed,
                tokio::time::Instant::now() + delay,
            ));
        }
        if let Some(cmds) = asker {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = cmds.send(ConnCmd::Topology);
            });
        }
    }

    /// Connections watched now (one per `--connections`, or per cluster node).
    pub(super) fn len(&self) -> usize {
        self.watched.len()
    }

    /// Stops every connection task and waits until each is gone: after this, everything they
    /// read is in the channel.
    pub(super) async fn stop(self) {
        if let Some(ticker) = &self.ticker {
            ticker.abort();
        }
        for w in self.watched.values() {
            w.task.abort();
        }
        for w in self.watched.into_values() {
            let _ = w.task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    type Reports = mpsc::UnboundedReceiver<(u32, Report)>;

    /// A membership of connections 1 to 3 that never connect (their tasks wait for ever), each
    /// with the receiving end of its commands, and the reports it sends the loop.
    fn members() -> (Membership, Vec<mpsc::UnboundedReceiver<ConnCmd>>, Reports) {
        let url = crate::network::conn::url::RedisUrl::parse("redis://127.0.0.1:1").unwrap();
        let opts = crate::network::conn::ConnectConfig::default()
            .options_for(&url)
            .unwrap();
        let mut settings = crate::watch::WatchSettings::new(opts);
        settings.engine.topology_interval = Duration::from_secs(1);
        let (tx, reports) = mpsc::unbounded_channel();
        let (fatal, _) = mpsc::unbounded_channel();
        let spawner = Spawner::for_test(settings, tx, fatal);
        let mut m = Membership {
            spawner,
            watched: HashMap::new(),
            next_id: 4,
            nodes: None,
            peers: HashMap::new(),
            masters_only: false,
            up: BTreeSet::new(),
            pending: None,
            ticker: None,
        };
        let mut rxs = Vec::new();
        for id in 1..=3 {
            let (cmds, rx) = mpsc::unbounded_channel();
            let task = tokio::spawn(std::future::pending());
            m.watched.insert(
                id,
                Watched {
                    task,
                    cmds,
                    node: None,
                },
            );
            rxs.push(rx);
        }
        (m, rxs, reports)
    }

    fn node(port: u16, role: &str, slots: &[(u16, u16)]) -> ClusterNode {
        ClusterNode {
            host: "127.0.0.1".into(),
            port,
            role: role.into(),
            slots: slots.to_vec(),
        }
    }

    fn asked(rxs: &mut [mpsc::UnboundedReceiver<ConnCmd>]) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, rx) in rxs.iter_mut().enumerate() {
            while rx.try_recv().is_ok() {
                out.push(i as u32 + 1);
            }
        }
        out
    }

    /// On the paused clock: a lost connection asks another node, once while a read is under
    /// way, and again after the patience; a read that changed nothing writes no line, one that
    /// did says what; the interval ticks.
    #[tokio::test(start_paused = true)]
    async fn a_lost_connection_asks_another_node_once_and_only_changes_are_told() {
        let (mut m, mut rxs, mut reports) = members();
        let before = [
            node(7001, "master", &[(0, 16383)]),
            node(7002, "replica", &[]),
        ];
        let Some(What::Topology(first)) = m.nodes_read(&before) else {
            panic!("the discovery is always told")
        };
        assert_eq!(first.reason, TopologyReason::Discovered);
        assert!(first.moved.is_empty(), "nothing moved at the discovery");
        m.session_up(1);
        m.session_up(2);

        m.session_down(1, true);
        assert_eq!(
            asked(&mut rxs),
            vec![2],
            "another node, never the one that failed"
        );
        m.session_down(3, true);
        assert!(asked(&mut rxs).is_empty(), "one read under way at a time");
        tokio::time::advance(READ_PATIENCE).await;
        m.session_down(3, true);
        assert_eq!(asked(&mut rxs), vec![2], "asked again after the patience");
        assert!(m.nodes_read(&before).is_none(), "nothing changed: no line");

        m.session_down(2, false);
        m.ask(TopologyReason::Interval, None);
        assert!(
            asked(&mut rxs).is_empty(),
            "no connection has a session: nobody asked"
        );

        m.session_up(3);
        m.ask(TopologyReason::Interval, None);
        assert_eq!(asked(&mut rxs), vec![3]);
        let after = [node(7002, "master", &[(0, 16383)])];
        let Some(What::Topology(change)) = m.nodes_read(&after) else {
            panic!("a change is told")
        };
        assert_eq!(change.reason, TopologyReason::Interval);
        assert_eq!(change.removed, vec!["127.0.0.1:7001".to_string()]);
        assert_eq!(change.roles.len(), 1);
        assert_eq!(
            (
                change.moved[0].from.as_deref(),
                change.moved[0].to.as_deref()
            ),
            (Some("127.0.0.1:7001"), Some("127.0.0.1:7002"))
        );

        // The ticker started with the discovery: one tick per interval.
        while reports.try_recv().is_ok() {}
        let mut ticks = 0;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        while let Ok((_, report)) = reports.try_recv() {
            ticks += matches!(report, Report::Tick) as u32;
        }
        assert!(ticks >= 2, "{ticks} ticks");
        m.stop().await;
    }
}
