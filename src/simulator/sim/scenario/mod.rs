//! Scenario files: what the simulated deployment does, and when.
//!
//! A scenario is data, not code, so that the measured timings of docs/protocol.md section 4 can be read
//! (and checked) in one place, and so that users can write their own without rebuilding. The format
//! is line based so that every error names the file, the line and the field (`scenarios/x.scn:7:
//! field 'time': expected an integer, found "abc"`); `scenarios/README.md` documents it.
//!
//! A structured push (`push P MOVING time=15 target=null`) takes its sequence id from the
//! database's one counter at the moment it is sent and encodes exactly like the Enterprise captures
//! (bulk-string type, integer seq and time, `_` for a null endpoint, shard ids as one bulk string);
//! a `raw` push sends the given bytes untouched, for the shapes other clients' fixtures use.

mod format;
mod statements;
#[cfg(test)]
mod tests;
mod when;

pub use format::{
    Action, ClusterNode, Endpoint, Hostile, Mode, Push, PushKind, Scenario, ScenarioError,
    SlotMove, Start, Step, StructuredPush, To, DEEP_LEVELS, HUGE_BLOB_DECLARED, HUGE_BLOB_SENT,
    MID_FRAME, PORT_PLACEHOLDER, START_DEADLINE, TRICKLE_FRAME,
};
pub use statements::parse_slots;
pub use when::When;
