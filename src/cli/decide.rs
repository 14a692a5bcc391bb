//! Arguments of `decide`, and the settings they make: the decision's input validated here, so
//! `commands::decide` never sees a clap type.

use super::parse_duration;
use super::usage::usage;
use crate::network::dns::DnsOptions;
use crate::network::handoff::{EndpointHost, HandoffInput};
use crate::protocol::notification::HostPort;
use clap::Args;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// `decide`'s long help; repeated on the `Command` variant, whose doc comment would reset it.
pub const LONG_ABOUT: &str = "Runs the handoff decision a client makes on a MOVING, in dry-run, \
against live DNS: with a named successor it moves there; with an address endpoint (or no known \
current address) it reconnects on the clock at half the window; with a hostname it polls DNS for \
an address other than the one being retired, after a jitter of up to min(window/10, 1 s), until \
the window runs out. It prints the outcome and when it happened: stepped sideways to a sibling, \
moved after N polls, or window expired with the record still stale (a normal outcome: the client \
then reconnects after the server closes the socket). Nothing is connected to.";

#[derive(Args, Debug, Clone)]
#[command(
    long_about = LONG_ABOUT,
    after_help = "Examples:\n  maintwatch decide --endpoint db.example.net:12000 --current 10.0.0.5 --window 15s\n  maintwatch decide --endpoint db.example.net:12000 --current 10.0.0.5 --successor 10.0.0.7:12000\n  maintwatch decide --endpoint db.sim.maintwatch.test:6379 --current 127.0.0.2 --dns-server 127.0.0.1:5353 --json"
)]
pub struct DecideArgs {
    /// The endpoint as the client was configured: HOST:PORT (a name or an address).
    #[arg(long, value_name = "HOST:PORT")]
    pub endpoint: String,
    /// The address the client is connected to (the one being retired).
    #[arg(long, value_name = "IP")]
    pub current: Option<IpAddr>,
    /// The endpoint the MOVING named, if it named one.
    #[arg(long, value_name = "HOST:PORT")]
    pub successor: Option<String>,
    /// The window the MOVING declared (whole seconds; 0 means "already under way").
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub window: Duration,
    /// Interval between DNS polls (the reference client uses 1 s).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub poll: Duration,
    /// Ask this nameserver (IP[:PORT]) instead of the system's resolver.
    #[arg(long, value_name = "IP[:PORT]", value_parser = parse_dns_server)]
    pub dns_server: Option<SocketAddr>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What `decide` runs: the decision's input, the resolver to ask, and how to print the outcome.
pub struct DecideSettings {
    pub input: HandoffInput,
    pub dns: DnsOptions,
    /// The outcome as one JSON object, else as text.
    pub json: bool,
}

impl DecideArgs {
    /// The settings of these flags. A malformed flag value is a usage error (exit 2), as clap's
    /// own are.
    pub fn settings(&self) -> anyhow::Result<DecideSettings> {
        let endpoint = HostPort::parse(&self.endpoint)
            .map_err(|e| usage("--endpoint", e))?
            .ok_or_else(|| {
                usage(
                    "--endpoint",
                    format!("{:?} names no address", self.endpoint),
                )
            })?;
        let successor = match &self.successor {
            Some(s) => HostPort::parse(s).map_err(|e| usage("--successor", e))?,
            None => None,
        };
        if self.window.subsec_nanos() != 0 {
            let whole = format!(
                "MOVING declares whole seconds; {:?} is not one",
                self.window
            );
            return Err(usage("--window", whole));
        }
        let input = HandoffInput {
            endpoint: EndpointHost::parse(&endpoint.host),
            port: endpoint.port,
            current: self.current,
            successor: successor.map(|s| (s.host, s.port)),
            window_secs: i64::try_from(self.window.as_secs()).unwrap_or(i64::MAX),
            poll_interval: self.poll,
        };
        let dns = DnsOptions {
            server: self.dns_server,
            timeout: Duration::from_secs(2),
        };
        Ok(DecideSettings {
            input,
            dns,
            json: self.json,
        })
    }
}

fn parse_dns_server(s: &str) -> Result<SocketAddr, String> {
    crate::network::dns::parse_dns_server(s).map_err(|e| e.to_string())
}
