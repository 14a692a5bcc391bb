//! ioredis: its facts by release, what its tier measured, and its parser. Its reading of a
//! maintenance notification at 6.1.0 (`built/maintNotifications/parser.js` of the npm package)
//! differs in kind from the other clients': it checks
//! every element's shape and drops a malformed notification silently (a debug line), where the
//! others log an error or throw. Its types are the five of the standalone protocol: SMIGRATING
//! and SMIGRATED are not among them (and its `Cluster` turns the feature off).

use crate::grading::clients::facts::{Auto, Client, Measured, Private};
use crate::grading::clients::frame_view::{acts, ignores, text, View};
use crate::grading::clients::reach;
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

/// ioredis, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "ioredis",
    version: "6.1.0",
    opts_in_by_default: Some(true),
    opt_in_note: None,
    auto: Some(Auto::ByTls(Private::IoRedis)),
    since: &[("6.1.0", "maintNotifications, 'auto' by default with RESP3 (the default since 6.0); standalone only")],
    cluster_since: None,
    measured: IOREDIS_MEASURED,
    parser: Some(predict),
};

/// The run that established ioredis's [`Measured`] facts (docs/clients.md, "ioredis, measured").
pub const IOREDIS_RUN: &str = "the client tier of 2026-12-05";

/// What the ioredis tier measured: `tests/clients/ioredis_app.js` at its defaults (RESP3,
/// `maintNotifications: "auto"`) with a 1 s `socketTimeout`.
pub(super) const IOREDIS_MEASURED: &[Measured] = &[
    Measured {
        first: "6.1.0",
        last: "6.1.0",
        notification: None,
        what: "`auto` asks for internal-ip for its loopback peer over plain TCP (its list of \
               private ranges has 127/8, node-redis's has not)",
        run: IOREDIS_RUN,
    },
    Measured {
        first: "6.1.0",
        last: "6.1.0",
        notification: Some("MOVING"),
        what: "with a null target it hands off, make before break, to its configured host name \
               at half the window, while DNS still names the retiring proxy, and is cut by the \
               close (single-proxy: moved-before-close FAIL), as redis-py",
        run: IOREDIS_RUN,
    },
    Measured {
        first: "6.1.0",
        last: "6.1.0",
        notification: None,
        what: "it relaxes a 1 s socketTimeout inside a MIGRATING or FAILING_OVER window and is \
               back to 1 s on a stall 21 s after the closing notification",
        run: IOREDIS_RUN,
    },
    Measured {
        first: "6.1.0",
        last: "6.1.0",
        notification: None,
        what: "after a MIGRATING and no MIGRATED, still relaxed 31 s later, past the 30 s \
               backstop: its own cap on such a window is 10 min",
        run: IOREDIS_RUN,
    },
];

/// What ioredis does with the notification `name`, whose elements `v` holds.
pub(super) fn predict(name: &str, v: &View<'_, '_>, _asked: Option<EndpointType>) -> Verdict {
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
                    Some((host, port)) => {
                        let mut reads =
                            format!("hands off to host {host:?} port {port}, make before break");
                        // Measured in the client matrix's `ipv6` (docs/matrix.md): a handoff
                        // that cannot connect fails, and the connection it had stays.
                        if let Some(why) = reach::host(&host) {
                            reads.push_str(&format!(
                                "; it cannot connect there ({why}): the handoff fails and the \
                                 connection it has stays in use, so it does not hang"
                            ));
                        }
                        Verdict::Acts {
                            reads,
                            target: Some((host, Some(i64::from(port)))),
                        }
                    }
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
