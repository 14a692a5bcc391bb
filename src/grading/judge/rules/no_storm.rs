//! `no-storm`: at most [`STORM_PER_CONNECTION`] new connections after a MOVING per connection of
//! the client's peak (docs/protocol.md section 6: go-redis retries a handoff 3 times).

use super::{Check, Scope};
use crate::grading::judge::Rule;

/// New connections per connection before it is a storm.
pub const STORM_PER_CONNECTION: usize = 3;

pub struct NoStorm;

impl Check for NoStorm {
    fn name(&self) -> &'static str {
        "no-storm"
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        let m = s.moving?;
        Some(Rule::decided(
            self.name(),
            m.reconnects_per_connection <= STORM_PER_CONNECTION as f64,
            format!(
                "{} new connection(s) per connection at the peak (at most {STORM_PER_CONNECTION})",
                m.reconnects_per_connection
            ),
        ))
    }
}
