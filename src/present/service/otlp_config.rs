//! The settings of `--otlp`, read the way every OpenTelemetry exporter reads them: from the
//! `OTEL_*` environment variables of the exporter specification.
//!
//! Operators configure a host's exporters once, in an environment file, and expect each program
//! to honour it; hosted collectors need an https endpoint and an authentication header, which
//! those variables carry. `--otlp env` takes the endpoint from the environment too; `--otlp URL`
//! names it on the command line, and the other variables (headers, certificate, timeout,
//! compression, resource) apply to both, as the specification has code-given endpoints override
//! only the endpoint.
//!
//! Header values are credentials: they are kept in [`Headers`], whose `Debug` shows the keys
//! only, and every error about one names the variable and the key, never the value.

use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::{pki_types::ServerName, ClientConfig};

pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const METRICS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT";
pub const HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
pub const METRICS_HEADERS: &str = "OTEL_EXPORTER_OTLP_METRICS_HEADERS";
const CERTIFICATE: &str = "OTEL_EXPORTER_OTLP_CERTIFICATE";
const CLIENT_CERTIFICATE: &str = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE";
const CLIENT_KEY: &str = "OTEL_EXPORTER_OTLP_CLIENT_KEY";
const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
const COMPRESSION: &str = "OTEL_EXPORTER_OTLP_COMPRESSION";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
const RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";

/// The specification's default: one export gives up after 10 s.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The specification's default endpoint, for `--otlp env` with no endpoint variable set.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/metrics";
/// Headers the exporter writes itself; one given by the environment would clash.
const RESERVED: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "connection",
    "transfer-encoding",
];

/// How the process's environment is read (a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment; an empty value counts as unset, as the specification says.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where `--otlp` sends: an `http://` or `https://` URL, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpUrl {
    pub https: bool,
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl OtlpUrl {
    /// `--otlp URL`: `http[s]://HOST[:PORT][/PATH]`; the port defaults to 4318 for http (the
    /// OTLP/HTTP port a local collector listens on) and 443 for https, an empty path to
    /// `/v1/metrics`. Credentials in the URL are refused.
    pub fn parse(url: &str) -> anyhow::Result<OtlpUrl> {
        OtlpUrl::parse_as(url, "--otlp", Some(4318), Some("/v1/metrics"))
    }

    /// A URL from `source` (a flag or a variable, for the errors). `http_port`: the port of an
    /// http URL without one (else 80); `empty_path`: the path of one without a path (else `/`).
    fn parse_as(
        url: &str,
        source: &str,
        http_port: Option<u16>,
        empty_path: Option<&str>,
    ) -> anyhow::Result<OtlpUrl> {
        let shown = || crate::shared::escape::sanitize(url);
        let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else {
            anyhow::bail!("{source} {}: expected an http:// or https:// URL", shown());
        };
        let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
        if authority.contains('@') {
            anyhow::bail!("{source}: credentials in the URL are not supported (use {HEADERS})");
        }
        let default_port = if https { 443 } else { http_port.unwrap_or(80) };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| anyhow::anyhow!("{source} {}: bad port {:?}", shown(), p))?;
                (h, port)
            }
            _ => (authority, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let bad = |c: char| !(c.is_ascii_alphanumeric() || ".-_:".contains(c));
        if host.is_empty() || host.contains(bad) || path.contains(|c: char| c.is_ascii_control()) {
            anyhow::bail!("{source} {}: not a host", shown());
        }
        if https && ServerName::try_from(host.to_string()).is_err() {
            anyhow::bail!("{source} {}: not a name TLS can verify", shown());
        }
        let path = match (path, empty_path) {
            ("" | "/", Some(p)) => p.to_string(),
            ("", None) => "/".to_string(),
            (p, _) => p.to_string(),
        };
        Ok(OtlpUrl {
            https,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// The URL as shown in messages (it holds no credentials: those are refused).
    pub fn shown(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}{}", self.host, self.port, self.path)
        } else {
            format!("{scheme}://{}:{}{}", self.host, self.port, self.path)
        }
    }
}

/// Extra request headers: credentials, so their `Debug` shows the keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.0.iter().map(|(k, _)| k.as_str()).collect();
        write!(f, "Headers({keys:?}, values hidden)")
    }
}

/// `--otlp` and `--otlp-interval` with the `OTEL_*` variables, validated.
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    pub url: OtlpUrl,
    pub interval: Duration,
    pub headers: Headers,
    /// For an https URL: the system's roots, or the certificate's CA.
    pub tls: Option<Arc<ClientConfig>>,
    /// One export (connect, TLS, send, read the status) gives up after this long.
    pub timeout: Duration,
    pub gzip: bool,
    /// The resource's attributes: `service.name` and the rest.
    pub resource: Vec<(String, String)>,
}

impl OtlpSettings {
    /// `--otlp FLAG` (`env`, or a URL) every `interval`, with the rest from `env`.
    pub fn new(flag: &str, interval: Duration, env: Env<'_>) -> anyhow::Result<OtlpSettings> {
        if interval.is_zero() {
            anyhow::bail!("--otlp-interval must be above zero");
        }
        let url = endpoint(flag, env)?;
        let tls = if url.https { Some(tls(env)?) } else { None };
        Ok(OtlpSettings {
            url,
            interval,
            headers: headers(env)?,
            tls,
            timeout: timeout(env)?,
            gzip: gzip(env)?,
            resource: resource(env)?,
        })
    }
}

/// The metrics variable if set, else the generic one.
fn either(env: Env<'_>, generic: &'static str) -> Option<(&'static str, String)> {
    let metrics = metrics_variant(generic);
    env(metrics)
        .map(|v| (metrics, v))
        .or_else(|| env(generic).map(|v| (generic, v)))
}

/// `OTEL_EXPORTER_OTLP_X` → `OTEL_EXPORTER_OTLP_METRICS_X`.
fn metrics_variant(generic: &'static str) -> &'static str {
    match generic {
        CERTIFICATE => "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
        CLIENT_CERTIFICATE => "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
        CLIENT_KEY => "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
        TIMEOUT => "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        COMPRESSION => "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
        PROTOCOL => "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        other => other,
    }
}

/// The signal's endpoint is used as it is; the generic one is a base that gets `/v1/metrics`.
fn endpoint(flag: &str, env: Env<'_>) -> anyhow::Result<OtlpUrl> {
    if let Some((name, value)) = either(env, PROTOCOL) {
        if value != "http/protobuf" {
            anyhow::bail!(
                "{name}={}: only http/protobuf is supported",
                crate::shared::escape::sanitize(&value)
            );
        }
    }
    if flag != "env" {
        return OtlpUrl::parse(flag);
    }
    if let Some(url) = env(METRICS_ENDPOINT) {
        return OtlpUrl::parse_as(&url, METRICS_ENDPOINT, None, None);
    }
    if let Some(base) = env(ENDPOINT) {
        let url = format!("{}/v1/metrics", base.trim_end_matches('/'));
        return OtlpUrl::parse_as(&url, ENDPOINT, None, None);
    }
    OtlpUrl::parse_as(DEFAULT_ENDPOINT, "--otlp env", None, None)
}

/// The generic headers, then the metrics ones (which win for the same key).
fn headers(env: Env<'_>) -> anyhow::Result<Headers> {
    let mut all: Vec<(String, String)> = Vec::new();
    for name in [HEADERS, METRICS_HEADERS] {
        for (key, value) in pairs(name, env(name).as_deref().unwrap_or(""))? {
            let key = key.to_ascii_lowercase();
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if key.is_empty() || !key.chars().all(token) {
                anyhow::bail!("{name}: a header name is not an HTTP token");
            }
            if RESERVED.contains(&key.as_str()) {
                anyhow::bail!("{name}: header {key} is written by maintwatch itself");
            }
            if value.chars().any(|c| c.is_control() && c != '\t') {
                anyhow::bail!("{name}: the value of header {key} holds a control character");
            }
            all.retain(|(k, _)| *k != key);
            all.push((key, value));
        }
    }
    Ok(Headers(all))
}

/// A `key=value,key=value` list, both sides trimmed and percent-decoded (the W3C Baggage form
/// the specification uses). Errors name the variable and at most the key: values are secrets.
fn pairs(name: &str, text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (i, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            anyhow::bail!(
                "{name}: entry {} has no '=' (expected key=value,...)",
                i + 1
            );
        };
        let key = percent_decode(key.trim())
            .ok_or_else(|| anyhow::anyhow!("{name}: entry {}: a bad %-escape", i + 1))?;
        let shown = crate::shared::escape::sanitize(&key);
        let value = percent_decode(value.trim())
            .ok_or_else(|| anyhow::anyhow!("{name}: {shown}: a bad %-escape in the value"))?;
        out.push((key, value));
    }
    Ok(out)
}

/// `%XX` escapes decoded; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The TLS client of an https endpoint: the system's roots unless a certificate is given.
fn tls(env: Env<'_>) -> anyhow::Result<Arc<ClientConfig>> {
    use crate::network::conn::tls::{client_config, TlsFiles};
    let ca = either(env, CERTIFICATE);
    let cert = either(env, CLIENT_CERTIFICATE);
    let key = either(env, CLIENT_KEY);
    let files = TlsFiles {
        cacert: ca.as_ref().map(|(_, p)| p.into()),
        cert: cert.as_ref().map(|(_, p)| p.into()),
        key: key.as_ref().map(|(_, p)| p.into()),
        ..TlsFiles::default()
    };
    client_config(&files).map_err(|e| {
        let names: Vec<&str> = [&ca, &cert, &key]
            .iter()
            .filter_map(|v| v.as_ref().map(|(n, _)| *n))
            .collect();
        let names = if names.is_empty() {
            "the system's CA certificates".to_string()
        } else {
            names.join(", ")
        };
        // The message may name --cacert/--cert (the watch's own flags): say which variable.
        anyhow::anyhow!("--otlp https: {names}: {e}")
    })
}

/// Milliseconds, as the specification writes it.
fn timeout(env: Env<'_>) -> anyhow::Result<Duration> {
    let Some((name, value)) = either(env, TIMEOUT) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => anyhow::bail!(
            "{name}={}: expected a number of milliseconds above zero",
            crate::shared::escape::sanitize(&value)
        ),
    }
}

fn gzip(env: Env<'_>) -> anyhow::Result<bool> {
    match either(env, COMPRESSION) {
        None => Ok(false),
        Some((_, v)) if v == "none" => Ok(false),
        Some((_, v)) if v == "gzip" => Ok(true),
        Some((name, v)) => anyhow::bail!(
            "{name}={}: expected gzip or none",
            crate::shared::escape::sanitize(&v)
        ),
    }
}

/// `service.name` (maintwatch unless `OTEL_SERVICE_NAME` or the attributes say otherwise), then
/// `OTEL_RESOURCE_ATTRIBUTES` in their order. `service.version` and `host.name` are added by the
/// exporter unless given here.
fn resource(env: Env<'_>) -> anyhow::Result<Vec<(String, String)>> {
    let mut attributes = pairs(
        RESOURCE_ATTRIBUTES,
        env(RESOURCE_ATTRIBUTES).as_deref().unwrap_or(""),
    )?;
    let named = env(SERVICE_NAME).or_else(|| {
        attributes
            .iter()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone())
    });
    attributes.retain(|(k, _)| k != "service.name");
    attributes.insert(
        0,
        (
            "service.name".to_string(),
            named.unwrap_or_else(|| "maintwatch".to_string()),
        ),
    );
    Ok(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(flag: &str, vars: &[(&str, &str)]) -> anyhow::Result<OtlpSettings> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        OtlpSettings::new(flag, Duration::from_secs(1), &|k| map.get(k).cloned())
    }

    #[test]
    fn flag_urls_default_the_port_and_path_and_refuse_credentials() {
        let u = OtlpUrl::parse("http://127.0.0.1:4318/v1/metrics").unwrap();
        assert_eq!(
            (u.https, u.host.as_str(), u.port, u.path.as_str()),
            (false, "127.0.0.1", 4318, "/v1/metrics")
        );
        let u = OtlpUrl::parse("http://collector").unwrap();
        assert_eq!((u.port, u.path.as_str()), (4318, "/v1/metrics"));
        let u = OtlpUrl::parse("https://collector").unwrap();
        assert_eq!((u.https, u.port), (true, 443));
        let u = OtlpUrl::parse("http://[::1]:9/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(u.shown(), "http://[::1]:9/x");
        for bad in ["c:4318", "http://u:p@c:4318", "http://c:99999", "http://"] {
            let e = OtlpUrl::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--otlp"), "{bad}: {e}");
            assert!(!e.contains("u:p"), "{e}");
        }
    }

    #[test]
    fn the_signal_endpoint_is_used_as_is_and_the_generic_one_gets_the_path() {
        let generic = [(ENDPOINT, "http://c:4318/base/")];
        assert_eq!(
            settings("env", &generic).unwrap().url.path,
            "/base/v1/metrics"
        );
        let both = [
            (ENDPOINT, "http://c:4318"),
            (METRICS_ENDPOINT, "https://m.example/custom"),
        ];
        let url = settings("env", &both).unwrap().url;
        assert_eq!(url.shown(), "https://m.example:443/custom");
        let url = settings("env", &[]).unwrap().url;
        assert_eq!(url.shown(), "http://localhost:4318/v1/metrics");
        // A URL on the command line wins over the variables.
        let url = settings("http://flag:1", &both).unwrap().url;
        assert_eq!(url.shown(), "http://flag:1/v1/metrics");
        let e = settings("env", &[(ENDPOINT, "collector:4318")]).unwrap_err();
        assert!(e.to_string().starts_with(ENDPOINT), "{e}");
    }

    #[test]
    fn headers_are_percent_decoded_merged_and_never_shown() {
        let s = settings(
            "env",
            &[
                (HEADERS, " X-Api-Key = k%3Dv%2C1 , tenant=a"),
                (METRICS_HEADERS, "tenant=b"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.headers.0,
            [
                ("x-api-key".to_string(), "k=v,1".to_string()),
                ("tenant".to_string(), "b".to_string())
            ]
        );
        assert!(!format!("{s:?}").contains("k=v"), "{s:?}");
        for (text, says) in [
            ("x-api-key=secret%zz", "x-api-key: a bad %-escape"),
            ("x-api-key=sec%0Aret", "x-api-key holds a control"),
            ("secretonly", "entry 1 has no '='"),
            ("content-type=secret", "content-type is written"),
            ("bad key=secret", "not an HTTP token"),
        ] {
            let e = settings("env", &[(HEADERS, text)]).unwrap_err().to_string();
            assert!(e.starts_with(HEADERS) && e.contains(says), "{text}: {e}");
            assert!(!e.contains("secret") && !e.contains("sec%"), "{e}");
        }
    }

    #[test]
    fn timeout_compression_protocol_and_resource_follow_the_variables() {
        let s = settings(
            "env",
            &[
                (TIMEOUT, "2500"),
                (COMPRESSION, "gzip"),
                (
                    RESOURCE_ATTRIBUTES,
                    "service.name=x,deployment.environment=prod%20eu",
                ),
                (SERVICE_NAME, "watcher"),
            ],
        )
        .unwrap();
        assert_eq!((s.timeout, s.gzip), (Duration::from_millis(2500), true));
        assert_eq!(
            s.resource,
            [
                ("service.name".to_string(), "watcher".to_string()),
                ("deployment.environment".to_string(), "prod eu".to_string())
            ]
        );
        for (name, value) in [
            (TIMEOUT, "ten"),
            ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "0"),
            (COMPRESSION, "zstd"),
            (PROTOCOL, "grpc"),
        ] {
            let e = settings("env", &[(name, value)]).unwrap_err().to_string();
            assert!(e.starts_with(name), "{e}");
        }
    }

    #[test]
    fn a_missing_certificate_names_its_variable() {
        let e = settings(
            "env",
            &[
                (ENDPOINT, "https://127.0.0.1:1"),
                (CERTIFICATE, "/nonexistent/ca.pem"),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(CERTIFICATE), "{e}");
    }
}
