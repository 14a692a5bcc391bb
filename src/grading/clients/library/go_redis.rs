//! go-redis: its facts by release, what its tier measured, and its parser of notifications.

use crate::grading::clients::facts::{Auto, Client, Measured, Private};
use crate::grading::clients::frame_view::{acts, fails, is_int, text, View};
use crate::grading::clients::reach;
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

/// go-redis, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "go-redis",
    version: "9.22.0",
    opts_in_by_default: Some(true),
    opt_in_note: None,
    auto: Some(Auto::ByTls(Private::GoWithCgnat)),
    since: &[("9.16.0", "maintnotifications, generally available"), ("9.18.0", "cluster: SMIGRATING/SMIGRATED")],
    cluster_since: Some("9.18.0"),
    measured: GO_REDIS_MEASURED,
    parser: Some(go_redis),
};

/// The client matrix run that established go-redis's [`Measured`] facts (9.16.0, 9.18.0 and
/// 9.23.0, `tests/it/go_redis.rs`; docs/clients.md, "go-redis, measured").
pub const GO_REDIS_RUN: &str = "the client matrix of 2026-12-04";

/// What the go-redis tier measured: its applications at their defaults (RESP3, ModeAuto), a 1 s
/// read and write timeout, by the simulator's host name through Go's own resolver.
pub(super) const GO_REDIS_MEASURED: &[Measured] = &[
    Measured {
        first: "9.16.0",
        last: "9.18.0",
        notification: None,
        what: "`auto` asks for external-fqdn for a host name with dots that none of its internal \
               patterns matches, over plain TCP: it judges the name's text, not its address",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.23.0",
        last: "9.23.0",
        notification: None,
        what: "`auto` resolves the host name and asks for internal-ip for its loopback address \
               over plain TCP",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.16.0",
        last: "9.23.0",
        notification: Some("MOVING"),
        what: "it acts on every copy of a MOVING, re-sent ones included: a connection it hands \
               off to an address DNS still gives the retiring proxy gets the MOVING again and is \
               handed off again (single-proxy, dns-race: no-loop FAIL)",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.16.0",
        last: "9.23.0",
        notification: None,
        what: "it relaxes a 1 s timeout inside a MIGRATING or FAILING_OVER window (it waited \
               through a 1.5 s stall) and is back to 1 s on a stall 23 s after it, 21 s after \
               the closing notification",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.16.0",
        last: "9.23.0",
        notification: None,
        what: "after a MIGRATING with no MIGRATED it stays relaxed for good: it waited through a \
               3 s stall 31 s after it, past the 30 s backstop (no-closing-notification: \
               timeout-restored FAIL)",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.18.0",
        last: "9.23.0",
        notification: Some("SMIGRATED"),
        what: "its ClusterClient at the default configuration (no MaintNotificationsConfig) \
               never reads the topology again on it: the reload is wired only when the \
               configuration is set",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.23.0",
        last: "9.23.0",
        notification: None,
        what: "after one refused opt-in, `auto` turns the feature off for the whole client: its \
               later connections send no opt-in",
        run: GO_REDIS_RUN,
    },
    Measured {
        first: "9.23.0",
        last: "9.23.0",
        notification: None,
        what: "its ClusterClient replaces the loopback node addresses of CLUSTER SLOTS with the \
               seed's host name, so a sharded subscription first goes to the name's address; \
               refused there with -MOVED, it is not tried again",
        run: GO_REDIS_RUN,
    },
];

/// The host and port go-redis's handoff dials for `endpoint`: Go's split of `host:port` or
/// `[host]:port`, and, where that fails (no port, or a bare IPv6 address), the whole text as the
/// host with port 6379 (`handoff_worker.go`, `createEndpointDialer`); `None`: a port that is
/// not a number, on which the dial fails.
fn dialled(endpoint: &str) -> (String, Option<i64>) {
    let split = match endpoint.strip_prefix('[') {
        Some(rest) => rest.split_once("]:"),
        None if endpoint.matches(':').count() == 1 => endpoint.split_once(':'),
        None => None,
    };
    match split {
        Some((host, port)) => (host.to_string(), port.parse().ok()),
        None => (endpoint.to_string(), Some(6379)),
    }
}

/// go-redis 9.22.0 `maintnotifications/push_notification_handler.go`: a rejected frame is logged
/// and returned as `ErrInvalidNotification`.
pub(super) fn go_redis(name: &str, v: &View<'_, '_>, _asked: Option<EndpointType>) -> Verdict {
    let rejected = |what: &str| fails(format!("rejected ({what}): logged, ErrInvalidNotification"));
    match name {
        "MOVING" => {
            if v.len() < 3 {
                return rejected("fewer than 3 elements");
            }
            if !is_int(v.at(1)) || !is_int(v.at(2)) {
                return rejected("seq or time not an integer");
            }
            match v.at(3) {
                None | Some(Frame::Null) => {
                    acts("no endpoint: reconnects to its current address after half the window")
                }
                Some(f @ (Frame::Blob(_) | Frame::Simple(_))) => {
                    let endpoint = text(f).unwrap_or_default();
                    if endpoint.is_empty() || endpoint == "<nil>" {
                        return acts(
                            "no endpoint: reconnects to its current address after half the window",
                        );
                    }
                    // Handed to the dialer as it is: "[::1]:7000" dials, "null" or "?" fails then.
                    let mut reads =
                        format!("hands the connection off to {endpoint:?} (dialled as given)");
                    let (host, port) = dialled(&endpoint);
                    if let Some(why) = reach::endpoint(&host, port) {
                        reads.push_str(&format!(
                            "; it cannot dial there ({why}): it tries again, then drops that \
                             connection from its pool and dials its own address, so it does not \
                             hang (maintnotifications/handoff_worker.go)"
                        ));
                    }
                    Verdict::Acts {
                        reads,
                        target: Some((endpoint, None)),
                    }
                }
                Some(_) => rejected("the endpoint is not a string"),
            }
        }
        "MIGRATING" | "FAILING_OVER" => {
            if v.len() < 2 {
                return rejected("fewer than 2 elements");
            }
            acts("relaxes this connection's timeouts")
        }
        "MIGRATED" | "FAILED_OVER" => {
            if v.len() < 2 {
                return rejected("fewer than 2 elements");
            }
            acts("restores this connection's timeouts")
        }
        "SMIGRATING" => {
            if v.len() < 3 || !is_int(v.at(1)) {
                return rejected("fewer than 3 elements or seq not an integer");
            }
            acts("relaxes this connection's timeouts")
        }
        _ => {
            if v.len() < 3 || !is_int(v.at(1)) {
                return rejected("fewer than 3 elements or seq not an integer");
            }
            let Some(Frame::Array(entries)) = v.at(2) else {
                return rejected("the triplets element is not an array");
            };
            if entries.is_empty() {
                return rejected("no triplets");
            }
            let good = entries
                .iter()
                .filter(|e| matches!(e.unattributed(), Frame::Array(t) if t.len() == 3 && t.iter().all(|x| text(x).is_some())))
                .count();
            if good == 0 {
                return acts("skips every entry (not a triplet of strings): nothing moves");
            }
            acts(format!(
                "updates the slot map from {good} triplet(s), skipping {}",
                entries.len() - good
            ))
        }
    }
}
