//! The states a relayed connection is put in by its own commands (a pipeline in flight, a
//! transaction open, a blocking command waiting, a subscription), so that a push can wait for
//! one (`push P when STATE raw`, scenarios/README.md): the robustness set's frames meet the
//! client's parser where it is least expected.

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

impl States {
    /// Whether the connection is in `when` now, with `owed` replies still to write.
    pub(super) fn holds(&self, when: When, owed: usize) -> bool {
        match when {
            When::Pipeline => owed >= 2,
            // A client that pipelines its transaction (MULTI ... EXEC in one write) has relayed
            // the EXEC before any reply came: its replies, still owed, are the transaction's.
            When::Multi => self.multi && (!self.exec || owed > 0),
            When::Blocked => self.blocking && owed > 0,
            When::Subscribed => self.subscribed,
        }
    }
}
