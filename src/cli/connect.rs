//! The connection flags shared by `watch` and `probe`, named as redis-cli names them.
//!
//! Operators arrive with a redis-cli command line that works; the same flags must work here
//! (`-h -p -u -a --user --pass --tls --cacert --cacertdir --cert --key --sni --insecure`, and
//! `REDISCLI_AUTH`). redis-cli's `-h` is the host, so these arguments take over `-h` from clap's
//! help flag and offer `--help` alone.
//!
//! clap stays in this file: [`ConnectArgs::config`] turns the flags into a plain
//! [`ConnectConfig`], and `ConnectOptions::from_args` into the options for one endpoint.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{Args, ValueEnum};

use crate::network::conn::{
    ConfigError, ConnectConfig, ConnectOptions, EndpointTypeChoice, RedisUrl, Secret, TlsFiles,
};

/// Our warning when a password is on the command line, where other local users can read it in
/// the process list: it names where the password was typed ([`PasswordPlace`]) and the way that
/// keeps it off the command line. (redis-cli's own warning names its flags and no alternative.)
pub fn command_line_password_warning(place: PasswordPlace) -> String {
    let typed = match place {
        PasswordPlace::Flag => "the password given with -a",
        PasswordPlace::Url => "the password in the URL",
    };
    format!(
        "{typed} is on the command line, where other users of this machine can read it (ps); \
         set REDISCLI_AUTH instead (REDISCLI_AUTH=... maintwatch ..., with no password in the \
         URL), or type it with --askpass"
    )
}

/// Where a password on the command line was typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordPlace {
    /// `-a`/`--pass`.
    Flag,
    /// The user-info of `-u` or of an endpoint URL argument.
    Url,
}

/// `--askpass`: the password read from the terminal without echo.
mod askpass {
    use crate::network::conn::Secret;
    use std::io::{BufRead, IsTerminal, Write};
    use std::sync::OnceLock;

    /// Reads once per process: `watch` and `probe` may build their settings more than once.
    pub fn read_once() -> Result<Secret, String> {
        static READ: OnceLock<Result<Secret, String>> = OnceLock::new();
        READ.get_or_init(read).clone()
    }

    fn read() -> Result<Secret, String> {
        let stdin = std::io::stdin();
        let mut line = String::new();
        let result = if stdin.is_terminal() {
            let _ = write!(std::io::stderr(), "Please input password: ");
            let _ = std::io::stderr().flush();
            let r = without_echo(|| stdin.lock().read_line(&mut line));
            let _ = writeln!(std::io::stderr());
            r
        } else {
            stdin.lock().read_line(&mut line)
        };
        match result {
            Err(e) => Err(format!("--askpass: cannot read the password: {e}")),
            Ok(_) => {
                let password = line.trim_end_matches(['\r', '\n']);
                if password.is_empty() {
                    Err("--askpass: no password was entered".into())
                } else {
                    Ok(Secret::new(password))
                }
            }
        }
    }

    /// Runs `f` with the terminal's echo off, restoring it after.
    fn without_echo<T>(f: impl FnOnce() -> T) -> T {
        let fd = libc::STDIN_FILENO;
        // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor and reports
        // failure (then nothing is changed and `f` runs with echo as it is).
        let mut term: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut term) } != 0 {
            return f();
        }
        let saved = term;
        term.c_lflag &= !libc::ECHO;
        // SAFETY: `term` came from tcgetattr on the same descriptor, with one flag cleared.
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &term) };
        let out = f();
        // SAFETY: restores exactly what tcgetattr returned.
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &saved) };
        out
    }
}

/// `--endpoint-type`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointTypeArg {
    /// Ask MOVING to name an internal IP address.
    InternalIp,
    /// Ask MOVING to name an internal hostname.
    InternalFqdn,
    /// Ask MOVING to name an external IP address.
    ExternalIp,
    /// Ask MOVING to name an external hostname.
    ExternalFqdn,
    /// Ask MOVING to name no endpoint.
    None,
    /// Private/loopback/link-local address: internal, else external; TLS: fqdn, else ip.
    Auto,
    /// Send a bare `ON`: the server picks.
    ServerDefault,
}

impl From<EndpointTypeArg> for EndpointTypeChoice {
    fn from(a: EndpointTypeArg) -> Self {
        match a {
            EndpointTypeArg::InternalIp => EndpointTypeChoice::InternalIp,
            EndpointTypeArg::InternalFqdn => EndpointTypeChoice::InternalFqdn,
            EndpointTypeArg::ExternalIp => EndpointTypeChoice::ExternalIp,
            EndpointTypeArg::ExternalFqdn => EndpointTypeChoice::ExternalFqdn,
            EndpointTypeArg::None => EndpointTypeChoice::None,
            EndpointTypeArg::Auto => EndpointTypeChoice::Auto,
            EndpointTypeArg::ServerDefault => EndpointTypeChoice::ServerDefault,
        }
    }
}

impl EndpointTypeArg {
    /// The type a client asked for, for the client-knowledge predictions: `None` for `auto`
    /// (each client's own) and `server-default` (no client sends a bare ON by default).
    pub fn asked(self) -> Option<crate::network::conn::EndpointType> {
        use crate::network::conn::EndpointType as T;
        match self {
            EndpointTypeArg::InternalIp => Some(T::InternalIp),
            EndpointTypeArg::InternalFqdn => Some(T::InternalFqdn),
            EndpointTypeArg::ExternalIp => Some(T::ExternalIp),
            EndpointTypeArg::ExternalFqdn => Some(T::ExternalFqdn),
            EndpointTypeArg::None => Some(T::None),
            EndpointTypeArg::Auto | EndpointTypeArg::ServerDefault => None,
        }
    }
}

/// Parses an endpoint URL for clap. Its error is written here rather than by clap, because
/// clap's own message quotes the rejected value, and this value may hold a password.
#[derive(Clone, Copy, Debug, Default)]
pub struct UrlParser;

impl TypedValueParser for UrlParser {
    type Value = RedisUrl;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<RedisUrl, clap::Error> {
        let name = arg
            .map(|a| a.to_string())
            .unwrap_or_else(|| "URL".to_string());
        let fail = |msg: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value for {name}: {msg}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| fail("the endpoint is not valid UTF-8".into()))?;
        RedisUrl::parse(text).map_err(|e| fail(e.to_string()))
    }
}

/// Seconds, decimals allowed (`0.5`), or a duration with a unit (`500ms`, `2s`).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = super::parse_duration(s)?;
    if d.is_zero() {
        return Err("the timeout must be more than 0".into());
    }
    Ok(d)
}

fn parse_dns_server(s: &str) -> Result<SocketAddr, String> {
    crate::network::dns::parse_dns_server(s).map_err(|e| e.to_string())
}

/// What to say when `-h`/`--host` came without a value: redis-cli's users know `-h` as the host,
/// others type it for help, and clap's "a value is required" helps neither. `None` for any other
/// error.
pub fn host_without_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg,
        _ => return None,
    };
    let given = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v)) => v.as_str(),
        _ => "",
    };
    (arg.starts_with("--host") && given.is_empty()).then(|| {
        "-h (--host) is the server's host, as in redis-cli, and needs one: -h 10.0.0.5; \
         for help, use --help"
            .to_string()
    })
}

/// Connection flags, as redis-cli names them. Flattened into `watch` and `probe`.
#[derive(Args, Debug, Clone)]
#[command(
    disable_help_flag = true,
    next_help_heading = "Connection (as redis-cli)"
)]
pub struct ConnectArgs {
    /// Server hostname or IP address [default: 127.0.0.1].
    #[arg(short = 'h', long = "host", value_name = "HOST")]
    pub host: Option<String>,

    /// Server port [default: 6379].
    #[arg(short = 'p', long = "port", value_name = "PORT",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,

    /// Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info
    /// without ':' is the password, as in redis-cli.
    #[arg(short = 'u', long = "uri", value_name = "URI", value_parser = UrlParser,
          conflicts_with_all = ["host", "port"])]
    pub uri: Option<RedisUrl>,

    /// Password (a URL's password wins). Prefer the REDISCLI_AUTH environment variable: a
    /// password on the command line is visible to other local users.
    #[arg(
        short = 'a',
        long = "pass",
        value_name = "PASSWORD",
        env = "REDISCLI_AUTH",
        hide_env_values = true
    )]
    pub password: Option<Secret>,

    /// Read the password from the terminal without echo (as redis-cli); when standard input is
    /// not a terminal, its first line. Wins over -a and REDISCLI_AUTH.
    #[arg(long)]
    pub askpass: bool,

    /// User name for ACL authentication (with a password).
    #[arg(long = "user", value_name = "USERNAME")]
    pub user: Option<String>,

    /// Database number to SELECT (a URL's /db wins).
    #[arg(short = 'n', long = "db", value_name = "DB")]
    pub db: Option<u32>,

    /// Connect with TLS (implied by rediss://).
    #[arg(long)]
    pub tls: bool,

    /// CA certificate bundle (PEM) to verify the server with, instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// Directory of trusted CA certificates (PEM), instead of the system's.
    #[arg(long, value_name = "DIR")]
    pub cacertdir: Option<PathBuf>,

    /// Client certificate (PEM) for mutual TLS; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,

    /// Private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,

    /// TLS server name to send and verify, instead of the host.
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,

    /// Do not verify the server's certificate or name (prints a warning).
    #[arg(long)]
    pub insecure: bool,

    /// What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...).
    #[arg(long, value_enum, value_name = "TYPE", default_value_t = EndpointTypeArg::Auto)]
    pub endpoint_type: EndpointTypeArg,

    /// One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the
    /// opt-in) together, per address; resolving the host gets the same again (seconds, or
    /// 500ms / 2s).
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_timeout)]
    pub connect_timeout: Duration,

    /// Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the
    /// system's; the DNS watch uses it too.
    #[arg(long, value_name = "IP[:PORT]", value_parser = parse_dns_server)]
    pub dns_server: Option<SocketAddr>,

    /// Print help (-h is the host, as in redis-cli).
    #[arg(long, action = clap::ArgAction::HelpLong)]
    pub help: Option<bool>,
}

/// The endpoints a command line names and the flags they are reached with, as plain values:
/// what `endpoints::setup` takes, and the warning to show for a password on the command line.
pub struct EndpointSettings<'a> {
    pub request: crate::network::conn::endpoints::Request<'a>,
    pub config: ConnectConfig,
    pub password_warning: Option<String>,
}

impl ConnectArgs {
    /// The flags as plain settings, without the endpoint. With `--askpass` the password is read
    /// here (once per process); a failure to read it is reported when an endpoint's options are
    /// built.
    pub fn config(&self) -> ConnectConfig {
        let (password, password_error) = if self.askpass {
            match askpass::read_once() {
                Ok(p) => (Some(p), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (self.password.clone(), None)
        };
        ConnectConfig {
            user: self.user.clone(),
            password,
            password_error,
            db: self.db,
            tls: self.tls,
            tls_files: TlsFiles {
                cacert: self.cacert.clone(),
                cacertdir: self.cacertdir.clone(),
                cert: self.cert.clone(),
                key: self.key.clone(),
                insecure: self.insecure,
            },
            sni: self.sni.clone(),
            endpoint_type: self.endpoint_type.into(),
            connect_timeout: self.connect_timeout,
            dns_server: self.dns_server,
            ..ConnectConfig::default()
        }
    }

    /// Our warning when a password is on the command line, where other local users can read
    /// it in the process list: `-a`/`--pass`, or a password in `-u` or in an endpoint URL given
    /// as an argument (`urls`); `None` when there is none. REDISCLI_AUTH, `--askpass` and
    /// `--from` lists are not on the command line. The command says it (once) when it shows its
    /// other warnings.
    fn command_line_password(&self, urls: &[RedisUrl]) -> Option<String> {
        let from_flag = !self.askpass
            && self.password.as_ref().is_some_and(|p| {
                // clap prefers the flag over the variable: a value that differs from
                // REDISCLI_AUTH came from -a (the same text typed twice is indistinguishable,
                // and then the variable is what matters).
                std::env::var("REDISCLI_AUTH").ok().as_deref() != Some(p.expose())
            });
        let in_url = self.uri.iter().chain(urls).any(|u| u.password.is_some());
        let place = if in_url {
            PasswordPlace::Url
        } else {
            PasswordPlace::Flag
        };
        (from_flag || in_url).then(|| command_line_password_warning(place))
    }

    /// The endpoints these flags and `urls` name, with the flags' settings (`--askpass` is read
    /// here) and the password warning.
    pub fn endpoint_settings<'a>(
        &self,
        urls: &[RedisUrl],
        from: Option<&'a str>,
        bad_lines: crate::network::conn::endpoints::BadLines,
    ) -> EndpointSettings<'a> {
        EndpointSettings {
            request: self.endpoint_request(urls, from, bad_lines),
            config: self.config(),
            password_warning: self.command_line_password(urls),
        }
    }

    /// The endpoints these flags and `urls` (a command's URL arguments) name, for
    /// [`crate::network::conn::endpoints::setup`]: the URLs then `-u`, else `-h`/`-p`.
    pub fn endpoint_request<'a>(
        &self,
        urls: &[RedisUrl],
        from: Option<&'a str>,
        bad_lines: crate::network::conn::endpoints::BadLines,
    ) -> crate::network::conn::endpoints::Request<'a> {
        crate::network::conn::endpoints::Request {
            urls: urls.iter().chain(&self.uri).cloned().collect(),
            flags_endpoint: self.endpoint(),
            host_or_port: self.has_host_or_port(),
            from,
            bad_lines,
        }
    }

    /// Whether `-h` or `-p` was given (they cannot be combined with endpoint URLs).
    pub fn has_host_or_port(&self) -> bool {
        self.host.is_some() || self.port.is_some()
    }

    /// The endpoint the flags name: `-u`, else `-h`/`-p` (127.0.0.1:6379 by default, as
    /// redis-cli).
    pub fn endpoint(&self) -> Result<RedisUrl, ConfigError> {
        if let Some(url) = &self.uri {
            return Ok(url.clone());
        }
        let host = self.host.clone().unwrap_or_else(|| "127.0.0.1".into());
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(str::to_string)
            .unwrap_or(host);
        if host.is_empty() {
            return Err(ConfigError::Invalid("-h: the host is empty".into()));
        }
        let max = crate::network::conn::url::MAX_HOST;
        if host.len() > max {
            return Err(ConfigError::Invalid(format!(
                "-h: the host is {} bytes long; a host name has at most {max}",
                host.len()
            )));
        }
        Ok(RedisUrl {
            tls: false,
            host,
            port: self.port,
            user: None,
            password: None,
            db: None,
        })
    }
}

impl ConnectOptions {
    /// The options for the endpoint the flags name (`-u`, or `-h`/`-p`).
    /// TLS flags with a plain endpoint are refused.
    pub fn from_args(args: &ConnectArgs) -> Result<ConnectOptions, ConfigError> {
        let config = args.config();
        let options = config.options_for(&args.endpoint()?)?;
        config.check_tls_flags_apply(std::slice::from_ref(&options))?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        connect: ConnectArgs,
    }

    fn parse(args: &[&str]) -> Result<T, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
    }

    #[test]
    fn redis_cli_flags_parse() {
        let t = parse(&[
            "-h",
            "10.0.0.5",
            "-p",
            "12000",
            "-a",
            "pw",
            "--user",
            "alice",
            "-n",
            "3",
            "--tls",
            "--sni",
            "db.example",
            "--insecure",
            "--endpoint-type",
            "external-fqdn",
            "--connect-timeout",
            "1.5",
            "--dns-server",
            "127.0.0.1:5353",
        ])
        .unwrap();
        let c = &t.connect;
        assert_eq!(c.host.as_deref(), Some("10.0.0.5"));
        assert_eq!(c.port, Some(12000));
        assert_eq!(c.password.as_ref().map(Secret::expose), Some("pw"));
        assert_eq!(c.endpoint_type, EndpointTypeArg::ExternalFqdn);
        assert_eq!(c.connect_timeout, Duration::from_millis(1500));
        assert_eq!(c.dns_server, Some("127.0.0.1:5353".parse().unwrap()));
        let opts = ConnectOptions::from_args(c).unwrap();
        assert!(opts.tls() && opts.insecure());
        assert_eq!(opts.display_endpoint(), "rediss://alice@10.0.0.5:12000/3");
        assert!(!format!("{t:?}").contains("pw\""), "{t:?}");
    }

    #[test]
    fn defaults_are_redis_clis() {
        let t = parse(&[]).unwrap();
        let opts = ConnectOptions::from_args(&t.connect).unwrap();
        assert_eq!(opts.display_endpoint(), "redis://127.0.0.1:6379");
        assert_eq!(opts.endpoint_type(), EndpointTypeChoice::Auto);
    }

    #[test]
    fn a_bad_uri_is_a_usage_error_that_hides_the_password() {
        let e = parse(&["-u", "redis://u:hunter2@h:badport"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.contains("badport"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn uri_conflicts_with_host_and_cert_needs_key() {
        assert!(parse(&["-u", "redis://h", "-h", "x"]).is_err());
        assert!(parse(&["--cert", "c.pem"]).is_err());
    }
}
