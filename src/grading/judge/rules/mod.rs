//! The judge's rules, one file each, behind one trait and registered in one table ([`RULES`]).
//! A new rule is a new file plus one line in the table. Each rule says PASS or FAIL only on what
//! was observed, and NOT JUDGED, naming what is missing and how to get it, where the evidence
//! is not there (docs/protocol.md, section 8).

pub mod give_up;
mod keeps_working;
mod moved_before_close;
mod no_loop;
mod no_lost_commands;
mod no_storm;
mod opt_in;
mod relaxed_timeout;
mod sharded_resubscribe;
mod smigrated_refresh;
mod survives;
mod timeout_restored;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use super::verdicts::{MovingGrade, Rule};
use crate::observe::evidence::{Connection, Notification, Observations, Side};

pub use keeps_working::HUNG_S;
pub use no_loop::LOOP_REACTIONS;
pub use no_storm::STORM_PER_CONNECTION;
pub use relaxed_timeout::{BACKSTOP_S, RELAXED_TIMEOUT_S, TAIL_S};
pub use smigrated_refresh::{LEARN_WITHIN_S, REDIRECTS_PER_CONNECTION};

/// One rule of the judge.
pub trait Check: Sync {
    /// The rule's name, as the grade JSON, JUnit and the matrix carry it.
    fn name(&self) -> &'static str;

    /// Its result for one client and one notification; `None` when the rule does not concern
    /// this notification (a MOVING rule on a MIGRATING, say).
    fn on_notification(&self, _s: &Scope<'_>) -> Option<Rule> {
        None
    }

    /// Why the run never put the rule to the test, when it did not (a timeout rule in a run
    /// without a stall): it is then left out, neither passed nor NOT JUDGED, and the grade says
    /// so.
    fn not_exercised(&self, _obs: &Observations) -> Option<String> {
        None
    }

    /// Its result for the whole run; `None` when it has nothing to say about runs.
    fn on_run(&self, _obs: &Observations) -> Option<Rule> {
        None
    }

    /// When its evidence for this notification is complete: a client process that died before
    /// then leaves the rule NOT JUDGED. The end of the window (or the close, when later) unless
    /// the rule says otherwise.
    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        let end = s.n.at + s.n.window;
        s.close().map_or(end, |c| c.max(end))
    }
}

/// A rule about MOVING alone: it is given the MOVING's figures and says nothing of any other
/// notification. Four of the judge's rules are this shape; the [`Check`] below spares each the
/// same preamble (its name method and the `moving?` guard).
pub trait MovingCheck: Sync {
    /// The rule's name, as [`Check::name`].
    const NAME: &'static str;

    /// Its result for one client and one MOVING.
    fn judge(s: &Scope<'_>, m: &MovingGrade) -> Rule;
}

impl<R: MovingCheck> Check for R {
    fn name(&self) -> &'static str {
        R::NAME
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        Some(R::judge(s, s.moving?))
    }
}

/// Every rule, in the order the grade lists them.
pub static RULES: &[&dyn Check] = &[
    &survives::Survives,
    &keeps_working::KeepsWorking,
    &opt_in::OptInRule,
    &moved_before_close::MovedBeforeClose,
    &no_lost_commands::NoLostCommands,
    &no_storm::NoStorm,
    &no_loop::NoLoop,
    &relaxed_timeout::RelaxedTimeout,
    &timeout_restored::TimeoutRestored,
    &smigrated_refresh::SmigratedRefresh,
    &sharded_resubscribe::ShardedResubscribe,
];

/// One client's connections and one notification, with what follows from them.
pub struct Scope<'a> {
    pub obs: &'a Observations,
    pub index: usize,
    pub n: &'a Notification,
    pub members: Vec<&'a Connection>,
    /// The MOVING's figures, for a MOVING.
    pub moving: Option<&'a MovingGrade>,
    /// How the connections open at the notification (or opened after) stand on the opt-in.
    pub opt_in: OptInCounts,
}

/// The opt-in of a client's connections, counted: those that never asked (a handshake seen
/// without `CLIENT MAINT_NOTIFICATIONS ON`), those that asked and were refused by the server,
/// and those whose handshake was not seen whole. Accepted ones are not counted here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptInCounts {
    pub never: usize,
    pub refused: usize,
    pub unknown: usize,
}

impl Scope<'_> {
    pub fn retiring(&self, server: SocketAddr) -> bool {
        self.n.retiring.contains(&server)
    }

    /// When the server closed this retiring address after the notification.
    pub fn close_of(&self, server: SocketAddr) -> Option<f64> {
        if !self.retiring(server) {
            return None;
        }
        self.obs
            .closes
            .iter()
            .filter(|c| c.server == server && c.at >= self.n.at)
            .map(|c| c.at)
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// The first node-wide close of a retiring address.
    pub fn close(&self) -> Option<f64> {
        self.n
            .retiring
            .iter()
            .filter_map(|s| self.close_of(*s))
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
    }

    /// This connection was still open on a retiring address when the server closed it.
    pub fn cut(&self, c: &Connection) -> bool {
        self.close_of(c.server).is_some_and(|close| {
            c.opened < close
                && c.closed
                    .is_none_or(|x| x.at >= close && x.by == Side::Server)
        })
    }

    /// When the connection received this notification (its first copy).
    pub fn receipt(&self, c: &Connection) -> Option<f64> {
        c.received
            .iter()
            .filter(|r| r.notification == self.index)
            .map(|r| r.at)
            .next()
    }

    pub fn receivers(&self) -> Vec<(&Connection, f64)> {
        let mut r: Vec<(&Connection, f64)> = self
            .members
            .iter()
            .filter_map(|c| self.receipt(c).map(|t| (*c, t)))
            .collect();
        r.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.id.cmp(&b.0.id)));
        r
    }

    /// Each receiver's successor: the earliest connection of the client opened after its
    /// receipt and not already another's, taken in order of receipt.
    pub fn successors(&self) -> Vec<(&Connection, f64, Option<&Connection>)> {
        let mut opened: Vec<&Connection> = self.members.clone();
        opened.sort_by(|a, b| a.opened.total_cmp(&b.opened).then(a.id.cmp(&b.id)));
        let mut taken = BTreeSet::new();
        self.receivers()
            .into_iter()
            .map(|(c, at)| {
                let next = opened
                    .iter()
                    .find(|s| s.id != c.id && s.opened >= at && !taken.contains(&s.id))
                    .copied();
                if let Some(s) = next {
                    taken.insert(s.id);
                }
                (c, at, next)
            })
            .collect()
    }
}

/// `+7.5 s after`, or `0.2 s before`.
pub fn offset(d: f64) -> String {
    if d < 0.0 {
        format!("{:.1} s before", -d)
    } else {
        format!("+{d:.1} s after")
    }
}

pub fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The rules of one notification for one client. A rule whose evidence ends after the client
/// process died is NOT JUDGED: a dead client neither moved nor stayed.
pub fn notification_rules(s: &Scope<'_>) -> Vec<Rule> {
    let died = died_at(s.obs);
    RULES
        .iter()
        .filter(|check| check.not_exercised(s.obs).is_none())
        .filter_map(|check| {
            let r = check.on_notification(s)?;
            match died {
                Some(d) if d < check.decided_at(s) && r.verdict != super::Verdict::NotJudged => {
                    Some(Rule::not_judged(
                        check.name(),
                        format!(
                            "the client process died at +{d:.1} s, before this rule's evidence was complete (+{:.1} s)",
                            check.decided_at(s)
                        ),
                    ))
                }
                _ => Some(r),
            }
        })
        .collect()
}

/// The rules the run never put to the test, with why.
pub fn not_exercised(obs: &Observations) -> Vec<super::verdicts::NotExercised> {
    RULES
        .iter()
        .filter_map(|c| {
            c.not_exercised(obs)
                .map(|why| super::verdicts::NotExercised {
                    rule: c.name().to_string(),
                    why,
                })
        })
        .collect()
}

/// The rules about the whole run.
pub fn run_rules(obs: &Observations) -> Vec<Rule> {
    RULES.iter().filter_map(|c| c.on_run(obs)).collect()
}

/// When the client process ended on its own other than with exit 0: the moment it died.
pub fn died_at(obs: &Observations) -> Option<f64> {
    let p = obs.client_process.as_ref()?;
    (!p.stopped && p.exit_code != Some(0)).then_some(p.at)
}

/// The earliest of some times.
pub fn earliest(times: impl Iterator<Item = f64>) -> Option<f64> {
    times.fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))))
}
