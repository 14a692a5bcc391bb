//! The default of every watch setting, written once. Clap shows and parses the text
//! (`default_value = defaults::DNS_INTERVAL_TEXT`), and the settings a front end builds without a
//! command line (the demo) use the value, which is computed from that same text at compile time:
//! the two cannot drift apart, as they did when the text sat in a clap attribute and the value in
//! a struct's constructor.

use std::time::Duration;

/// How often the watch polls the endpoint's A/AAAA records (`--dns-interval`).
pub const DNS_INTERVAL_TEXT: &str = "500ms";
pub const DNS_INTERVAL: Duration = duration(DNS_INTERVAL_TEXT);

/// How often it polls them while a maintenance window is open (`--dns-interval-open`).
pub const DNS_INTERVAL_OPEN_TEXT: &str = "100ms";
pub const DNS_INTERVAL_OPEN: Duration = duration(DNS_INTERVAL_OPEN_TEXT);

/// How often a cluster watch reads the topology again, besides after an SMIGRATED and when a
/// node's connection fails (`--topology-interval`): a failover or a reshard announces nothing.
pub const TOPOLOGY_INTERVAL_TEXT: &str = "30s";
pub const TOPOLOGY_INTERVAL: Duration = duration(TOPOLOGY_INTERVAL_TEXT);

/// The dry-run handoff's DNS poll interval (`--handoff-poll`; the reference client's 1 s).
pub const HANDOFF_POLL_TEXT: &str = "1s";
pub const HANDOFF_POLL: Duration = duration(HANDOFF_POLL_TEXT);

/// The PING interval of `--traffic` given without a value.
pub const TRAFFIC_TEXT: &str = "1s";
pub const TRAFFIC: Duration = duration(TRAFFIC_TEXT);

/// How often `--otlp` pushes (`--otlp-interval`).
pub const OTLP_INTERVAL_TEXT: &str = "60s";
pub const OTLP_INTERVAL: Duration = duration(OTLP_INTERVAL_TEXT);

/// How long a hook may run before it is killed (`--exec-timeout`).
pub const EXEC_TIMEOUT_TEXT: &str = "10s";
pub const EXEC_TIMEOUT: Duration = duration(EXEC_TIMEOUT_TEXT);

/// Parallel connections to the endpoint (`--connections`).
pub const CONNECTIONS: u32 = 1;

/// Rotated capture files kept (`--capture-keep`).
pub const CAPTURE_KEEP: u32 = 5;

/// How a human line shows its time (`--time-format`).
pub const TIME_FORMAT: crate::present::output::human::TimeFormat =
    crate::present::output::human::TimeFormat::Compact;

/// A whole number followed by `ms`, `s`, `m` or `h`, read at compile time: a default written in
/// any other form fails the build rather than the first run. The command line's own reader
/// (`cli::parse_duration`) takes more forms; the tests below hold the two to the same value.
const fn duration(text: &str) -> Duration {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut n: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        n = n * 10 + (bytes[i] - b'0') as u64;
        i += 1;
    }
    assert!(i > 0, "a default duration starts with its number");
    assert!(i < bytes.len(), "a default duration ends with its unit");
    let unit = bytes.len() - i;
    match (unit, bytes[i]) {
        (2, b'm') if bytes[i + 1] == b's' => Duration::from_millis(n),
        (1, b's') => Duration::from_secs(n),
        (1, b'm') => Duration::from_secs(n * 60),
        (1, b'h') => Duration::from_secs(n * 3600),
        _ => panic!("a default duration ends with ms, s, m or h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_duration;

    #[test]
    fn the_command_line_reads_each_default_text_as_its_value() {
        for (text, value) in [
            (DNS_INTERVAL_TEXT, DNS_INTERVAL),
            (DNS_INTERVAL_OPEN_TEXT, DNS_INTERVAL_OPEN),
            (HANDOFF_POLL_TEXT, HANDOFF_POLL),
            (TOPOLOGY_INTERVAL_TEXT, TOPOLOGY_INTERVAL),
            (TRAFFIC_TEXT, TRAFFIC),
            (OTLP_INTERVAL_TEXT, OTLP_INTERVAL),
            (EXEC_TIMEOUT_TEXT, EXEC_TIMEOUT),
        ] {
            assert_eq!(parse_duration(text), Ok(value), "{text}");
        }
    }

    #[test]
    fn the_compile_time_reader_knows_each_unit() {
        assert_eq!(duration("250ms"), Duration::from_millis(250));
        assert_eq!(duration("15s"), Duration::from_secs(15));
        assert_eq!(duration("2m"), Duration::from_secs(120));
        assert_eq!(duration("1h"), Duration::from_secs(3600));
    }
}
