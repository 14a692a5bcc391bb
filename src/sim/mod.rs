//! The built-in simulator.

pub mod dns;
