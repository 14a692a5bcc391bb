//! The handoff decision of docs/protocol.md section 5, run as a dry run.
//!
//! When a `MOVING` arrives, a client must decide where to reconnect: to a named successor, on the
//! clock, or to whichever address DNS advertises once it stops naming the node being retired.
//! maintwatch does not reconnect anywhere; it replays that decision so an operator can see what a
//! well-behaved client would have done and when. Everything that touches the outside world (DNS,
//! time, randomness, cancellation) comes in through a trait or an argument, so the decision is
//! tested with scripted answers and a paused clock instead of sockets and sleeps.

mod decision;
#[cfg(test)]
mod tests;

pub use decision::{
    advertised, jitter_upper, run, Advertised, Clock, ClockReason, EndpointHost, FixedJitter,
    HandoffInput, Jitter, Outcome, RandJitter, Resolution, Resolve, TokioClock, MAX_DRY_RUNS,
    MAX_DRY_RUN_WINDOW_S,
};
