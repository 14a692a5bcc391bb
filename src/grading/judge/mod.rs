//! One judge of client behaviour during a maintenance, with no I/O.
//!
//! `simulate --grade` (the simulator's narration), `pcap --grade` (a capture of the application's
//! own traffic) and `replay --grade` (either of those read back) all ask the same question: did
//! this client get through the maintenance the way docs/protocol.md says it can? Three pieces of
//! code with three sets of words gave three answers; this module is the one that answers now.
//! The callers turn what they saw into [`Observations`]; [`judge`] returns each rule's result per
//! client and per notification, with a reason in one sentence, and a verdict per connection.
//!
//! The rules are defined in docs/protocol.md (section 8), beside the facts they come from, one
//! file each under [`rules`]. Every result is PASS or FAIL on what was observed, or NOT JUDGED
//! where the evidence is missing, and a grade in which nothing was judged is never a pass: a
//! certifying tool must not pass what it could not see.

mod assess;
pub mod grade_lines;
pub mod moving;
pub mod rules;
pub mod verdicts;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod give_up_tests;
#[cfg(test)]
mod tests;

pub use crate::observe::evidence::ClientProcess;
pub use crate::observe::evidence::{
    client_of, Closed, Connection, DnsAnswer, NodeClose, Notification, Observations, OptIn,
    Publication, Reached, Received, Redirect, Side, SlotMove, Stall, Subscription, Target, Traffic,
    Wait,
};
pub use assess::{judge, rule_names, successions, Succession};
pub use verdicts::{
    clients_in_words, ClientGrade, ConnVerdict, Counts, Grade, MovingGrade, NotificationGrade,
    Rule, Verdict,
};
