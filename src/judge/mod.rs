//! Judging a client from outside: facts about the client that the simulator's narration alone does not hold.
pub mod process;
