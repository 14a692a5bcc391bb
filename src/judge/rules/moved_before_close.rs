//! `moved-before-close`: no connection was still on a retiring address when the server closed
//! it, unless nothing else was offered to the client before the close (docs/protocol.md sections
//! 4 and 5: the close is node-wide, and "window expired with the record still stale" is normal).
//! What the client could know decides it; where that cannot be seen (a capture without DNS
//! answers, a connection older than the capture) the rule is NOT JUDGED, never passed.

use super::{Check, Scope};
use crate::judge::input::{Reached, Target};
use crate::judge::Rule;

pub struct MovedBeforeClose;

impl Check for MovedBeforeClose {
    fn name(&self) -> &'static str {
        "moved-before-close"
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        let m = s.moving?;
        let name = s.n.name();
        // The reason names what was offered; the resolutions are in the table above it.
        let known: Vec<&str> = m
            .known
            .iter()
            .map(String::as_str)
            .filter(|k| !k.starts_with("resolved "))
            .collect();
        let close = match m.close {
            Some(c) => format!("the close at +{c:.1} s after the {name}"),
            None => "no close".into(),
        };
        let unseen = unseen_cut(s);
        let rule = if m.cut == 0 {
            Rule::decided(
                self.name(),
                true,
                format!("no connection on the retiring address at {close}"),
            )
        } else if !m.alternative_offered && unseen > 0 {
            Rule::not_judged(
                self.name(),
                format!(
                    "{unseen} connection(s) cut by {close} were reached in a way not observed (the capture holds no DNS answers, or they began before it), and the {name} named no successor, so whether anything else was offered cannot be seen: capture the resolver's port too (tcpdump ... or port 53) from before the client connects"
                ),
            )
        } else if !m.alternative_offered {
            Rule::decided(
                self.name(),
                true,
                format!(
                    "stayed: nothing else was offered ({}); {} connection(s) cut by {close}",
                    known.join("; "),
                    m.cut
                ),
            )
        } else {
            Rule::decided(
                self.name(),
                false,
                format!(
                    "{} connection(s) still on the retiring address at {close}, though another was offered ({}; window {} s)",
                    m.cut,
                    known.join("; "),
                    s.n.window
                ),
            )
        };
        Some(rule)
    }
}

/// Cut connections whose way of reaching the server was not observed, when the MOVING itself
/// offered nothing: for them, "nothing else was offered" is a guess.
fn unseen_cut(s: &Scope<'_>) -> usize {
    let offers = matches!(&s.n.target, Some(Target::Name(_)))
        || matches!(&s.n.target, Some(t @ Target::Address(_)) if t.ip().is_some_and(|ip| s.n.retiring.iter().all(|r| r.ip() != ip)));
    if offers {
        return 0;
    }
    s.members
        .iter()
        .filter(|c| s.cut(c) && c.reached == Reached::Unknown)
        .count()
}
