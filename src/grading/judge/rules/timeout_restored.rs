//! `timeout-restored`: after the closing notification plus the tail ([`TAIL_S`]), or
//! [`BACKSTOP_S`] after the opening one when no closing one came, the client's timeout is back
//! to what it was before. A stall after that point is given up on as the baseline stall was; a
//! client that waits through it relaxed forever. A client that restores sooner passes.
//!
//! The verdict must not change with the machine's load, so it rests on what the client could
//! have seen: the backstop counts from when its connections received the opening notification,
//! and a wait shows a relaxed timeout only when it lasted clearly longer than the client's own
//! ([`TIMER_SLACK_S`]); a shorter one (a command sent late in the stall, a timer fired late)
//! shows nothing. The scenarios make the last stall long enough that a late timer still gives up
//! inside it.
//!
//! The client's tail runs in real seconds, the scenario's in scenario seconds: a sped-up run
//! cannot judge it.

use super::give_up::at_own_timeout;
use super::relaxed_timeout::{closing_at, no_stall, opening, own_timeout, waits_in};
use super::{Check, Scope, BACKSTOP_S, TAIL_S};
use crate::grading::judge::verdicts::Rule;
use crate::observe::evidence::{Stall, Wait};

pub struct TimeoutRestored;

/// How much longer than the client's own timeout a wait seen through must have lasted to show the
/// timeout still relaxed: a loaded machine fires a timer late by a fraction of this.
pub const TIMER_SLACK_S: f64 = 0.25;

impl Check for TimeoutRestored {
    fn name(&self) -> &'static str {
        "timeout-restored"
    }

    fn code(&self) -> &'static str {
        "rst"
    }

    fn doc(&self) -> &'static str {
        "after the closing notification plus the tail, or the backstop after the opening notification when no closing one came, a stall is given up on as the baseline stall was: the timeout is back to the client's own"
    }

    fn not_exercised(&self, obs: &crate::observe::evidence::Observations) -> Option<String> {
        no_stall(obs)
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        if !opening(&s.n.kind) {
            return None;
        }
        if let Some(speed) = s.obs.speed.filter(|x| (*x - 1.0).abs() > 1e-9) {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "the run went {speed}x real time, and the client's tail runs in real seconds: grade it at --speed 1"
                ),
            ));
        }
        let restore = restore_point(s);
        let Some(stall) = stall_after(s, &restore) else {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "no stall was seen after +{:.1} s ({}): nothing shows whether the timeout came back; grade it under a scenario that stalls after the tail or the backstop (failover, shard-migration, no-closing-notification)",
                    restore.at - s.n.at,
                    restore.why
                ),
            ));
        };
        let own = match own_timeout(s) {
            Ok(t) => t,
            Err(why) => return Some(Rule::not_judged(self.name(), why)),
        };
        Some(judged(self.name(), s, &restore, stall, own))
    }

    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        let restore = restore_point(s);
        stall_after(s, &restore).map_or(restore.at, |st| st.until)
    }
}

/// When the relaxation must be over, and why.
struct Restore {
    at: f64,
    /// In words: `the closing notification at +2.0 s plus the 20 s tail`.
    why: String,
    /// No closing notification came: the backstop set it.
    backstop: bool,
}

/// After the closing notification, the tail; without one, the backstop counted from the last
/// moment a connection of the client received the opening notification (it cannot start its
/// count before it knows).
fn restore_point(s: &Scope<'_>) -> Restore {
    if let Some(c) = closing_at(s) {
        return Restore {
            at: c + TAIL_S,
            why: format!(
                "the closing notification at +{:.1} s plus the {TAIL_S} s tail",
                c - s.n.at
            ),
            backstop: false,
        };
    }
    let seen = s
        .members
        .iter()
        .filter_map(|c| s.receipt(c))
        .fold(s.n.at, f64::max);
    Restore {
        at: seen + BACKSTOP_S,
        why: format!("no closing notification: the {BACKSTOP_S} s backstop"),
        backstop: true,
    }
}

/// The first stall that begins at or after the restore point.
fn stall_after<'a>(s: &Scope<'a>, restore: &Restore) -> Option<&'a Stall> {
    s.obs.stalls.iter().find(|st| st.at >= restore.at)
}

/// The verdict on the stall after the restore point, given the client's own timeout `own`.
fn judged(name: &str, s: &Scope<'_>, restore: &Restore, stall: &Stall, own: f64) -> Rule {
    let n = s.n.name();
    let at = stall.at - s.n.at;
    let (seconds, why) = (stall.seconds, &restore.why);
    let waits = waits_in(&s.members, stall);
    let bound = if restore.backstop {
        library_bound(s, at)
    } else {
        String::new()
    };
    if let Some(g) = at_own_timeout(&waits, own).first() {
        return Rule::decided(
            name,
            true,
            format!(
                "gave up after {:.1} s on a reply held {seconds:.1} s at +{at:.1} s after the {n} ({why}){}: back to its own timeout ({own:.1} s){bound}",
                g.after,
                g.kept()
            ),
        );
    }
    let longest: Option<&Wait> = waits
        .iter()
        .copied()
        .max_by(|a, b| a.waited.total_cmp(&b.waited));
    match longest {
        Some(w) if w.waited > own + TIMER_SLACK_S => {
            let still = if restore.backstop {
                format!(
                    "still relaxed {} s after the opening notification with no closing one (backstop {BACKSTOP_S} s)",
                    (at * 10.0).round() / 10.0
                )
            } else {
                "still relaxed".to_string()
            };
            Rule::decided(
                name,
                false,
                format!(
                    "waited {:.1} s through a {seconds:.1} s stall at +{at:.1} s after the {n} ({why}), past its own timeout ({own:.1} s): {still}{bound}",
                    w.waited
                ),
            )
        }
        Some(w) => Rule::not_judged(
            name,
            format!(
                "no command waited longer than its own timeout ({own:.1} s) during the {seconds:.1} s stall at +{at:.1} s after the {n} (the longest waited {:.1} s): nothing shows whether the timeout came back; keep the client busy after the window",
                w.waited
            ),
        ),
        None => Rule::not_judged(
            name,
            format!(
                "no command of the client was waiting during the {seconds:.1} s stall at +{at:.1} s after the {n}: keep the client busy after the window"
            ),
        ),
    }
}

/// `; Jedis documents its own bound ...` when the client's library documents a bound on a window
/// without a closing notification that is longer than `at`, the stall's time: the verdict still
/// holds to the backstop.
fn library_bound(s: &Scope<'_>, at: f64) -> String {
    let Some(b) = s
        .members
        .iter()
        .filter_map(|c| c.lib_name.as_deref())
        .find_map(crate::grading::clients::window_bound)
    else {
        return String::new();
    };
    if b.seconds <= at {
        return String::new();
    }
    format!(
        "; {} documents its own bound, {} {} s, longer than these {} s: the rule holds to the reference's {BACKSTOP_S} s backstop",
        b.library,
        b.setting,
        b.seconds,
        (at * 10.0).round() / 10.0
    )
}
