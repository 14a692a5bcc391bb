//! When a certified scenario gives up on a client that never starts its clock, counted in the
//! client's own time.
//!
//! A scenario that starts on opt-ins waits for them; `certify` must not wait forever for a client
//! that never makes them. It gives the client [`FIRST_CONNECTION_FACTOR`] start deadlines to
//! make its first connection (how long a client takes to start, a cold JVM say, says nothing of
//! its opt-in), then one start deadline from that connection. Those bounds were wall-clock, and a
//! wall clock measures the machine: with scenarios played in parallel, or on a busy CI runner, a
//! client that opts in within a second when alone can take many, and its scenario came out NOT
//! JUDGED where the same client played alone was judged. So each bound is moved on by the time
//! the client was kept waiting for a CPU (its threads' run-queue wait, `sim::cpu_wait`), up to
//! [`LOAD_FACTOR`] times the bound. Past that, the scenario is still NOT JUDGED, and the reason
//! says the run was too loaded to tell ([`TooLoaded`]): never a pass or a fail that moved with
//! the load.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// How many start deadlines a client may take to make its first connection (the deadline
/// itself counts from that connection).
pub const FIRST_CONNECTION_FACTOR: u32 = 2;

/// How far the time a client waited for a CPU may stretch a bound: up to this many times it.
pub const LOAD_FACTOR: u32 = 3;

/// The least wait worth moving a deadline for: below it the machine was as good as idle.
const CREDIT_STEP: Duration = Duration::from_millis(100);

/// Why a scenario that never started is not the client's doing as far as can be told: at the
/// last bound, the client had been kept waiting for a CPU longer than the bound allows for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TooLoaded {
    /// Whether the client had connected (it was waited for to opt in) or not (to connect).
    pub connected: bool,
    /// The longest any of its threads waited for a CPU in that time, in milliseconds.
    pub waited_ms: u64,
    /// How long it was given, from its start or its first connection, in milliseconds.
    pub given_ms: u64,
}

/// What to do when a bound is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtBound {
    /// The client was kept waiting: wait on, until this new bound.
    WaitUntil(Instant),
    /// Give up: the scenario never started; with why, when load may be the cause.
    GiveUp(Option<TooLoaded>),
}

/// One bound being watched: from the client's start (to connect) or its first connection (to
/// start the clock).
#[derive(Debug, Clone, Copy)]
pub struct StartWatch {
    from: Instant,
    allowed: Duration,
    credit: Duration,
    connected: bool,
}

impl StartWatch {
    /// The bound to make the first connection: `deadline` times [`FIRST_CONNECTION_FACTOR`]
    /// from `now`, the client's start.
    pub fn to_connect(now: Instant, deadline: Duration) -> StartWatch {
        StartWatch {
            from: now,
            allowed: deadline * FIRST_CONNECTION_FACTOR,
            credit: Duration::ZERO,
            connected: false,
        }
    }

    /// The bound to start the clock: `deadline` from `now`, the client's first connection.
    pub fn to_start(now: Instant, deadline: Duration) -> StartWatch {
        StartWatch {
            from: now,
            allowed: deadline,
            credit: Duration::ZERO,
            connected: true,
        }
    }

    /// When the bound is reached, with the wait credited so far.
    pub fn deadline(&self) -> Instant {
        self.from + self.allowed + self.credit
    }

    /// At the bound: `waited` is the longest any thread of the client waited for a CPU since
    /// this bound began (`None`: the kernel does not say, and the bound is the wall clock's).
    pub fn at_bound(&mut self, now: Instant, waited: Option<Duration>) -> AtBound {
        let Some(waited) = waited else {
            return AtBound::GiveUp(None);
        };
        let most = self.allowed * (LOAD_FACTOR - 1);
        if waited >= self.credit + CREDIT_STEP && self.credit < most {
            self.credit = waited.min(most);
            if self.deadline() > now {
                return AtBound::WaitUntil(self.deadline());
            }
        }
        // Load is the cause as far as can be told when the wait left uncredited would have
        // moved the bound on: the client had no fair share of the time it was given.
        let loaded = waited >= self.credit + CREDIT_STEP && self.credit >= most;
        AtBound::GiveUp(loaded.then(|| TooLoaded {
            connected: self.connected,
            waited_ms: waited.as_millis() as u64,
            given_ms: now.saturating_duration_since(self.from).as_millis() as u64,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Duration = Duration::from_secs(30);

    #[test]
    fn an_idle_client_gets_the_bound_alone() {
        let t0 = Instant::now();
        let mut w = StartWatch::to_start(t0, D);
        assert_eq!(w.deadline(), t0 + D);
        assert_eq!(
            w.at_bound(t0 + D, Some(Duration::from_millis(20))),
            AtBound::GiveUp(None)
        );
        let mut c = StartWatch::to_connect(t0, D);
        assert_eq!(c.deadline(), t0 + D * FIRST_CONNECTION_FACTOR);
        assert_eq!(c.at_bound(c.deadline(), None), AtBound::GiveUp(None));
    }

    #[test]
    fn time_kept_waiting_for_a_cpu_moves_the_bound_on() {
        let t0 = Instant::now();
        let mut w = StartWatch::to_start(t0, D);
        let waited = Duration::from_secs(12);
        assert_eq!(
            w.at_bound(t0 + D, Some(waited)),
            AtBound::WaitUntil(t0 + D + waited)
        );
        // No more waiting since: the client had its time, and gave no opt-in.
        assert_eq!(
            w.at_bound(t0 + D + waited, Some(waited)),
            AtBound::GiveUp(None)
        );
    }

    #[test]
    fn a_client_starved_past_the_limit_is_too_loaded_to_tell() {
        let t0 = Instant::now();
        let mut w = StartWatch::to_start(t0, D);
        let cap = D * LOAD_FACTOR;
        // It waited for a CPU nearly all the time, at every bound.
        let mut now = t0 + D;
        let mut bounds = 0;
        let end = loop {
            let waited = now - t0 - Duration::from_secs(1);
            match w.at_bound(now, Some(waited)) {
                AtBound::WaitUntil(at) => {
                    assert!(at > now && at <= t0 + cap, "{at:?}");
                    now = at;
                    bounds += 1;
                }
                AtBound::GiveUp(why) => break why,
            }
            assert!(bounds < 10, "the bound keeps moving");
        };
        assert_eq!(now, t0 + cap);
        let why = end.expect("named as load");
        assert!(why.connected);
        assert_eq!(why.given_ms, cap.as_millis() as u64);
        assert_eq!(
            why.waited_ms,
            (cap - Duration::from_secs(1)).as_millis() as u64
        );
    }
}
