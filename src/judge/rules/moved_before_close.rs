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
        } else if !m.alternative_offered && unseen > 0 && no_resolver(s) {
            Rule::not_judged(
                self.name(),
                format!(
                    "{unseen} connection(s) cut by {close} reached the proxy by address, and the client had no resolver naming the simulator's DNS (see its line above the grade), so whether it would have followed DNS cannot be seen: give the run port 53 (root, CAP_NET_BIND_SERVICE or user namespaces), or resolve through MAINTWATCH_SIM_DNS"
                ),
            )
        } else if let Some(from) = m.dns_unseen_from.filter(|_| !m.alternative_offered) {
            Rule::not_judged(
                self.name(),
                format!(
                    "{} connection(s) cut by {close}, and what DNS named from {} the {name} on was not seen: the capture's last answer went stale then (its TTL ran out) and no query came after it, so whether DNS offered another address before the close cannot be seen",
                    m.cut,
                    super::offset(from)
                ),
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

/// The client maintwatch started had no resolver naming the simulator's DNS: a connection by
/// address then says nothing of what it would do with DNS.
fn no_resolver(s: &Scope<'_>) -> bool {
    s.obs
        .client_process
        .as_ref()
        .is_some_and(|p| p.no_resolver.is_some())
}

/// Cut connections whose way of reaching the server was not observed (or, without a resolver
/// naming the simulator, reached by address), when the MOVING itself offered nothing: for them,
/// "nothing else was offered" is a guess.
fn unseen_cut(s: &Scope<'_>) -> usize {
    let offers = matches!(&s.n.target, Some(Target::Name(_)))
        || matches!(&s.n.target, Some(t @ Target::Address(_)) if t.ip().is_some_and(|ip| s.n.retiring.iter().all(|r| r.ip() != ip)));
    if offers {
        return 0;
    }
    s.members
        .iter()
        .filter(|c| {
            s.cut(c)
                && (c.reached == Reached::Unknown
                    || (c.reached == Reached::Address && no_resolver(s)))
        })
        .count()
}
