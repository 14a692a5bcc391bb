//! Endpoint URLs: `redis://` and `rediss://`, parsed the way redis-cli parses `-u`.
//!
//! Operators paste the URL their application uses, so the parse follows redis-cli (the tool they
//! compare against): `redis://[[user]:password@]host[:port][/db]`, where a user-info without a
//! colon is the *password* (redis-cli's reading, not RFC 3986's), user and password are
//! percent-decoded, IPv6 hosts are bracketed, and `rediss://` means TLS. A bare `host[:port]`
//! is accepted too, because endpoint lists are often written that way.
//!
//! The password never reaches an error message: errors show the input with its user-info
//! password replaced by `***`.

use std::fmt;

use super::secret::Secret;

/// The default Redis port.
pub const DEFAULT_PORT: u16 = 6379;

/// One parsed endpoint URL. `Debug` is safe to print: the password is a [`Secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisUrl {
    /// `rediss://`.
    pub tls: bool,
    /// Hostname or IP literal, IPv6 without brackets.
    pub host: String,
    /// `None` when the URL gave none (6379 is applied later, so a flag can tell "not given").
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub db: Option<u32>,
}

/// Why a URL was rejected. `input` is already redacted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid endpoint {input:?}: {reason}")]
pub struct UrlError {
    pub input: String,
    pub reason: String,
}

impl RedisUrl {
    /// Parses `redis://...`, `rediss://...` or a bare `host[:port]`.
    pub fn parse(input: &str) -> Result<RedisUrl, UrlError> {
        let fail = |reason: String| UrlError {
            input: shown(&redact(input)),
            reason,
        };
        let text = input.trim();
        let (tls, rest) =
            match text.split_once("://") {
                Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
                    "redis" => (false, rest),
                    "rediss" => (true, rest),
                    // Decided, not missing: a maintenance is announced by the proxy a client reaches
                    // over TCP, and a MOVING names a host and port; a local socket has no proxy in
                    // front of it to announce anything (docs/service.md).
                    "unix" => return Err(fail(
                        "unix:// is not watched: maintenance notifications come from a managed \
                         Redis endpoint reached over TCP; give it as redis://HOST:PORT or \
                         rediss://HOST:PORT"
                            .into(),
                    )),
                    other => {
                        return Err(fail(format!(
                            "unsupported scheme {other:?} (expected redis:// or rediss://)"
                        )))
                    }
                },
                None => {
                    missing_colon(text).map_err(fail)?;
                    (false, text)
                }
            };
        // The last '@' ends the user-info, wherever it is: a password may hold '@', '/', '?' or
        // '#' unencoded (redis-cli takes `redis://u:a/b@h` as password "a/b" too), and no part
        // of it may end up quoted in an error as a "port" or a "database".
        let (userinfo, rest) = match rest.rfind('@') {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        if rest.contains(['?', '#']) {
            // Silently ignoring `?ssl_cert_reqs=none` would connect differently from what the
            // operator asked for; the flags say it instead.
            return Err(fail(
                "query parameters and fragments are not supported; use the flags (--tls, \
                 --insecure, --cacert ...)"
                    .into(),
            ));
        }
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => {
                let (user, pass, lone) = match info.split_once(':') {
                    Some((u, p)) => (Some(u), p, false),
                    // redis-cli: `redis://secret@host` authenticates with password "secret".
                    None => (None, info, true),
                };
                let user = match user {
                    Some(u) if !u.is_empty() => {
                        Some(percent_decode(u).map_err(|e| fail(format!("user name: {e}")))?)
                    }
                    _ => None,
                };
                let pass = if pass.is_empty() {
                    None
                } else {
                    // The error must not quote the password, even a part of it.
                    let text = percent_decode(pass)
                        .map_err(|_| fail("the password has an invalid percent escape".into()))?;
                    Some(if lone {
                        Secret::from_lone_userinfo(text)
                    } else {
                        Secret::new(text)
                    })
                };
                (user, pass)
            }
        };
        let (host, port) = split_host_port(hostport).map_err(fail)?;
        let db = match path.trim_end_matches('/') {
            "" => None,
            n => Some(
                n.parse::<u32>()
                    .map_err(|_| fail(format!("database {n:?} is not a number")))?,
            ),
        };
        Ok(RedisUrl {
            tls,
            host,
            port,
            user,
            password,
            db,
        })
    }

    /// The URL without its password, for display: `rediss://alice@cache.example:6380/2`.
    pub fn display(&self) -> String {
        display_endpoint(
            self.tls,
            self.user.as_deref(),
            &self.host,
            self.port.unwrap_or(DEFAULT_PORT),
            self.db.unwrap_or(0),
        )
    }
}

/// A scheme whose `://` lost a character (`redis//h`, `rediss:/h`) would otherwise be read as a
/// host named `redis` with a database path, and refused as "database ... is not a number".
fn missing_colon(text: &str) -> Result<(), String> {
    let lower = text.to_ascii_lowercase();
    for scheme in ["rediss", "redis"] {
        let Some(rest) = lower.strip_prefix(scheme) else {
            continue;
        };
        let missing = if rest.starts_with("//") {
            "':' is missing"
        } else if rest.starts_with(":/") {
            "a '/' is missing"
        } else {
            continue;
        };
        return Err(format!(
            "{missing} after the scheme {scheme:?}: write {scheme}://host[:port]"
        ));
    }
    Ok(())
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// `scheme://[user@]host:port[/db]`, IPv6 bracketed; never a password.
pub(crate) fn display_endpoint(
    tls: bool,
    user: Option<&str>,
    host: &str,
    port: u16,
    db: u32,
) -> String {
    let scheme = if tls { "rediss" } else { "redis" };
    let user = user.map(|u| format!("{u}@")).unwrap_or_default();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let db = if db == 0 {
        String::new()
    } else {
        format!("/{db}")
    };
    format!("{scheme}://{user}{host}:{port}{db}")
}

/// The most of a rejected input an error quotes: enough to find it, never megabytes.
const SHOWN: usize = 120;

/// `input` as an error quotes it: cut at [`SHOWN`] characters, saying how long it was.
fn shown(input: &str) -> String {
    match input.char_indices().nth(SHOWN) {
        None => input.to_string(),
        Some((at, _)) => format!("{}… ({} bytes)", &input[..at], input.len()),
    }
}

/// The longest host name DNS can carry.
pub const MAX_HOST: usize = 253;

fn split_host_port(text: &str) -> Result<(String, Option<u16>), String> {
    if text.is_empty() {
        return Err("no host".into());
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some(close) = rest.find(']') else {
            return Err("unclosed '[' in an IPv6 address".into());
        };
        let host = &rest[..close];
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{host:?} in brackets is not an IPv6 address"));
        }
        match &rest[close + 1..] {
            "" => (host, None),
            p => match p.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err(format!("unexpected {p:?} after ']'")),
            },
        }
    } else if text.matches(':').count() > 1 {
        // An unbracketed IPv6 literal: the whole text is the host, no port.
        if text.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "{text:?} has several ':'; bracket an IPv6 address ([::1]:6379)"
            ));
        }
        (text, None)
    } else {
        match text.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    // A longer one is no DNS name (RFC 1035); it is not shown back, it could be megabytes.
    if host.len() > MAX_HOST {
        return Err(format!(
            "the host is {} bytes long; a host name has at most {MAX_HOST}",
            host.len()
        ));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("host {host:?} contains whitespace"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err(format!("port {p:?} is not a port number (1-65535)")),
            Ok(n) => Some(n),
        },
    };
    Ok((host.to_string(), port))
}

pub(crate) fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("invalid percent escape at character {}", i + 1))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "percent escapes do not decode to UTF-8".into())
}

/// The input with the password part of its user-info replaced by `***`, for error messages.
/// Everything between `://` (or the start) and the last `@` is user-info here, whatever it
/// holds, so a malformed URL cannot show a password through a '/', '?' or '#' in it.
pub fn redact(input: &str) -> String {
    let (prefix, rest) = match input.find("://") {
        Some(i) => input.split_at(i + 3),
        None => ("", input),
    };
    let Some(at) = rest.rfind('@') else {
        return input.to_string();
    };
    let info = &rest[..at];
    let shown = match info.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_string(),
    };
    format!("{prefix}{shown}{}", &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_name_past_253_bytes_is_refused_without_being_shown() {
        let long = "a".repeat(MAX_HOST + 1);
        for input in [
            long.clone(),
            format!("redis://{long}:6379"),
            format!("{long}:1"),
        ] {
            let e = RedisUrl::parse(&input).unwrap_err().to_string();
            assert!(
                e.contains("the host is 254 bytes long; a host name has at most 253"),
                "{e}"
            );
            assert!(e.len() < 400, "the input is quoted short: {e}");
        }
        assert!(RedisUrl::parse(&"a".repeat(MAX_HOST)).is_ok());
    }

    #[test]
    fn a_scheme_that_lost_its_colon_is_named_not_read_as_a_database() {
        for (input, says) in [
            (
                "redis//127.0.0.1:7301",
                "':' is missing after the scheme \"redis\"",
            ),
            ("REDISS//h:1", "':' is missing after the scheme \"rediss\""),
            (
                "redis:/127.0.0.1:7301",
                "a '/' is missing after the scheme \"redis\"",
            ),
        ] {
            let e = RedisUrl::parse(input).unwrap_err().to_string();
            assert!(e.contains(says), "{input}: {e}");
            assert!(!e.contains("database"), "{input}: {e}");
        }
        assert_eq!(
            ok("redis:6379/2").host,
            "redis",
            "a host named redis still parses"
        );
    }

    fn ok(s: &str) -> RedisUrl {
        RedisUrl::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn full_url_parses() {
        let u = ok("rediss://alice:p%40ss@cache.example:6380/3");
        assert!(u.tls);
        assert_eq!(u.host, "cache.example");
        assert_eq!(u.port, Some(6380));
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("p@ss"));
        assert_eq!(u.db, Some(3));
        assert_eq!(u.display(), "rediss://alice@cache.example:6380/3");
    }

    #[test]
    fn userinfo_without_colon_is_the_password_like_redis_cli() {
        let u = ok("redis://s3cret@h");
        assert_eq!(u.user, None);
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("s3cret"));
        let u = ok("redis://:s3cret@h");
        assert_eq!(u.user, None);
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("s3cret"));
    }

    #[test]
    fn bare_hosts_and_ipv6() {
        let u = ok("10.0.0.1:7000");
        assert!(!u.tls);
        assert_eq!((u.host.as_str(), u.port), ("10.0.0.1", Some(7000)));
        let u = ok("redis://[::1]:7000");
        assert_eq!((u.host.as_str(), u.port), ("::1", Some(7000)));
        assert_eq!(u.display(), "redis://[::1]:7000");
        let u = ok("::1");
        assert_eq!((u.host.as_str(), u.port), ("::1", None));
        assert_eq!(ok("redis://h").port, None);
        assert_eq!(ok("redis://h/").db, None);
    }

    /// Each of `urls` is refused, and its error does not quote `secret`.
    fn refused_without(secret: &str, urls: &[&str]) {
        for bad in urls {
            let e = RedisUrl::parse(bad).expect_err(bad);
            assert!(!e.to_string().contains(secret), "{e}");
        }
    }

    #[test]
    fn bad_urls_are_rejected_without_the_password() {
        let bad = [
            "http://h",
            "redis://",
            "redis://h:0",
            "redis://h:99999",
            "redis://h/x",
            "redis://[::1",
            "redis://h?x=1",
            "redis://u:hunter2@h:notaport",
            "redis://u:hunter2%zz@h",
        ];
        refused_without("hunter2", &bad);
    }

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(redact("redis://u:pw@h:1/2"), "redis://u:***@h:1/2");
        assert_eq!(redact("redis://pw@h"), "redis://***@h");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("u:p@w@h"), "u:***@h");
        assert_eq!(
            redact("redis://alice:S3cret/PW@h:x"),
            "redis://alice:***@h:x"
        );
        assert_eq!(redact("redis://S3c?ret#PW@h"), "redis://***@h");
    }

    #[test]
    fn a_password_may_hold_slash_query_and_hash_unencoded_like_redis_cli() {
        for (url, pw) in [
            ("redis://alice:S3cret/PW@host:6379", "S3cret/PW"),
            ("redis://alice:S3c?ret#PW@host:6379/2", "S3c?ret#PW"),
            ("redis://S3cret/PW@host", "S3cret/PW"),
        ] {
            let u = ok(url);
            assert_eq!(u.host, "host", "{url}");
            assert_eq!(u.password.as_ref().map(Secret::expose), Some(pw), "{url}");
        }
        assert!(ok("redis://S3cret/PW@host")
            .password
            .unwrap()
            .is_lone_userinfo());
        let bad = [
            "redis://alice:S3cret/PW@host:port",
            "redis://alice:S3cret/PW@host:6379/x",
            "redis://alice:S3cret?PW@host:6379?x=1",
            "redis://alice:S3cret#PW@[::1",
            "redis://alice:S3cret/PW@",
        ];
        refused_without("S3cret", &bad);
    }
}
