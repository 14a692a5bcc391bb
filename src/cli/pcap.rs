//! Arguments of `pcap`, and the settings they make, so `commands::pcap` never sees a clap type.

use super::ColorChoice;
use crate::observe::pcap::Settings;
use crate::present::output::human::Style;
use clap::Args;
use std::path::PathBuf;

/// The long description of `pcap`. The `Command::Pcap` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str = "Reads packet captures (pcap or pcapng; Ethernet, Linux cooked \
v1/v2 as from `tcpdump -i any`, loopback; IPv4 and IPv6) taken on the application's host, \
reassembles its TCP connections to Redis and shows, per connection, what the application saw: \
the handshake (HELLO 3, the opt-in and the server's answer), every push with its exact bytes and \
capture time, who closed the connection (FIN or RST, which side) and when, and the new \
connections the same host opened after a MOVING, with a verdict: moved to another address \
before the close, recycled onto the same retiring address, closed by the client, or cut by the \
close; --grade grades each client with the judge of simulate --grade. Streams are picked by \
--port, or by content (a client that starts with a RESP command). A missing segment is reported \
as a gap with its size and that direction is not read past it; a TLS stream is reported as such; \
a truncated file is read up to its last whole packet.";

#[derive(Args, Debug, Clone)]
#[command(
    long_about = LONG_ABOUT,
    after_help = "Examples:\n  tcpdump -i any -w maint.pcap port 12000\n  maintwatch pcap maint.pcap\n  maintwatch pcap --port 12000 --json maint.pcap | jq -c 'select(.type == \"pcap_verdict\")'"
)]
pub struct PcapArgs {
    /// Capture files (pcap or pcapng), read in the order given.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The server's port (repeatable); without it, streams whose client starts with a RESP
    /// command are read.
    #[arg(long, value_name = "PORT")]
    pub port: Vec<u16>,
    /// The capture is of the built-in simulator running N times faster (`simulate --speed N`):
    /// offsets after a MOVING are read at that speed.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub sim_speed: f64,
    /// One JSON object per line (the watch's schema plus pcap_* lines; docs/jsonl.md).
    #[arg(long)]
    pub json: bool,

    /// At the end, grade each client with the judge of `simulate --grade` (a table, or
    /// `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule
    /// failed, 9 when none failed but some were not judged). Clients are
    /// grouped by CLIENT SETINFO lib-name/lib-ver when the capture has it, else by host.
    #[arg(long)]
    pub grade: bool,

    /// Also write a self-contained HTML page of the capture to FILE: the timeline drawn (with
    /// --grade, classed by the grade's verdicts), the grade, the summary and the raw frames
    /// (docs/report.md).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,

    /// UDP port DNS answers come from (repeatable; default 53): what the application resolved.
    /// An answer counts for a client only where it can be tied to it: not where another client
    /// on the same host went where it pointed (docs/protocol.md, section 8).
    #[arg(long, value_name = "PORT")]
    pub dns_port: Vec<u16>,
    /// Colour: auto, always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// What `pcap` runs: the files in order, the analyzer's settings, and where its lines go.
pub struct PcapSettings {
    pub files: Vec<PathBuf>,
    pub analyzer: Settings,
    /// JSON lines, else text for people in `style`.
    pub json: bool,
    pub style: Style,
    /// `--report`: the page to write.
    pub report: Option<PathBuf>,
}

impl PcapArgs {
    /// The settings of these flags; the speed is checked here, before any file is read.
    pub fn settings(&self) -> anyhow::Result<PcapSettings> {
        crate::observe::timeline::ScenarioClock::check(self.sim_speed)
            .map_err(|e| super::usage::usage("--sim-speed", e))?;
        let analyzer = Settings {
            ports: self.port.clone(),
            speed: self.sim_speed,
            grade: self.grade,
            dns_ports: if self.dns_port.is_empty() {
                vec![53]
            } else {
                self.dns_port.clone()
            },
        };
        Ok(PcapSettings {
            files: self.files.clone(),
            analyzer,
            json: self.json,
            style: self.color.style(self.json),
            report: self.report.clone(),
        })
    }
}
