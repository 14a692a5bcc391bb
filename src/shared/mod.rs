//! The small part below both the watcher and the simulator, beside the RESP layer: the
//! simulator stands in for the server the watcher is tested against, so it must not borrow the
//! watcher's code (a bug there would be copied into the test's other side and pass). What both
//! truly need is kept here, and only this: terminal-text escaping (`escape`), the scenario clock
//! and the name of the scenario's end push (`clock`), the Redis URL form (`url`, with the
//! [`Secret`](secret::Secret) it carries), the client name maintwatch announces and the names
//! of the notification types.

pub mod clock;
pub mod escape;
pub mod secret;
pub mod url;

/// The client name set with `HELLO ... SETNAME`, so the connection is recognisable in
/// `CLIENT LIST` on the server (and the simulator knows maintwatch's own connections).
pub const CLIENT_NAME: &str = "maintwatch";

/// The maintenance notifications' type names, as servers send them (docs/protocol.md section
/// 2): the simulator checks the proxy API's pushes against them, and the client models match a
/// library's case-sensitive parser with them.
pub const NOTIFICATION_TYPES: [&str; 7] = [
    "MOVING",
    "MIGRATING",
    "MIGRATED",
    "FAILING_OVER",
    "FAILED_OVER",
    "SMIGRATING",
    "SMIGRATED",
];
