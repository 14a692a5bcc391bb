//! The process exit codes, in one place.
//!
//! Scripts branch on these (`maintwatch probe` in a CI gate, a fleet audit over a list of
//! endpoints), so they are a documented interface: each code is a named constant here and nowhere
//! else is a literal used. The probe codes are ordered by severity, highest most severe, so the
//! result of probing several endpoints is simply the largest code among them.
//!
//! | code | constant | meaning |
//! |-----:|----------|---------|
//! | 0 | [`SUCCESS`] | success; for `probe`: every endpoint accepted the opt-in |
//! | 1 | [`FAILURE`] | a generic error (bad input file, resolver setup, I/O on stdout ...) |
//! | 2 | [`USAGE`] | a usage error: clap's own code, also used for an invalid endpoint URL |
//! | 3 | [`REFUSED`] | `probe`: the server refused `CLIENT MAINT_NOTIFICATIONS ON` |
//! | 4 | [`RESP3_UNAVAILABLE`] | `probe`: `HELLO 3` was refused (old server, proxy, `-NOPROTO`) |
//! | 5 | [`AUTH_FAILED`] | `probe`: authentication failed (`-WRONGPASS`, `-NOAUTH` ...) |
//! | 6 | [`CONNECTION_FAILED`] | `probe`: unreachable, timed out, TLS failure, or a broken reply; `watch`: the same before any session was established, or `--duration` ended a watch that never completed a handshake |
//! | 7 | [`SELECT_FAILED`] | `watch`: the server refused the database of the URL (`/99`: DB index is out of range) |
//! | 8 | [`SESSION_ERRORS`] | `watch`: stopped normally, but after a session existed, reconnects failed with permanent errors (authentication, SELECT, certificate) |
//! | 9 | [`NOT_JUDGED`] | `simulate --grade`, `pcap --grade`, `replay --grade`: no rule failed, but some rule was not judged (its evidence was missing), or nothing was judged at all |
//! | 129 | [`HANGUP`] | `watch`, `simulate`: ended by SIGHUP (128 + 1) |
//! | 130 | [`INTERRUPTED`] | interrupted by Ctrl-C (128 + SIGINT, as shells do) |
//! | 143 | [`TERMINATED`] | `watch`, `simulate`: ended by SIGTERM (128 + 15) |
//!
//! `watch` uses 5 ([`AUTH_FAILED`]) and 6 ([`CONNECTION_FAILED`]) too: before the first session is
//! established, a permanent error stops it with that code instead of retrying forever.

/// Success; for `probe`, every endpoint accepted the opt-in.
pub const SUCCESS: i32 = 0;

/// A generic error that is none of the specific outcomes below.
pub const FAILURE: i32 = 1;

/// A usage error. clap exits with this code itself; it is also used for an endpoint URL that
/// fails validation after parsing (one read from `--from`).
pub const USAGE: i32 = 2;

/// `probe`: the server answered the opt-in with an error (Redis OSS, Valkey, an Enterprise
/// database with the feature off).
pub const REFUSED: i32 = 3;

/// `probe`: the server cannot speak RESP3 (`HELLO 3` refused), so it can never push a
/// notification, whatever it would say to the opt-in.
pub const RESP3_UNAVAILABLE: i32 = 4;

/// `probe`: authentication failed; nothing is known about the opt-in.
pub const AUTH_FAILED: i32 = 5;

/// `probe`: no conversation happened: unreachable, timed out, TLS failed, or the server closed
/// or sent something that is not RESP during the handshake.
pub const CONNECTION_FAILED: i32 = 6;

/// `watch`: the server refused `SELECT` of the URL's database (`redis://host:port/99`). Checked
/// before the first session only; a later refusal is retried and reported as
/// [`SESSION_ERRORS`].
pub const SELECT_FAILED: i32 = 7;

/// `watch`: the watch ended as asked (`--duration`, `--count`), but after a session had been
/// established, reconnecting met permanent errors (authentication, SELECT, certificate); they
/// were retried, reported and counted in the summary.
pub const SESSION_ERRORS: i32 = 8;

/// The grading commands: no rule failed, but the evidence for some rule was missing (a capture
/// without DNS, a client whose timeout was never seen), or nothing was judged at all (the client
/// never connected). A grade is never a pass on what could not be seen.
pub const NOT_JUDGED: i32 = 9;

/// `certify`, `simulate -- CMD`: the client's command could not be started (no such program,
/// not executable): nothing about the client was judged, and nothing about it failed either.
pub const CLIENT_NOT_STARTED: i32 = 10;

/// `watch`: ended by SIGHUP (the terminal went away); the summary was written first.
pub const HANGUP: i32 = 129;

/// Interrupted by Ctrl-C.
pub const INTERRUPTED: i32 = 130;

/// `watch`: ended by SIGTERM (a service manager stopping it); the summary was written first.
pub const TERMINATED: i32 = 143;

/// A flag's value the program refuses, found past the command line's parse (a bad
/// `--upstream` URL, a `--pcap` file that cannot be opened): exit [`USAGE`]. It lives here, not
/// in `cli`, so that the code below the command line can say it without knowing clap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// As typed on the command line: `--exec-timeout`.
    pub flag: String,
    pub message: String,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.flag, self.message)
    }
}

impl std::error::Error for UsageError {}

/// A [`UsageError`] as an `anyhow::Error`, for `?` and `map_err`.
pub fn usage(flag: &str, message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError {
        flag: flag.to_string(),
        message: message.to_string(),
    })
}

/// Of two grading exit codes, the one that says more is wrong: [`FAILURE`] (a rule failed, or
/// an input did not read) over [`NOT_JUDGED`] over [`SUCCESS`]. A run of several grades exits
/// with the worst.
pub fn worse(a: i32, b: i32) -> i32 {
    let rank = |c: i32| match c {
        SUCCESS => 0,
        NOT_JUDGED => 1,
        _ => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Whether an error is a reader that went away (`EPIPE`: `| head`), which is no failure of the
/// command's: a command that has its answer (certify's grade) still exits with it.
pub fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_codes_are_distinct_and_ordered_by_severity() {
        let codes = [
            SUCCESS,
            REFUSED,
            RESP3_UNAVAILABLE,
            AUTH_FAILED,
            CONNECTION_FAILED,
        ];
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "{codes:?}");
        assert!(!codes.contains(&FAILURE) && !codes.contains(&USAGE));
    }

    #[test]
    fn signal_codes_are_128_plus_the_signal() {
        assert_eq!(HANGUP, 128 + 1);
        assert_eq!(INTERRUPTED, 128 + 2);
        assert_eq!(TERMINATED, 128 + 15);
    }
}
