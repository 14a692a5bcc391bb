//! Judging a client: the rules and the grade (`judge`), the client matrix (`matrix`), what
//! the known client libraries do (`clients`), and the diagnosis of an endpoint (`doctor`).

pub mod clients;
pub mod doctor;
pub mod judge;
pub mod matrix;
