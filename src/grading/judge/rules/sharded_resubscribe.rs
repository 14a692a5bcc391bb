//! `sharded-resubscribe`: after an SMIGRATED, a client subscribed to a sharded channel of a
//! moved slot still receives what is published on it.
//!
//! When a slot leaves a node, the node ends the sharded subscriptions of that slot with an
//! unsolicited `SUNSUBSCRIBE` (as Redis 7 does); the client must subscribe again at the slot's
//! new owner, or the channel goes silent with no error anywhere. The judge counts the messages
//! published on the client's channels once the move has had time to be learnt (the same
//! 1 s of jitter plus 1 s of margin as `smigrated-refresh`) and asks whether each reached one of
//! the client's connections. Only an observer that publishes (the simulator's `spublish`
//! directive) has this evidence; elsewhere the rule is not exercised.

use std::collections::BTreeSet;

use super::{Check, Scope, LEARN_WITHIN_S};
use crate::grading::judge::verdicts::Rule;
use crate::observe::evidence::{Observations, Publication};
use crate::protocol::notification::Slots;

pub struct ShardedResubscribe;

impl Check for ShardedResubscribe {
    fn name(&self) -> &'static str {
        "sharded-resubscribe"
    }

    fn code(&self) -> &'static str {
        "ssub"
    }

    fn doc(&self) -> &'static str {
        "on an SMIGRATED, every message published on a sharded channel of a moved slot to which the client had subscribed, from 2 s after the SMIGRATED (the same jitter and margin) to the end, reached one of its connections"
    }

    fn not_exercised(&self, obs: &Observations) -> Option<String> {
        let migrated = obs
            .notifications
            .iter()
            .any(|n| n.kind.eq_ignore_ascii_case("SMIGRATED"));
        if migrated && obs.publications.is_empty() {
            return Some(
                "nothing was published on a sharded channel (the simulator's oss-cluster scenarios publish on every channel a client subscribes to with SSUBSCRIBE)".into(),
            );
        }
        None
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        if !s.n.kind.eq_ignore_ascii_case("SMIGRATED") {
            return None;
        }
        let subscribed = subscribed_before(s);
        if subscribed.is_empty() {
            return self.subscribed_late(s);
        }
        let moved = moved_slots(s);
        let mine: Vec<&(String, u16)> = subscribed
            .iter()
            .filter(|(_, slot)| moved.iter().any(|(a, b)| (*a..=*b).contains(slot)))
            .collect();
        if mine.is_empty() {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "its sharded channels ({}) are in none of the moved slots ({}): subscribe to a channel whose slot moves",
                    names(&subscribed),
                    s.n.moves.iter().map(|m| m.slots.as_str()).collect::<Vec<_>>().join(",")
                ),
            ));
        }
        Some(self.delivery(s, &mine))
    }

    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        s.n.at + LEARN_WITHIN_S
    }
}

impl ShardedResubscribe {
    /// A client whose first sharded subscription came after the SMIGRATED had nothing for the
    /// move to end: not judged, with when it subscribed, rather than silently left out.
    fn subscribed_late(&self, s: &Scope<'_>) -> Option<Rule> {
        let first = s
            .members
            .iter()
            .flat_map(|c| c.sharded.iter())
            .filter(|x| x.on && x.at > s.n.at)
            .min_by(|a, b| a.at.total_cmp(&b.at))?;
        Some(Rule::not_judged(
            self.name(),
            format!(
                "no sharded subscription was open at the {}: its first SSUBSCRIBE ({} (slot {})) came +{:.3} s after it, so the move had nothing to end (subscribe before the maintenance; a scenario can wait for it with `start opt-in N ssubscribe`)",
                s.n.name(),
                first.channel,
                first.slot,
                first.at - s.n.at
            ),
        ))
    }

    /// The verdict from the messages published on the client's moved channels after the grace.
    fn delivery(&self, s: &Scope<'_>, mine: &[&(String, u16)]) -> Rule {
        let from = s.n.at + LEARN_WITHIN_S;
        let ids: BTreeSet<u64> = s.members.iter().map(|c| c.id).collect();
        let later: Vec<&Publication> = s
            .obs
            .publications
            .iter()
            .filter(|p| p.at > from && mine.iter().any(|(c, _)| *c == p.channel))
            .collect();
        let channels = names(&mine.iter().map(|x| (*x).clone()).collect::<Vec<_>>());
        if later.is_empty() {
            return Rule::not_judged(
                self.name(),
                format!(
                    "nothing was published on {channels} after +{LEARN_WITHIN_S:.0} s from the {}: the scenario ended too soon",
                    s.n.name()
                ),
            );
        }
        let lost: Vec<&&Publication> = later
            .iter()
            .filter(|p| !p.recipients.iter().any(|r| ids.contains(r)))
            .collect();
        let n = later.len();
        match lost.first() {
            None => Rule::decided(
                self.name(),
                true,
                format!(
                    "received all {n} message(s) published on {channels} from +{LEARN_WITHIN_S:.0} s after the {}{}",
                    s.n.name(),
                    self.resubscribed(s, mine)
                ),
            ),
            Some(first) => Rule::decided(
                self.name(),
                false,
                format!(
                    "{} of {n} message(s) published on {channels} from +{LEARN_WITHIN_S:.0} s after the {} never reached it (the first at +{:.1} s): the subscription ended with the slot's move and was not made again at the new owner",
                    lost.len(),
                    s.n.name(),
                    first.at - s.n.at
                ),
            ),
        }
    }

    /// When the client subscribed again after the server ended its subscription, if it had to.
    fn resubscribed(&self, s: &Scope<'_>, mine: &[&(String, u16)]) -> String {
        let t = s.n.at;
        let again = s
            .members
            .iter()
            .flat_map(|c| c.sharded.iter())
            .filter(|x| x.on && x.at >= t && mine.iter().any(|(c, _)| *c == x.channel))
            .map(|x| x.at)
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.min(b))));
        again.map_or(String::new(), |at| {
            format!(" (subscribed again +{:.3} s after it)", at - t)
        })
    }
}

/// The sharded channels the client had subscribed to before the notification, with their slots.
fn subscribed_before(s: &Scope<'_>) -> Vec<(String, u16)> {
    let mut out: Vec<(String, u16)> = s
        .members
        .iter()
        .flat_map(|c| c.sharded.iter())
        .filter(|x| x.on && x.at <= s.n.at)
        .map(|x| (x.channel.clone(), x.slot))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every slot range the SMIGRATED's triplets move.
fn moved_slots(s: &Scope<'_>) -> Vec<(u16, u16)> {
    s.n.moves
        .iter()
        .filter_map(|m| Slots::parse(m.slots.clone()).ranges)
        .flatten()
        .collect()
}

fn names(channels: &[(String, u16)]) -> String {
    let list: Vec<String> = channels
        .iter()
        .take(3)
        .map(|(c, slot)| format!("{c} (slot {slot})"))
        .collect();
    let more = channels.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", list.join(", "))
    } else {
        list.join(", ")
    }
}
