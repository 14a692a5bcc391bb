//! Judging a client: the rules and the grade (`judge`), the client matrix (`matrix`) and what
//! the known client libraries do (`clients`).

pub mod clients;
pub mod judge;
pub mod matrix;
