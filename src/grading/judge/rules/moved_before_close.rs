//! `moved-before-close`: no connection was still on a retiring address when the server closed
//! it, unless nothing else was offered to the client before the close (docs/protocol.md sections
//! 4 and 5: the close is node-wide, and "window expired with the record still stale" is normal).
//! What the client could know decides it; where that cannot be seen (a capture without DNS
//! answers, a connection older than the capture, DNS answers to a host where another client went
//! where they pointed too) the rule is NOT JUDGED, never passed nor failed.

use std::collections::BTreeSet;

use super::{MovingCheck, Scope};
use crate::grading::judge::verdicts::{MovingGrade, Rule};
use crate::observe::evidence::{Reached, Target};

pub struct MovedBeforeClose;

impl MovingCheck for MovedBeforeClose {
    const NAME: &'static str = "moved-before-close";
    const CODE: &'static str = "mov";
    const DOC: &'static str =
        "no connection was still on a retiring address when the server closed it, unless nothing else was offered to the client before the close";

    fn judge(s: &Scope<'_>, m: &MovingGrade) -> Rule {
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
        let shared = shared_cut(s);
        if m.cut == 0 {
            Rule::decided(
                Self::NAME,
                true,
                format!("no connection on the retiring address at {close}"),
            )
        } else if let Some((n, hosts, others)) = shared.filter(|_| !m.alternative_offered) {
            Rule::not_judged(
                Self::NAME,
                format!(
                    "{n} connection(s) cut by {close} went to an address that DNS answers to their host ({hosts}) had named, but {others} connected where those answers pointed from the same host too, and a capture cannot tell which client asked (a DNS packet names a host, not a process), so whether this client connected by name, and was offered what DNS named, cannot be seen: capture each application from an address of its own, or grade it alone (simulate --grade -- CMD)"
                ),
            )
        } else if !m.alternative_offered && unseen > 0 && no_resolver(s) {
            Rule::not_judged(
                Self::NAME,
                format!(
                    "{unseen} connection(s) cut by {close} reached the proxy by address, and the client had no resolver naming the simulator's DNS (see its line above the grade), so whether it would have followed DNS cannot be seen: give the run port 53 (root, CAP_NET_BIND_SERVICE or user namespaces), or resolve through MAINTWATCH_SIM_DNS"
                ),
            )
        } else if let Some(from) = m.dns_unseen_from.filter(|_| !m.alternative_offered) {
            Rule::not_judged(
                Self::NAME,
                format!(
                    "{} connection(s) cut by {close}, and what DNS named from {} the {name} on was not seen: the capture's last answer went stale then (its TTL ran out) and no query came after it, so whether DNS offered another address before the close cannot be seen",
                    m.cut,
                    super::offset(from)
                ),
            )
        } else if !m.alternative_offered && unseen > 0 {
            Rule::not_judged(
                Self::NAME,
                format!(
                    "{unseen} connection(s) cut by {close} were reached in a way not observed ({}), and the {name} named no successor, so whether anything else was offered cannot be seen: {}",
                    unobserved_why(s),
                    dns_hint(s)
                ),
            )
        } else if !m.alternative_offered {
            Rule::decided(
                Self::NAME,
                true,
                format!(
                    "stayed: nothing else was offered ({}); {} connection(s) cut by {close}",
                    known.join("; "),
                    m.cut
                ),
            )
        } else {
            Rule::decided(
                Self::NAME,
                false,
                format!(
                    "{} connection(s) still on the retiring address at {close}, though another was offered ({}; window {} s)",
                    m.cut,
                    known.join("; "),
                    s.n.window
                ),
            )
        }
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

/// Cut connections whose DNS could not be told apart from another client's on the same host
/// ([`Reached::SharedHost`]): how many, their hosts, and the other clients, in words.
fn shared_cut(s: &Scope<'_>) -> Option<(usize, String, String)> {
    let mut n = 0;
    let (mut hosts, mut others) = (BTreeSet::new(), BTreeSet::new());
    for c in s.members.iter().filter(|c| s.cut(c)) {
        if let Reached::SharedHost { others: o, .. } = &c.reached {
            n += 1;
            hosts.insert(c.client.ip().to_string());
            others.extend(o.iter().map(String::as_str));
        }
    }
    let hosts: Vec<String> = hosts.into_iter().collect();
    let others = crate::grading::judge::verdicts::clients_in_words(others.into_iter());
    (n > 0).then(|| (n, hosts.join(", "), others))
}

/// Why a capture did not observe how a connection was reached.
fn unobserved_why(s: &Scope<'_>) -> String {
    match s.obs.unread_dns_ports.as_slice() {
        ports if !ports.is_empty() && s.obs.dns.is_empty() => format!(
            "the capture holds DNS on UDP {} {}, which was not read: only what --dns-port names is read as DNS, port 53 without it",
            if ports.len() == 1 { "port" } else { "ports" },
            ports_list(ports)
        ),
        _ => "the capture holds no DNS answers, or they began before it".into(),
    }
}

/// What to do about DNS not observed: read the ports the capture holds it on, or capture it.
fn dns_hint(s: &Scope<'_>) -> String {
    match s.obs.unread_dns_ports.as_slice() {
        ports if !ports.is_empty() && s.obs.dns.is_empty() => {
            let flags: Vec<String> = ports.iter().take(PORTS_SHOWN).map(|p| format!("--dns-port {p}")).collect();
            format!("grade it again with {}", flags.join(" "))
        }
        _ => "capture the resolver's port too (tcpdump ... or port 53) from before the client connects".into(),
    }
}

/// Ports named in a reason, at most.
const PORTS_SHOWN: usize = 3;

fn ports_list(ports: &[u16]) -> String {
    let shown: Vec<String> = ports.iter().take(PORTS_SHOWN).map(u16::to_string).collect();
    match ports.len().saturating_sub(PORTS_SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}
