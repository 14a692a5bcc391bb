//! The watch engine: connections, DNS poller, dry-run handoffs and cluster membership feeding one
//! timeline, whose lines go to every sink.
//!
//! It is a library module rather than part of `commands/watch.rs` because more than one front end
//! drives it (`watch`, `demo`, and next a fleet of endpoints or a pcap reader), and because what
//! plugs into it (metrics, hooks) must not mean another `if` in a command. The command builds
//! [`WatchSettings`], picks its sinks and calls [`watch`]; nothing here knows clap or a terminal.
//! It is an area of its own, above `present`, because it writes through `present`'s sinks and
//! runs its services, while `present` renders the records `observe` defines: inside `observe`,
//! the two areas named each other.
//!
//! Every source sends an [`Observation`](crate::observe::timeline::Observation) down one channel to one
//! loop that owns the timeline and the sinks, so ordering between sources is the order of arrival
//! and nothing is printed from two places. A connection task never gives up on its own: it
//! reconnects with bounded, jittered exponential backoff until the watch stops.

mod connection;
mod ending;
mod engine;
mod membership;
mod settings;

pub use connection::{Backoff, HEALTHY_SESSION};
pub use engine::{
    watch, watch_fleet, Endpoint, FleetEnd, StopReason, WatchEnd, MAX_DRY_RUNS,
    MAX_DRY_RUN_WINDOW_S,
};
pub use settings::{
    labels, CaptureMode, ClusterMode, EngineSettings, OutputSettings, WatchSettings, TRAFFIC_FLOOR,
};
