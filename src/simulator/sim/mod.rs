//! The built-in simulator: a deployment that sends maintenance notifications, on loopback.
//!
//! No public server sends these notifications (Redis OSS and Valkey refuse the opt-in), so this is
//! how users try maintwatch, how client-library authors test their handoff code against realistic
//! timing, and how the tests see a real MOVING, a real DNS move and a real socket close over real
//! sockets. It is three things on one clock:
//!
//! - a RESP3 server speaking enough Redis for real clients ([`server`]), one listener per "proxy"
//!   on its own loopback address and the same port, as proxies behind one hostname are;
//! - an authoritative DNS server ([`dns`]) for `db.sim.maintwatch.test`, whose A records change
//!   on the scenario's clock;
//! - a player that runs a [`Scenario`] (a data file in `scenarios/`) step by step, with the
//!   server behaviour of docs/protocol.md sections 1, 3 and 4: one sequence counter per database shared
//!   by all types, catch-up replay of the last MIGRATED / FAILED_OVER after the opt-in's `+OK`,
//!   a MOVING re-sent to connections that opt in while its window is open, and a node-wide close.
//!
//! Everything it does is narrated as [`SimEvent`]s on a broadcast channel, each stamped with the
//! wall clock and the scenario clock, so the CLI can print it and a benchmark can measure latency
//! from the moment a frame was written.
//!
//! The simulator shares no code with the watcher beyond `resp` (encoding and scanning) and the
//! small `shared` part below both (terminal-text escaping for what it prints, the scenario
//! clock's speed check and the end push's name, the Redis URL form of `--upstream`, the client
//! name, the list of notification type names the proxy API accepts; the watcher's parser spells
//! its own): a misunderstanding of the protocol in one must not be silently mirrored by the other.
//! `tests/it/layers.rs` holds it to that. Running a client under test and grading a run sit
//! above, in `simulation` (`simulation::client`, `simulation::grade`), where the judge is.

pub mod azure_channel;
pub mod capture;
pub mod cluster_slots;
pub mod cpu_wait;
pub mod dns_server;
pub mod fault_injector;
mod http_api;
pub mod isolation;
mod narration;
pub mod notation;
#[cfg(target_os = "linux")]
pub(crate) mod os;
mod player;
pub mod proxy_api;
pub mod scenario;
pub mod scenarios;
mod server;
mod sharded_pubsub;
pub mod upstream;
mod wire;

pub use narration::{SimEvent, What, Why};

pub use self::scenario::{Scenario, ScenarioError};

pub use player::{proxy_host, SimError, SimOptions, Simulator, HOSTNAME, JOIN_GAP, ZONE};
// For the folder's own files, until each imports from where a name is defined.
use player::{run_step, ConnEntry, ConnMsg, Shared, State};
