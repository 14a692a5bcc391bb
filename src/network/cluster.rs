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
            out.push(ClusterNode { host, port, role });
        }
    }
    out.sort();
    out.dedup();
    Some(out)
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
            });
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// What changed between two topologies, by address.
pub fn diff(before: &[ClusterNode], after: &[ClusterNode]) -> (Vec<ClusterNode>, Vec<ClusterNode>) {
    let added = after
        .iter()
        .filter(|n| !before.iter().any(|b| b.addr() == n.addr()))
        .cloned()
        .collect();
    let removed = before
        .iter()
        .filter(|b| !after.iter().any(|n| n.addr() == b.addr()))
        .cloned()
        .collect();
    (added, removed)
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
                role: "master".into()
            }],
            "the failed replica is left out"
        );
        let resp2 = b"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*6\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.4\r\n$4\r\nport\r\n:7002\r\n$4\r\nrole\r\n$6\r\nmaster\r\n";
        let nodes = from_shards(&frame(resp2)).unwrap();
        assert_eq!(nodes[0].addr(), "127.0.0.4:7002");
    }

    #[test]
    fn slots_reply_masters_first_then_replicas() {
        let reply = b"*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.2\r\n:7000\r\n$2\r\nid\r\n*3\r\n$9\r\n127.0.0.3\r\n:7001\r\n$2\r\nid\r\n";
        let nodes = from_slots(&frame(reply)).unwrap();
        assert_eq!(nodes.len(), 2);
        assert!(nodes[0].is_master() && !nodes[1].is_master());
        assert!(from_slots(&frame(b"+OK\r\n")).is_none());
    }

    #[test]
    fn diff_by_address() {
        let n = |h: &str| ClusterNode {
            host: h.into(),
            port: 1,
            role: "master".into(),
        };
        let (added, removed) = diff(&[n("a"), n("b")], &[n("b"), n("c")]);
        assert_eq!((added, removed), (vec![n("c")], vec![n("a")]));
    }
}
