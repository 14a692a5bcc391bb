//! The states a relayed connection is put in by its own commands (a pipeline in flight, a
//! transaction open, a blocking command waiting, a subscription), so that a push can wait for
//! one (`push P when STATE raw`, scenarios/README.md): the robustness set's frames meet the
//! client's parser where it is least expected.

use super::*;
use crate::simulator::sim::scenario::When;

/// What the relayed commands of one connection left open.
#[derive(Debug, Default)]
pub(in crate::simulator::sim) struct States {
    /// A MULTI was relayed, and nothing after its EXEC (or DISCARD) yet.
    multi: bool,
    /// That EXEC or DISCARD was relayed: the transaction's replies may still be owed.
    exec: bool,
    blocking: bool,
    subscribed: bool,
}

impl States {
    /// A command (its name, upper case) was relayed.
    pub(super) fn relayed(&mut self, name: &[u8]) {
        match name {
            b"MULTI" => (self.multi, self.exec) = (true, false),
            b"EXEC" | b"DISCARD" => self.exec = true,
            _ if self.exec => (self.multi, self.exec) = (false, false),
            _ => {}
        }
        match name {
            b"SUBSCRIBE" | b"PSUBSCRIBE" | b"SSUBSCRIBE" => self.subscribed = true,
            b"RESET" => *self = States::default(),
            _ => {}
        }
        // The last command relayed is the one whose reply comes last.
        self.blocking = blocking(name);
    }
}

/// The commands that wait on the server for data before they reply.
fn blocking(name: &[u8]) -> bool {
    matches!(
        name,
        b"BLPOP"
            | b"BRPOP"
            | b"BLMOVE"
            | b"BRPOPLPUSH"
            | b"BLMPOP"
            | b"BZPOPMIN"
            | b"BZPOPMAX"
            | b"BZMPOP"
            | b"WAIT"
    )
}

impl Conn {
    /// Whether the connection is in that state now.
    fn in_state(&self, when: When) -> bool {
        let owed = self.owed();
        let Some(up) = self.up.as_ref() else {
            return false;
        };
        match when {
            When::Pipeline => owed >= 2,
            // A client that pipelines its transaction (MULTI ... EXEC in one write) has relayed
            // the EXEC before any reply came: its replies, still owed, are the transaction's.
            When::Multi => up.states.multi && (!up.states.exec || owed > 0),
            When::Blocked => up.states.blocking && owed > 0,
            When::Subscribed => up.states.subscribed,
        }
    }

    /// The first message of the backlog that may go out now: anything but a push waiting for a
    /// state the connection is not in, which keeps its place.
    pub(super) fn next_ready(&self, backlog: &mut VecDeque<ConnMsg>) -> Option<ConnMsg> {
        let at = backlog.iter().position(|m| match m {
            ConnMsg::PushWhen(_, _, when) => self.in_state(*when),
            _ => true,
        })?;
        backlog.remove(at)
    }
}
