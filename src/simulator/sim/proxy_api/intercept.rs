//! The proxy API's interceptors: what answers a command in place of the upstream.
//!
//! As in cae-resp-proxy, every command (one whole frame) is offered to the interceptors in
//! order, newest first; each counts the commands it was offered (`invokeCount`) and answered
//! (`matchCount`), and the first that answers ends the search. Kept apart from the relay so the
//! matching rules, which the suites depend on byte for byte, read in one place.

use crate::protocol::resp::{Frame, Limits, Scan, Scanner};

use super::super::notation::escape;

/// The proxy's default interceptors, by the names `DEFAULT_INTERCEPTORS` takes.
pub const DEFAULT_INTERCEPTORS: &[&str] = &["cluster", "hitless", "logger"];

/// The `cluster` interceptor's command, matched as the proxy does: the whole frame, lower case.
const CLUSTER_SLOTS: &[u8] = b"*2\r\n$7\r\ncluster\r\n$5\r\nslots\r\n";
/// `CLUSTER SHARDS` and `CLUSTER NODES`, which the proxy's `cluster` leaves to the upstream
/// (a standalone Redis refuses them); answered here from the same nodes (docs/proxy-api.md).
const CLUSTER_SHARDS: &[u8] = b"*2\r\n$7\r\ncluster\r\n$6\r\nshards\r\n";
const CLUSTER_NODES: &[u8] = b"*2\r\n$7\r\ncluster\r\n$5\r\nnodes\r\n";
/// The `hitless` interceptor's needle: a command containing it is the opt-in.
const OPT_IN: &[u8] = b"*5\r\n$6\r\nclient\r\n$19\r\nmaint_notifications\r\n$2\r\non\r\n";

/// The longest escaped text of a frame in the narration.
const SUMMARY_MAX: usize = 120;

pub(super) enum Kind {
    /// `POST /interceptors`: a command equal to `pattern` (ASCII case folded) gets `response`.
    Match {
        pattern: Vec<u8>,
        response: Vec<u8>,
    },
    /// `POST /scenarios`: the next commands, whatever they are, get these answers in turn.
    Queue {
        responses: Vec<Vec<u8>>,
        next: usize,
    },
    Cluster,
    Hitless,
    /// Passes everything on; counted only (the narration already shows the traffic).
    Logger,
}

pub(super) struct Interceptor {
    pub name: String,
    kind: Kind,
    invoked: u64,
    matched: u64,
}

impl Interceptor {
    pub fn new(name: String, kind: Kind) -> Interceptor {
        Interceptor {
            name,
            kind,
            invoked: 0,
            matched: 0,
        }
    }

    /// A default interceptor under the proxy's own name for it.
    pub fn default_named(name: &str) -> Option<Interceptor> {
        let (name, kind) = match name {
            "cluster" => ("cluster-simulation-interceptor", Kind::Cluster),
            "hitless" => ("hitless-simulation-interceptor", Kind::Hitless),
            "logger" => ("logging-interceptor", Kind::Logger),
            _ => return None,
        };
        Some(Interceptor::new(name.into(), kind))
    }

    /// Its `InterceptorState` for `/stats`.
    pub fn state(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "invokeCount": self.invoked,
            "matchCount": self.matched,
        })
    }

    /// Its answer to `command`, if it answers it; `nodes` are the listening nodes, in order.
    fn answer(&mut self, command: &[u8], nodes: &[(String, u16)]) -> Option<Vec<u8>> {
        self.invoked += 1;
        let lower = command.to_ascii_lowercase();
        let reply = match &mut self.kind {
            Kind::Match { pattern, response } => {
                (lower == pattern.to_ascii_lowercase()).then(|| response.clone())
            }
            Kind::Queue { responses, next } => {
                let r = responses.get(*next).cloned();
                *next += usize::from(r.is_some());
                r
            }
            Kind::Cluster if lower == CLUSTER_SLOTS => Some(slots_reply(nodes)),
            Kind::Cluster if lower == CLUSTER_SHARDS => Some(shards_reply(nodes)),
            Kind::Cluster if lower == CLUSTER_NODES => Some(nodes_reply(nodes)),
            Kind::Hitless if contains(&lower, OPT_IN) => Some(b"+OK\r\n".to_vec()),
            _ => None,
        };
        self.matched += u64::from(reply.is_some());
        reply
    }
}

/// Offers `command` to each interceptor in turn: the name and answer of the first that answers.
pub(super) fn answer(
    chain: &mut [Interceptor],
    command: &[u8],
    nodes: &[(String, u16)],
) -> Option<(String, Vec<u8>)> {
    chain
        .iter_mut()
        .find_map(|i| i.answer(command, nodes).map(|r| (i.name.clone(), r)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Each node's share of the 16384 slots, as the proxy splits them: equal ranges in node order,
/// the last one to 16383.
fn ranges(n: usize) -> Vec<(usize, usize)> {
    let share = 16384 / n.max(1);
    (0..n)
        .map(|i| {
            let from = i * share;
            let to = if i + 1 == n { 16383 } else { from + share - 1 };
            (from, to)
        })
        .collect()
}

/// The id the proxy gives a node in CLUSTER SLOTS: `proxy-id-PORT`.
fn proxy_node_id(port: u16) -> String {
    format!("proxy-id-{port}")
}

fn bulk(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(format!("${}\r\n{text}\r\n", text.len()).as_bytes());
}

/// CLUSTER SLOTS byte for byte as the proxy's `cluster` interceptor writes it.
fn slots_reply(nodes: &[(String, u16)]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", nodes.len()).into_bytes();
    for ((host, port), (from, to)) in nodes.iter().zip(ranges(nodes.len())) {
        out.extend_from_slice(format!("*3\r\n:{from}\r\n:{to}\r\n*3\r\n").as_bytes());
        bulk(&mut out, host);
        out.extend_from_slice(format!(":{port}\r\n").as_bytes());
        bulk(&mut out, &proxy_node_id(*port));
    }
    out
}

/// CLUSTER SHARDS (RESP2 form, which RESP3 clients read too): one master per shard.
fn shards_reply(nodes: &[(String, u16)]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", nodes.len()).into_bytes();
    for ((host, port), (from, to)) in nodes.iter().zip(ranges(nodes.len())) {
        out.extend_from_slice(b"*4\r\n");
        bulk(&mut out, "slots");
        out.extend_from_slice(format!("*2\r\n:{from}\r\n:{to}\r\n").as_bytes());
        bulk(&mut out, "nodes");
        out.extend_from_slice(b"*1\r\n*12\r\n");
        let port_text = port.to_string();
        for (k, v) in [
            ("id", proxy_node_id(*port).as_str()),
            ("port", port_text.as_str()),
            ("ip", host.as_str()),
            ("endpoint", host.as_str()),
            ("role", "master"),
            ("health", "online"),
        ] {
            bulk(&mut out, k);
            bulk(&mut out, v);
        }
    }
    out
}

/// CLUSTER NODES: one line per node, every node a master.
fn nodes_reply(nodes: &[(String, u16)]) -> Vec<u8> {
    let mut text = String::new();
    for ((host, port), (from, to)) in nodes.iter().zip(ranges(nodes.len())) {
        text.push_str(&format!(
            "{} {host}:{port}@{} master - 0 0 1 connected {from}-{to}\n",
            proxy_node_id(*port),
            u32::from(*port) + 10000
        ));
    }
    let mut out = Vec::new();
    bulk(&mut out, &text);
    out
}

/// What an injected frame reads as, for the narration and the grade.
pub(super) struct Described {
    pub summary: String,
    pub kind: Option<String>,
    pub seq: Option<i64>,
    pub window: f64,
    pub target: Option<String>,
}

/// Reads the first frame of an injection: a maintenance notification's type, seq, window and
/// target when it is one; always a short escaped summary.
pub(super) fn describe(bytes: &[u8]) -> Described {
    let mut summary = escape(&bytes[..bytes.len().min(SUMMARY_MAX)]);
    if bytes.len() > SUMMARY_MAX {
        summary.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    let mut d = Described {
        summary,
        kind: None,
        seq: None,
        window: 0.0,
        target: None,
    };
    let Ok(Scan::Frame(frame, _)) = Scanner::new(Limits::default()).scan(bytes) else {
        return d;
    };
    let (Frame::Push(items) | Frame::Array(items)) = frame.unattributed() else {
        return d;
    };
    let text = |i: usize| items.get(i).and_then(|f| f.as_text());
    let Some(kind) = text(0).map(|k| String::from_utf8_lossy(k).to_ascii_uppercase()) else {
        return d;
    };
    if !crate::shared::NOTIFICATION_TYPES.contains(&kind.as_str()) {
        return d;
    }
    let int = |i: usize| match items.get(i) {
        Some(Frame::Integer(n)) => Some(*n),
        _ => None,
    };
    d.seq = int(1);
    if matches!(kind.as_str(), "MOVING" | "MIGRATING" | "FAILING_OVER") {
        d.window = int(2).unwrap_or(0) as f64;
    }
    if kind == "MOVING" {
        d.target = text(3).map(|t| String::from_utf8_lossy(t).into_owned());
    }
    d.kind = Some(kind);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(ports: &[u16]) -> Vec<(String, u16)> {
        ports
            .iter()
            .map(|p| ("127.0.0.1".to_string(), *p))
            .collect()
    }

    #[test]
    fn cluster_slots_split_as_the_proxy_splits_them() {
        let r = slots_reply(&addrs(&[15379, 15380, 15381]));
        let text = String::from_utf8(r).unwrap();
        assert!(text.starts_with("*3\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:15379\r\n$14\r\nproxy-id-15379\r\n"), "{text}");
        assert!(text.contains(":5461\r\n:10921\r\n"), "{text}");
        assert!(text.contains(":10922\r\n:16383\r\n"), "{text}");
    }

    #[test]
    fn a_match_is_case_blind_and_counted() {
        let mut chain = vec![Interceptor::new(
            "ping".into(),
            Kind::Match {
                pattern: b"*1\r\n$4\r\nPING\r\n".to_vec(),
                response: b"+CUSTOM\r\n".to_vec(),
            },
        )];
        let got = answer(&mut chain, b"*1\r\n$4\r\nping\r\n", &[]);
        assert_eq!(got, Some(("ping".into(), b"+CUSTOM\r\n".to_vec())));
        assert_eq!(answer(&mut chain, b"*1\r\n$4\r\nECHO\r\n", &[]), None);
        assert_eq!(chain[0].state()["invokeCount"], 2);
        assert_eq!(chain[0].state()["matchCount"], 1);
    }

    #[test]
    fn a_notification_is_described_for_the_grade() {
        let d = describe(b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n$14\r\n127.0.0.1:6380\r\n");
        assert_eq!(d.kind.as_deref(), Some("MOVING"));
        assert_eq!(d.seq, Some(7));
        assert_eq!(d.window, 15.0);
        assert_eq!(d.target.as_deref(), Some("127.0.0.1:6380"));
        let other = describe(b"+PONG\r\n");
        assert_eq!(other.kind, None);
        assert_eq!(other.summary, "+PONG\\r\\n");
    }
}
