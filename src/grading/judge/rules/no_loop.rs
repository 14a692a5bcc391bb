//! `no-loop`: a client that acted on a MOVING does not act again on the re-sent copies its new
//! connections get (docs/protocol.md section 5, rule 5: a re-sent MOVING looped a client twelve
//! times on a real deployment).

use super::{MovingCheck, Scope};
use crate::grading::judge::verdicts::{MovingGrade, Rule};

/// Connections closed by the client after a re-sent MOVING before it is a loop.
pub const LOOP_REACTIONS: usize = 2;

pub struct NoLoop;

impl MovingCheck for NoLoop {
    const NAME: &'static str = "no-loop";
    const CODE: &'static str = "loop";
    const DOC: &'static str =
        "fewer than 2 connections given a re-sent MOVING (opened after it was first pushed) after the client first acted on it were then closed by it before the close";

    fn judge(s: &Scope<'_>, m: &MovingGrade) -> Rule {
        let why = format!(
            "{} of {} connection(s) given the re-sent {} after the client had acted were closed by it before the close (fewer than {LOOP_REACTIONS})",
            m.reacted_to_resent,
            m.resent,
            s.n.name()
        );
        Rule::decided(Self::NAME, m.reacted_to_resent < LOOP_REACTIONS, why)
    }
}
