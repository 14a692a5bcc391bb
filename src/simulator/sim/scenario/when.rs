//! A push that waits for a connection's state (`push P when STATE raw BYTES`): the robustness
//! set's frames placed among a pipeline's replies, inside a transaction, on a blocked connection
//! or on a subscribed one (scenarios/README.md). Apart from the format's parser, which is long
//! enough.

use super::statements::{split_word, Parser};
use super::{Push, ScenarioError};

/// A state of a connection that a push can wait for, so that the frame meets the client's
/// parser where it is least expected (scenarios/README.md, "The robustness set"). Only a
/// connection relayed upstream has these states: the simulator answers none of their commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Two or more relayed replies are owed: the push goes out before the rest of a pipeline's
    /// replies.
    Pipeline,
    /// A MULTI was relayed and its EXEC (or DISCARD) not yet: the push lands among the QUEUED.
    Multi,
    /// A blocking command (BLPOP and its kin) waits for its reply.
    Blocked,
    /// The connection subscribed (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE): a pub/sub connection.
    Subscribed,
}

impl When {
    pub const ALL: [When; 4] = [When::Pipeline, When::Multi, When::Blocked, When::Subscribed];

    /// The keyword in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            When::Pipeline => "pipeline",
            When::Multi => "multi",
            When::Blocked => "blocked",
            When::Subscribed => "subscribed",
        }
    }
}

impl Parser<'_> {
    /// `push when STATE raw ...`: raw bytes that wait for each connection to be in STATE.
    pub(super) fn push_when(&mut self, rest: &str) -> Result<Push, ScenarioError> {
        self.field("when");
        let (state, rest) = split_word(rest);
        let Some(when) = When::ALL.into_iter().find(|w| w.name() == state) else {
            return Err(self.err(format!(
                "expected pipeline, multi, blocked or subscribed, found {state:?}"
            )));
        };
        let (raw, rest) = split_word(rest);
        if raw != "raw" {
            self.field("push");
            return Err(self.err(format!("expected 'raw' after the state, found {raw:?}")));
        }
        match self.raw_push(rest)? {
            Push::Raw(bytes) => Ok(Push::RawWhen(bytes, when)),
            other => Ok(other),
        }
    }
}
