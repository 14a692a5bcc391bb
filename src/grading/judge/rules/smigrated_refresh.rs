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
//!
//! The verdict is on the outcome; the line also says what moved the client. A client that does
//! not act on SMIGRATED still reaches the target once a key of a moved slot gets it a `-MOVED`
//! (go-redis at its defaults reads the topology then, node-redis connects where the reply
//! points). So when a `-MOVED` for a moved slot (naming a target, for a connection to it) came
//! before what the client did, the line names that redirect; otherwise its handling of the
//! SMIGRATED.

use std::collections::BTreeSet;

use super::{earliest, Check, Scope};
use crate::grading::judge::verdicts::Rule;
use crate::observe::evidence::{Connection, Redirect};

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

    fn code(&self) -> &'static str {
        "smr"
    }

    fn doc(&self) -> &'static str {
        "on an SMIGRATED, a client with a connection to a node named as a source took the move into account within 2 s"
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
    /// The `-MOVED` after the SMIGRATED for a moved slot (or whose slot was not kept), in order.
    moved_slots: Vec<Redirect>,
    targets: Vec<String>,
    busy_after: bool,
}

/// How the client came to the target: the `-MOVED` that sent it, if one came first.
enum Cause {
    Redirect(Redirect),
    Notification,
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
        // Only -MOVED for the moved slots count: with keys across the slot space, a client whose
        // map is off elsewhere gets others, which say nothing of this move. One whose slot was
        // not kept (an older line) counts.
        let for_move = |r: &&Redirect| {
            r.at >= t
                && r.slot
                    .is_none_or(|slot| s.n.moves.iter().any(|m| in_slots(&m.slots, slot)))
        };
        let per_conn = s
            .members
            .iter()
            .map(|c| (c.redirects.iter().filter(for_move).count(), c.id));
        // What may have sent the client to the target: those, and a -MOVED for a moved slot that
        // named one of this move's targets, which only this move's reassignment can have given,
        // even an instant before the SMIGRATED went out (the slots move, then the notification).
        let named_target = |r: &&Redirect| {
            r.to.is_some_and(|to| targets.contains(to.to_string().as_str()))
                && r.slot
                    .is_some_and(|slot| s.n.moves.iter().any(|m| in_slots(&m.slots, slot)))
        };
        let mut moved_slots: Vec<Redirect> = s
            .members
            .iter()
            .flat_map(|c| {
                c.redirects
                    .iter()
                    .filter(|r| for_move(r) || named_target(r))
            })
            .copied()
            .collect();
        moved_slots.sort_by(|a, b| a.at.total_cmp(&b.at));
        Evidence {
            on_source: s.members.iter().any(|c| named(c, &sources) && open_at(c)),
            burst_queries: after.iter().filter(|q| **q <= t + LEARN_WITHIN_S).count(),
            first_query: earliest(after.iter().copied()),
            first_target,
            worst_redirects: per_conn.clone().max().unwrap_or((0, 0)),
            redirects: per_conn.map(|(n, _)| n).sum(),
            moved_slots,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            busy_after: s
                .members
                .iter()
                .flat_map(|c| c.traffic.iter())
                .any(|x| x.at > t && x.commands > 0),
            sources,
        }
    }

    /// When and how the client took the move into account, if it did, and what made it.
    fn learnt(&self) -> Option<(f64, String, Cause)> {
        let query = self.first_query.map(|q| {
            let cause = self.cause(q, None);
            let how = match self.burst_queries {
                0 | 1 => "read the topology again (a CLUSTER query)".to_string(),
                n => format!("read the topology again ({n} CLUSTER queries)"),
            };
            (q, how, cause)
        });
        let target = self.first_target.as_ref().map(|(at, to)| {
            let cause = self.cause(*at, Some(to));
            let how = match cause {
                Cause::Notification => {
                    format!("applied the triplet (connected to the target {to})")
                }
                Cause::Redirect(_) => format!("connected to the target {to}"),
            };
            (*at, how, cause)
        });
        [query, target]
            .into_iter()
            .flatten()
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// `; it connected to the target ... after a -MOVED ...`: how the client reached the target
    /// in the end, for a line that fails it on the way there.
    fn reached(&self, t: f64) -> String {
        self.learnt().map_or(String::new(), |(at, how, cause)| {
            format!("; {how} at +{:.3} s{}", at - t, cause.words(t))
        })
    }

    /// The first `-MOVED` for a moved slot no later than `at` (naming `to`, when given and the
    /// reply's node was kept): the redirect that moved the client, else its handling of the
    /// SMIGRATED.
    fn cause(&self, at: f64, to: Option<&String>) -> Cause {
        self.moved_slots
            .iter()
            .filter(|r| r.at <= at)
            .find(|r| match (to, r.to) {
                (Some(to), Some(named)) => named.to_string() == *to,
                _ => true,
            })
            .map_or(Cause::Notification, |r| Cause::Redirect(*r))
    }
}

impl Cause {
    /// `, moved there by ...` for the rule's line; `t` is the SMIGRATED's time.
    fn words(&self, t: f64) -> String {
        match self {
            Cause::Notification => {
                ", before any -MOVED for the moved slots: its handling of the SMIGRATED moved it"
                    .into()
            }
            Cause::Redirect(r) => {
                let slot = r.slot.map_or(String::new(), |s| format!(" for slot {s}"));
                let to = r.to.map_or(String::new(), |to| format!(" naming {to}"));
                let d = r.at - t;
                let when = if d < 0.0 {
                    format!("{:.3} s before it", -d)
                } else {
                    format!("at +{d:.3} s")
                };
                format!(
                    ", after a -MOVED{slot}{to} {when}: the redirect moved it, not its handling of the SMIGRATED"
                )
            }
        }
    }
}

/// Whether `slot` is among `slots` as a triplet writes them (`8892-8991`, or several ranges and
/// single slots joined by commas).
fn in_slots(slots: &str, slot: u16) -> bool {
    slots.split(',').any(|part| {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<u16>(), b.trim().parse::<u16>()) {
                (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                _ => false,
            },
            None => part.parse::<u16>() == Ok(slot),
        }
    })
}

impl SmigratedRefresh {
    fn with_source(&self, s: &Scope<'_>, e: &Evidence) -> Rule {
        let t = s.n.at;
        let name = s.n.name();
        let moved = format!("{} -MOVED for the moved slots after it", e.redirects);
        // Reads after a -MOVED are the client's answer to the redirect (Lettuce asks every node
        // in one refresh), not a refresh per copy of the notification: the -MOVED count judges
        // those.
        let after_redirect = e
            .first_query
            .is_some_and(|q| matches!(e.cause(q, None), Cause::Redirect(_)));
        if e.burst_queries > 1 && !after_redirect {
            return Rule::decided(
                self.name(),
                false,
                format!(
                    "read the topology {} times within {LEARN_WITHIN_S} s of the {name}, before any -MOVED for the moved slots: a refresh per copy of the notification, where once per burst is enough ({moved})",
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
                    "conn {conn} got {worst} -MOVED for the moved slots after the {name} (at most {REDIRECTS_PER_CONNECTION}): its commands for them kept going to a node that no longer serves them{}",
                    e.reached(t)
                ),
            );
        }
        match e.learnt() {
            Some((at, how, cause)) if at <= t + LEARN_WITHIN_S => Rule::decided(
                self.name(),
                true,
                format!(
                    "{how} at +{:.3} s after the {name}{} ({moved})",
                    at - t,
                    cause.words(t)
                ),
            ),
            Some((at, how, cause)) => Rule::decided(
                self.name(),
                false,
                format!(
                    "{how} only at +{:.1} s after the {name}, past the {LEARN_WITHIN_S} s (1 s of jitter and 1 s of margin){} ({moved})",
                    at - t,
                    cause.words(t)
                ),
            ),
            None if !e.busy_after => Rule::not_judged(
                self.name(),
                format!("the client sent no command after the {name}: keep it busy through the migration"),
            ),
            None if e.redirects == 0 => Rule::not_judged(
                self.name(),
                format!(
                    "neither a topology read, a connection to the target nor a -MOVED after the {name}: none of its commands was seen for the moved slots; use keys across all slots"
                ),
            ),
            None => Rule::not_judged(
                self.name(),
                format!(
                    "{moved}, and neither a topology read nor a new connection to a target ({}): where the client sent those slots' commands next, on a connection it already had, is not seen",
                    e.targets.join(", ")
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
