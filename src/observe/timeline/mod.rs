//! The timeline: every observation in, the lines people and scripts read out.
//!
//! A maintenance is a story told across several sources: a notification on one socket, a DNS
//! record changing, the server closing the socket some seconds later, our reconnect, the replay
//! that came with the new opt-in. One task owns all cross-source state here — open windows, the
//! `(type, seq)` dedup, which event the next line is relative to, the summary — so the sinks only
//! format, and the same logic runs live and in `replay`. It decides what a dry-run client should
//! start (returned as actions) but starts nothing itself.
//!
//! Each observation carries one typed event ([`event`]); [`Timeline::observe_into`] matches it
//! once and hands the event and its context ([`Ctx`]) to one handler. Frames are handled in
//! `frame`, closes and verdicts in `close`.

mod azure_events;
mod close;
pub mod event;
mod frame_label;
mod kept;
mod ping;
pub mod rerun;
pub use crate::shared::clock::{ScenarioClock, SpeedError, SCENARIO_END};
pub use event::{CloseCause, DryRun, Observation, What};
pub use frame_label::is_scenario_end;
pub use kept::KEPT_EVENTS;

mod steps;
#[cfg(test)]
mod tests;

pub use steps::{Action, Step, Timeline};
// For the folder's own files, until each imports from where a name is defined.
use steps::{secs, secs_f, Announced, Ctx, Event};
