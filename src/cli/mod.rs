//! The command line: the clap definitions, and each subcommand's arguments validated into plain
//! settings beside them (`decide::DecideSettings`; `settings` for the watch's, a simulation's and
//! a certification's), so no clap type travels into `commands/` or below.

pub mod certify;
pub mod connect;
pub mod decide;
pub mod decode;
pub mod doctor;
pub mod layout;
pub mod pcap;
pub mod probe;
pub mod replay;
pub mod service;
pub mod settings;
pub mod simulate;
pub mod usage;
pub mod watch;

use clap::{CommandFactory, Parser, Subcommand};
use std::sync::OnceLock;

/// The width help is laid out for, set once by the binary before parsing: the terminal's
/// (`COLUMNS` first), or 80 off a terminal as every other screen. Tests, completions and man
/// pages build the command without setting it and get 80.
static HELP_WIDTH: OnceLock<usize> = OnceLock::new();

/// Sets the width [`command`] lays help out for; the first call wins.
pub fn set_help_width(width: usize) {
    let _ = HELP_WIDTH.set(width);
}

/// The width help texts are laid out for (see [`set_help_width`]).
pub fn help_width() -> usize {
    HELP_WIDTH
        .get()
        .copied()
        .unwrap_or(crate::present::output::human::WIDTH)
}

/// The command the binary parses with: help wrapped by clap at [`help_width`], the same width
/// our own tables in help texts (the scenario lists) are laid out for, so that clap never has to
/// break one of their lines. Left to itself clap wraps at the terminal's width or 100 off one.
pub fn command() -> clap::Command {
    let width = help_width();
    layout::fit(Cli::command(), width).term_width(width)
}

/// Watch and diagnose Redis maintenance notifications.
#[derive(Parser, Debug)]
#[command(
    name = "maintwatch",
    version,
    about = "Watch and diagnose Redis maintenance notifications (MOVING, MIGRATING, FAILING_OVER, SMIGRATING ...)",
    long_about = "maintwatch connects to a Redis endpoint with a forced RESP3 opt-in \
(HELLO 3 + CLIENT MAINT_NOTIFICATIONS ON), prints every maintenance notification beside the exact \
bytes it came from, and times what follows: DNS changes, the server closing the socket, reconnects. \
It also decodes frames, replays captures, probes endpoints for the opt-in, and ships a simulator \
of measured maintenance scenarios.",
    after_help = "Examples:\n  maintwatch demo\n  maintwatch decode --format escaped <<< '>4\\r\\n$6\\r\\nMOVING\\r\\n:0\\r\\n:15\\r\\n_\\r\\n'\n  maintwatch simulate --list"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Connect with a forced opt-in and show every notification, its bytes, and what follows.
    #[command(long_about = watch::LONG_ABOUT)]
    Watch(watch::WatchArgs),
    /// Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes.
    #[command(long_about = decode::LONG_ABOUT)]
    Decode(decode::DecodeArgs),
    /// Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)
    #[command(long_about = probe::LONG_ABOUT)]
    Probe(probe::ProbeArgs),
    /// Why no notifications? The server's answers, and what each known client would do here.
    #[command(long_about = doctor::LONG_ABOUT)]
    Doctor(doctor::DoctorArgs),
    /// Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS.
    #[command(long_about = decide::LONG_ABOUT)]
    Decide(decide::DecideArgs),
    /// Run a simulated deployment that sends maintenance notifications (for trying clients).
    #[command(long_about = simulate::SIMULATE_LONG_ABOUT)]
    Simulate(simulate::SimulateArgs),
    /// Run the simulator and watch it: see maintenance notifications with nothing else running.
    #[command(long_about = simulate::DEMO_LONG_ABOUT)]
    Demo(simulate::DemoArgs),
    /// Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test.
    #[command(long_about = replay::LONG_ABOUT)]
    Replay(replay::ReplayArgs),
    /// Read a packet capture: what the application's own connections saw of a maintenance.
    #[command(long_about = pcap::LONG_ABOUT)]
    Pcap(pcap::PcapArgs),
    /// Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help).
    #[command(long_about = certify::LONG_ABOUT)]
    Certify(certify::CertifyArgs),
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// The output style this choice gives: colour when asked, or on a terminal without
    /// `NO_COLOR`; never inside JSON; the terminal's width (80 when piped). Made here so that
    /// `output` takes a ready `Style` and needs no CLI type.
    pub fn style(self, json: bool) -> crate::present::output::human::Style {
        use std::io::IsTerminal;
        let color = match self {
            ColorChoice::Always => !json,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                !json
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        };
        crate::present::output::human::Style {
            color,
            time: Default::default(),
            width: crate::present::output::terminal::stdout_width(),
            azure: false,
        }
    }
}

/// Parses `500ms`, `1.5s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 500ms, 15s, 2m, 1h)"))?;
    let factor = match unit {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?} (use ms, s, m or h)"
            ))
        }
    };
    if !(n * factor).is_finite() || n < 0.0 {
        return Err(format!("{s:?} is not a usable duration"));
    }
    Ok(std::time::Duration::from_secs_f64(n * factor))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("15"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("abc").is_err());
    }
}
