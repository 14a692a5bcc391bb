//! Formatting for people and machines. Sinks decide nothing: they render what the timeline and
//! the other modules computed.

pub mod countdown;
pub mod decode_screen;
pub mod doctor_screen;
pub mod human;
pub mod pcap_screen;
pub mod probe_screen;
pub mod probe_table;
pub mod replay_screen;
pub mod sink;
pub mod stdout;
pub mod terminal;
pub mod text;
