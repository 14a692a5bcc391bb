//! The OSS-cluster side of the simulator: key slots, and the topology replies cluster clients
//! read before they route anything (CLUSTER SLOTS / SHARDS / NODES).
//!
//! Without these a cluster client cannot even start against the OSS-cluster scenario, and an
//! SMIGRATED it cannot check against a changed CLUSTER SLOTS is only half a migration. Slot
//! ownership is one byte per slot (16 KiB), so a reply is a scan of contiguous runs.

use std::net::Ipv4Addr;

use crate::protocol::resp::Frame;

/// Number of hash slots in a Redis cluster.
pub const SLOTS: usize = 16384;

/// No node owns the slot.
const UNOWNED: u8 = u8::MAX;

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of a key, honouring `{hash tags}` as Redis does (the first `{...}` with something
/// inside it).
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&b| b == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS as u16
}

/// A stable 40-hex-digit node id derived from the node's address, so ids are the same on every
/// run and in every reply.
pub fn node_id(addr: Ipv4Addr) -> String {
    format!("{:08x}", u32::from(addr)).repeat(5)
}

/// Who owns which slot. Nodes are indexed in the scenario's proxy order.
#[derive(Debug, Clone)]
pub struct Topology {
    nodes: Vec<Ipv4Addr>,
    owner: Vec<u8>,
}

impl Topology {
    pub fn new(nodes: &[(Ipv4Addr, Vec<(u16, u16)>)]) -> Topology {
        let mut t = Topology {
            nodes: nodes.iter().map(|(a, _)| *a).collect(),
            owner: vec![UNOWNED; SLOTS],
        };
        for (addr, ranges) in nodes {
            t.assign(ranges, *addr);
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Gives the slots to `node` (a node not yet known is added).
    pub fn assign(&mut self, ranges: &[(u16, u16)], node: Ipv4Addr) {
        let index = match self.nodes.iter().position(|n| *n == node) {
            Some(i) => i,
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        for &(a, b) in ranges {
            for slot in a..=b {
                self.owner[slot as usize] = index as u8;
            }
        }
    }

    /// The slot ranges a node owns, in slot order (none for a node that owns nothing).
    pub fn ranges_of(&self, node: Ipv4Addr) -> Vec<(u16, u16)> {
        self.runs()
            .into_iter()
            .filter(|(_, _, n)| *n == node)
            .map(|(a, b, _)| (a, b))
            .collect()
    }

    /// The nodes that own slots, in the order they were first given some.
    pub fn owners(&self) -> Vec<Ipv4Addr> {
        let runs = self.runs();
        self.nodes
            .iter()
            .copied()
            .filter(|n| runs.iter().any(|(_, _, o)| o == n))
            .collect()
    }

    pub fn owner(&self, slot: u16) -> Option<Ipv4Addr> {
        self.nodes.get(self.owner[slot as usize] as usize).copied()
    }

    /// Contiguous runs `(first, last, node)` in slot order.
    fn runs(&self) -> Vec<(u16, u16, Ipv4Addr)> {
        let mut runs: Vec<(u16, u16, Ipv4Addr)> = Vec::new();
        for (slot, &o) in self.owner.iter().enumerate() {
            let Some(&node) = self.nodes.get(o as usize) else {
                continue;
            };
            match runs.last_mut() {
                Some((_, last, n)) if *n == node && *last as usize + 1 == slot => {
                    *last = slot as u16
                }
                _ => runs.push((slot as u16, slot as u16, node)),
            }
        }
        runs
    }

    /// CLUSTER SLOTS: `[first, last, [ip, port, id, {}]]` per run, as Redis 7 answers.
    pub fn slots_reply(&self, port: u16, resp3: bool) -> Vec<u8> {
        let runs = self.runs();
        let texts: Vec<(String, String)> = runs
            .iter()
            .map(|(_, _, n)| (n.to_string(), node_id(*n)))
            .collect();
        let empty = if resp3 {
            Frame::Map(Vec::new())
        } else {
            Frame::Array(Vec::new())
        };
        Frame::Array(
            runs.iter()
                .zip(&texts)
                .map(|((a, b, _), (ip, id))| {
                    Frame::Array(vec![
                        Frame::Integer(i64::from(*a)),
                        Frame::Integer(i64::from(*b)),
                        Frame::Array(vec![
                            Frame::Blob(ip.as_bytes()),
                            Frame::Integer(i64::from(port)),
                            Frame::Blob(id.as_bytes()),
                            empty.clone(),
                        ]),
                    ])
                })
                .collect(),
        )
        .to_bytes()
    }

    /// CLUSTER SHARDS: one map per node with its slot ranges and itself as the only (master) node.
    pub fn shards_reply(&self, port: u16, resp3: bool) -> Vec<u8> {
        let runs = self.runs();
        let texts: Vec<(String, String, String)> = self
            .nodes
            .iter()
            .map(|n| (n.to_string(), node_id(*n), format!("{n}")))
            .collect();
        let shards = self
            .nodes
            .iter()
            .zip(&texts)
            .map(|(node, (ip, id, endpoint))| {
                let slots = runs
                    .iter()
                    .filter(|(_, _, n)| n == node)
                    .flat_map(|(a, b, _)| {
                        [Frame::Integer(i64::from(*a)), Frame::Integer(i64::from(*b))]
                    })
                    .collect();
                let node_map = vec![
                    (Frame::Blob(b"id"), Frame::Blob(id.as_bytes())),
                    (Frame::Blob(b"port"), Frame::Integer(i64::from(port))),
                    (Frame::Blob(b"ip"), Frame::Blob(ip.as_bytes())),
                    (Frame::Blob(b"endpoint"), Frame::Blob(endpoint.as_bytes())),
                    (Frame::Blob(b"role"), Frame::Blob(b"master")),
                    (Frame::Blob(b"replication-offset"), Frame::Integer(0)),
                    (Frame::Blob(b"health"), Frame::Blob(b"online")),
                ];
                let shard = vec![
                    (Frame::Blob(b"slots"), Frame::Array(slots)),
                    (
                        Frame::Blob(b"nodes"),
                        Frame::Array(vec![as_map(node_map, resp3)]),
                    ),
                ];
                as_map(shard, resp3)
            })
            .collect();
        Frame::Array(shards).to_bytes()
    }

    /// CLUSTER NODES: Redis' text format, `myself` on the node asked.
    pub fn nodes_text(&self, port: u16, myself: Ipv4Addr) -> String {
        let runs = self.runs();
        let cport = port.checked_add(10000).unwrap_or(0);
        let mut out = String::new();
        for node in &self.nodes {
            let flags = if *node == myself {
                "myself,master"
            } else {
                "master"
            };
            out.push_str(&format!(
                "{} {node}:{port}@{cport} {flags} - 0 0 1 connected",
                node_id(*node)
            ));
            for (a, b, _) in runs.iter().filter(|(_, _, n)| n == node) {
                if a == b {
                    out.push_str(&format!(" {a}"));
                } else {
                    out.push_str(&format!(" {a}-{b}"));
                }
            }
            out.push('\n');
        }
        out
    }

    /// CLUSTER INFO's text.
    pub fn info_text(&self) -> String {
        let assigned = self
            .owner
            .iter()
            .filter(|&&o| (o as usize) < self.nodes.len())
            .count();
        let state = if assigned == SLOTS { "ok" } else { "fail" };
        format!(
            "cluster_enabled:1\r\ncluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\n\
             cluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n\
             cluster_known_nodes:{n}\r\ncluster_size:{n}\r\ncluster_current_epoch:1\r\n\
             cluster_my_epoch:1\r\n",
            n = self.nodes.len()
        )
    }
}

/// A map in RESP3, a flat key/value array in RESP2 (as Redis downgrades maps).
pub fn as_map<'a>(pairs: Vec<(Frame<'a>, Frame<'a>)>, resp3: bool) -> Frame<'a> {
    if resp3 {
        Frame::Map(pairs)
    } else {
        Frame::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slots_match_redis() {
        // Values from CLUSTER KEYSLOT on a real server.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(key_slot(b"{}foo"), crc16(b"{}foo") % 16384);
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn runs_follow_assignment() {
        let a: Ipv4Addr = "127.0.0.2".parse().unwrap();
        let b: Ipv4Addr = "127.0.0.3".parse().unwrap();
        let mut t = Topology::new(&[(a, vec![(0, 8191)]), (b, vec![(8192, 16383)])]);
        assert_eq!(t.runs(), vec![(0, 8191, a), (8192, 16383, b)]);
        t.assign(&[(100, 199)], b);
        assert_eq!(
            t.runs(),
            vec![(0, 99, a), (100, 199, b), (200, 8191, a), (8192, 16383, b)]
        );
        assert_eq!(t.owner(150), Some(b));
        let text = t.nodes_text(7000, a);
        assert!(
            text.contains("127.0.0.2:7000@17000 myself,master - 0 0 1 connected 0-99 200-8191"),
            "{text}"
        );
        assert!(t.info_text().contains("cluster_state:ok"));
    }
}
