//! How `certify` is shown: what its reports are written from (`played`), its screens while it
//! plays (`progress` for `--jobs 1`, `board` for `--jobs N`), its summary (`tables`) and last
//! lines (`closing`), and its files (`junit`, `book` for `--report`). The simulator plays the
//! scenarios and hands these their outcomes; nothing here knows how a scenario is played.

pub mod board;
pub mod book;
pub mod closing;
pub mod junit;
pub mod played;
pub mod progress;
pub mod tables;

pub use board::Board;
pub use book::write_page;
pub use closing::{print_summary, End};
pub use junit::{cases, junit, junit_not_started, xml, Case};
pub use played::{played, worst, Outcome, Page};
pub use progress::{finished_line, Ended, Progress};
pub use tables::summary;
