//! The opt-in's outcome on one connection, decided where the handshake is read and carried
//! unchanged into the JSON lines, the summary, `probe` and the exit code.

use serde::{Deserialize, Serialize};

/// The opt-in's outcome on one connection: the one enum for it, in lines, the summary, `probe`
/// (inside its `Severity`) and `--require`'s exit code. Declared in severity order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptInOutcome {
    Accepted,
    Refused,
    Resp3Unavailable,
    AuthFailed,
}

impl OptInOutcome {
    /// The exit code of a run that ends on this outcome (`probe`, `watch --require`).
    pub fn exit_code(self) -> i32 {
        match self {
            OptInOutcome::Accepted => crate::exit::SUCCESS,
            OptInOutcome::Refused => crate::exit::REFUSED,
            OptInOutcome::Resp3Unavailable => crate::exit::RESP3_UNAVAILABLE,
            OptInOutcome::AuthFailed => crate::exit::AUTH_FAILED,
        }
    }
}
