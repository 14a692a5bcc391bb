//! The settings of a connection, validated: what `watch` and `probe` connect with.
//!
//! Kept apart from the socket code so the rules about *what* to connect with (URL over flags,
//! TLS built once per run, the auto endpoint type, secrets that never print) read on their own.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use tokio_rustls::rustls::{pki_types::ServerName, ClientConfig};

use super::{tls, url, RedisUrl, TlsFiles, UrlError, CLIENT_NAME, DEFAULT_PORT};
use crate::network::dns::DnsOptions;
pub use crate::shared::secret::Secret;

/// What to ask for as MOVING's endpoint form (`--endpoint-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointTypeChoice {
    InternalIp,
    InternalFqdn,
    ExternalIp,
    ExternalFqdn,
    /// Ask for no endpoint in MOVING at all.
    None,
    /// Decide from the connected address and TLS, as the shipped clients do.
    Auto,
    /// Send a bare `ON` and let the server pick.
    ServerDefault,
}

/// A `moving-endpoint-type` value as sent on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EndpointType {
    #[serde(rename = "internal-ip")]
    InternalIp,
    #[serde(rename = "internal-fqdn")]
    InternalFqdn,
    #[serde(rename = "external-ip")]
    ExternalIp,
    #[serde(rename = "external-fqdn")]
    ExternalFqdn,
    #[serde(rename = "none")]
    None,
}

impl EndpointType {
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointType::InternalIp => "internal-ip",
            EndpointType::InternalFqdn => "internal-fqdn",
            EndpointType::ExternalIp => "external-ip",
            EndpointType::ExternalFqdn => "external-fqdn",
            EndpointType::None => "none",
        }
    }
}

impl fmt::Display for EndpointType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EndpointTypeChoice {
    /// The value to send for a connection to `peer`; `None` means a bare `ON`.
    ///
    /// `Auto` follows the shipped clients (docs/protocol.md section 6): a private, loopback or
    /// link-local connected address means `internal-*`, anything else `external-*`; TLS means
    /// `*-fqdn` (a certificate names a host, an address would fail verification), plain TCP `*-ip`.
    pub fn resolve(self, peer: IpAddr, tls: bool) -> Option<EndpointType> {
        Some(match self {
            EndpointTypeChoice::ServerDefault => return None,
            EndpointTypeChoice::InternalIp => EndpointType::InternalIp,
            EndpointTypeChoice::InternalFqdn => EndpointType::InternalFqdn,
            EndpointTypeChoice::ExternalIp => EndpointType::ExternalIp,
            EndpointTypeChoice::ExternalFqdn => EndpointType::ExternalFqdn,
            EndpointTypeChoice::None => EndpointType::None,
            EndpointTypeChoice::Auto => match (is_internal(peer), tls) {
                (true, false) => EndpointType::InternalIp,
                (true, true) => EndpointType::InternalFqdn,
                (false, false) => EndpointType::ExternalIp,
                (false, true) => EndpointType::ExternalFqdn,
            },
        })
    }
}

/// Private (RFC 1918, IPv6 ULA), loopback or link-local: Go's `IsPrivate || IsLoopback ||
/// IsLinkLocalUnicast`, which go-redis uses for its auto endpoint type.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_private() || v4.is_loopback() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Why the settings could not be turned into something to connect with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("{}: {reason}", path.display())]
    File {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("TLS: {reason}")]
    Tls { reason: String },
    #[error("{0}")]
    Invalid(String),
    /// TLS flags for a run whose endpoints are all plain `redis://`: they would be ignored, and
    /// a forgotten `s` would send the password in plaintext.
    #[error("{flags} given, but {endpoint} is a plain redis:// endpoint: use rediss:// or --tls")]
    TlsFlagsWithoutTls { flags: String, endpoint: String },
}

/// The connection settings of one run, without the endpoint: the flags. One of these serves
/// every endpoint of a probe, so the TLS configuration (files, system roots) is built once, the
/// first time a TLS endpoint asks for it.
#[derive(Debug, Clone)]
pub struct ConnectConfig {
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// The password could not be read (`--askpass`): every endpoint's options fail with this.
    pub password_error: Option<String>,
    /// Database to `SELECT`; a URL's `/db` wins.
    pub db: Option<u32>,
    /// `--tls`: TLS even for `redis://` URLs and `-h`/`-p`.
    pub tls: bool,
    pub tls_files: TlsFiles,
    /// `--sni`: the TLS server name sent and verified instead of the host.
    pub sni: Option<String>,
    pub endpoint_type: EndpointTypeChoice,
    /// One deadline for TCP connect, TLS and the handshake together (per address); resolving
    /// has the same bound on its own.
    pub connect_timeout: Duration,
    /// `--dns-server`: resolve through this nameserver instead of the system's.
    pub dns_server: Option<SocketAddr>,
    /// `SETNAME` in `HELLO`; `None` sends none.
    pub client_name: Option<String>,
    pub(crate) tls_config: Arc<OnceLock<Result<Arc<ClientConfig>, ConfigError>>>,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        ConnectConfig {
            user: None,
            password: None,
            password_error: None,
            db: None,
            tls: false,
            tls_files: TlsFiles::default(),
            sni: None,
            endpoint_type: EndpointTypeChoice::Auto,
            connect_timeout: Duration::from_secs(5),
            dns_server: None,
            client_name: Some(CLIENT_NAME.to_string()),
            tls_config: Arc::default(),
        }
    }
}

impl ConnectConfig {
    /// The TLS flags given, by name (`--cacert`, `--insecure` ...).
    pub fn tls_flags(&self) -> Vec<&'static str> {
        let f = &self.tls_files;
        [
            ("--cacert", f.cacert.is_some()),
            ("--cacertdir", f.cacertdir.is_some()),
            ("--cert", f.cert.is_some()),
            ("--key", f.key.is_some()),
            ("--sni", self.sni.is_some()),
            ("--insecure", f.insecure),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// Refuses TLS flags when no endpoint of the run uses TLS (in a mixed list they apply to the
    /// TLS endpoints).
    pub fn check_tls_flags_apply(&self, options: &[ConnectOptions]) -> Result<(), ConfigError> {
        let flags = self.tls_flags();
        match options.first() {
            Some(first) if !flags.is_empty() && options.iter().all(|o| !o.tls()) => {
                Err(ConfigError::TlsFlagsWithoutTls {
                    flags: flags.join(", "),
                    endpoint: first.display_endpoint(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The options for one endpoint. What the URL says wins over the flags (it names this
    /// endpoint); the flags fill in what it leaves out. `rediss://` or `--tls` means TLS.
    pub fn options_for(&self, url: &RedisUrl) -> Result<ConnectOptions, ConfigError> {
        if let Some(e) = &self.password_error {
            return Err(ConfigError::Invalid(e.clone()));
        }
        let tls = if url.tls || self.tls {
            let config = self
                .tls_config
                .get_or_init(|| tls::client_config(&self.tls_files))
                .clone()?;
            Some(TlsOptions {
                config,
                server_name: tls::server_name(&url.host, self.sni.as_deref())?,
                insecure: self.tls_files.insecure,
            })
        } else {
            None
        };
        if self.connect_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "the connect timeout must be more than 0".into(),
            ));
        }
        let (user, password, show_user) = self.credentials(url);
        Ok(ConnectOptions {
            host: url.host.clone(),
            port: url.port.unwrap_or(DEFAULT_PORT),
            user,
            password,
            show_user,
            db: url.db.or(self.db).unwrap_or(0),
            tls,
            endpoint_type: self.endpoint_type,
            connect_timeout: self.connect_timeout,
            dns_server: self.dns_server,
            client_name: self.client_name.clone(),
        })
    }
}

impl ConnectConfig {
    /// User, password, and whether the user may be displayed. redis-cli reads a lone user-info
    /// (`rediss://default@db`) as the password; but when -a/--pass/REDISCLI_AUTH gives the
    /// password and no --user names the user, the user-info can only be meant as the user name,
    /// and reading it as a password fails with WRONGPASS. Taken as the user then, it is not
    /// displayed, in case it was a password after all.
    fn credentials(&self, url: &RedisUrl) -> (Option<String>, Option<Secret>, bool) {
        match (&url.user, &url.password, &self.user, &self.password) {
            (None, Some(lone), None, Some(flag)) => {
                (Some(lone.expose().to_string()), Some(flag.clone()), false)
            }
            _ => (
                url.user.clone().or_else(|| self.user.clone()),
                url.password.clone().or_else(|| self.password.clone()),
                true,
            ),
        }
    }
}

/// TLS settings of one endpoint.
#[derive(Clone)]
pub struct TlsOptions {
    pub config: Arc<ClientConfig>,
    /// Sent as SNI (unless an IP address) and verified against the certificate.
    pub server_name: ServerName<'static>,
    pub insecure: bool,
}

impl fmt::Debug for TlsOptions {
    // ClientConfig's Debug is long and includes key material handles; the name is what matters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

/// Everything needed to connect to one endpoint, validated. Built by
/// [`ConnectConfig::options_for`] (or `ConnectOptions::from_args` in `cli::connect`).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: Option<String>,
    pub(super) password: Option<Secret>,
    /// False when the user name came from a URL's lone user-info (see `credentials`).
    pub(super) show_user: bool,
    pub(super) db: u32,
    pub(super) tls: Option<TlsOptions>,
    pub(super) endpoint_type: EndpointTypeChoice,
    pub(super) connect_timeout: Duration,
    pub(super) dns_server: Option<SocketAddr>,
    pub(super) client_name: Option<String>,
}

impl ConnectOptions {
    /// Hostname or IP literal as given (IPv6 without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// The password itself, for the one use that needs the text outside a handshake: keeping it
    /// out of what `--exec` hooks inherit.
    pub(crate) fn password_text(&self) -> Option<&str> {
        self.password.as_ref().map(Secret::expose)
    }

    pub fn db(&self) -> u32 {
        self.db
    }

    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    pub fn tls_options(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// TLS with certificate verification off.
    pub fn insecure(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.insecure)
    }

    pub fn endpoint_type(&self) -> EndpointTypeChoice {
        self.endpoint_type
    }

    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    pub fn dns_server(&self) -> Option<SocketAddr> {
        self.dns_server
    }

    /// The host is an IP literal: connecting needs no resolver.
    pub fn host_is_ip(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
    }

    /// The resolver settings for connecting (and for watching the same name).
    pub fn dns_options(&self) -> DnsOptions {
        DnsOptions {
            server: self.dns_server,
            timeout: self.connect_timeout,
        }
    }

    /// The endpoint for people and logs, never with a password:
    /// `rediss://alice@cache.example:6380/2`.
    pub fn display_endpoint(&self) -> String {
        url::display_endpoint(
            self.tls.is_some(),
            self.user.as_deref().filter(|_| self.show_user),
            &self.host,
            self.port,
            self.db,
        )
    }

    /// The same endpoint with another `moving-endpoint-type` choice (`doctor` tries each).
    pub fn with_endpoint_type(&self, choice: EndpointTypeChoice) -> ConnectOptions {
        ConnectOptions {
            endpoint_type: choice,
            ..self.clone()
        }
    }

    /// The same credentials, TLS settings and handshake for another node of the same database
    /// (a cluster node discovered through CLUSTER SHARDS).
    pub fn for_node(&self, host: &str, port: u16) -> ConnectOptions {
        ConnectOptions {
            host: host.to_string(),
            port,
            ..self.clone()
        }
    }

    /// Appended to an authentication failure: where the password came from when that is the
    /// likely mistake, or how to give one. Never the password.
    pub fn password_hint(&self) -> String {
        match &self.password {
            Some(p) if p.is_lone_userinfo() => " (password from the URL: a user-info without ':' \
                 is the password, as in redis-cli; for a user name write user:password@ or use \
                 --user)"
                .into(),
            Some(_) => String::new(),
            None => " (no password was given: use -a, --askpass or REDISCLI_AUTH)".into(),
        }
    }

    /// Notes the caller should show before connecting: today, that a URL's lone user-info is
    /// used as the password (`redis://secret@host`, redis-cli's rule), which people who meant a
    /// user name do not expect. Never the password itself.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.password.as_ref().is_some_and(Secret::is_lone_userinfo) {
            out.push(format!(
                "{}: password from the URL: its user-info has no ':', so it is used as the \
                 password (redis-cli's rule); for a user name write user:password@ or use --user",
                self.display_endpoint()
            ));
        }
        out
    }

    /// Warnings the caller should show before connecting (this module prints nothing).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.insecure() {
            out.push(format!(
                "--insecure: the certificate of {} is NOT verified; anyone on the path can read \
                 and change this session",
                self.display_endpoint()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `probe rediss://default@db...` with REDISCLI_AUTH set sent "default" as the password.
    #[test]
    fn a_lone_user_info_is_the_user_when_the_password_comes_from_the_flags() {
        let with_password = ConnectConfig {
            password: Some(Secret::new("from-env")),
            ..ConnectConfig::default()
        };
        let url = RedisUrl::parse("redis://default@db.example.net:12000").unwrap();
        let o = with_password.options_for(&url).unwrap();
        assert_eq!(o.user(), Some("default"));
        assert_eq!(o.password.as_ref().map(Secret::expose), Some("from-env"));
        assert_eq!(o.display_endpoint(), "redis://db.example.net:12000");

        // Without a password elsewhere it stays redis-cli's reading: the password.
        let o = ConnectConfig::default().options_for(&url).unwrap();
        assert_eq!(
            (o.user(), o.password.as_ref().map(Secret::expose)),
            (None, Some("default"))
        );
        // With --user given, the user-info can only be the password: the URL's wins.
        let named = ConnectConfig {
            user: Some("app".into()),
            ..with_password
        };
        let o = named.options_for(&url).unwrap();
        assert_eq!(
            (o.user(), o.password.as_ref().map(Secret::expose)),
            (Some("app"), Some("default"))
        );
    }
}
