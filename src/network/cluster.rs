//! OSS-cluster topology as a client reads it: CLUSTER SHARDS, or CLUSTER SLOTS on servers older
//! than Redis 7, into a list of nodes to watch.
//!
//! With the OSS Cluster API every node delivers the same notification on its own connection, so a
//! cluster watch needs one connection per node and must follow the topology as SMIGRATED changes
//! it. Parsing is pure and tolerant of the RESP2 and RESP3 shapes of both replies.

use crate::protocol::resp::Frame;
use serde::{Deserialize, Serialize};

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterNode {
    pub host: String,
    pub port: u16,
    /// `master` or `replica`.
    pub role: String,
    /// The slot ranges it serves, first and last inclusive (a master's; empty for a replica).
    #[serde(default)]
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    /// `host:port`, IPv6 in brackets.
    pub fn addr(&self) -> String {
        crate::protocol::notification::HostPort {
            host: self.host.clone(),
            port: self.port,
        }
        .to_string()
    }

    pub fn is_master(&self) -> bool {
        self.role == "master"
    }
}

/// Nodes from a CLUSTER SHARDS reply. Nodes marked `fail` are left out.
pub fn from_shards(reply: &Frame<'_>) -> Option<Vec<ClusterNode>> {
    let Frame::Array(shards) = reply else {
        return None;
    };
    let mut out = Vec::new();
    for shard in shards {
        let Some(Frame::Array(nodes)) = shard.field("nodes") else {
            return None;
        };
        let slots = shard_slots(shard);
        for node in nodes {
            if node.field("health").and_then(Frame::text_lossy).as_deref() == Some("fail") {
                continue;
            }
            let host = node
                .field("endpoint")
                .and_then(Frame::text_lossy)
                .filter(|h| !h.is_empty() && h != "?")
                .or_else(|| node.field("ip").and_then(Frame::text_lossy))?;
            let port = node
                .field("port")
                .or_else(|| node.field("tls-port"))
                .and_then(Frame::int)
                .and_then(|p| u16::try_from(p).ok())?;
            let role = node
                .field("role")
                .and_then(Frame::text_lossy)
                .unwrap_or_else(|| "master".into());
            let slots = if role == "master" {
                slots.clone()
            } else {
                Vec::new()
            };
            out.push(ClusterNode {
                host,
                port,
                role,
                slots,
            });
        }
    }
    Some(tidy(out))
}

/// A shard's `slots`: a flat list of first and last slots, two by two.
fn shard_slots(shard: &Frame<'_>) -> Vec<(u16, u16)> {
    let Some(Frame::Array(ends)) = shard.field("slots") else {
        return Vec::new();
    };
    let ends: Vec<u16> = ends
        .iter()
        .filter_map(|e| e.int().and_then(|i| u16::try_from(i).ok()))
        .collect();
    ends.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

/// Sorted, one entry per address and role, each node's ranges in order.
fn tidy(mut nodes: Vec<ClusterNode>) -> Vec<ClusterNode> {
    nodes.sort();
    let mut out: Vec<ClusterNode> = Vec::with_capacity(nodes.len());
    for n in nodes {
        match out.last_mut() {
            Some(last) if last.addr() == n.addr() && last.role == n.role => {
                last.slots.extend(n.slots)
            }
            _ => out.push(n),
        }
    }
    for n in &mut out {
        n.slots.sort();
        n.slots.dedup();
    }
    out
}

/// A cluster as one node sees it, its failed nodes included (`doctor`): a node marked `fail`, or
/// slots no master that answers serves, is a topology change under way or just made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Health {
    pub masters: u32,
    pub replicas: u32,
    /// `host:port` of each node marked `fail`.
    pub failed: Vec<String>,
    /// Slots whose master is missing or marked `fail`.
    pub unserved_slots: u32,
}

/// The health of a cluster from a CLUSTER SHARDS reply.
pub fn health_from_shards(reply: &Frame<'_>) -> Option<Health> {
    let Frame::Array(shards) = reply else {
        return None;
    };
    let mut health = Health::default();
    let mut served = 0u32;
    for shard in shards {
        let Some(Frame::Array(nodes)) = shard.field("nodes") else {
            return None;
        };
        let mut master_up = false;
        for node in nodes {
            let text = |k: &str| node.field(k).and_then(Frame::text_lossy);
            let role = text("role").unwrap_or_else(|| "master".into());
            if text("health").as_deref() == Some("fail") {
                let host = text("endpoint")
                    .filter(|h| !h.is_empty() && h != "?")
                    .or_else(|| text("ip"))
                    .unwrap_or_default();
                let port = node.field("port").and_then(Frame::int).unwrap_or(0);
                health.failed.push(format!("{host}:{port}"));
            } else if role == "master" {
                health.masters += 1;
                master_up = true;
            } else {
                health.replicas += 1;
            }
        }
        if master_up {
            served += shard_slots(shard)
                .iter()
                .map(|(a, b)| u32::from(b.saturating_sub(*a)) + 1)
                .sum::<u32>();
        }
    }
    health.failed.sort();
    health.unserved_slots = (SLOTS as u32).saturating_sub(served);
    Some(health)
}

/// Nodes from a CLUSTER SLOTS reply: the first node of each range is its master.
pub fn from_slots(reply: &Frame<'_>) -> Option<Vec<ClusterNode>> {
    let Frame::Array(ranges) = reply else {
        return None;
    };
    let mut out = Vec::new();
    for range in ranges {
        let Frame::Array(parts) = range else {
            return None;
        };
        let slot = |i: usize| {
            parts
                .get(i)
                .and_then(Frame::int)
                .and_then(|s| u16::try_from(s).ok())
        };
        let (first, last) = (slot(0)?, slot(1)?);
        for (i, node) in parts.iter().skip(2).enumerate() {
            let Frame::Array(n) = node else {
                return None;
            };
            let host = n.first().and_then(Frame::text_lossy)?;
            let port = n
                .get(1)
                .and_then(Frame::int)
                .and_then(|p| u16::try_from(p).ok())?;
            out.push(ClusterNode {
                host,
                port,
                role: if i == 0 { "master" } else { "replica" }.into(),
                slots: if i == 0 {
                    vec![(first, last)]
                } else {
                    Vec::new()
                },
            });
        }
    }
    Some(tidy(out))
}

/// A node whose role changed between two topologies (a replica promoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleChange {
    pub addr: String,
    pub from: String,
    pub to: String,
}

/// Slots `first..=last` served by `from` before and by `to` now (`None`: no master that answers
/// serves them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotMove {
    pub first: u16,
    pub last: u16,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// What changed between two topologies: nodes by address, roles, and which slots changed hands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    pub added: Vec<ClusterNode>,
    pub removed: Vec<ClusterNode>,
    pub roles: Vec<RoleChange>,
    pub moved: Vec<SlotMove>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.roles.is_empty()
            && self.moved.is_empty()
    }
}

/// The number of slots of an OSS cluster.
pub const SLOTS: usize = 16384;

/// What changed between two topologies.
pub fn diff(before: &[ClusterNode], after: &[ClusterNode]) -> Change {
    let has = |list: &[ClusterNode], n: &ClusterNode| list.iter().any(|b| b.addr() == n.addr());
    let added = after.iter().filter(|n| !has(before, n)).cloned().collect();
    let removed = before.iter().filter(|n| !has(after, n)).cloned().collect();
    let roles = after
        .iter()
        .filter_map(|n| {
            let old = before.iter().find(|b| b.addr() == n.addr())?;
            (old.role != n.role).then(|| RoleChange {
                addr: n.addr(),
                from: old.role.clone(),
                to: n.role.clone(),
            })
        })
        .collect();
    Change {
        added,
        removed,
        roles,
        moved: moved_slots(before, after),
    }
}

/// Each slot's master by index into `nodes`, `None` where no node serves it.
fn owners(nodes: &[ClusterNode]) -> Vec<Option<usize>> {
    let mut owner = vec![None; SLOTS];
    for (i, n) in nodes.iter().enumerate() {
        for &(first, last) in &n.slots {
            let last = usize::from(last).min(SLOTS - 1);
            for slot in owner.iter_mut().take(last + 1).skip(usize::from(first)) {
                *slot = Some(i);
            }
        }
    }
    owner
}

/// The runs of slots whose master changed, each with where it was and where it is.
fn moved_slots(before: &[ClusterNode], after: &[ClusterNode]) -> Vec<SlotMove> {
    let (was, is) = (owners(before), owners(after));
    let name = |nodes: &[ClusterNode], i: Option<usize>| i.map(|i| nodes[i].addr());
    let mut out: Vec<SlotMove> = Vec::new();
    for slot in 0..SLOTS {
        let (from, to) = (name(before, was[slot]), name(after, is[slot]));
        if from == to {
            continue;
        }
        let slot = slot as u16;
        match out.last_mut() {
            Some(m) if m.last + 1 == slot && m.from == from && m.to == to => m.last = slot,
            _ => out.push(SlotMove {
                first: slot,
                last: slot,
                from,
                to,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resp::{Scan, Scanner};

    fn frame(bytes: &[u8]) -> Frame<'_> {
        match Scanner::default().scan(bytes).unwrap() {
            Scan::Frame(f, _) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shards_reply_in_resp3_and_resp2_shapes() {
        let resp3 = b"*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n%4\r\n$2\r\nip\r\n$9\r\n127.0.0.2\r\n$4\r\nport\r\n:7000\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%4\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.3\r\n$4\r\nport\r\n:7001\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$6\r\nhealth\r\n$4\r\nfail\r\n";
        let nodes = from_shards(&frame(resp3)).unwrap();
        assert_eq!(
            nodes,
            vec![ClusterNode {
                host: "127.0.0.2".into(),
                port: 7000,
                role: "master".into(),
                slots: vec![(0, 5460)],
            }],
            "the failed replica is left out"
        );
        let resp2 = b"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*6\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.4\r\n$4\r\nport\r\n:7002\r\n$4\r\nrole\r\n$6\r\nmaster\r\n";
        let nodes = from_shards(&frame(resp2)).unwrap();
        assert_eq!(nodes[0].addr(), "127.0.0.4:7002");
    }

    #[test]
    fn health_counts_the_failed_nodes_and_the_slots_no_live_master_serves() {
        // A shard whose master failed before its replica took over, and a healthy one.
        let reply = b"*2\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:99\r\n$5\r\nnodes\r\n*2\r\n%4\r\n$2\r\nip\r\n$9\r\n127.0.0.2\r\n$4\r\nport\r\n:7000\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$4\r\nfail\r\n%4\r\n$2\r\nip\r\n$9\r\n127.0.0.3\r\n$4\r\nport\r\n:7001\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n$5\r\nslots\r\n*2\r\n:100\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%4\r\n$2\r\nip\r\n$9\r\n127.0.0.4\r\n$4\r\nport\r\n:7002\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";
        let health = health_from_shards(&frame(reply)).unwrap();
        assert_eq!(
            health,
            Health {
                masters: 1,
                replicas: 1,
                failed: vec!["127.0.0.2:7000".into()],
                unserved_slots: 100,
            }
        );
        assert!(health_from_shards(&frame(b"+OK\r\n")).is_none());
    }

    #[test]
    fn slots_reply_masters_first_then_replicas() {
        let reply = b"*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.2\r\n:7000\r\n$2\r\nid\r\n*3\r\n$9\r\n127.0.0.3\r\n:7001\r\n$2\r\nid\r\n";
        let nodes = from_slots(&frame(reply)).unwrap();
        assert_eq!(nodes.len(), 2);
        assert!(nodes[0].is_master() && !nodes[1].is_master());
        assert_eq!(
            (nodes[0].slots.clone(), nodes[1].slots.clone()),
            (vec![(0, 16383)], vec![])
        );
        assert!(from_slots(&frame(b"+OK\r\n")).is_none());
    }

    fn node(h: &str, role: &str, slots: &[(u16, u16)]) -> ClusterNode {
        ClusterNode {
            host: h.into(),
            port: 1,
            role: role.into(),
            slots: slots.to_vec(),
        }
    }

    #[test]
    fn diff_by_address() {
        let n = |h: &str| node(h, "master", &[]);
        let change = diff(&[n("a"), n("b")], &[n("b"), n("c")]);
        assert_eq!((change.added, change.removed), (vec![n("c")], vec![n("a")]));
        assert!(change.roles.is_empty() && change.moved.is_empty());
        assert!(diff(&[n("a")], &[n("a")]).is_empty());
    }

    #[test]
    fn a_failover_is_a_node_gone_a_role_changed_and_its_slots_moved() {
        let before = [
            node("a", "master", &[(0, 8191)]),
            node("b", "master", &[(8192, 16383)]),
            node("c", "replica", &[]),
        ];
        let after = [
            node("b", "master", &[(8192, 16383)]),
            node("c", "master", &[(0, 8191)]),
        ];
        let change = diff(&before, &after);
        assert_eq!(change.removed, vec![before[0].clone()]);
        assert_eq!(
            change.roles,
            vec![RoleChange {
                addr: "c:1".into(),
                from: "replica".into(),
                to: "master".into()
            }]
        );
        assert_eq!(
            change.moved,
            vec![SlotMove {
                first: 0,
                last: 8191,
                from: Some("a:1".into()),
                to: Some("c:1".into())
            }]
        );
    }

    #[test]
    fn a_reshard_is_one_run_per_change_of_hands() {
        let before = [
            node("a", "master", &[(0, 8191)]),
            node("b", "master", &[(8192, 16383)]),
        ];
        let after = [
            node("a", "master", &[(100, 8191), (16000, 16383)]),
            node("b", "master", &[(0, 49), (8192, 15999)]),
        ];
        let moved = diff(&before, &after).moved;
        let runs: Vec<_> = moved
            .iter()
            .map(|m| (m.first, m.last, m.from.clone(), m.to.clone()))
            .collect();
        let (a, b) = (Some("a:1".to_string()), Some("b:1".to_string()));
        assert_eq!(
            runs,
            vec![
                (0, 49, a.clone(), b.clone()),
                (50, 99, a.clone(), None),
                (16000, 16383, b, a),
            ]
        );
    }
}
