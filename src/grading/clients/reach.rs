//! Whether a MOVING's target, as a client read it, can be connected to at all, judged from the
//! frame. A parser says what a client reads; where that leads nowhere, the clients that wait for
//! the target stop sending (a hang, `keeps-working` in the robustness set) and the ones that hand
//! off beside the connection they have keep it. Each library's parser says which it does, with
//! the phrase [`hangs`] puts in its verdict.

/// The phrase that marks a predicted hang inside an `acts` verdict: the client acts on the
/// notification, then sends nothing. `decode --clients` shows it, and the robustness test reads
/// it (docs/clients.md, "The robustness set, measured").
pub const HANGS: &str = "; hangs: ";

/// `reads` followed by the hang: why the target cannot be connected to, and what the client does
/// meanwhile (where in its source).
pub(super) fn hangs(reads: String, why: &str, what: &str) -> String {
    format!("{reads}{HANGS}{why}: {what}")
}

/// Why `host` cannot be connected to, from its text alone; `None` when it may be.
///
/// - A name under `.invalid` never resolves: RFC 6761 reserves the top-level domain for names
///   that must not, and resolvers answer NXDOMAIN for it without asking.
/// - Text that is neither an IP address nor a host name (brackets kept around an IPv6 address,
///   a `?`) resolves to nothing.
/// - `::1`, the IPv6 loopback, is the client's own machine. This one rests on where servers
///   listen rather than on the text: a server on another machine is not there, and neither is
///   maintwatch's simulator, which listens on 127.0.0.0/8 only (its MOVINGs to other proxies
///   name 127.0.0.x, so the IPv4 loopback is not counted).
pub(super) fn host(host: &str) -> Option<String> {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "invalid" || name.ends_with(".invalid") {
        return Some(format!(
            "{host:?} is under .invalid, which never resolves (RFC 6761)"
        ));
    }
    let address = host.split('%').next().unwrap_or_default();
    match address.parse::<std::net::IpAddr>() {
        Ok(ip) if ip == std::net::Ipv6Addr::LOCALHOST => Some(format!(
            "{host:?} is the IPv6 loopback: its own machine, not a server's"
        )),
        Ok(_) => None,
        // An empty host is the local machine to some resolvers (Java's): not counted.
        Err(_) if !host.is_empty() && !is_name(host) => {
            Some(format!("{host:?} is neither an IP address nor a name"))
        }
        Err(_) => None,
    }
}

/// Why `port` (the frame's, as the client parsed it: `None` when not a number) cannot be
/// connected to; `None` when it may be.
pub(super) fn port(port: Option<i64>) -> Option<String> {
    match port {
        None => Some("its port is not a number".to_string()),
        Some(0) => Some("port 0 accepts no connection".to_string()),
        Some(p) if !(1..=65535).contains(&p) => Some(format!("port {p} is out of range")),
        Some(_) => None,
    }
}

/// The first of the port's and the host's reasons, for a client that uses both.
pub(super) fn endpoint(host_text: &str, port_number: Option<i64>) -> Option<String> {
    port(port_number).or_else(|| host(host_text))
}

/// A host name as resolvers take it: letters, digits, `-` and `_` in dot-separated labels
/// (looser than DNS: what a resolver is asked for is its business).
fn is_name(host: &str) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host);
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_lead_nowhere_say_why() {
        for (h, why) in [
            ("no-such-host.invalid", "under .invalid"),
            ("DB.INVALID.", "under .invalid"),
            ("[::1]", "neither an IP address nor a name"),
            ("[", "neither an IP address nor a name"),
            ("?", "neither an IP address nor a name"),
            ("::1", "IPv6 loopback"),
        ] {
            let said = host(h).unwrap_or_else(|| panic!("{h}: reachable?"));
            assert!(said.contains(why), "{h}: {said}");
        }
        for h in [
            "10.0.0.7",
            "127.0.0.3",
            "2001:db8::7",
            "::1:9",
            "node-3.sim.maintwatch.test",
            "invalid.example",
            "localhost",
            "",
        ] {
            assert_eq!(host(h), None, "{h}");
        }
    }

    #[test]
    fn a_port_leads_nowhere_when_it_is_not_one() {
        assert!(port(None).is_some());
        assert!(port(Some(0)).is_some());
        assert!(port(Some(70000)).unwrap().contains("out of range"));
        assert_eq!(port(Some(6379)), None);
        assert_eq!(endpoint("[", None), port(None));
        assert_eq!(endpoint("a.invalid", Some(1)), host("a.invalid"));
    }
}
