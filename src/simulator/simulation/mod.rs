//! One scenario played to a client command: the spawned upstream, the simulator, the client
//! process with its private resolver, the narration, and the signals that stop them, all stopped
//! on every path out; then, when asked, the judge's observations and grade.
//!
//! Two commands play scenarios this way: `simulate` (one, narrated for a person) and `certify`
//! (each scenario in turn, for a client's CI). It lives in the library so that both reach it and
//! neither command imports the other.

use std::io::Write;

use anyhow::{anyhow, Context};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use crate::exit;
use crate::grading::judge::{ClientProcess, Observations};
use crate::present::output::{human, terminal};
use crate::simulator::sim::capture::Capture;
use crate::simulator::sim::dns_server::SimDns;
use crate::simulator::sim::scenario::{Mode, Scenario, Start};
use crate::simulator::sim::upstream::{Address, SpawnedRedis, Upstream};
use crate::simulator::sim::{SimEvent, Simulator, What};
use client::{Client, Target};
use grade::Grade;

pub mod client;
pub mod grade;
mod play;
mod settings;
mod start;

use start::{AtBound, StartWatch};

pub use start::{TooLoaded, FIRST_CONNECTION_FACTOR, LOAD_FACTOR};

pub use settings::{
    ApiSettings, CertifySettings, ClientSettings, ScenarioChoice, SimulationSettings,
    UpstreamChoice, Verbosity,
};

pub use play::*;
