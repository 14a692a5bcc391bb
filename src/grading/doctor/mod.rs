//! What `maintwatch doctor` finds out about an endpoint, apart from how it is shown: the value
//! it finds (`diagnosis`), how the server is asked for it (`diagnose`), and what the known
//! clients would meet there (`caveats`). The screen and the spinner are
//! `present::output::doctor_screen`; the command only wires the two.

pub mod caveats;
pub mod diagnose;
pub mod diagnosis;
