//! What the known clients would meet at the endpoint doctor asked, and the caveats that follow,
//! each from a documented fact (docs/clients.md), put beside the server's answers.

use std::net::IpAddr;

use super::diagnosis::{ClientRow, ClusterCheck, Errorstats, Server};
use crate::grading::clients::{self, CLIENTS};
use crate::network::conn::probe::ProbeReport;
use crate::network::conn::{ConnectOptions, EndpointType};

/// Each known client: would it opt in, with which type, and what the server said to that type.
pub fn client_rows(
    opts: &ConnectOptions,
    main: &ProbeReport,
    server: &Server,
    stats: &Errorstats,
) -> Vec<ClientRow> {
    let resolved = main.address.map(|a| a.ip());
    CLIENTS
        .iter()
        .map(|c| {
            let auto_type = c
                .auto
                .and_then(|a| clients::auto_type(a, opts.host(), resolved, opts.tls()));
            let server_answer = auto_type.and_then(|t| {
                server
                    .endpoint_types
                    .iter()
                    .find(|a| a.endpoint_type == Some(t))
                    .map(|a| a.outcome)
            });
            let refused =
                server_answer.map_or(server.opt_in.outcome == "refused", |a| a == "refused");
            let errorstats_cost = if c.opts_in_by_default == Some(true) && refused {
                stats.delta.clone()
            } else {
                Vec::new()
            };
            ClientRow {
                client: c.name,
                version: c.version,
                opts_in_by_default: c.opts_in_by_default,
                auto_type,
                server_answer,
                errorstats_cost,
                since: c.since,
                measured: c.measured,
            }
        })
        .collect()
}

/// Caveats, each from a documented fact (docs/clients.md), shown only where it applies.
pub fn caveats(
    opts: &ConnectOptions,
    main: &ProbeReport,
    server: &Server,
    clients: &[ClientRow],
) -> Vec<String> {
    let mut out = Vec::new();
    if server.resp3 == Some(false) {
        out.push(
            "HELLO 3 was refused: no client can receive push frames from this server, whatever \
             it is configured to do"
                .into(),
        );
    }
    if main.outcome.name() == "refused" {
        out.push(
            "the opt-in is refused: clients that opt in by default send it on every new \
             connection (redis-py, node-redis and go-redis in their auto mode then carry on \
             without notifications); each attempt is one more error in \
             the server's errorstats, and users of go-redis (#3536) and redis-py (#4242) \
             reported log noise from it. Redis Open Source and Valkey do not support the \
             feature; on Redis Enterprise / Redis Software (8.0.2+) the cluster setting \
             client_maint_notifications must be on"
                .into(),
        );
    }
    let node = clients.iter().find(|c| c.client == "node-redis");
    if let Some(node) = node.filter(|n| n.server_answer == Some("accepted")) {
        if node.auto_type != Some(EndpointType::None) {
            out.push(format!(
                "node-redis 6.3.1 with its auto type ({}) fails on a MOVING that names no \
                 endpoint (an assertion in an async handler, an unhandled promise rejection); \
                 every MOVING captured so far named none: set maintEndpointType to 'none'",
                node.auto_type.map_or("-".to_string(), |t| t.to_string())
            ));
        }
    }
    if let Some(IpAddr::V4(v4)) = main.address.map(|a| a.ip()) {
        if v4.is_loopback() {
            out.push(
                "node-redis 6.3.1 counts 127.0.0.0/8 as external (its private list has IPv6 \
                 ::1 but not IPv4 loopback), so its auto asks for external-*"
                    .into(),
            );
        }
    }
    if opts.tls() && opts.host_is_ip() {
        out.push(
            "TLS to an IP address: redis-py's auto follows what was typed, not TLS, and asks \
             for an *-ip endpoint; a MOVING naming an address then has no host name for \
             certificate verification"
                .into(),
        );
    }
    out
}

impl ClusterCheck {
    /// The caveat a failed node or unserved slots call for.
    pub fn caveat(&self) -> Option<String> {
        let h = self.health.as_ref()?;
        if h.failed.is_empty() && h.unserved_slots == 0 {
            return None;
        }
        Some(format!(
            "the cluster's topology is changing or just changed ({}{}): no notification \
             announces a failover; watch --cluster reads the topology again when a node's \
             connection fails and every --topology-interval, and reports who took the slots",
            match h.failed.len() {
                0 => String::new(),
                _ => format!("marked fail: {}", h.failed.join(", ")),
            },
            match (h.failed.is_empty(), h.unserved_slots) {
                (_, 0) => String::new(),
                (true, n) => format!("{n} slots served by no live master"),
                (false, n) => format!("; {n} slots served by no live master"),
            }
        ))
    }
}
