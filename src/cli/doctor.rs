//! Arguments of `doctor`.

use clap::Args;

use super::connect::{ConnectArgs, UrlParser};
use crate::network::conn::RedisUrl;

/// The long description of `doctor`. The `Command::Doctor` variant repeats it.
pub const LONG_ABOUT: &str = "Answers \"why am I not getting maintenance notifications?\" for one \
endpoint, on one screen. The server: is RESP3 (HELLO 3) available, is the opt-in accepted or \
refused (with the server's text), and each moving-endpoint-type (internal-ip, internal-fqdn, \
external-ip, external-fqdn, none) tried on a connection of its own. Each known client (redis-py, \
node-redis, go-redis, Lettuce, Jedis, StackExchange.Redis, at the versions named): would it opt \
in by default for this URL, which endpoint type its auto would send here, and would the server \
accept that. The cost of a refused opt-in: the INFO errorstats counters read before and after one \
handshake (a server-wide counter: other clients' errors count too). Caveats follow, only where \
the clients' sources or the vendor's documentation say so (docs/clients.md). The exit code is \
probe's for the opt-in as the flags ask for it.";

/// The `after_help` of `doctor`: exit codes (those of the server's answer are probe's), then
/// examples.
pub const AFTER_HELP: &str = concat!(
    "\
Exit codes (the opt-in as --endpoint-type asks for it, auto by default):
  0  accepted
",
    super::probe::server_exit_codes!(),
    "  2  usage error (bad flag or endpoint)
  1  other error

Examples:
  maintwatch doctor redis://10.0.0.5:12000
  REDISCLI_AUTH=\"$PASS\" maintwatch doctor rediss://default@db.example.net:12000 --cacert ca.pem
  maintwatch doctor --json redis://10.0.0.5:12000 | jq .clients"
);

/// Arguments of `maintwatch doctor`.
#[derive(Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct DoctorArgs {
    /// The endpoint: redis://[[user]:password@]host[:port][/db], rediss://..., or host[:port]
    /// (or -u / -h / -p).
    #[arg(value_name = "URL", value_parser = UrlParser)]
    pub url: Option<RedisUrl>,

    /// One JSON object (fields: type, v, endpoint, address, tls, exit_code, server, clients,
    /// errorstats, caveats).
    #[arg(long)]
    pub json: bool,
    /// Also check Azure Cache for Redis's maintenance channel: may this user SUBSCRIBE to
    /// AzureRedisEvents, and which clients listen to it. The default on an Azure Cache host name.
    #[arg(long)]
    pub azure_events: bool,
    /// `--clients all`: also each client's version history (the releases that changed what it
    /// does, and what the client tier measured), which the screen leaves out to fit; `--json`
    /// always has it.
    #[arg(long, value_name = "all", value_parser = ["all"])]
    pub clients: Option<String>,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_table_matches_the_exit_constants() {
        super::super::probe::check_exit_table(super::AFTER_HELP);
    }
}
