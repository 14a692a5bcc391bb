//! The handoff decision of docs/protocol.md section 5, run as a dry run.
//!
//! When a `MOVING` arrives, a client must decide where to reconnect: to a named successor, on the
//! clock, or to whichever address DNS advertises once it stops naming the node being retired.
//! maintwatch does not reconnect anywhere; it replays that decision so an operator can see what a
//! well-behaved client would have done and when. Everything that touches the outside world (DNS,
//! time, randomness, cancellation) comes in through a trait or an argument, so the decision is
//! tested with scripted answers and a paused clock instead of sockets and sleeps.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::notification::check_host;
use serde::{Serialize, Serializer};

mod decision;
#[cfg(test)]
mod tests;

pub use decision::*;
