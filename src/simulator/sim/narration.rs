//! What the simulator narrates: each thing it did as a [`SimEvent`], stamped with the wall and
//! scenario clocks, and the words the CLI prints for it. Kept apart from the player so that the
//! narration can be read (and changed) without the machinery that produces it.

use super::notation::escape;
use super::scenario::Hostile;
use crate::simulator::sim::{scenario, HOSTNAME};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::SystemTime;

/// One thing the simulator did, as it did it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimEvent {
    /// Wall clock when it happened; for a frame, right after the bytes were written.
    pub at: SystemTime,
    /// Scenario seconds since the clock started (at speed 1), `None` before it has started.
    pub clock: Option<f64>,
    pub what: What,
}

/// Why a notification frame was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A scenario step (its line in the file).
    Step { line: usize },
    /// The retained MIGRATED / FAILED_OVER, replayed after an opt-in's `+OK`.
    CatchUp,
    /// An open MOVING (or, in the fault injector's mode, an open MIGRATING, FAILING_OVER or
    /// SMIGRATING), re-sent (same seq) to a connection that opted in during its window.
    Resent,
    /// The scenario ended: the simulator's own marker, sent to maintwatch's connections only
    /// ([`crate::observe::timeline::SCENARIO_END`]).
    ScenarioEnd,
    /// Injected through the proxy API (`simulate --proxy-api`): written as the HTTP request
    /// gave it, to every connection it named, opted in or not.
    Api,
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The scenario clock started (iterations count from 1).
    Started { iteration: u64 },
    Connected {
        conn: u64,
        proxy: SocketAddr,
        peer: SocketAddr,
    },
    /// A command that is part of a handshake or of the topology (data commands such as GET,
    /// SET and PING are served but not narrated). Passwords are redacted.
    Command {
        conn: u64,
        proxy: SocketAddr,
        command: String,
        reply: String,
    },
    /// `CLIENT MAINT_NOTIFICATIONS ON|OFF`, answered.
    OptIn {
        conn: u64,
        proxy: SocketAddr,
        on: bool,
        accepted: bool,
        endpoint_type: Option<String>,
    },
    /// A push step ran: what, with which seq, to how many opted-in connections.
    Pushed {
        line: usize,
        summary: String,
        seq: Option<i64>,
        proxies: Vec<SocketAddr>,
        recipients: usize,
    },
    /// A notification frame was written to a connection (exact bytes). The event's `at` is the
    /// wall clock right after the write returned; `writing` is right before it began (for a
    /// trickled frame, its last byte), so the bytes reached the socket between the two.
    Sent {
        conn: u64,
        proxy: SocketAddr,
        bytes: Vec<u8>,
        why: Why,
        writing: SystemTime,
    },
    /// The database hostname now answers these A records (already in effect).
    Dns { records: Vec<IpAddr>, ttl: u32 },
    /// The DNS server answered a query from `from` for `name` (with the records in effect).
    Resolved { from: SocketAddr, name: String },
    /// A node-wide close: every connection of that proxy, opted in or not.
    Closed {
        proxy: SocketAddr,
        connections: usize,
        opted_in: usize,
        restart: bool,
    },
    /// A proxy stopped or started listening (already in effect).
    Listening { proxy: SocketAddr, up: bool },
    /// Cluster slots changed owner.
    Assigned { slots: String, node: SocketAddr },
    /// A narration line from the scenario (something with no wire effect).
    Say { line: usize, text: String },
    /// A command for a key of a slot this node does not serve was answered `-MOVED`.
    Redirected {
        conn: u64,
        proxy: SocketAddr,
        slot: u16,
        to: SocketAddr,
    },
    /// A sharded subscription began (`SSUBSCRIBE`) or ended: by the client's `SUNSUBSCRIBE`, or
    /// by the server when the channel's slot moved away (`by_server`). The channel is escaped.
    Sharded {
        conn: u64,
        proxy: SocketAddr,
        channel: String,
        slot: u16,
        on: bool,
        by_server: bool,
    },
    /// A `spublish` tick: one message on a sharded channel, published by the slot's owner and
    /// sent to the connections subscribed to it there (none, when the subscription was lost).
    Published {
        channel: String,
        slot: u16,
        node: SocketAddr,
        message: u64,
        recipients: Vec<u64>,
    },
    /// A connection subscribed to a channel (SUBSCRIBE), or left it (UNSUBSCRIBE), in an Azure
    /// scenario, where the simulator answers these itself. The channel is escaped.
    Subscribed {
        conn: u64,
        proxy: SocketAddr,
        channel: String,
        on: bool,
    },
    /// An `azure` step: the message published on `AzureRedisEvents` by one proxy (escaped), to
    /// how many of its subscribers.
    AzurePublished {
        line: usize,
        summary: String,
        proxy: SocketAddr,
        payload: String,
        recipients: usize,
    },
    /// A stall step: the proxies hold every reply for `seconds` of real time.
    Stalled {
        line: usize,
        proxies: Vec<SocketAddr>,
        seconds: f64,
    },
    /// A command waited on a reply a stall held, for `waited` real seconds: until the stall
    /// ended and the reply went out, or until the client gave up and closed the connection.
    /// `writes`: when the client wrote more on the connection meanwhile, real seconds after the
    /// reply was first held (at most one per 10 ms).
    Waited {
        conn: u64,
        proxy: SocketAddr,
        waited: f64,
        gave_up: bool,
        writes: Vec<f64>,
    },
    /// A connection ended, closed by the server (a close step, QUIT, a protocol error) or not.
    Disconnected {
        conn: u64,
        proxy: SocketAddr,
        by_server: bool,
    },
    /// The scenario reached its end.
    Finished { iteration: u64 },
    /// Commands read from a connection in one batch, and error replies written to it (the
    /// simulator's own or relayed); `unanswered` is how many commands were still waiting for a
    /// reply when the connection ended. Only with [`SimOptions::traffic`].
    Traffic {
        conn: u64,
        proxy: SocketAddr,
        commands: u32,
        errors: u32,
        unanswered: u32,
    },
    /// The client named itself: `CLIENT SETINFO LIB-NAME|LIB-VER`, `CLIENT SETNAME` or
    /// `HELLO ... SETNAME` (`field` is `lib-name`, `lib-ver` or `name`).
    ClientInfo {
        conn: u64,
        proxy: SocketAddr,
        field: &'static str,
        value: String,
    },
    /// Between loop iterations: DNS and listeners back to their initial state, every connection
    /// closed so clients start over.
    Reset { connections: usize },
    /// Something went wrong that does not stop the simulation (a proxy could not listen again).
    Error { message: String },
    /// A hostile step acted on a connection (`written`: bytes written at once; for a trickle,
    /// the frame's length, announced as it starts).
    Hostile {
        conn: u64,
        proxy: SocketAddr,
        kind: Hostile,
        written: usize,
    },
    /// A request of the proxy API (`simulate --proxy-api`) injected a frame: the route, the
    /// frame's first bytes (escaped), and what it reads as when it is a maintenance notification
    /// (for the grade): its type, seq, window (seconds) and target.
    Injected {
        route: String,
        summary: String,
        kind: Option<String>,
        seq: Option<i64>,
        window: f64,
        target: Option<String>,
        proxies: Vec<SocketAddr>,
        recipients: usize,
    },
    /// A proxy-API interceptor answered a command in place of the upstream (escaped, short).
    Intercepted {
        conn: u64,
        proxy: SocketAddr,
        name: String,
        command: String,
        reply: String,
    },
    /// A proxy-API node started or stopped listening, by `--listen` or `/nodes`.
    Node {
        id: String,
        proxy: SocketAddr,
        up: bool,
    },
    /// `mode silent`: bytes read from a connection and answered with nothing.
    Ignored {
        conn: u64,
        proxy: SocketAddr,
        bytes: usize,
    },
}

impl fmt::Display for SimEvent {
    /// One narration line: `+  9.700 s  DNS db.sim.maintwatch.test. -> 127.0.0.3 (TTL 5 s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.clock {
            Some(t) => write!(f, "+{t:7.3} s  ")?,
            None => f.write_str("   waiting  ")?,
        }
        self.what.fmt(f)
    }
}

impl fmt::Display for What {
    /// The narration after the clock. The longer variants have a helper each, so this match
    /// reads as the list of lines the simulator can print.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Started { iteration: 1 } => write!(f, "scenario clock started"),
            What::Started { iteration } => write!(f, "scenario clock started (iteration {iteration})"),
            What::Connected { conn, proxy, peer } => {
                write!(f, "conn {conn}: connected to {proxy} from {peer}")
            }
            What::Command {
                conn,
                proxy,
                command,
                reply,
            } => write!(f, "conn {conn} @{proxy}: {command} -> {reply}"),
            What::OptIn { .. } => self.fmt_opt_in(f),
            What::Pushed { .. } => self.fmt_pushed(f),
            What::Sent { .. } => self.fmt_sent(f),
            What::Dns { records, ttl } => {
                let r = join(records.iter(), " ");
                let r = if r.is_empty() { "no records (NXDOMAIN)".into() } else { r };
                write!(f, "DNS {HOSTNAME} -> {r} (TTL {ttl} s)")
            }
            What::Resolved { from, name } => {
                write!(f, "DNS query for {} from {from}", escape(name.as_bytes()))
            }
            What::Closed { .. } => self.fmt_closed(f),
            What::Listening { proxy, up: true } => write!(f, "{proxy} listening"),
            What::Listening { proxy, up: false } => {
                write!(f, "{proxy} stopped listening (connections refused)")
            }
            What::Assigned { slots, node } => write!(f, "slots {slots} now served by {node}"),
            What::Say { text, .. } => write!(f, "{text}"),
            What::Redirected {
                conn,
                proxy,
                slot,
                to,
            } => write!(f, "conn {conn} @{proxy}: -MOVED {slot} {to} (that slot is served there)"),
            What::Sharded { .. }
            | What::Published { .. }
            | What::Subscribed { .. }
            | What::AzurePublished { .. } => self.fmt_pubsub(f),
            What::Stalled {
                proxies, seconds, ..
            } => write!(
                f,
                "stall: {} hold every reply for {seconds} s (real time)",
                join(proxies.iter(), ", ")
            ),
            What::Waited { .. } => self.fmt_waited(f),
            What::Disconnected {
                conn,
                proxy,
                by_server,
            } => {
                let by = if *by_server { "server" } else { "client" };
                write!(f, "conn {conn} @{proxy}: closed by the {by}")
            }
            What::Finished { .. } => write!(f, "scenario ended"),
            What::Reset { connections } => write!(
                f,
                "loop: DNS and listeners reset, {connections} connection(s) closed so clients start over"
            ),
            What::Error { message } => write!(f, "error: {message}"),
            What::Hostile { .. } => self.fmt_hostile(f),
            What::Traffic { .. } => self.fmt_traffic(f),
            What::ClientInfo {
                conn,
                proxy,
                field,
                value,
            } => write!(f, "conn {conn} @{proxy}: client {field} {value}"),
            What::Ignored { conn, proxy, bytes } => write!(
                f,
                "conn {conn} @{proxy}: read {bytes} bytes, answered nothing (mode silent)"
            ),
            What::Injected { .. } | What::Intercepted { .. } | What::Node { .. } => self.fmt_api(f),
        }
    }
}

/// The per-variant helpers of `What`'s narration; each is called only for its own variant.
impl What {
    fn fmt_sent(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Sent {
            conn,
            proxy,
            bytes,
            why,
            ..
        } = self
        else {
            return Ok(());
        };
        let why = match why {
            Why::Step { .. } => "",
            Why::CatchUp => " (catch-up replay)",
            Why::Resent => " (re-sent: window still open)",
            Why::ScenarioEnd => " (the scenario's end, to maintwatch only)",
            Why::Api => " (api)",
        };
        write!(f, "conn {conn} @{proxy}: sent {}{why}", escape(bytes))
    }

    /// What the proxy API did: an injection, an interceptor's answer, a node added or removed.
    fn fmt_api(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Injected {
                route,
                summary,
                recipients,
                ..
            } => write!(f, "api | {route}: {summary} -> {recipients} connection(s)"),
            What::Intercepted {
                conn,
                proxy,
                name,
                command,
                reply,
            } => write!(
                f,
                "conn {conn} @{proxy}: {command} -> {reply} (interceptor {name})"
            ),
            What::Node { id, up: true, .. } => write!(f, "api | node {id} listening"),
            What::Node { id, up: false, .. } => write!(f, "api | node {id} removed"),
            _ => Ok(()),
        }
    }
    fn fmt_pubsub(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
                What::Sharded { .. } => self.fmt_sharded(f),
                What::Subscribed {
                    conn,
                    proxy,
                    channel,
                    on,
                } => {
                    let verb = if *on { "SUBSCRIBE" } else { "UNSUBSCRIBE" };
                    write!(f, "conn {conn} @{proxy}: {verb} {channel}")
                }
                What::AzurePublished {
                    summary,
                    proxy,
                    recipients,
                    ..
                } => write!(
                    f,
                    "azure: {summary} published on AzureRedisEvents by {proxy} to {recipients} subscriber(s)"
                ),
                What::Published {
                    channel,
                    slot,
                    node,
                    message,
                    recipients,
                } => write!(
                    f,
                    "spublish {message} on {channel} (slot {slot}) by {node}: sent to {} subscriber(s)",
                    recipients.len()
                ),
            _ => Ok(()),
        }
    }

    fn fmt_sharded(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Sharded {
            conn,
            proxy,
            channel,
            slot,
            on,
            by_server,
        } = self
        else {
            return Ok(());
        };
        let what = match (on, by_server) {
            (true, _) => "SSUBSCRIBE",
            (false, false) => "SUNSUBSCRIBE",
            (false, true) => "SUNSUBSCRIBE sent by the server (the slot moved away)",
        };
        write!(f, "conn {conn} @{proxy}: {what} {channel} (slot {slot})")
    }

    fn fmt_waited(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Waited {
            conn,
            proxy,
            waited,
            gave_up,
            writes,
        } = self
        else {
            return Ok(());
        };
        if *gave_up {
            write!(
                f,
                "conn {conn} @{proxy}: the client gave up on its held reply after {waited:.3} s (closed the connection)"
            )?;
        } else {
            write!(
                f,
                "conn {conn} @{proxy}: waited {waited:.3} s for its held reply"
            )?;
        }
        if !writes.is_empty() {
            let at: Vec<String> = writes.iter().take(5).map(|w| format!("{w:.3}")).collect();
            let more = if writes.len() > 5 { ", ..." } else { "" };
            write!(
                f,
                "; meanwhile it wrote {} more time(s), at {}{more} s",
                writes.len(),
                at.join(", ")
            )?;
        }
        Ok(())
    }

    fn fmt_opt_in(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::OptIn {
            conn,
            proxy,
            on,
            accepted,
            endpoint_type,
        } = self
        else {
            unreachable!("called for OptIn only")
        };
        let what = if *on { "opt-in" } else { "opt-out" };
        let how = match endpoint_type {
            Some(t) => format!(" (moving-endpoint-type {t})"),
            None => String::new(),
        };
        let verdict = if *accepted { "accepted" } else { "refused" };
        write!(f, "conn {conn} @{proxy}: {what}{how} {verdict}")
    }

    fn fmt_pushed(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Pushed {
            line,
            summary,
            seq,
            proxies,
            recipients,
        } = self
        else {
            unreachable!("called for Pushed only")
        };
        let seq = seq.map(|s| format!(" seq {s}")).unwrap_or_default();
        write!(
            f,
            "step line {line}: {summary}{seq} on {} -> {recipients} opted-in connection(s)",
            join(proxies.iter(), ", ")
        )
    }

    fn fmt_closed(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Closed {
            proxy,
            connections,
            opted_in,
            restart,
        } = self
        else {
            unreachable!("called for Closed only")
        };
        write!(
            f,
            "{} {proxy}: closed {connections} connection(s), {opted_in} opted in, {} not",
            if *restart {
                "proxy restart"
            } else {
                "node-wide close"
            },
            connections - opted_in
        )
    }

    fn fmt_hostile(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Hostile {
            conn,
            proxy,
            kind,
            written,
        } = self
        else {
            unreachable!("called for Hostile only")
        };
        write!(f, "conn {conn} @{proxy}: hostile {kind}: ")?;
        match kind {
            Hostile::HugeBlob => write!(
                f,
                "declared a {} byte blob, wrote {written} bytes of it",
                scenario::HUGE_BLOB_DECLARED
            ),
            Hostile::Deep => write!(
                f,
                "wrote a push nested {} deep ({written} bytes)",
                scenario::DEEP_LEVELS
            ),
            Hostile::Trickle => write!(
                f,
                "writing a {written} byte push one byte per scenario second"
            ),
            Hostile::MidFrame => write!(
                f,
                "wrote {written} of the {} bytes of a push, then closed",
                scenario::MID_FRAME.len()
            ),
        }
    }

    fn fmt_traffic(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let What::Traffic {
            conn,
            proxy,
            commands,
            errors,
            unanswered,
        } = self
        else {
            unreachable!("called for Traffic only")
        };
        write!(
            f,
            "conn {conn} @{proxy}: {commands} command(s), {errors} error reply(ies), {unanswered} unanswered"
        )
    }
}

/// Addresses (or anything printable) joined with a separator.
fn join<T: fmt::Display>(items: impl Iterator<Item = T>, sep: &str) -> String {
    items.map(|p| p.to_string()).collect::<Vec<_>>().join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::sim::player::EVENT_CAPACITY;
    use crate::simulator::sim::{scenarios, SimOptions, Simulator};
    use tokio::sync::broadcast::error::TryRecvError;

    /// A grade rests on every event: with `keep`, a narration that falls behind the broadcast
    /// loses the oldest events, and the kept record loses none, in order.
    #[tokio::test]
    async fn kept_events_lose_nothing_when_the_narration_falls_behind() {
        let mut opts = SimOptions::new(scenarios::by_name(scenarios::DEFAULT).unwrap());
        opts.keep = true;
        let sim = Simulator::start(opts).await.unwrap();
        let mut narration = sim.events();
        let proxy: SocketAddr = "127.0.0.2:1".parse().unwrap();
        let n = EVENT_CAPACITY as u64 * 2;
        for conn in 0..n {
            sim.shared.emit(What::Ignored {
                conn,
                proxy,
                bytes: 1,
            });
        }
        assert!(matches!(narration.try_recv(), Err(TryRecvError::Lagged(_))));
        let kept: Vec<u64> = sim
            .kept_events()
            .iter()
            .filter_map(|e| match e.what {
                What::Ignored { conn, .. } => Some(conn),
                _ => None,
            })
            .collect();
        assert_eq!(kept, (0..n).collect::<Vec<_>>());
        sim.shutdown().await;
    }
}
