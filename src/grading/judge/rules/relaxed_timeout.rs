//! `relaxed-timeout`: while a maintenance window is open, a client waits longer than its own
//! timeout. An opening notification (MOVING, MIGRATING, FAILING_OVER, SMIGRATING) raises that
//! server's command timeouts to at least the relaxed value, so a reply the server holds for less
//! than that is waited for (docs/protocol.md section 8; the reference is the relaxed-timeout
//! design every client shares, 10 s by default).
//!
//! Giving up must be visible from the server's side: the client closes the connection while a
//! stall holds its reply, or keeps it and writes its next command while the reply is still held
//! ([`super::give_up`]). The baseline stall, before any notification, shows the client's own
//! timeout that way; without it, a client that kept waiting inside the window could have relaxed
//! or could simply have no timeout, and the rule is NOT JUDGED.

use super::give_up::{at_own_timeout, give_up, no_give_up_why};
use super::{Check, Scope};
use crate::grading::judge::verdicts::Rule;
use crate::observe::evidence::{Connection, Observations, Stall, Wait};

/// The relaxed timeout the judge assumes, seconds: the reference value, every client's default.
pub const RELAXED_TIMEOUT_S: f64 = 10.0;
/// After a closing notification, timeouts stand down after this tail (2x the relaxed timeout).
pub const TAIL_S: f64 = 20.0;
/// With no closing notification, the relaxation is capped this long after the opening one (3x).
pub const BACKSTOP_S: f64 = 30.0;

pub struct RelaxedTimeout;

impl Check for RelaxedTimeout {
    fn name(&self) -> &'static str {
        "relaxed-timeout"
    }

    fn code(&self) -> &'static str {
        "rlx"
    }

    fn doc(&self) -> &'static str {
        "no command was given up by the client during a stall inside an opening notification's window, when the stall was longer than the client's own timeout (seen at the baseline stall) and shorter than the relaxed timeout"
    }

    fn not_exercised(&self, obs: &Observations) -> Option<String> {
        no_stall(obs)
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        if !opening(&s.n.kind) {
            return None;
        }
        let name = s.n.name();
        let end = window_end(s);
        let Some(stall) = s
            .obs
            .stalls
            .iter()
            .find(|st| st.at >= s.n.at && st.at < end)
        else {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "no stall was seen inside the {name}'s window (the server never held a reply while it was open): grade the client under a scenario that stalls, such as failover or shard-migration"
                ),
            ));
        };
        let own = match own_timeout(s) {
            Ok(t) => t,
            Err(why) => return Some(Rule::not_judged(self.name(), why)),
        };
        let at = stall.at - s.n.at;
        if stall.seconds <= own {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "the {:.1} s stall at +{at:.1} s after the {name} was no longer than the client's own timeout ({own:.1} s), so waiting through it shows nothing",
                    stall.seconds
                ),
            ));
        }
        let receivers: Vec<&Connection> = s
            .members
            .iter()
            .copied()
            .filter(|c| s.receipt(c).is_some())
            .collect();
        let waits = waits_in(&receivers, stall);
        let longest = waits.iter().max_by(|a, b| a.waited.total_cmp(&b.waited));
        let rule = if let Some(g) = at_own_timeout(&waits, own).first() {
            Rule::decided(
                self.name(),
                false,
                format!(
                    "gave up after {:.1} s on a reply held {:.1} s at +{at:.1} s inside the {name}'s window{}: its own timeout ({own:.1} s), not the relaxed {RELAXED_TIMEOUT_S} s",
                    g.after,
                    stall.seconds,
                    g.kept()
                ),
            )
        } else if let Some(w) = longest.filter(|w| w.waited > own) {
            Rule::decided(
                self.name(),
                true,
                format!(
                    "waited {:.1} s through a {:.1} s stall at +{at:.1} s inside the {name}'s window, past its own timeout ({own:.1} s): relaxed",
                    w.waited, stall.seconds
                ),
            )
        } else if let Some(w) = longest {
            Rule::not_judged(
                self.name(),
                format!(
                    "no command waited longer than its own timeout ({own:.1} s) during the {:.1} s stall at +{at:.1} s inside the {name}'s window (the longest waited {:.1} s), and none was given up at it: keep the client busy through the window",
                    stall.seconds, w.waited
                ),
            )
        } else {
            Rule::not_judged(
                self.name(),
                format!(
                    "no command of a connection that got the {name} was waiting during the {:.1} s stall at +{at:.1} s: keep the client busy through the window",
                    stall.seconds
                ),
            )
        };
        Some(rule)
    }

    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        window_end(s)
    }
}

/// A run without any stall never tests a timeout: the server answered everything at once.
pub fn no_stall(obs: &Observations) -> Option<String> {
    obs.stalls.is_empty().then(|| {
        "the server never held a reply, so no timeout was tested: the failover and shard-migration scenarios stall".to_string()
    })
}

/// MOVING, MIGRATING, FAILING_OVER and SMIGRATING open a window; the others close one.
pub fn opening(kind: &str) -> bool {
    ["MOVING", "MIGRATING", "FAILING_OVER", "SMIGRATING"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(kind))
}

/// The notification that closes a window opened by `kind`.
fn closing_kind(kind: &str) -> Option<&'static str> {
    match kind.to_ascii_uppercase().as_str() {
        "MIGRATING" => Some("MIGRATED"),
        "FAILING_OVER" => Some("FAILED_OVER"),
        "SMIGRATING" => Some("SMIGRATED"),
        _ => None,
    }
}

/// When the closing notification came, if it did.
pub fn closing_at(s: &Scope<'_>) -> Option<f64> {
    let kind = closing_kind(&s.n.kind)?;
    super::earliest(
        s.obs
            .notifications
            .iter()
            .filter(|n| n.kind.eq_ignore_ascii_case(kind) && n.at >= s.n.at)
            .map(|n| n.at),
    )
}

/// The window as the client's relaxation sees it: to the closing notification, else capped.
fn window_end(s: &Scope<'_>) -> f64 {
    closing_at(s).unwrap_or(s.n.at + BACKSTOP_S)
}

/// The waits of these connections on a reply the stall held.
pub fn waits_in<'a>(conns: &[&'a Connection], stall: &Stall) -> Vec<&'a Wait> {
    conns
        .iter()
        .filter(|c| stall.servers.contains(&c.server))
        .flat_map(|c| c.waits.iter())
        .filter(|w| w.at >= stall.at && w.at <= stall.until)
        .collect()
}

/// The client's own timeout, as the baseline stalls (those over before the first notification)
/// showed it: how long it waited before it gave up, by a close or by a write that kept the
/// connection; the shortest such give-up, since a timer fires late under load, never early.
/// Otherwise why it is not known.
pub fn own_timeout(s: &Scope<'_>) -> Result<f64, String> {
    let first = super::earliest(s.obs.notifications.iter().map(|n| n.at)).unwrap_or(f64::MAX);
    let baseline: Vec<&Stall> = s.obs.stalls.iter().filter(|st| st.until <= first).collect();
    if baseline.is_empty() {
        return Err(
            "no stall was seen before the first notification, so the client's own timeout is unknown: grade it under a scenario with a baseline stall (failover, shard-migration)".into(),
        );
    }
    let waits: Vec<&Wait> = baseline
        .iter()
        .flat_map(|st| waits_in(&s.members, st))
        .collect();
    if let Some(t) = waits
        .iter()
        .filter_map(|w| give_up(w))
        .map(|g| g.after)
        .reduce(f64::min)
    {
        return Ok(t);
    }
    let st = baseline[0];
    Err(if waits.is_empty() {
        format!(
            "the client's timeout was never seen: no command of it was waiting during the baseline stall at +{:.1} s",
            st.at
        )
    } else {
        format!(
            "the client's timeout was never seen: during the baseline stall ({:.1} s at +{:.1} s) {}",
            st.seconds,
            st.at,
            no_give_up_why(&waits)
        )
    })
}
