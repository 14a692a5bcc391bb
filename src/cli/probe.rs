//! Arguments of `probe`.
//!
//! The exit-code table lives in the help text because scripts branch on it; the constants it
//! describes are in `crate::exit`, and a test keeps the two in step.

use std::time::Duration;

use clap::Args;

use super::connect::{ConnectArgs, UrlParser};
use crate::network::conn::RedisUrl;

/// The long description of `probe`. The `Command::Probe` variant must repeat it
/// (`#[command(long_about = probe::LONG_ABOUT)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str =
    "Connects to each endpoint (concurrently), sends HELLO 3 (with AUTH when a \
password is given) and CLIENT MAINT_NOTIFICATIONS ON, and classifies the endpoint: accepted, \
refused (with the server's exact text), RESP3 unavailable, authentication failed, TLS failed \
(with the reason: unknown CA, name mismatch ...), unreachable or timed out. It also reports what \
came with the reply: a catch-up replay (a retained MIGRATED or FAILED_OVER and its seq: a \
maintenance completed on that database) or a MOVING (a maintenance is under way right now), and \
the server, version and mode from HELLO. After an accepted opt-in it listens for --linger more, \
because the replay can arrive just after the reply. Endpoints come from the arguments, from \
--from FILE (one per line; # starts a comment at the start of a line or after a blank; - \
for standard input), or from -u / -h / -p. A line of --from that is not an endpoint is reported \
with its line number and skipped; the other endpoints are still probed.";

/// The exit codes of what the server answered (3 to 6), the same for `probe` and `doctor`: a
/// literal, for their `after_help` made with `concat!`.
macro_rules! server_exit_codes {
    () => {
        "  3  refused: the server answered CLIENT MAINT_NOTIFICATIONS with an error
  4  RESP3 unavailable: HELLO 3 was refused (no push frame can arrive)
  5  authentication failed (WRONGPASS, NOAUTH ...)
  6  connection or TLS failure: unreachable, timed out, TLS failed, broken reply
"
    };
}
pub(crate) use server_exit_codes;

/// The `after_help` of `probe`: exit codes, then examples.
pub const AFTER_HELP: &str = concat!(
    "\
Exit codes (with several endpoints, the most severe wins):
  0  every endpoint accepted the opt-in
",
    server_exit_codes!(),
    "  2  usage error (bad flag or endpoint); also when --from had a bad line and no endpoint did
     worse than accepted (a code from 3 to 6 wins over it)
  1  other error (unreadable --from file, resolver setup ...)

Examples:
  maintwatch probe redis://10.0.0.5:12000
  REDISCLI_AUTH=\"$PASS\" maintwatch probe rediss://default@db.example.net:12000 --cacert ca.pem
  maintwatch probe --from endpoints.txt --json > probe.jsonl
  grep -v '^#' fleet.txt | maintwatch probe --from - --quiet || echo \"not all opted in\"
  REDISCLI_AUTH=secret maintwatch probe -h 10.0.0.5 -p 12000"
);

/// Arguments of `maintwatch probe`.
#[derive(Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct ProbeArgs {
    /// Endpoints: redis://[[user]:password@]host[:port][/db], rediss://..., or host[:port].
    #[arg(value_name = "URL", value_parser = UrlParser)]
    pub urls: Vec<RedisUrl>,

    /// Also read endpoints from FILE, one per line; `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub from: Option<String>,

    /// How many endpoints to probe at once (each is one socket: within the open-file limit).
    #[arg(long, value_name = "N", default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,

    /// After an accepted opt-in, listen this long for a catch-up replay that missed the reply's
    /// read (measured at 16-17 ms after the +OK); 0 disables.
    #[arg(long, value_name = "DURATION", default_value = "50ms",
          value_parser = super::parse_duration)]
    pub linger: Duration,

    /// One JSON object per endpoint per line (fields: type, v, endpoint, address, tls, outcome,
    /// exit_code, detail, tls_failure, hello, endpoint_type, maintenance, pushes, elapsed_ms).
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,

    /// Print nothing on standard output: only the exit code tells (warnings still go to stderr).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Fails unless every exit code `probe` and `doctor` can return has its line in `after_help`,
/// saying what it means: the help text and the constants in `crate::exit` stay in step.
#[cfg(test)]
pub(crate) fn check_exit_table(after_help: &str) {
    use crate::exit;
    for (code, word) in [
        (exit::SUCCESS, "accepted"),
        (exit::REFUSED, "refused"),
        (exit::RESP3_UNAVAILABLE, "RESP3 unavailable"),
        (exit::AUTH_FAILED, "authentication failed"),
        (exit::CONNECTION_FAILED, "connection or TLS failure"),
        (exit::USAGE, "usage error"),
        (exit::FAILURE, "other error"),
    ] {
        let line = format!("  {code}  ");
        let found = after_help
            .lines()
            .find(|l| l.starts_with(&line))
            .unwrap_or_else(|| panic!("no line for exit code {code}"));
        assert!(found.contains(word), "{found:?} should say {word:?}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_table_matches_the_exit_constants() {
        super::check_exit_table(super::AFTER_HELP);
    }
}
