//! redis-py: its facts by release and its parser of notifications.

use crate::grading::clients::facts::{Auto, Client, Measured, Private, BACKSTOP_RUN, NO_BACKSTOP};
use crate::grading::clients::frame_view::{acts, fails, text, View};
use crate::grading::clients::reach::{self, hangs};
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

/// redis-py, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "redis-py",
    version: "8.1.0",
    opts_in_by_default: Some(true),
    opt_in_note: None,
    auto: Some(Auto::ByTypedHost(Private::Python)),
    since: &[("7.0.0", "maintenance notifications, sync standalone client"), ("7.2.0", "OSS cluster: SMIGRATING/SMIGRATED"), ("8.0.0", "RESP3 by default, so on without configuration"), ("8.1.0", "asyncio, standalone and cluster")],
    cluster_since: Some("7.2.0"),
    measured: &[Measured {
        first: "7.0.1",
        last: "8.1.0",
        notification: None,
        what: NO_BACKSTOP,
        run: BACKSTOP_RUN,
    }],
    parser: Some(redis_py),
};

/// redis-py 8.1.0 `_parsers/base.py`: elements by index, errors caught and logged by
/// `handle_push_response` (the frame is then dropped).
pub(super) fn redis_py(name: &str, v: &View<'_, '_>, _asked: Option<EndpointType>) -> Verdict {
    let logged = |what: &str| {
        fails(format!(
            "{what}; logged as an error, the notification dropped"
        ))
    };
    let time_ok = matches!(v.at(2), Some(Frame::Integer(_)) | Some(Frame::Double(_)));
    match name {
        "MOVING" => {
            if v.len() < 4 {
                return logged("IndexError (no endpoint element)");
            }
            if !time_ok {
                return logged("TypeError (the time is not a number)");
            }
            match v.at(3) {
                Some(Frame::Null) => {
                    acts("no endpoint: reconnects where it is, at half the window")
                }
                Some(f) => {
                    let s = match f {
                        Frame::Integer(n) => n.to_string(),
                        other => text(other).unwrap_or_default(),
                    };
                    let Some((host, port)) = s.rsplit_once(':') else {
                        return logged(&format!("ValueError (endpoint {s:?} has no ':')"));
                    };
                    let Ok(port) = port.trim().parse::<i64>() else {
                        return logged(&format!("ValueError (port {port:?})"));
                    };
                    move_to(host, port, v)
                }
                None => logged("IndexError"),
            }
        }
        "MIGRATING" | "FAILING_OVER" => {
            if v.len() < 3 {
                return logged("IndexError (no time element)");
            }
            if !time_ok {
                return logged("TypeError (the time is not a number)");
            }
            acts("relaxes the connection's timeouts")
        }
        "MIGRATED" | "FAILED_OVER" => {
            if v.len() < 2 {
                return logged("IndexError (no seq element)");
            }
            acts("restores the connection's timeouts")
        }
        "SMIGRATING" => {
            if v.len() < 3 {
                return logged("IndexError (no slots element)");
            }
            acts("relaxes the connection's timeouts (slots as text)")
        }
        _ => smigrated_py(v),
    }
}

/// A MOVING to `host` (`port` read and not used). The target is what the parser read, port
/// included (the parser conformance test holds it); the pool's new connection arguments take the
/// host alone (`_build_moving_connection_kwargs`), so the port is the one it had, as the
/// robustness set measured (docs/clients.md). A host it cannot connect to hangs it for the
/// window, after which the pool goes back to its own.
fn move_to(host: &str, port: i64, v: &View<'_, '_>) -> Verdict {
    let mut reads = format!(
        "moves to host {host:?}, keeping its own port (it reads port {port} and does not use it)"
    );
    let window = match v.at(2) {
        Some(Frame::Integer(n)) => *n as f64,
        Some(Frame::Double(d)) => *d,
        _ => 0.0,
    };
    if let Some(why) = reach::host(host).filter(|_| window > 0.0) {
        let what = format!(
            "it points every connection of its pool there and each command fails to connect, \
             until the window's {window} s end and the pool goes back \
             (redis/maint_notifications.py, handle_node_moving_notification)"
        );
        reads = hangs(reads, &why, &what);
    }
    Verdict::Acts {
        reads,
        target: Some((host.to_string(), Some(port))),
    }
}

pub(super) fn smigrated_py(v: &View<'_, '_>) -> Verdict {
    let logged = |what: &str| {
        fails(format!(
            "{what}; logged as an error, the notification dropped"
        ))
    };
    match v.at(2) {
        None => logged("IndexError (no triplets element)"),
        Some(Frame::Array(entries)) | Some(Frame::Set(entries)) => {
            for e in entries {
                match e.unattributed() {
                    Frame::Array(t) | Frame::Set(t) if t.len() == 3 => {}
                    Frame::Array(t) | Frame::Set(t) => {
                        return logged(&format!(
                            "ValueError (an entry of {} elements, not a triplet)",
                            t.len()
                        ))
                    }
                    _ => return logged("TypeError (an entry that is not a list)"),
                }
            }
            acts(format!(
                "updates the slot map from {} triplet(s)",
                entries.len()
            ))
        }
        Some(Frame::Blob([])) => acts("updates the slot map from 0 triplets"),
        Some(_) => logged("TypeError (the triplets element is not a list)"),
    }
}
