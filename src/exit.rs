//! Exit codes, in one table so scripts can rely on them.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | failure (bad input, I/O error, framing error in `decode`, a difference in `replay --check`) |
//! | 2 | usage error (clap's own code) |
//! | 130 | interrupted by Ctrl-C |

pub const SUCCESS: i32 = 0;
pub const FAILURE: i32 = 1;
pub const USAGE: i32 = 2;
pub const INTERRUPTED: i32 = 130;
