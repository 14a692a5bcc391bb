//! Lettuce: its facts by release and its parser of notifications.

use crate::grading::clients::facts::{Auto, Client, Measured, Private, JVM_RUN};
use crate::grading::clients::frame_view::{acts, fails, ignores, is_int, text, View};
use crate::grading::clients::reach::{self, hangs};
use crate::network::conn::EndpointType;
use crate::observe::record::Verdict;
use crate::protocol::resp::Frame;

/// Lettuce, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "Lettuce",
    version: "7.8.0-SNAPSHOT",
    opts_in_by_default: Some(true),
    opt_in_note: None,
    auto: Some(Auto::ByTls(Private::Java)),
    since: &[("7.0.0", "maintenance notifications, on by default")],
    cluster_since: None,
    measured: &[
        Measured {
            first: "7.0.3",
            last: "7.7.0",
            notification: None,
            what: "opts in with no option set, after HELLO 3 and CLIENT SETINFO: CLIENT \
                   MAINT_NOTIFICATIONS on moving-endpoint-type internal-ip to a loopback \
                   address over plain TCP",
            run: JVM_RUN,
        },
        Measured {
            first: "7.7.0",
            last: "7.7.0",
            notification: None,
            what: "its synchronous API gives up at the connection's own timeout inside a \
                   FAILING_OVER or MIGRATING window too (the relaxation reaches only the \
                   command's expiry), and giving up does not close the connection",
            run: JVM_RUN,
        },
    ],
    parser: Some(lettuce),
};

/// Lettuce (main, August 2026) `MaintenanceAwareConnectionWatchdog.java`: no SMIGRATING or
/// SMIGRATED; MOVING must have exactly 4 elements; the target is split on ':'.
pub(super) fn lettuce(name: &str, v: &View<'_, '_>, _asked: Option<EndpointType>) -> Verdict {
    match name {
        "MOVING" => {
            if v.len() != 4 {
                return ignores(format!(
                    "a MOVING of {} elements, not 4: logged as a warning",
                    v.len()
                ));
            }
            if !is_int(v.at(1)) || !is_int(v.at(2)) {
                return fails("ClassCastException (seq or time not an integer): logged, dropped");
            }
            let target = match v.at(3) {
                Some(Frame::Null) => None,
                Some(f) => match text(f) {
                    Some(t) if t == "null" => None,
                    Some(t) => Some(t),
                    None => {
                        return fails("ClassCastException (target not a string): logged, dropped")
                    }
                },
                None => None,
            };
            let Some(target) = target else {
                return acts("no endpoint: rebinds to where it is");
            };
            let parts: Vec<&str> = target.split(':').collect();
            match parts.get(1).map(|p| p.parse::<i32>()) {
                // The address's constructor takes ports 0 to 65535 and throws on the others.
                Some(Ok(port)) if !(0..=65535).contains(&port) => fails(format!(
                    "IllegalArgumentException (port {port} out of range): logged, dropped"
                )),
                Some(Ok(port)) => rebind(parts[0], i64::from(port), v),
                Some(Err(_)) => fails(format!(
                    "NumberFormatException (port {:?}): logged, dropped",
                    parts[1]
                )),
                None => {
                    fails("ArrayIndexOutOfBoundsException (no ':' in the target): logged, dropped")
                }
            }
        }
        "MIGRATING" | "FAILING_OVER" | "MIGRATED" | "FAILED_OVER" => {
            let (index, what) = match name {
                "MIGRATING" | "FAILING_OVER" => {
                    (3, "notifies its listeners that a maintenance started")
                }
                _ => (2, "notifies its listeners that a maintenance ended"),
            };
            // A missing or non-string shard list is logged and passed on as null: the
            // notification still goes to the listeners.
            match v.at(index) {
                Some(Frame::Blob(_)) => acts(format!("{what} (with the shard list)")),
                _ => acts(format!("{what}, with no shard list (logs a warning)")),
            }
        }
        _ => ignores("no handling of SMIGRATING / SMIGRATED"),
    }
}

/// A MOVING to `host` and `port`: it rebinds there for the window, and hangs when the target
/// cannot be connected to, its reconnects going to the target alone until the window ends.
fn rebind(host: &str, port: i64, v: &View<'_, '_>) -> Verdict {
    let mut reads = format!("rebinds to host {host:?} port {port}");
    let window = match v.at(2) {
        Some(Frame::Integer(n)) => *n,
        _ => 0,
    };
    if let Some(why) = reach::endpoint(host, Some(port)).filter(|_| window > 0) {
        reads = hangs(
            reads,
            &why,
            &format!(
                "it closes each connection to rebind there, and its watchdog reconnects to the \
                 target alone until the window's {window} s end \
                 (MaintenanceAwareConnectionWatchdog, RebindAwareAddressSupplier)"
            ),
        );
    }
    Verdict::Acts {
        reads,
        target: Some((host.to_string(), Some(port))),
    }
}
