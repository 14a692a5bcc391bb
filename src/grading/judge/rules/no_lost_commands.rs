//! `no-lost-commands`: no command was cut without its reply after a MOVING (docs/protocol.md
//! section 4: a handoff ahead of the close loses nothing). Commands cut on a connection that had
//! nowhere else to go still count, since the application lost them, but the reason says so.

use super::{MovingCheck, Scope};
use crate::grading::judge::verdicts::{MovingGrade, Rule};

pub struct NoLostCommands;

impl MovingCheck for NoLostCommands {
    const NAME: &'static str = "no-lost-commands";
    const CODE: &'static str = "lost";
    const DOC: &'static str =
        "no command was cut without its reply after the notification";

    fn judge(s: &Scope<'_>, m: &MovingGrade) -> Rule {
        let (mut lost, mut nowhere) = (0, 0);
        for c in &s.members {
            let n: u64 = c
                .traffic
                .iter()
                .filter(|t| t.at >= s.n.at)
                .map(|t| t.unanswered)
                .sum();
            lost += n;
            if !m.alternative_offered && s.cut(c) {
                nowhere += n;
            }
        }
        let also = if nowhere > 0 {
            format!(
                " ({nowhere} of them cut by the close on connections that had nowhere else to go)"
            )
        } else {
            String::new()
        };
        let why = format!(
            "{lost} command(s) cut without a reply after the {}{also}",
            s.n.name()
        );
        Rule::decided(Self::NAME, lost == 0, why)
    }
}
