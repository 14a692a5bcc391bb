//! What stderr is told about how an endpoint's watch ended, in words: why it stopped when that
//! is not in the timeline already, and a watch whose `--duration` ran out before any session.
//! Only the words are here; the command tells them.

use crate::watch::{StopReason, WatchEnd};

impl WatchEnd {
    /// The sentences about this end, each prefixed with the fleet's `label` of the endpoint;
    /// `human`: the timeline is the human one, whose line says more of a refused login.
    pub fn sentences(&self, label: Option<&str>, human: bool) -> Vec<String> {
        let who = label.map(|l| format!("{l}: ")).unwrap_or_default();
        let mut out = Vec::new();
        match &self.fatal {
            // The human timeline's line has the server's text and what to change: say it once.
            Some(_) if human && self.reason == StopReason::Failed(crate::exit::AUTH_FAILED) => {
                out.push(format!(
                    "{who}stopped: the server refused the credentials (the timeline has its reply \
                     and what to change)"
                ));
            }
            Some(message) => out.push(format!("{who}{message}")),
            None => {}
        }
        if !self.established && self.reason == StopReason::Duration {
            out.push(format!(
                "{who}no session was established before --duration ended the watch"
            ));
        }
        out
    }
}
