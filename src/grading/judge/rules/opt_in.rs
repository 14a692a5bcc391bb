//! `opt-in`: every connection whose handshake was observed, and that was open when the
//! notification went out or opened after it, asked to opt in (docs/protocol.md section 1:
//! the opt-in is per connection, and a connection without it gets no warning).
//!
//! A connection that asked and was refused by the server (a server without the feature, or one
//! rolled back, as in `optin-lost`) did its part: it counts as having asked, and the rule's line
//! says how many were refused. What a client does without notifications is for the other rules.

use super::{Check, Scope};
use crate::grading::judge::verdicts::Rule;

pub struct OptInRule;

impl Check for OptInRule {
    fn name(&self) -> &'static str {
        "opt-in"
    }

    fn code(&self) -> &'static str {
        "opt"
    }

    fn doc(&self) -> &'static str {
        "every connection whose handshake was observed, and that was open when the notification went out or opened after it, opted in"
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        let counts = s.opt_in;
        let seen = s.members.len() - counts.unknown;
        if seen == 0 {
            return Some(Rule::not_judged(
                self.name(),
                format!(
                    "no handshake of its {} connection(s) was observed whole (they began before the capture, or the client gave up on them in a stall): capture from before the client connects",
                    counts.unknown
                ),
            ));
        }
        let refused = match counts.refused {
            0 => String::new(),
            1 => "; 1 asked and was refused by the server".to_string(),
            n => format!("; {n} asked and were refused by the server"),
        };
        let unseen = if counts.unknown > 0 {
            format!(
                " ({} whose handshake was not observed, or was given up in a stall, are not counted)",
                counts.unknown
            )
        } else {
            String::new()
        };
        Some(Rule::decided(
            self.name(),
            counts.never == 0,
            format!(
                "{} connection(s) never opted in{refused}{unseen}",
                counts.never
            ),
        ))
    }

    /// The opt-in is decided at the handshake, before any notification.
    fn decided_at(&self, s: &Scope<'_>) -> f64 {
        s.n.at
    }
}
