//! `opt-in`: every connection whose handshake was observed, and that was open when the
//! notification went out or opened after it, opted in (docs/protocol.md section 1:
//! the opt-in is per connection, and a connection without it gets no warning).

use super::{Check, Scope};
use crate::grading::judge::Rule;

pub struct OptInRule;

impl Check for OptInRule {
    fn name(&self) -> &'static str {
        "opt-in"
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        let seen = s.members.len() - s.unknown;
        if seen == 0 {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "no handshake of its {} connection(s) was observed whole (they began before the capture, or the client gave up on them in a stall): capture from before the client connects",
                    s.unknown
                ),
            ));
        }
        let unseen = if s.unknown > 0 {
            format!(
                " ({} whose handshake was not observed, or was given up in a stall, are not counted)",
                s.unknown
            )
        } else {
            String::new()
        };
        Some(Rule::decided(
            self.name(),
            s.never == 0,
            format!("{} connection(s) never opted in{unseen}", s.never),
        ))
    }

    /// The opt-in is decided at the handshake, before any notification.
    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        s.n.at
    }
}
