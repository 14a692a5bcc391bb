//! certify's runner: what it does before the first scenario (`prepare`), the scenarios played
//! one by one in this process (`one_by_one`) or by a pool of workers (`pool`, `--jobs N`), and
//! the files written from what was played (`reports`). It sits beside the simulation it plays
//! and the settling (`settled`) and workers (`worker`) it uses; `present::certify` shows it.

pub mod one_by_one;
pub mod pool;
pub mod prepare;
pub mod reports;

pub use one_by_one::one_by_one;
pub use pool::parallel;
pub use prepare::{cannot_start, output_dir, say_isolation};
pub use reports::{not_started, write_reports};
