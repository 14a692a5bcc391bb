//! Arguments of `doctor`.

use clap::Args;

use super::connect::{ConnectArgs, EndpointSettings, UrlParser};
use super::usage::usage;
use crate::network::conn::endpoints::BadLines;
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

/// What `doctor` runs: the endpoint named and the flags it is diagnosed with, plain values, so
/// `commands::doctor` never sees a clap type.
pub struct DoctorSettings<'a> {
    /// The one endpoint.
    pub endpoints: EndpointSettings<'a>,
    /// One JSON object, else the screen.
    pub json: bool,
    /// Check Azure's maintenance channel even on a host name that is not Azure Cache's.
    pub azure_events: bool,
    /// `--clients all`: each client's version history on the screen too.
    pub all_versions: bool,
}

impl DoctorArgs {
    /// The settings of these flags: the endpoint given once (a URL, or -u, or -h/-p), else a
    /// usage error. With `--askpass` the password is read here.
    pub fn settings(&self) -> anyhow::Result<DoctorSettings<'_>> {
        if self.url.is_some() && (self.connect.has_host_or_port() || self.connect.uri.is_some()) {
            let flag = if self.connect.uri.is_some() {
                "-u"
            } else {
                "-h/-p"
            };
            return Err(usage(
                flag,
                "give the endpoint once: a URL, or -u, or -h/-p",
            ));
        }
        let urls = self.url.as_slice();
        Ok(DoctorSettings {
            endpoints: self.connect.endpoint_settings(urls, None, BadLines::Refuse),
            json: self.json,
            azure_events: self.azure_events,
            all_versions: self.clients.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_table_matches_the_exit_constants() {
        super::super::probe::check_exit_table(super::AFTER_HELP);
    }

    use super::*;
    use crate::commands::doctor::run_with;
    use crate::exit;
    use clap::Parser;
    use std::net::SocketAddr;

    /// A HELLO whose `server` holds CR, LF, ESC and a bidi override, and a refusal with ESC and
    /// a C1 control: everything a hostile server could put on the screen.
    const HOSTILE_HELLO: &[u8] =
        b"%1\r\n$6\r\nserver\r\n$27\r\nredis\r\n00:00:00 FAKE\x1b[2J\xe2\x80\xae\r\n";
    const HOSTILE_REFUSAL: &[u8] = b"-ERR bad\x1b[31mRED\xc2\x9b\r\n";

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        doctor: DoctorArgs,
    }

    /// Answers the first command of each connection (HELLO) with `HOSTILE_HELLO`, every other
    /// command (the opt-in, INFO) with `HOSTILE_REFUSAL`.
    async fn hostile() -> SocketAddr {
        crate::network::conn::test_server::serve(vec![HOSTILE_HELLO], HOSTILE_REFUSAL).await
    }

    #[tokio::test]
    async fn a_hostile_server_cannot_reach_the_terminal() {
        let addr = hostile().await;
        let args = T::try_parse_from(["doctor", &format!("redis://{addr}")])
            .unwrap()
            .doctor;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(args.settings().unwrap(), &mut out, &mut err)
            .await
            .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, exit::REFUSED, "{out}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(out.contains("refused: ERR bad\\x1b[31mRED\\u{9b}"), "{out}");
        assert!(
            out.contains("errorstats: not measured: ERR bad\\x1b[31mRED"),
            "{out}"
        );
        assert!(
            out.contains("redis\\r\\n00:00:00 FAKE\\x1b[2J\\u{202e}"),
            "{out}"
        );
    }
}
