//! What a rule is: the trait each rule implements ([`Check`]), and its short form for a rule
//! about MOVING alone ([`MovingCheck`]).

use super::scope::Scope;
use crate::grading::judge::verdicts::{MovingGrade, Rule};
use crate::observe::evidence::Observations;

/// One rule of the judge.
pub trait Check: Sync {
    /// The rule's name, as the grade JSON, JUnit and the matrix carry it.
    fn name(&self) -> &'static str;

    /// Its code in a matrix cell, short enough for a narrow column (docs/matrix.md and `certify`
    /// print the legend).
    fn code(&self) -> &'static str;

    /// What it holds to, in one line: the start of its row in docs/protocol.md's table of rules,
    /// which a test keeps equal.
    fn doc(&self) -> &'static str;

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
    /// Its matrix code, as [`Check::code`].
    const CODE: &'static str;
    /// Its docs line, as [`Check::doc`].
    const DOC: &'static str;

    /// Its result for one client and one MOVING.
    fn judge(s: &Scope<'_>, m: &MovingGrade) -> Rule;
}

impl<R: MovingCheck> Check for R {
    fn name(&self) -> &'static str {
        R::NAME
    }

    fn code(&self) -> &'static str {
        R::CODE
    }

    fn doc(&self) -> &'static str {
        R::DOC
    }

    fn on_notification(&self, s: &Scope<'_>) -> Option<Rule> {
        Some(R::judge(s, s.moving?))
    }
}
