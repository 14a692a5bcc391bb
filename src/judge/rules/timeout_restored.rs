//! `timeout-restored`: after the closing notification plus the tail ([`TAIL_S`]), or
//! [`BACKSTOP_S`] after the opening one when no closing one came, the client's timeout is back
//! to what it was before. A stall after that point is given up on as the baseline stall was; a
//! client that waits through it relaxed forever. A client that restores sooner passes.
//!
//! The client's tail runs in real seconds, the scenario's in scenario seconds: a sped-up run
//! cannot judge it.

use super::relaxed_timeout::{closing_at, no_stall, opening, own_timeout, waits_in};
use super::{Check, Scope, BACKSTOP_S, TAIL_S};
use crate::judge::input::Observations;
use crate::judge::Rule;

pub struct TimeoutRestored;

impl Check for TimeoutRestored {
    fn name(&self) -> &'static str {
        "timeout-restored"
    }

    fn not_exercised(&self, obs: &Observations) -> Option<String> {
        no_stall(obs)
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        if !opening(&s.n.kind) {
            return None;
        }
        let name = s.n.name();
        if let Some(speed) = s.obs.speed.filter(|x| (*x - 1.0).abs() > 1e-9) {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "the run went {speed}x real time, and the client's tail runs in real seconds: grade it at --speed 1"
                ),
            ));
        }
        let (restore, after) = restore_point(s);
        let Some(stall) = s.obs.stalls.iter().find(|st| st.at >= restore) else {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "no stall was seen after +{:.1} s ({after}): nothing shows whether the timeout came back; grade it under a scenario that stalls after the tail (failover, shard-migration)",
                    restore - s.n.at
                ),
            ));
        };
        let own = match own_timeout(s) {
            Ok(t) => t,
            Err(why) => return Some(Rule::not_judged(self.name(), why)),
        };
        let at = stall.at - s.n.at;
        let waits = waits_in(&s.members, stall);
        let rule = if let Some(w) = waits.iter().find(|w| w.gave_up) {
            Rule::decided(
                self.name(),
                true,
                format!(
                    "gave up after {:.1} s on a reply held {:.1} s at +{at:.1} s after the {name} ({after}): back to its own timeout ({own:.1} s)",
                    w.waited, stall.seconds
                ),
            )
        } else if let Some(w) = waits.first() {
            Rule::decided(
                self.name(),
                false,
                format!(
                    "waited {:.1} s through a {:.1} s stall at +{at:.1} s after the {name} ({after}), past its own timeout ({own:.1} s): still relaxed",
                    w.waited, stall.seconds
                ),
            )
        } else {
            Rule::not_judged(
                self.name(),
                format!(
                    "no command of the client was waiting during the {:.1} s stall at +{at:.1} s after the {name}: keep the client busy after the window",
                    stall.seconds
                ),
            )
        };
        Some(rule)
    }

    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        let (restore, _) = restore_point(s);
        s.obs
            .stalls
            .iter()
            .find(|st| st.at >= restore)
            .map_or(restore, |st| st.until)
    }
}

/// When the relaxation must be over, and why, in words.
fn restore_point(s: &Scope<'_>) -> (f64, String) {
    match closing_at(s) {
        Some(c) => (
            c + TAIL_S,
            format!(
                "the closing notification at +{:.1} s plus the {TAIL_S} s tail",
                c - s.n.at
            ),
        ),
        None => (
            s.n.at + BACKSTOP_S,
            format!("no closing notification: the {BACKSTOP_S} s backstop"),
        ),
    }
}
