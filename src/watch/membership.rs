//! Cluster membership: which nodes the watch follows, and the connection watching each.
//!
//! One owner for it: the connection tasks only report the nodes a CLUSTER SHARDS/SLOTS reply
//! named, the timeline only sees the resulting [`What::Topology`], and this module alone decides
//! which connections start and stop.

use super::connection::{observe, ConnCmd, Spawner, Watched};
use crate::network::cluster::{self, ClusterNode};
use crate::observe::record::TopologyReason;
use crate::observe::timeline::{event, CloseCause, ScenarioClock, What};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

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
        }
    }

    /// Connection `conn` is connected to `addr`.
    pub(super) fn connected(&mut self, conn: u32, addr: SocketAddr) {
        self.peers.insert(conn, addr);
    }

    /// A topology was read: new nodes get a connection (or adopt one already open to them),
    /// nodes that left lose theirs. Returns what the timeline is told.
    pub(super) fn nodes_read(&mut self, found: &[ClusterNode]) -> What {
        let found: Vec<ClusterNode> = found
            .iter()
            .filter(|n| !self.masters_only || n.is_master())
            .cloned()
            .collect();
        let reason = if self.nodes.is_some() {
            TopologyReason::Refreshed
        } else {
            TopologyReason::Discovered
        };
        let before = self.nodes.take().unwrap_or_default();
        let (added, removed) = cluster::diff(&before, &found);
        for node in &added {
            self.add(node);
        }
        for node in &removed {
            self.remove(&node.addr());
        }
        let what = What::Topology(event::Topology {
            reason,
            nodes: found.iter().map(ClusterNode::addr).collect(),
            added: added.iter().map(ClusterNode::addr).collect(),
            removed: removed.iter().map(ClusterNode::addr).collect(),
        });
        self.nodes = Some(found);
        what
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
                        error: Some(format!("{addr} left the cluster")),
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
        &self,
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
        for w in self.watched.values() {
            w.task.abort();
        }
        for w in self.watched.into_values() {
            let _ = w.task.await;
        }
    }
}
