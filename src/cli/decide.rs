//! Arguments of `decide`.

use super::parse_duration;
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

fn parse_dns_server(s: &str) -> Result<SocketAddr, String> {
    crate::network::dns::parse_dns_server(s).map_err(|e| e.to_string())
}
