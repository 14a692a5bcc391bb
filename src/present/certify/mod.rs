//! How `certify` is shown: what its reports are written from (`played`).

pub mod played;

pub use played::{played, worst, Outcome, Page};
