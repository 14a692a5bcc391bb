//! Formatting for people and machines. Sinks decide nothing: they render what the modules
//! computed.

pub mod text;
