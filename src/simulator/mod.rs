//! Simulating a deployment: the simulator itself (`sim`, walled off from the watcher: it
//! shares only `protocol::resp` and `crate::shared`), and a simulation run end to end with its
//! client and grade (`simulation`).

pub mod sim;
pub mod simulation;
