//! Arguments of `watch`.

use super::{parse_duration, ColorChoice};
use crate::defaults;
use crate::present::output::human::TimeFormat;
use clap::Args;
use std::path::PathBuf;

/// The long description of `watch`. The `Command::Watch` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str = "Connects with a forced RESP3 opt-in (HELLO 3, then CLIENT MAINT_NOTIFICATIONS ON) \
and prints every push frame parsed, beside its exact bytes. What follows an opening notification \
(MOVING, MIGRATING, FAILING_OVER, SMIGRATING) is also shown as +s.mmm after it: the closing \
notification, DNS record changes, the server closing the socket (with how far past the declared \
window), the reconnect and what the new opt-in replayed. On each new MOVING a dry-run of a client's \
handoff decision runs, and its outcome is set against what the server did. The watch reconnects \
with backoff until Ctrl-C, --duration or --count, then prints a summary. Several URLs or --from FILE watch a fleet in one process: each endpoint keeps its own timeline and summary, and its lines carry its label (host:port).";

#[derive(Args, Debug, Clone)]
#[command(
    long_about = LONG_ABOUT,
    after_help = "Examples:\n  maintwatch watch redis://db.example.net:12000\n  maintwatch watch -h 10.0.0.5 -p 12000 --json > events.jsonl   # password from REDISCLI_AUTH\n  REDISCLI_AUTH=\"$PASS\" maintwatch watch rediss://db.example.net:12000 --user app --cacert ca.pem\n  maintwatch watch redis://db.sim.maintwatch.test:6379 --dns-server 127.0.0.1:5353 --sim-speed 10\n  maintwatch watch --from fleet.txt --heartbeat 10m --capture fleet.jsonl --capture-max-size 100M\n\nExit codes: 0 stopped by --duration/--count after a session, 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP, \
3/4 with --require (refused, RESP3 unavailable), 5 authentication failed, 6 connection/certificate \
failure or no session at all, 7 database refused (/N), 8 permanent errors after a session, 2 usage, \
1 other errors. A fleet exits with the highest code of its endpoints. With --capture, SIGHUP reopens \
the capture file (logrotate) instead of stopping the watch; with --report, it writes the page again \
and the watch goes on."
)]
pub struct WatchArgs {
    /// The endpoint: redis://[[user]:password@]host[:port][/db] or rediss:// (or use -u, -h/-p).
    /// Several URLs (or --from) watch a fleet in one process, each line tagged with its
    /// endpoint's label.
    #[arg(value_name = "URL", value_parser = super::connect::UrlParser,
          conflicts_with_all = ["uri", "host", "port"])]
    pub urls: Vec<crate::network::conn::url::RedisUrl>,
    /// Also watch the endpoints in FILE, one URL per line as `probe --from` reads them
    /// (`-` for standard input): a fleet.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["uri", "host", "port"])]
    pub from: Option<String>,
    /// Every DURATION, a heartbeat line per endpoint: connections up, opt-ins, time since the
    /// latest notification.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub heartbeat: Option<std::time::Duration>,
    #[command(flatten)]
    pub connect: super::connect::ConnectArgs,
    /// Exit (with the probe exit code) when the opt-in is refused or RESP3 is unavailable,
    /// instead of watching whatever pushes arrive.
    #[arg(long)]
    pub require: bool,
    /// Stop after this long (e.g. 90s, 10m, 1h).
    #[arg(long, value_parser = watch_duration, allow_negative_numbers = true)]
    pub duration: Option<std::time::Duration>,
    /// Stop after N maintenance notifications.
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub count: Option<u32>,
    /// One JSON object per line on stdout instead of human lines (schema: docs/jsonl.md).
    #[arg(long)]
    pub json: bool,
    /// Also write JSON lines to FILE, flushed line by line, alongside the human output.
    /// Created mode 0600 (pub/sub payloads can be in it); an existing file is refused unless
    /// --append or --force says what to do with it.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Write a self-contained HTML page of the watch to FILE at exit, and again on each SIGHUP
    /// (which then no longer stops the watch): the timeline drawn, the summary and the frames
    /// read (docs/report.md). A fleet's page draws its first endpoint.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// With --capture: add to an existing file instead of refusing it.
    #[arg(long, requires = "capture", conflicts_with = "force")]
    pub append: bool,
    /// With --capture: empty an existing file instead of refusing it.
    #[arg(long, requires = "capture")]
    pub force: bool,
    /// With --capture: before a line would take the file past SIZE (e.g. 100M, 1G), move it to
    /// FILE.1 (FILE.1 to FILE.2 ...) and start a new FILE. SIGHUP reopens FILE (logrotate).
    #[arg(long, value_name = "SIZE", requires = "capture", value_parser = parse_size)]
    pub capture_max_size: Option<u64>,
    /// With --capture-max-size: how many rotated files to keep.
    #[arg(long, value_name = "N", default_value_t = defaults::CAPTURE_KEEP, requires = "capture_max_size",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub capture_keep: u32,
    /// Send a PING every interval and report latency and errors, attributing failures to the
    /// open window.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_duration, num_args = 0..=1, default_missing_value = defaults::TRAFFIC_TEXT)]
    pub traffic: Option<std::time::Duration>,
    /// Open N connections to the endpoint (a node-wide close takes them all at once).
    #[arg(long, value_name = "N", default_value_t = defaults::CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub connections: u32,
    /// SUBSCRIBE to CHANNEL on each connection (repeatable): pub/sub messages are shown beside
    /// maintenance notifications, as what they are.
    #[arg(long, value_name = "CHANNEL")]
    pub subscribe: Vec<String>,
    /// Listen to Azure Cache for Redis's maintenance channel, AzureRedisEvents, on the watched
    /// connection: each message is an event of the timeline, parsed beside its bytes. The
    /// default when the host is an Azure Cache name (*.redis.cache.windows.net and the sovereign
    /// clouds'), as StackExchange.Redis decides.
    #[arg(long, conflicts_with = "no_azure_events")]
    pub azure_events: bool,
    /// Do not listen to AzureRedisEvents, even on an Azure Cache host.
    #[arg(long)]
    pub no_azure_events: bool,
    /// CLIENT TRACKING ON BCAST on each connection: invalidations are shown as what they are.
    #[arg(long)]
    pub tracking: bool,
    /// Watch every node of an OSS cluster (found with CLUSTER SHARDS, else CLUSTER SLOTS); the
    /// default when HELLO reports mode `cluster`.
    #[arg(long, conflicts_with = "no_cluster")]
    pub cluster: bool,
    /// Watch only the endpoint given, even when HELLO reports mode `cluster`.
    #[arg(long)]
    pub no_cluster: bool,
    /// With a cluster, watch the masters only (not the replicas).
    #[arg(long)]
    pub masters_only: bool,
    /// With a cluster, read its topology again this often, to follow a failover or a reshard
    /// that no notification announces (it is also read again after an SMIGRATED, and when a
    /// node's connection closes or fails).
    #[arg(long, value_parser = positive_duration, default_value = defaults::TOPOLOGY_INTERVAL_TEXT)]
    pub topology_interval: std::time::Duration,
    /// How often to poll the hostname's A/AAAA records.
    #[arg(long, value_parser = parse_duration, default_value = defaults::DNS_INTERVAL_TEXT)]
    pub dns_interval: std::time::Duration,
    /// How often to poll them while a maintenance window is open (the change comes then).
    #[arg(long, value_parser = parse_duration, default_value = defaults::DNS_INTERVAL_OPEN_TEXT)]
    pub dns_interval_open: std::time::Duration,
    /// Do not watch DNS.
    #[arg(long)]
    pub no_dns: bool,
    /// Do not run the handoff decision in dry-run.
    #[arg(long)]
    pub no_handoff: bool,
    /// Interval of the dry-run's DNS polls (the reference client uses 1 s).
    #[arg(long, value_parser = parse_duration, default_value = defaults::HANDOFF_POLL_TEXT)]
    pub handoff_poll: std::time::Duration,
    /// The endpoint is the built-in simulator running N times faster (`simulate --speed N`):
    /// declared windows, polls and offsets are read at that speed. Without it, the speed the
    /// simulator announces in its HELLO reply is used (1 for any other server).
    #[arg(long, value_name = "N", value_parser = positive_speed, allow_negative_numbers = true)]
    pub sim_speed: Option<f64>,
    /// Colour: auto (a terminal and no NO_COLOR), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// How a line's time is shown: compact (HH:MM:SS.mmm, local), full (to the microsecond,
    /// local) or rfc3339 (UTC, as in the JSON lines).
    #[arg(long, value_enum, default_value_t = TimeFormatArg::from(defaults::TIME_FORMAT))]
    pub time_format: TimeFormatArg,
    /// Also show the lines that are only detail: each successful --traffic PING (failures are
    /// always shown; the summary has the latency figures).
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Under each maintenance notification, one more line: what each known client's parser
    /// does with that frame (acts, ignores, FAILS and how), for the clients' own auto endpoint
    /// type unless --endpoint-type names one (human output only; docs/clients.md).
    #[arg(long)]
    pub clients: bool,
    #[command(flatten)]
    pub service: super::service::ServiceArgs,
}

/// A duration above zero (an interval of zero would be a busy loop).
fn positive_duration(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?} is zero; give an interval such as 10m")),
        d => Ok(d),
    }
}

/// A size in bytes: `4096`, `64K`, `100M`, `2G` (binary units, an optional `iB`/`B`), 1K or more.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 4096, 64K, 100M, 2G)"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes < 1024 {
        return Err(format!("{s:?} is below the 1K minimum"));
    }
    Ok(bytes)
}

/// A speed factor: a finite number above zero (clap names the flag in its error and exits 2).
fn positive_speed(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        Ok(_) => Err(format!("{s:?} is not a positive number")),
        Err(_) => Err(format!("{s:?} is not a number")),
    }
}

/// `--count`: at least one notification, said in words rather than as a range of `u32`.
fn parse_count(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err(
            "the watch stops after N notifications, so N is at least 1 (leave \
                      --count out to watch without a limit)"
                .into(),
        ),
        Ok(n) => Ok(n),
        // A whole number, but more than a u32 holds: said as what it is, with the limit.
        Err(_) if text.trim().parse::<u128>().is_ok() => Err(format!(
            "{text} is too large: at most {} notifications (leave --count out to watch \
             without a limit)",
            u32::MAX
        )),
        Err(_) => Err(format!("{text:?} is not a whole number of notifications")),
    }
}

/// `--duration`: above zero, as `--count` is at least 1: a watch that stops before it starts
/// is a mistake to say, not a run to make.
fn watch_duration(text: &str) -> Result<std::time::Duration, String> {
    match parse_duration(text)? {
        d if d.is_zero() => Err("the watch stops after DURATION, so it is above 0 (leave \
                                 --duration out to watch without a limit)"
            .into()),
        d => Ok(d),
    }
}

/// `--time-format`'s values: the output's [`TimeFormat`] as clap sees it, kept here so that the
/// output module knows no clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeFormatArg {
    /// Local time to the millisecond, `HH:MM:SS.mmm`: keeps the common lines within 80 columns.
    Compact,
    /// Local time to the microsecond, `HH:MM:SS.ffffff`.
    Full,
    /// The line's own timestamp: RFC 3339, UTC, microseconds (as in the JSON lines).
    Rfc3339,
}

impl From<TimeFormatArg> for TimeFormat {
    fn from(a: TimeFormatArg) -> TimeFormat {
        match a {
            TimeFormatArg::Compact => TimeFormat::Compact,
            TimeFormatArg::Full => TimeFormat::Full,
            TimeFormatArg::Rfc3339 => TimeFormat::Rfc3339,
        }
    }
}

impl From<TimeFormat> for TimeFormatArg {
    fn from(t: TimeFormat) -> TimeFormatArg {
        match t {
            TimeFormat::Compact => TimeFormatArg::Compact,
            TimeFormat::Full => TimeFormatArg::Full,
            TimeFormat::Rfc3339 => TimeFormatArg::Rfc3339,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_heartbeat_of_zero_is_refused() {
        assert!(super::positive_duration("0s").unwrap_err().contains("zero"));
        assert_eq!(
            super::positive_duration("10m"),
            Ok(std::time::Duration::from_secs(600))
        );
    }

    #[test]
    fn sizes_take_binary_units_and_refuse_nonsense() {
        assert_eq!(super::parse_size("4096"), Ok(4096));
        assert_eq!(super::parse_size("64K"), Ok(64 << 10));
        assert_eq!(super::parse_size("100MiB"), Ok(100 << 20));
        assert_eq!(super::parse_size("2G"), Ok(2 << 30));
        assert!(super::parse_size("12").unwrap_err().contains("minimum"));
        assert!(super::parse_size("ten").unwrap_err().contains("not a size"));
        assert!(super::parse_size("99999999999G")
            .unwrap_err()
            .contains("too large"));
    }
}
