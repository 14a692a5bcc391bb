//! `smigrated-refresh`: after an SMIGRATED, a cluster client with a connection to a node that
//! lost slots takes the move into account quickly, once, and without leaning on `-MOVED`; a
//! client with no connection to any node named as a source leaves its topology alone.
//!
//! The reference behaviour (docs/protocol.md section 8): the SMIGRATED names each move as a
//! (source, target, slots) triplet, and a client may either read the topology again (CLUSTER
//! SLOTS, SHARDS or NODES, at most once per burst of notifications: every node sends its own copy)
//! or apply the triplets itself, as node-redis does by connecting to the target at once. Either
//! way it must be done within the clients' refresh jitter (1 s) plus a margin (1 s). What the
//! server sees decides it: the topology queries, the connections opened to the target, and the
//! `-MOVED` replies the source gave for the moved slots.

use std::collections::BTreeSet;

use super::{earliest, Check, Scope};
use crate::grading::judge::Rule;
use crate::observe::evidence::Connection;

/// The move must be taken into account this long after the SMIGRATED: 1 s of jitter, 1 s of
/// margin.
pub const LEARN_WITHIN_S: f64 = 2.0;
/// `-MOVED` replies a connection may get for the moved slots before the client has learnt.
pub const REDIRECTS_PER_CONNECTION: usize = 1;

pub struct SmigratedRefresh;

impl Check for SmigratedRefresh {
    fn name(&self) -> &'static str {
        "smigrated-refresh"
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        if !s.n.kind.eq_ignore_ascii_case("SMIGRATED") {
            return None;
        }
        if s.n.moves.is_empty() {
            return Some(Rule::not_judged(
                self.name(),
                "the SMIGRATED's triplets were not read, so which nodes lost slots is unknown"
                    .into(),
            ));
        }
        let e = Evidence::of(s);
        Some(if e.on_source {
            self.with_source(s, &e)
        } else {
            self.without_source(&e)
        })
    }

    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        s.n.at + LEARN_WITHIN_S
    }
}

/// What the server saw of one client after the SMIGRATED.
struct Evidence {
    sources: Vec<String>,
    on_source: bool,
    /// CLUSTER SLOTS/SHARDS/NODES within the burst, and the first one at all.
    burst_queries: usize,
    first_query: Option<f64>,
    /// The first connection opened to a target, and where.
    first_target: Option<(f64, String)>,
    /// The most `-MOVED` one connection got after the SMIGRATED, and on which.
    worst_redirects: (usize, u64),
    redirects: usize,
    busy_after: bool,
}

impl Evidence {
    fn of(s: &Scope<'_>) -> Evidence {
        let t = s.n.at;
        let sources: Vec<String> = s.n.moves.iter().map(|m| m.source.clone()).collect();
        let targets: BTreeSet<&str> = s.n.moves.iter().map(|m| m.target.as_str()).collect();
        let named = |c: &Connection, set: &[String]| set.contains(&c.server.to_string());
        let open_at = |c: &Connection| c.opened <= t && c.closed.is_none_or(|x| x.at >= t);
        let queries = s.members.iter().flat_map(|c| c.topology_queries.iter());
        let after: Vec<f64> = queries.copied().filter(|q| *q >= t).collect();
        let first_target = s
            .members
            .iter()
            .filter(|c| c.opened >= t && targets.contains(c.server.to_string().as_str()))
            .map(|c| (c.opened, c.server.to_string()))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let per_conn = s.members.iter().map(|c| {
            let n = c.redirects.iter().filter(|r| **r >= t).count();
            (n, c.id)
        });
        Evidence {
            on_source: s.members.iter().any(|c| named(c, &sources) && open_at(c)),
            burst_queries: after.iter().filter(|q| **q <= t + LEARN_WITHIN_S).count(),
            first_query: earliest(after.iter().copied()),
            first_target,
            worst_redirects: per_conn.clone().max().unwrap_or((0, 0)),
            redirects: per_conn.map(|(n, _)| n).sum(),
            busy_after: s
                .members
                .iter()
                .flat_map(|c| c.traffic.iter())
                .any(|x| x.at > t && x.commands > 0),
            sources,
        }
    }

    /// When and how the client took the move into account, if it did.
    fn learnt(&self) -> Option<(f64, String)> {
        let query = self
            .first_query
            .map(|q| (q, "read the topology again (a CLUSTER query)".to_string()));
        let target = self.first_target.as_ref().map(|(at, to)| {
            (
                *at,
                format!("applied the triplet (connected to the target {to})"),
            )
        });
        [query, target]
            .into_iter()
            .flatten()
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }
}

impl SmigratedRefresh {
    fn with_source(&self, s: &Scope<'_>, e: &Evidence) -> Rule {
        let t = s.n.at;
        let name = s.n.name();
        let moved = format!("{} -MOVED after it", e.redirects);
        if e.burst_queries > 1 {
            return Rule::decided(
                self.name(),
                false,
                format!(
                    "read the topology {} times within {LEARN_WITHIN_S} s of the {name}: a refresh per copy of the notification, where once per burst is enough ({moved})",
                    e.burst_queries
                ),
            );
        }
        let (worst, conn) = e.worst_redirects;
        if worst > REDIRECTS_PER_CONNECTION {
            return Rule::decided(
                self.name(),
                false,
                format!(
                    "conn {conn} got {worst} -MOVED after the {name} (at most {REDIRECTS_PER_CONNECTION}): its commands for the moved slots kept going to the source"
                ),
            );
        }
        match e.learnt() {
            Some((at, how)) if at <= t + LEARN_WITHIN_S => Rule::decided(
                self.name(),
                true,
                format!("{how} at +{:.3} s after the {name} ({moved})", at - t),
            ),
            Some((at, how)) => Rule::decided(
                self.name(),
                false,
                format!(
                    "{how} only at +{:.1} s after the {name}, past the {LEARN_WITHIN_S} s (1 s of jitter and 1 s of margin; {moved})",
                    at - t
                ),
            ),
            None if !e.busy_after => Rule::not_judged(
                self.name(),
                format!("the client sent no command after the {name}: keep it busy through the migration"),
            ),
            None => Rule::not_judged(
                self.name(),
                format!(
                    "neither a topology read, a connection to the target nor a -MOVED after the {name}: none of its commands was seen for the moved slots; use keys across all slots"
                ),
            ),
        }
    }

    fn without_source(&self, e: &Evidence) -> Rule {
        let sources = e.sources.join(", ");
        if e.burst_queries > 0 {
            return Rule::decided(
                self.name(),
                false,
                format!(
                    "read the topology {} time(s) for a move that concerned none of its nodes (sources: {sources})",
                    e.burst_queries
                ),
            );
        }
        Rule::decided(
            self.name(),
            true,
            format!("had no connection to a source ({sources}) and left its topology alone"),
        )
    }
}
