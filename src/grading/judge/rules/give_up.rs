//! Giving up on a held reply, as the server sees it: the evidence both timeout rules read.
//!
//! A client gives up on a reply in one of two ways. It closes the connection while the stall
//! still holds the reply (redis-py, go-redis), or it keeps the connection, drops the late reply
//! when it comes, and carries on (Lettuce's synchronous API). The second leaves no close, but it
//! leaves a write: replies come in the order of the commands, so a caller still waiting on a
//! held reply sends nothing more, and every caller on the connection is soon waiting; a caller
//! that gave up sends its next command on the same connection while the old reply is still held.
//! The simulator notes when the client wrote while its reply was held ([`Wait::writes`]); a
//! write after a silence of [`QUIET_S`] on the held connection is the mark of a give-up.
//!
//! A write after such a silence could also be a caller that was simply slow to send its first
//! command (a thread the machine's load held back). A give-up at the client's own timeout comes
//! no sooner than that timeout, since a timer never fires early; so inside a window a give-up
//! that kept the connection counts only when it came at least [`OWN_SHARE`] times the client's
//! own give-up time after the hold, as the baseline stall of the same run showed that time
//! (docs/protocol.md section 8).

use crate::observe::evidence::Wait;

/// A silence this long on a connection whose reply is held means every caller on it was
/// waiting: a busy client's callers send their next commands within milliseconds, and a loaded
/// machine delays a thread by a fraction of this.
pub const QUIET_S: f64 = 0.25;

/// A give-up that kept the connection counts as the client's own timeout when it came at least
/// this share of the give-up time the baseline showed: a timer fires late under load, never
/// early, and the baseline's own figure is late by a fraction of a second at most, not by half.
pub const OWN_SHARE: f64 = 0.5;

/// How a caller stopped waiting on a held reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum How {
    /// The client closed the connection.
    Closed,
    /// The client wrote its next command on the same connection while the reply was held.
    Kept,
}

/// A give-up seen on one wait: how long after the reply was first held, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GiveUp {
    pub after: f64,
    pub how: How,
}

impl GiveUp {
    /// `, and kept the connection (...)` for a give-up that kept it; nothing for a close, which
    /// the rules' lines have always meant.
    pub fn kept(&self) -> &'static str {
        match self.how {
            How::Closed => "",
            How::Kept => {
                ", and kept the connection (it wrote its next command while that reply was still held)"
            }
        }
    }
}

/// The first give-up a wait shows: a write after a silence of [`QUIET_S`], else the close.
pub fn give_up(w: &Wait) -> Option<GiveUp> {
    let mut last = 0.0;
    for &x in &w.writes {
        if x - last >= QUIET_S {
            return Some(GiveUp {
                after: x,
                how: How::Kept,
            });
        }
        last = x;
    }
    w.gave_up.then_some(GiveUp {
        after: w.waited,
        how: How::Closed,
    })
}

/// The give-ups among these waits that show the client's own timeout, given the give-up time
/// the baseline showed (`own`): every close, and every write after a silence that came at least
/// [`OWN_SHARE`] of `own` after the reply was held.
pub fn at_own_timeout(waits: &[&Wait], own: f64) -> Vec<GiveUp> {
    waits
        .iter()
        .filter_map(|w| give_up(w))
        .filter(|g| g.how == How::Closed || g.after >= own * OWN_SHARE)
        .collect()
}

/// Why the waits of a baseline stall showed no give-up, in words: the client kept writing
/// without a pause (its callers do not wait on each reply), or it neither closed the
/// connection nor wrote on it again while the reply was held.
pub fn no_give_up_why(waits: &[&Wait]) -> &'static str {
    let busy = waits.iter().any(|w| {
        w.writes
            .last()
            .is_some_and(|last| w.waited - last < QUIET_S)
    });
    if busy {
        "it kept writing on the held connection without a pause, so its callers do not wait on each reply (pipelined or asynchronous) and no write tells a give-up apart"
    } else {
        "it neither closed the connection nor wrote on it again while the reply was held: its timeout is longer than the stall, it has none, or after giving up it sent nothing more on that connection before the stall ended"
    }
}
