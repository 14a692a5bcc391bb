//! `survives`: the client process started by `simulate -- CMD` was still running, or had exited
//! 0 on its own, when the scenario ended. A client that dies on a notification neither moved nor
//! stayed: its other rules are NOT JUDGED from the moment it died ([`super::notification_rules`]).

use super::Check;
use crate::grading::judge::verdicts::Rule;
use crate::observe::evidence::Observations;

pub struct Survives;

impl Check for Survives {
    fn name(&self) -> &'static str {
        "survives"
    }

    fn code(&self) -> &'static str {
        "srv"
    }

    fn doc(&self) -> &'static str {
        "the client process run by `simulate -- CMD` was still running, or had exited 0 on its own, when the scenario ended"
    }

    fn on_run(&self, obs: &Observations) -> Option<Rule> {
        let p = obs.client_process.as_ref()?;
        let why = crate::observe::evidence::process::headline(&p.stderr_tail)
            .map_or(String::new(), |l| format!(": {l}"));
        let rule = match (p.stopped, p.exit_code, p.signal) {
            (true, _, _) => Rule::decided(
                self.name(),
                true,
                // When it ended is when it was stopped, which may be later than the scenario's
                // end (a client that ignores SIGTERM is killed after a grace): said as the
                // report's heading says it, with the signal or status.
                format!(
                    "still running when the scenario ended; {} at +{:.1} s",
                    p.how_it_ended(),
                    p.at
                ),
            ),
            (false, Some(0), _) => Rule::decided(
                self.name(),
                true,
                format!("exited 0 on its own at +{:.1} s", p.at),
            ),
            (false, Some(code), _) => Rule::decided(
                self.name(),
                false,
                format!("exited {code} at +{:.1} s{why}", p.at),
            ),
            (false, None, Some(sig)) => Rule::decided(
                self.name(),
                false,
                format!("killed by signal {sig} at +{:.1} s{why}", p.at),
            ),
            (false, None, None) => Rule::not_judged(
                self.name(),
                format!(
                    "it ended at +{:.1} s with a status that was not observed",
                    p.at
                ),
            ),
        };
        Some(rule)
    }
}
