//! node-redis: its facts by release and its parser of notifications.

use crate::grading::clients::facts::{Auto, Client, Measured, Private, BACKSTOP_RUN, MATRIX_RUN, NO_BACKSTOP};
use crate::grading::clients::frame_view::{acts, fails, text, View};
use crate::grading::clients::reach::{self, hangs};
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

/// node-redis, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "node-redis",
    version: "6.3.1",
    opts_in_by_default: Some(true),
    opt_in_note: None,
    auto: Some(Auto::ByTls(Private::NodeList)),
    since: &[("5.9.0", "maintenance notifications, off by default"), ("5.11.0", "OSS cluster"), ("6.0.0", "RESP3 and maintNotifications 'auto' by default")],
    cluster_since: Some("5.11.0"),
    measured: &[
        Measured {
            first: "5.9.0",
            last: "6.3.1",
            notification: Some("MOVING"),
            what: "a MOVING with a null target, after an opt-in that did not ask for `none`, \
                   ends the process: an AssertionError in an async push handler, unhandled",
            run: MATRIX_RUN,
        },
        Measured {
            first: "5.11.0",
            last: "6.3.1",
            notification: None,
            what: "its cluster client reads the topology on one connection without the opt-in, its \
                   seed, and closes it before any notification could reach it",
            run: MATRIX_RUN,
        },
        Measured {
            first: "5.9.0",
            last: "5.9.0",
            notification: None,
            what: "names itself 5.9.0-beta.3 in CLIENT SETINFO lib-ver (its @redis/client's \
                   package.json), so a grade calls it node-redis/5.9.0-beta.3",
            run: MATRIX_RUN,
        },
        Measured {
            first: "5.9.0",
            last: "6.3.1",
            notification: None,
            what: NO_BACKSTOP,
            run: BACKSTOP_RUN,
        },
    ],
    parser: Some(node_redis),
};

/// node-redis 6.3.1 `enterprise-maintenance-manager.ts`: a MOVING without a target asserts the
/// client asked for `none`, inside an async handler (an unhandled promise rejection).
pub(super) fn node_redis(name: &str, v: &View<'_, '_>, asked: Option<EndpointType>) -> Verdict {
    match name {
        "MOVING" => {
            let target = match v.at(3) {
                None
                | Some(Frame::Null)
                | Some(Frame::Integer(0))
                | Some(Frame::Boolean(false)) => None,
                // `String(push[3])`: an integer is its digits.
                Some(Frame::Integer(n)) => Some(n.to_string()),
                Some(f) => Some(text(f).unwrap_or_default()),
            };
            let Some(target) = target else {
                if asked != Some(EndpointType::None) {
                    let asked = asked.map_or("its auto type".to_string(), |a| a.to_string());
                    return fails(format!(
                        "AssertionError (no target, and it asked for {asked}, not none) in an async \
                         handler: an unhandled promise rejection"
                    ));
                }
                return acts("no endpoint: reconnects where it is, after half the window");
            };
            let mut parts = target.split(':');
            let host = parts.next().unwrap_or_default().to_string();
            let port = parts.next().and_then(|p| p.trim().parse::<i64>().ok());
            let shown = port.map_or("NaN".to_string(), |p| p.to_string());
            let mut reads = format!("moves to host {host:?} port {shown} (split on the first ':')");
            if let Some(why) = reach::endpoint(&host, port) {
                // The socket options' form, which the robustness application uses; with a `url`
                // option a port that is not a number leaves the URL's own.
                reads = hangs(
                    reads,
                    &why,
                    "it pauses writing and waits for a client to the target to connect, which \
                     none does, retrying (enterprise-maintenance-manager.ts, #onMoving)",
                );
            }
            Verdict::Acts {
                reads,
                target: Some((host, port)),
            }
        }
        "MIGRATING" | "FAILING_OVER" | "SMIGRATING" => acts("relaxes timeouts (reads no element)"),
        "MIGRATED" | "FAILED_OVER" => acts("restores timeouts (reads no element)"),
        _ => smigrated_node(v),
    }
}

pub(super) fn smigrated_node(v: &View<'_, '_>) -> Verdict {
    let Some(Frame::Array(entries)) = v.at(2) else {
        return match v.at(2) {
            Some(Frame::Blob([])) => acts("updates the slot map from nothing"),
            _ => fails("TypeError (the entries are not iterable) thrown in the push handler"),
        };
    };
    let mut pairs = 0;
    for e in entries {
        match e.unattributed() {
            Frame::Array(t) if t.len() >= 3 => {}
            Frame::Array(_) => pairs += 1,
            Frame::Blob(_) | Frame::Simple(_) => {}
            _ => return fails("TypeError (an entry is not iterable) thrown in the push handler"),
        }
    }
    if pairs > 0 {
        return acts(format!(
            "updates the slot map, but {pairs} entr(y/ies) of fewer than 3 elements: reads the \
             second as the target address and no slots"
        ));
    }
    acts(format!(
        "updates the slot map from {} triplet(s)",
        entries.len()
    ))
}
