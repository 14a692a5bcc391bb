//! `maintwatch certify`: every scenario a client can act in, played to one client application,
//! graded, and reported as a matrix row, a table and JUnit XML.
//!
//! A client library's CI wants one command, one exit code and a report its CI shows test by
//! test. Each scenario is played by `simulate`'s own code ([`simulation::graded`]), so a certify
//! run grades a client exactly as `simulate --upstream spawn --grade -- CMD` does. Scenarios run
//! one after another: the timing rules must not change with the machine's load.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::certify::CertifyArgs;
use crate::exit;
use crate::grading::judge::{ClientProcess, Grade, Rule, Verdict};
use crate::present::output::{human, terminal};
use crate::shared::escape::sanitize;
use crate::simulator::sim::scenario::Start;
use crate::simulator::simulation::{self, CertifySettings, Signals, Stop, TooLoaded};

mod jobs;
mod runner;

pub use jobs::take_worker_mode;

pub use crate::simulator::sim::scenario::START_DEADLINE;

pub use runner::*;
