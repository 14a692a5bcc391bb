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
//! | 6 | [`CONNECTION_FAILED`] | `probe`: unreachable, timed out, TLS failure, or a broken reply |
//! | 130 | [`INTERRUPTED`] | interrupted by Ctrl-C (128 + SIGINT, as shells do) |

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

/// Interrupted by Ctrl-C.
pub const INTERRUPTED: i32 = 130;

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
}
