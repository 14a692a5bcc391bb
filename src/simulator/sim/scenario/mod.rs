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

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use crate::protocol::resp::{Frame, Scan, Scanner};

use super::notation::unescape;

mod format;
#[cfg(test)]
mod tests;
mod when;

pub use format::*;
pub use when::When;
