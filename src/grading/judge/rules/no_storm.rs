//! `no-storm`: at most [`STORM_PER_CONNECTION`] new connections after a MOVING per connection of
//! the client's peak (docs/protocol.md section 6: go-redis retries a handoff 3 times).

use super::{MovingCheck, Scope};
use crate::grading::judge::verdicts::{MovingGrade, Rule};

/// New connections per connection before it is a storm.
pub const STORM_PER_CONNECTION: usize = 3;

pub struct NoStorm;

impl MovingCheck for NoStorm {
    const NAME: &'static str = "no-storm";
    const CODE: &'static str = "storm";
    const DOC: &'static str =
        "at most 3 new connections after the MOVING per connection of the client's peak";

    fn judge(_: &Scope<'_>, m: &MovingGrade) -> Rule {
        let per = m.reconnects_per_connection;
        let why = format!(
            "{per} new connection(s) per connection at the peak (at most {STORM_PER_CONNECTION})"
        );
        Rule::decided(Self::NAME, per <= STORM_PER_CONNECTION as f64, why)
    }
}
