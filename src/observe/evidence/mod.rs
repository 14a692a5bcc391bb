//! What the judge is given: one run's evidence, from whichever side saw it (the simulator's
//! narration, a packet capture, or a `grade_input` line read back by `replay --grade`). It lives
//! with the observers rather than the judge so that the areas stack: the observers write it,
//! `grading` reads it, and nothing below `grading` names the judge.
//!
//! - `run`: the connections, notifications, closes, DNS answers and traffic of a run;
//! - `process`: the graded client's own process, when maintwatch started it.

pub mod process;
pub mod run;

pub use process::ClientProcess;
pub use run::{
    client_of, same_name, Closed, Connection, DnsAnswer, NodeClose, Notification, Observations,
    OptIn, Publication, Reached, Received, Redirect, Side, SlotMove, Stall, Subscription, Target,
    Traffic, Wait,
};
