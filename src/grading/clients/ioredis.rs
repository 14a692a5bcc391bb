//! ioredis 6.1.0's reading of a maintenance notification (`built/maintNotifications/parser.js`
//! of the npm package), apart from the other clients because its rules differ in kind: it checks
//! every element's shape and drops a malformed notification silently (a debug line), where the
//! others log an error or throw. Its types are the five of the standalone protocol: SMIGRATING
//! and SMIGRATED are not among them (and its `Cluster` turns the feature off).

use super::{acts, ignores, text, Verdict, View};
use crate::protocol::resp::Frame;

/// What ioredis does with the notification `name`, whose elements `v` holds.
pub(super) fn predict(name: &str, v: &View<'_, '_>) -> Verdict {
    let dropped = |what: &str| ignores(format!("malformed ({what}): dropped without a word"));
    if name.starts_with('S') {
        return ignores("not one of its notification types (standalone types only)");
    }
    if !count(v.at(1)) {
        return dropped("the seq is not a non-negative integer");
    }
    match name {
        "MOVING" => {
            if !(3..=4).contains(&v.len()) {
                return dropped("not 3 or 4 elements");
            }
            if !count(v.at(2)) {
                return dropped("the time is not a non-negative integer");
            }
            match v.at(3) {
                None | Some(Frame::Null) => acts(
                    "no endpoint: hands off to its configured host and port at half the window, \
                     make before break",
                ),
                Some(f) => match text(f).as_deref().and_then(endpoint) {
                    Some((host, port)) => Verdict::Acts {
                        reads: format!("hands off to host {host:?} port {port}, make before break"),
                        target: Some((host, Some(i64::from(port)))),
                    },
                    None => dropped("the endpoint is not host:port"),
                },
            }
        }
        "MIGRATING" | "FAILING_OVER" => {
            if !(3..=4).contains(&v.len()) {
                return dropped("not 3 or 4 elements");
            }
            if !count(v.at(2)) {
                return dropped("the time is not a non-negative integer");
            }
            acts("relaxes the connection's timeouts until the closing notification (a MIGRATING at most 10 min, a FAILING_OVER 1 min)")
        }
        _ => {
            if !(2..=3).contains(&v.len()) {
                return dropped("not 2 or 3 elements");
            }
            acts("restores the connection's timeouts")
        }
    }
}

/// A non-negative safe integer: a RESP integer, or a string of digits (JavaScript's
/// `Number.isSafeInteger`, up to 2^53 - 1).
fn count(f: Option<&Frame<'_>>) -> bool {
    const SAFE: i64 = (1 << 53) - 1;
    match f {
        Some(Frame::Integer(n)) => (0..=SAFE).contains(n),
        Some(f @ (Frame::Blob(_) | Frame::Simple(_))) => text(f).is_some_and(|s| {
            !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && s.parse::<i64>().is_ok_and(|n| n <= SAFE)
        }),
        _ => false,
    }
}

/// `host:port` or `[v6]:port` as ioredis accepts it: a port from 1 to 65535, and a host that is
/// an IP address or a name of valid labels (not all digits and dots).
fn endpoint(s: &str) -> Option<(String, u16)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        return Some((host.to_string(), port_of(port)?));
    }
    let (host, port) = s.rsplit_once(':')?;
    let port = port_of(port)?;
    let ok = host.parse::<std::net::IpAddr>().is_ok() || name(host);
    ok.then(|| (host.to_string(), port))
}

fn port_of(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p >= 1)
}

/// A DNS name of letter-digit-hyphen labels, 253 characters at most, no final dot, not made of
/// digits and dots alone.
fn name(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 || host.ends_with('.') {
        return false;
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return false;
    }
    host.split('.').all(|l| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_as_ioredis_takes_them() {
        assert_eq!(endpoint("10.0.0.2:6379"), Some(("10.0.0.2".into(), 6379)));
        assert_eq!(endpoint("[::1]:7000"), Some(("::1".into(), 7000)));
        assert_eq!(
            endpoint("db.example.com:1"),
            Some(("db.example.com".into(), 1))
        );
        for bad in [
            "null",
            "host:0",
            "host:70000",
            "1.2.3:80",
            "-a.b:80",
            "h.:80",
            "[x]:1",
            ":80",
        ] {
            assert_eq!(endpoint(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_count_is_non_negative_and_safe() {
        assert!(count(Some(&Frame::Integer(0))));
        assert!(!count(Some(&Frame::Integer(-1))));
        assert!(!count(Some(&Frame::Integer(1 << 53))));
        assert!(count(Some(&Frame::Blob(b"42"))));
        assert!(!count(Some(&Frame::Blob(b"4x"))));
        assert!(!count(None));
    }
}
