//! Usage errors, and how any error becomes an exit code.
//!
//! A value clap accepts but the program refuses (`--exec-timeout 0`, a bad `--upstream` URL) is
//! the user's to fix, as a value clap refuses is: exit 2, one line naming the flag. Commands
//! return these as [`UsageError`] (connection settings as [`ConfigError`], which is the same
//! kind of error); `main` prints every error the one way
//! ([`crate::present::output::terminal::print_error`]) and maps it with [`exit_code`].

use std::fmt;

use crate::exit;
use crate::network::conn::ConfigError;

pub use crate::exit::{usage, UsageError};

/// A [`UsageError`] for `flag` from an error whose text may already start with the flag's name
/// (`--exec-on: "x" is not a line type`): the name is not said twice.
pub fn flagged(flag: &str, e: impl fmt::Display) -> anyhow::Error {
    let text = e.to_string();
    let message = text
        .strip_prefix(flag)
        .map(|rest| rest.trim_start_matches(':').trim_start())
        .unwrap_or(&text);
    usage(flag, message)
}

/// Whether an error is the user's to fix on the command line.
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.is::<UsageError>() || c.is::<ConfigError>())
}

/// The exit code of a command that failed: a closed stdout (`| head`) is no failure, a usage
/// error is 2, anything else 1.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if crate::exit::closed_pipe(e) {
        exit::SUCCESS
    } else if is_usage(e) {
        exit::USAGE
    } else {
        exit::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_and_config_errors_exit_2_others_1_a_closed_pipe_0() {
        let e = usage("--exec-timeout", "must be above zero");
        assert_eq!(e.to_string(), "--exec-timeout: must be above zero");
        assert_eq!(exit_code(&e.context("settings")), exit::USAGE);
        let said_once = flagged("--exec-on", "--exec-on: \"x\" is not a line type");
        assert_eq!(said_once.to_string(), "--exec-on: \"x\" is not a line type");
        let config = anyhow::Error::new(ConfigError::Invalid("-h: the host is empty".into()));
        assert_eq!(exit_code(&config), exit::USAGE);
        assert_eq!(exit_code(&anyhow::anyhow!("disk full")), exit::FAILURE);
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(exit_code(&anyhow::Error::new(pipe)), exit::SUCCESS);
    }
}
