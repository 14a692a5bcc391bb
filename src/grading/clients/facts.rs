//! The shape of what is known of a client library: how its `auto` picks an endpoint type, its
//! facts by release, what the client tier measured, its parser, and the documented bounds of a
//! window. Each library's own facts are in its file under `library/`, which lists them.

use std::net::IpAddr;

use serde::Serialize;

use super::frame_view::View;
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;

/// How a client's `auto` tells an internal address from an external one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Private {
    /// Python's `ipaddress.is_private` (3.11): RFC 1918, loopback, link-local, documentation and
    /// reserved ranges, IPv6 ULA; not 100.64.0.0/10.
    Python,
    /// Go's `IsPrivate || IsLoopback || IsLinkLocalUnicast`, plus 100.64.0.0/10 (CGNAT).
    GoWithCgnat,
    /// Java's `isLoopbackAddress || isLinkLocalAddress || isSiteLocalAddress` plus IPv6 ULA
    /// (fc00::/7): no CGNAT.
    Java,
    /// 10/8, 172.16/12, 192.168/16; IPv6 `fc..`, `fd..`, `::1`, `fe80..`. IPv4 loopback
    /// (127/8) is *not* private here.
    NodeList,
    /// ioredis 6.1's list: 10/8, 127/8, 169.254/16, 172.16/12, 192.168/16 and 100.64/10 (CGNAT);
    /// IPv6 `::1`, `fc..`, `fd..`, `fe80:` (an IPv4-mapped address by its IPv4 part).
    IoRedis,
}

impl Private {
    pub fn is_private(self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Private::Python, IpAddr::V4(v4)) => python_private_v4(v4),
            (Private::Python, IpAddr::V6(v6)) => {
                if let Some(v4) = v6.to_ipv4_mapped() {
                    return python_private_v4(v4);
                }
                let s = v6.segments();
                v6.is_loopback()
                    || v6.is_unspecified()
                    || (s[0] & 0xfe00) == 0xfc00
                    || (s[0] & 0xffc0) == 0xfe80
                    || (s[0] == 0x2001 && s[1] == 0x0db8)
                    || (s[0] == 0x2001 && s[1] < 0x0200)
                    || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
            }
            (Private::GoWithCgnat, IpAddr::V6(_)) => crate::network::conn::is_internal(ip),
            (Private::GoWithCgnat, IpAddr::V4(v4)) => {
                crate::network::conn::is_internal(ip)
                    || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
            }
            (Private::Java, IpAddr::V4(_)) => crate::network::conn::is_internal(ip),
            (Private::Java, IpAddr::V6(v6)) => {
                // fec0::/10, site-local in Java's sense, besides the ranges is_internal knows.
                crate::network::conn::is_internal(ip) || (v6.segments()[0] & 0xffc0) == 0xfec0
            }
            (Private::NodeList, IpAddr::V4(v4)) => {
                let o = v4.octets();
                o[0] == 10
                    || (o[0] == 172 && (16..=31).contains(&o[1]))
                    || (o[0] == 192 && o[1] == 168)
            }
            (Private::IoRedis, IpAddr::V4(v4)) => {
                let o = v4.octets();
                matches!(o[0], 10 | 127)
                    || (o[0] == 169 && o[1] == 254)
                    || (o[0] == 172 && (16..=31).contains(&o[1]))
                    || (o[0] == 192 && o[1] == 168)
                    || (o[0] == 100 && (64..=127).contains(&o[1]))
            }
            (Private::IoRedis, IpAddr::V6(v6)) => {
                if let Some(v4) = v6.to_ipv4_mapped() {
                    return Private::IoRedis.is_private(IpAddr::V4(v4));
                }
                let first = v6.segments()[0];
                v6.is_loopback() || (first & 0xfe00) == 0xfc00 || first == 0xfe80
            }
            (Private::NodeList, IpAddr::V6(v6)) => {
                let first = v6.segments()[0];
                v6.is_loopback() || (first & 0xfe00) == 0xfc00 || first == 0xfe80
            }
        }
    }
}

/// Python 3.11's `IPv4Address.is_private`: its list of special-purpose ranges (no 100.64/10).
pub(super) fn python_private_v4(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    matches!(a, 0 | 10 | 127 | 240..=255)
        || (a == 169 && b == 254)
        || (a == 172 && (16..=31).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
}

/// How a client's `auto` picks the endpoint type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Auto {
    /// TLS: `*-fqdn`, plain TCP: `*-ip`; internal or external by the address (the typed one,
    /// or the host name resolved).
    ByTls(Private),
    /// What the user typed: an IP address gives `*-ip`, a name `*-fqdn` (TLS plays no part);
    /// internal or external by that address, or by the name's resolved address.
    ByTypedHost(Private),
}

/// What one client does, as far as its sources were read.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Client {
    pub name: &'static str,
    /// The version the facts were read at.
    pub version: &'static str,
    /// Opts in by default for a plain `host:port` URL (RESP3 and `auto` by default); `None`:
    /// not established.
    pub opts_in_by_default: Option<bool>,
    /// A note on when the default opt-in does not hold.
    pub opt_in_note: Option<&'static str>,
    pub auto: Option<Auto>,
    /// The releases that changed what it does with maintenance notifications, oldest first:
    /// `(version, what came)`. "Is my version safe?" starts here (docs/clients.md).
    pub since: &'static [(&'static str, &'static str)],
    /// The first release whose OSS-cluster client handles the notifications; before it, the
    /// client matrix's cluster cell is `n/a`. `None`: none known.
    pub cluster_since: Option<&'static str>,
    /// What the client tier measured, by version range (docs/clients.md names each run).
    pub measured: &'static [Measured],
    #[serde(skip)]
    pub parser: Parser,
}

/// The client matrix run that established the [`Measured`] facts (docs/matrix.md names it).
pub const MATRIX_RUN: &str = "the client matrix of 2026-12-03";

/// The run that measured the matrix's `noend` column: certify on no-closing-notification alone.
pub const BACKSTOP_RUN: &str = "certify --scenarios no-closing-notification of 2026-12-04";

/// What every release of the matrix did after a MIGRATING without a MIGRATED.
pub(super) const NO_BACKSTOP: &str =
    "after a MIGRATING and no MIGRATED, still relaxed 31 s later, past the \
                           30 s backstop: nothing bounds a window whose closing notification \
                           never comes";

/// The client tier run that established the JVM libraries' [`Measured`] facts (docs/clients.md,
/// "Lettuce and Jedis, measured").
pub const JVM_RUN: &str = "the client tier of 2026-12-04";

/// A behaviour the client tier measured in a range of releases: every release it graded from
/// `first` to `last` (inclusive) showed it, in the run of `run` (the client matrix's date, docs/matrix.md).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Measured {
    pub first: &'static str,
    pub last: &'static str,
    /// The notification type whose predicted failure it confirms (`MOVING`): `decode --clients`
    /// adds the range to that prediction. `None`: not about a frame.
    pub notification: Option<&'static str>,
    pub what: &'static str,
    pub run: &'static str,
}

impl Measured {
    /// `5.9.0 through 6.3.1`, or the one version.
    pub fn range(&self) -> String {
        if self.first == self.last {
            self.first.to_string()
        } else {
            format!("{} through {}", self.first, self.last)
        }
    }
}

/// Whether `version` is `min` or later, comparing the dotted numbers (`5.11.0` after `5.9.0`); a
/// pre-release suffix is ignored.
pub fn at_least(version: &str, min: &str) -> bool {
    let numbers = |v: &str| -> Vec<u64> {
        let mut n: Vec<u64> = v.split(['.', '-']).map_while(|n| n.parse().ok()).collect();
        // `8.1` is `8.1.0`.
        while n.last() == Some(&0) {
            n.pop();
        }
        n
    };
    numbers(version) >= numbers(min)
}

/// The endpoint type a client's `auto` sends. `typed`: the host as the user typed it;
/// `resolved`: the address it connects to (for a name); `tls`: whether TLS is on.
pub fn auto_type(
    auto: Auto,
    typed: &str,
    resolved: Option<IpAddr>,
    tls: bool,
) -> Option<EndpointType> {
    let typed_ip: Option<IpAddr> = typed
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok();
    let (private, fqdn) = match auto {
        Auto::ByTls(p) => (p, tls),
        Auto::ByTypedHost(p) => (p, typed_ip.is_none()),
    };
    let internal = private.is_private(typed_ip.or(resolved)?);
    Some(match (internal, fqdn) {
        (true, false) => EndpointType::InternalIp,
        (true, true) => EndpointType::InternalFqdn,
        (false, false) => EndpointType::ExternalIp,
        (false, true) => EndpointType::ExternalFqdn,
    })
}

/// A client's parser of notifications, as read in its source: what it does with the
/// notification `name` whose elements the view holds, for a client that asked for the endpoint
/// type (`None`: its `auto`). A client whose handling of frames was not read has none, and gets
/// no prediction.
pub type Parser = Option<fn(&str, &View<'_, '_>, Option<EndpointType>) -> Verdict>;

/// A library's own documented bound on a relaxation whose closing notification never comes,
/// where it differs from the reference's backstop (`timeout-restored` names it beside the judge's
/// own when it is the longer; the verdict follows the judge's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowBound {
    /// The library as CLIENTS names it.
    pub library: &'static str,
    /// Its setting and default, seconds.
    pub setting: &'static str,
    pub seconds: f64,
}

/// The documented bounds: Jedis' `relaxedWindowMaxDuration`, 60 s by default
/// (docs/protocol.md section 8), and ioredis 6.1's cap on a MIGRATING window, 10 min, written in
/// its source beside the reason (a shard migration's length; a FAILING_OVER's is 1 min, but the
/// scenario without a closing notification sends a MIGRATING). The others document none besides
/// the reference's.
pub(super) const WINDOW_BOUNDS: [WindowBound; 2] = [
    WindowBound {
        library: "Jedis",
        setting: "relaxedWindowMaxDuration",
        seconds: 60.0,
    },
    WindowBound {
        library: "ioredis",
        setting: "MIGRATING_WINDOW_CAP_MS",
        seconds: 600.0,
    },
];

/// The documented bound of the library that calls itself `lib_name` in `CLIENT SETINFO` (Jedis
/// adds a configured suffix in parentheses: `jedis(spring)`).
pub fn window_bound(lib_name: &str) -> Option<WindowBound> {
    let library = lib_name.split('(').next().unwrap_or_default().trim();
    WINDOW_BOUNDS
        .iter()
        .find(|b| b.library.eq_ignore_ascii_case(library))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::clients::predict::has_cluster;

    /// Jedis' own bound is found by its `CLIENT SETINFO` name, with or without a suffix; a
    /// library that documents none has none.
    #[test]
    fn a_documented_window_bound_is_found_by_the_library_name() {
        let b = window_bound("jedis").unwrap();
        assert_eq!(
            (b.library, b.setting, b.seconds),
            ("Jedis", "relaxedWindowMaxDuration", 60.0)
        );
        assert_eq!(window_bound("jedis(spring)"), Some(b));
        assert_eq!(window_bound("redis-py"), None);
    }

    #[test]
    fn releases_compare_by_number_and_the_cluster_cell_follows_cluster_since() {
        assert!(at_least("5.11.0", "5.9.0") && !at_least("5.9.0", "5.11.0"));
        assert!(at_least("8.1", "8.1.0") && at_least("8.1.0-beta2", "8.1.0"));
        assert_eq!(has_cluster("redis-py", "7.0.1"), Some(false));
        assert_eq!(has_cluster("redis-py", "7.2.2"), Some(true));
        assert_eq!(has_cluster("node-redis", "5.9.0"), Some(false));
        assert_eq!(has_cluster("node-redis", "5.11.0"), Some(true));
        assert_eq!(has_cluster("Lettuce", "7.0.0"), None);
    }

    #[test]
    fn auto_types_differ_by_client() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let py = Auto::ByTypedHost(Private::Python);
        let node = Auto::ByTls(Private::NodeList);
        let go = Auto::ByTls(Private::GoWithCgnat);
        assert_eq!(
            auto_type(py, "127.0.0.1", None, true),
            Some(EndpointType::InternalIp)
        );
        assert_eq!(
            auto_type(node, "127.0.0.1", None, false),
            Some(EndpointType::ExternalIp)
        );
        assert_eq!(
            auto_type(go, "127.0.0.1", None, true),
            Some(EndpointType::InternalFqdn)
        );
        assert_eq!(
            auto_type(py, "db.example", Some(lo), false),
            Some(EndpointType::InternalFqdn)
        );
        assert_eq!(auto_type(go, "db.example", None, false), None);
    }

    #[test]
    fn python_private_follows_its_311_list() {
        // As Python 3.11.7's ipaddress answers for each.
        for (ip, private) in [
            ("100.64.0.1", false),
            ("0.1.2.3", true),
            ("198.18.0.1", true),
            ("240.0.0.1", true),
            ("8.8.8.8", false),
            ("fec0::1", false),
            ("2001:db8::1", true),
            ("fd00::1", true),
            ("::ffff:10.0.0.1", true),
            ("2606:4700::1", false),
        ] {
            let addr: IpAddr = ip.parse().unwrap();
            assert_eq!(Private::Python.is_private(addr), private, "{ip}");
        }
        assert!(!Private::NodeList.is_private("127.0.0.1".parse().unwrap()));
        assert!(Private::GoWithCgnat.is_private("100.64.0.1".parse().unwrap()));
        assert!(!Private::Java.is_private("100.64.0.1".parse().unwrap()));
    }
}
