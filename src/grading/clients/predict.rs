//! Each known client's verdict on a frame: its parser's prediction (the parsers are in the
//! libraries' files), with what the client tier measured; the lines `decode --clients`,
//! `watch --clients` and `doctor` print; Azure's events, to which one library listens; and the
//! cluster support of a release.

use super::facts::{at_least, Client};
use super::frame_view::{fails, ignores, View};
use super::library::stackexchange_redis::{azure_reference_verdict, AZURE_LISTENER, AZURE_READ_AT};
use super::library::CLIENTS;
use super::reach::HANGS;
use crate::network::conn::EndpointType;
use crate::observe::record::{ClientVerdict, Verdict};
use crate::protocol::resp::Frame;

/// Every known client's verdict on `frame`; `asked` as in [`predict`].
pub fn verdicts(frame: &Frame<'_>, asked: Option<EndpointType>) -> Vec<ClientVerdict> {
    CLIENTS
        .iter()
        .map(|c| ClientVerdict {
            client: c.name.to_string(),
            version: c.version.to_string(),
            verdict: with_measured(c, frame, predict(c, frame, asked)),
        })
        .collect()
}

/// A predicted failure that the client tier measured too names the releases it was measured in;
/// a predicted action gets what the tier measured the client do with that notification.
pub(super) fn with_measured(c: &Client, frame: &Frame<'_>, verdict: Verdict) -> Verdict {
    let kind = View::of(frame).and_then(|v| v.kind);
    let fact = c
        .measured
        .iter()
        .find(|m| m.notification.is_some_and(|n| Some(n.as_bytes()) == kind));
    let Some(m) = fact else {
        return verdict;
    };
    match verdict {
        Verdict::Fails { how } => fails(format!(
            "{how}; measured in {} {} ({})",
            c.name,
            m.range(),
            m.run
        )),
        Verdict::Acts { reads, target } => Verdict::Acts {
            reads: format!(
                "{reads}; measured in {} {}: {} ({})",
                c.name,
                m.range(),
                m.what,
                m.run
            ),
            target,
        },
        other => other,
    }
}

/// The lines `decode --clients` and `watch --clients` print under a frame: one per client,
/// sanitised (a verdict quotes the frame's text).
pub fn lines(frame: &Frame<'_>, asked: Option<EndpointType>) -> Vec<String> {
    verdict_lines(&verdicts(frame, asked))
}

/// One line per verdict, `client version: verdict`, sanitised.
pub fn verdict_lines(verdicts: &[ClientVerdict]) -> Vec<String> {
    verdicts
        .iter()
        .map(|v| {
            let text = format!("{} {}: {}", v.client, v.version, v.verdict.describe());
            crate::shared::escape::sanitize(&text).into_owned()
        })
        .collect()
}

/// The one line `watch --clients` adds under a notification: every client's outcome, the how
/// of a failure spelled out (sanitised).
pub fn summary_line(frame: &Frame<'_>, asked: Option<EndpointType>) -> String {
    // The prediction alone: the releases a failure was measured in are `decode --clients`' and
    // `doctor`'s to say, not a line under every notification of a watch.
    let parts: Vec<String> = CLIENTS
        .iter()
        .map(|c| {
            let verdict = predict(c, frame, asked);
            if let Some(why) = predicted_hang(&verdict) {
                return format!("{} HANGS ({why})", c.name);
            }
            match verdict {
                Verdict::Fails { how } => format!("{} FAILS ({how})", c.name),
                other => format!("{} {}", c.name, other.outcome()),
            }
        })
        .collect();
    crate::shared::escape::sanitize(&format!("clients: {}", parts.join("; "))).into_owned()
}

/// The hang an `acts` verdict predicts (the client acts, then sends nothing): the text after
/// [`HANGS`], why its target cannot be connected to and what it does meanwhile.
pub fn predicted_hang(verdict: &Verdict) -> Option<&str> {
    match verdict {
        Verdict::Acts { reads, .. } => reads.split_once(HANGS).map(|(_, why)| why),
        _ => None,
    }
}

/// What each known client does with an `AzureRedisEvents` message. Only StackExchange.Redis
/// subscribes to the channel; the others never receive it.
pub fn azure_verdicts(event: &crate::protocol::azure::AzureEvent) -> Vec<ClientVerdict> {
    CLIENTS
        .iter()
        .map(|c| {
            let (version, verdict) = if c.name == AZURE_LISTENER {
                (AZURE_READ_AT, azure_reference_verdict(event))
            } else {
                (c.version, ignores("does not subscribe to AzureRedisEvents"))
            };
            ClientVerdict {
                client: c.name.to_string(),
                version: version.to_string(),
                verdict,
            }
        })
        .collect()
}

/// What `client`'s parser does with `frame`, for a client that asked for `asked` (`None`: the
/// client's `auto`, which never asks for `none`).
pub fn predict(client: &Client, frame: &Frame<'_>, asked: Option<EndpointType>) -> Verdict {
    let Some(view) = View::of(frame) else {
        return ignores("not a push frame");
    };
    let name = view
        .kind
        .and_then(|k| std::str::from_utf8(k).ok())
        .filter(|k| crate::shared::NOTIFICATION_TYPES.contains(k));
    let Some(name) = name else {
        return match client.parser {
            None => Verdict::Unknown,
            Some(_) => ignores("not one of its notification types (matched case-sensitively)"),
        };
    };
    match client.parser {
        Some(parse) => parse(name, &view, asked),
        None => Verdict::Unknown,
    }
}

/// Whether `version` of the client `name` has a cluster client that handles the notifications;
/// `None` for a client not known or a release not established.
pub fn has_cluster(name: &str, version: &str) -> Option<bool> {
    let c = CLIENTS.iter().find(|c| c.name == name)?;
    Some(at_least(version, c.cluster_since?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> Frame<'_> {
        let scan = crate::protocol::resp::Scanner::default()
            .scan(bytes)
            .unwrap();
        match scan {
            crate::protocol::resp::Scan::Frame(f, _) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_measured_failure_names_its_releases_and_only_under_its_notification() {
        let moving = frame(b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
        let node = verdicts(&moving, None)
            .into_iter()
            .find(|v| v.client == "node-redis")
            .unwrap();
        let text = node.verdict.describe();
        assert!(
            text.ends_with(
                "; measured in node-redis 5.9.0 through 6.3.1 (the client matrix of 2026-12-03)"
            ),
            "{text}"
        );
        assert!(!summary_line(&moving, None).contains("measured"));
        let migrating = frame(b">3\r\n$9\r\nMIGRATING\r\n:1\r\n:2\r\n");
        let all: Vec<String> = verdicts(&migrating, None)
            .iter()
            .map(|v| v.verdict.describe())
            .collect();
        assert!(all.iter().all(|t| !t.contains("measured")), "{all:?}");
    }

    /// redis-py moves its pool to the MOVING's host and keeps the port it had, as measured in
    /// the robustness set: the target is what its parser read, the line says the port is not
    /// used.
    #[test]
    fn redis_py_moves_to_the_host_and_keeps_its_port() {
        let f = frame(b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n$14\r\n10.0.0.9:13000\r\n");
        match predict(&CLIENTS[0], &f, None) {
            Verdict::Acts { reads, target } => {
                assert_eq!(target, Some(("10.0.0.9".to_string(), Some(13000))));
                assert!(reads.contains("keeping its own port"), "{reads}");
                assert!(
                    reads.contains("reads port 13000 and does not use it"),
                    "{reads}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// The robustness set's three MOVINGs to nowhere: redis-py, node-redis and Lettuce wait for
    /// the target and hang where it was measured (Lettuce drops the IPv6 forms unread); ioredis
    /// and go-redis hand off beside the connection they have and keep it.
    #[test]
    fn a_move_to_nowhere_hangs_the_clients_that_wait_for_the_target() {
        let hung = |target: &str| -> Vec<&str> {
            let bytes = format!(
                ">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n${}\r\n{target}\r\n",
                target.len()
            );
            let f = frame(bytes.as_bytes());
            let names = CLIENTS
                .iter()
                .filter(|c| predicted_hang(&predict(c, &f, None)).is_some());
            let names: Vec<&str> = names.map(|c| c.name).collect();
            assert_eq!(
                summary_line(&f, None).matches(" HANGS (").count(),
                names.len(),
                "{target}"
            );
            names
        };
        let waiting = ["redis-py", "node-redis", "Lettuce"];
        assert_eq!(hung("no-such-host.invalid:6379"), waiting);
        assert_eq!(hung("[::1]:9"), waiting[..2]);
        assert_eq!(hung("::1:9"), waiting[..2]);
        assert!(hung("10.0.0.7:12000").is_empty());
        assert!(hung("node-3.sim.maintwatch.test:6379").is_empty());
        // A window of 0 s: redis-py's pool goes back at once, and Lettuce's rebind ends.
        let now = frame(b">4\r\n$6\r\nMOVING\r\n:1\r\n:0\r\n$11\r\nx.invalid:1\r\n");
        let hung_now: Vec<&str> = CLIENTS
            .iter()
            .filter(|c| predicted_hang(&predict(c, &now, None)).is_some())
            .map(|c| c.name)
            .collect();
        assert_eq!(hung_now, ["node-redis"]);
        // node-redis reads an integer target as its digits (`String(push[3])`): a host, no port.
        let integer = frame(b">4\r\n$6\r\nMOVING\r\n:2\r\n:15\r\n:6379\r\n");
        match predict(&CLIENTS[1], &integer, None) {
            Verdict::Acts { reads, target } => {
                assert_eq!(target, Some(("6379".to_string(), None)));
                assert!(
                    reads.contains("; hangs: its port is not a number"),
                    "{reads}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn node_redis_asserts_on_a_null_target_unless_it_asked_for_none() {
        let f = frame(b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
        let node = &CLIENTS[1];
        assert_eq!(
            predict(node, &f, Some(EndpointType::InternalIp)).outcome(),
            "fails"
        );
        assert_eq!(
            predict(node, &f, Some(EndpointType::None)).outcome(),
            "acts"
        );
        assert_eq!(
            predict(&CLIENTS[0], &f, Some(EndpointType::InternalIp)).outcome(),
            "acts"
        );
    }
}
