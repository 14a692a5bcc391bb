//! Azure Cache for Redis's maintenance channel as the simulator plays it: the `azure` step, the
//! message text it publishes on `AzureRedisEvents`, and its narration.
//!
//! Azure Cache announces maintenance with pub/sub messages, not push notifications
//! (docs/protocol.md, "Azure Cache for Redis"), so a scenario of it publishes pipe-separated
//! key|value text to the connections subscribed to the channel. The text is built here from the
//! documented format and shares no code with the watcher's parser (`crate::protocol::azure`): a
//! misreading of the format in one must not be mirrored by the other.

use std::net::Ipv4Addr;
use std::time::{Duration, SystemTime};

use super::notation::{escape, unescape};

/// The channel Azure Cache publishes maintenance events on.
pub const CHANNEL: &[u8] = b"AzureRedisEvents";

/// The types the structured form accepts, spelt as Azure sends them.
pub const TYPES: [&str; 7] = [
    "NodeMaintenanceScheduled",
    "NodeMaintenanceStarting",
    "NodeMaintenanceStart",
    "NodeMaintenanceFailoverComplete",
    "NodeMaintenanceScaleComplete",
    "NodeMaintenanceEnded",
    "NodeMaintenanceFailover",
];

/// The TLS port Azure Cache listens on; the simulator has no TLS listener, so the messages name
/// Azure's default while `NonSSLPort` names the simulator's own port.
const SSL_PORT: u16 = 6380;

/// One message of an `azure` step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `azure P TYPE [start=SECONDS] [replica=true|false]`: the documented pairs, in the
    /// documented order. `start_ms` is scenario milliseconds after the step (no `start`: no
    /// `StartTimeInUTC` pair, as NodeMaintenanceStart comes). The node is proxy P.
    Fields {
        kind: String,
        start_ms: Option<u64>,
        replica: bool,
    },
    /// `azure P raw TEXT`: exact bytes (escaped as in `push P raw`), for malformed messages.
    Raw(Vec<u8>),
}

impl Message {
    /// Parses what follows `azure P`.
    pub fn parse(rest: &str) -> Result<Message, String> {
        let (kind, rest) = rest.trim().split_once(' ').unwrap_or((rest.trim(), ""));
        if kind == "raw" {
            return unescape(rest.trim()).map(Message::Raw);
        }
        if !TYPES.contains(&kind) {
            return Err(format!(
                "expected an Azure event type ({}) or 'raw', found {kind:?}",
                TYPES.join(", ")
            ));
        }
        let (mut start, mut replica) = (None, false);
        for word in rest.split_whitespace() {
            match word.split_once('=') {
                Some(("start", v)) => start = Some((seconds(v)? * 1000.0).round() as u64),
                Some(("replica", "true")) => replica = true,
                Some(("replica", "false")) => replica = false,
                _ => {
                    return Err(format!(
                        "expected start=SECONDS or replica=true|false, found {word:?}"
                    ))
                }
            }
        }
        Ok(Message::Fields {
            kind: kind.to_string(),
            start_ms: start,
            replica,
        })
    }

    /// The message's bytes when published at `now`: a start `start` scenario seconds later is
    /// `start / speed` real seconds later, in UTC.
    pub fn render(&self, now: SystemTime, speed: f64, node: Ipv4Addr, port: u16) -> Vec<u8> {
        let (kind, start, replica) = match self {
            Message::Raw(bytes) => return bytes.clone(),
            Message::Fields {
                kind,
                start_ms,
                replica,
            } => (kind, start_ms, replica),
        };
        let mut text = format!("NotificationType|{kind}");
        if let Some(ms) = start {
            // Azure writes whole seconds: the nearest one, so the window a client measures is
            // the scenario's to within half a second of real time (`start / speed` real seconds,
            // plus half a second, truncated).
            let at = now + Duration::from_secs_f64(*ms as f64 / 1000.0 / speed + 0.5);
            let utc: chrono::DateTime<chrono::Utc> = at.into();
            text.push_str(&format!(
                "|StartTimeInUTC|{}",
                utc.format("%Y-%m-%dT%H:%M:%S")
            ));
        }
        // .NET writes booleans as True and False.
        let replica = if *replica { "True" } else { "False" };
        text.push_str(&format!(
            "|IsReplica|{replica}|IPAddress|{node}|SSLPort|{SSL_PORT}|NonSSLPort|{port}"
        ));
        text.into_bytes()
    }

    /// One line for the narration.
    pub fn summary(&self) -> String {
        match self {
            Message::Fields {
                kind,
                start_ms,
                replica,
            } => {
                let node = if *replica { "replica" } else { "primary" };
                match start_ms {
                    Some(ms) => format!("{kind} ({node}, starting in {} s)", *ms as f64 / 1000.0),
                    None => format!("{kind} ({node})"),
                }
            }
            Message::Raw(bytes) => format!("raw {}", escape(bytes)),
        }
    }
}

fn seconds(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
        _ => Err(format!("expected 0 or more seconds, found {v:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_message_has_the_documented_pairs_in_order() {
        let m = Message::parse("NodeMaintenanceStarting start=20 replica=false").unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_300_000);
        let text = String::from_utf8(m.render(at, 2.0, Ipv4Addr::new(127, 0, 0, 2), 7000)).unwrap();
        assert_eq!(
            text,
            "NotificationType|NodeMaintenanceStarting|StartTimeInUTC|2026-12-03T12:13:30|IsReplica|False|IPAddress|127.0.0.2|SSLPort|6380|NonSSLPort|7000"
        );
        let start = Message::parse("NodeMaintenanceStart").unwrap();
        assert!(
            !String::from_utf8(start.render(at, 1.0, Ipv4Addr::LOCALHOST, 1))
                .unwrap()
                .contains("StartTimeInUTC")
        );
    }

    /// The start time is the nearest whole second (issue 50: truncated, a Starting sent 20 s
    /// ahead read as a 19 s window, closed "1.0 s past" it).
    #[test]
    fn the_start_time_is_the_nearest_whole_second() {
        let m = Message::parse("NodeMaintenanceStarting start=20").unwrap();
        let start_of = |ms: u64| {
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_300_000_000 + ms);
            let text = String::from_utf8(m.render(at, 1.0, Ipv4Addr::LOCALHOST, 1)).unwrap();
            text.split('|').nth(3).unwrap().to_string()
        };
        assert_eq!(start_of(0), "2026-12-03T12:13:40");
        assert_eq!(start_of(400), "2026-12-03T12:13:40");
        assert_eq!(start_of(600), "2026-12-03T12:13:41");
        assert_eq!(start_of(999), "2026-12-03T12:13:41");
    }

    #[test]
    fn unknown_types_and_fields_are_refused_and_raw_is_kept() {
        assert!(Message::parse("NodeMaintenanceLater")
            .unwrap_err()
            .contains("or 'raw'"));
        assert!(Message::parse("NodeMaintenanceEnded when=3")
            .unwrap_err()
            .contains("found \"when=3\""));
        assert_eq!(
            Message::parse(r"raw notificationtype|x\r").unwrap(),
            Message::Raw(b"notificationtype|x\r".to_vec())
        );
    }
}
