//! The API's state and its operations: the table of nodes and connections the HTTP handlers
//! read and change, and the handle the simulator keeps to stop it. Kept apart from the folder's
//! root, which is its map.

use super::super::upstream::Upstream;
use super::super::{Shared, SimError, What};
use super::intercept::Interceptor;
use crate::simulator::sim::proxy_api::{http, intercept, relay, DEFAULT_INTERCEPTORS};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// What `--proxy-api` serves, and on what.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// Where the HTTP API listens.
    pub addr: SocketAddr,
    /// The nodes started with the simulator (`--listen`).
    pub listen: Vec<SocketAddr>,
    /// Where the nodes relay to (a node added by `POST /nodes` names its own).
    pub upstream: Upstream,
    /// The proxy's default interceptors to install (`cluster`, `hitless`, `logger`).
    pub defaults: Vec<String>,
    /// The host the `cluster` interceptor names every node by, in place of its listening
    /// address (`--announce`): redis-py's compose file has the proxy listen on 0.0.0.0, so its
    /// tests expect nodes named `0.0.0.0:PORT`, which a loopback listener can be named too.
    pub announce: Option<String>,
}

/// A message to a relayed connection's task: a frame to write between two frames, or a close.
pub(super) enum Msg {
    Inject(Arc<[u8]>),
    Close,
}

/// A relayed connection, as `/connections` and `/stats` show it.
pub(super) struct Conn {
    pub(super) node: String,
    pub(super) peer: SocketAddr,
    pub(super) since: SystemTime,
    pub(super) tx: mpsc::UnboundedSender<Msg>,
}

/// A node: a listener and where it relays.
pub(super) struct Node {
    pub(super) addr: SocketAddr,
    /// Stops its listener (connections are closed by `DELETE /nodes` itself).
    pub(super) stop: watch::Sender<bool>,
}

/// The API's state: nodes in the order they were added (the `cluster` interceptor splits the
/// slots in that order), connections by number, and the interceptors, first tried first.
#[derive(Default)]
pub(super) struct Table {
    pub(super) nodes: Vec<(String, Node)>,
    pub(super) conns: BTreeMap<u64, Conn>,
    pub(super) interceptors: Vec<Interceptor>,
}

/// The running API, shared by the HTTP server and every node and connection.
pub(in crate::simulator::sim) struct Api {
    pub(super) shared: Arc<Shared>,
    pub(super) defaults: Vec<String>,
    pub(super) announce: Option<String>,
    pub(super) table: Mutex<Table>,
}

/// Resolves once the flag is set, or its sender is gone. (Returning nothing keeps the watch
/// guard out of a `select!`, whose future must be `Send`.)
pub(super) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// The id a connection has in the API: `conn_` and the simulator's own number, so the
/// narration's `conn 7` is `/send-to-client/conn_7`.
pub(super) fn conn_id(n: u64) -> String {
    format!("conn_{n}")
}

/// The number of an API connection id; `None` for anything else.
pub(super) fn conn_number(id: &str) -> Option<u64> {
    id.strip_prefix("conn_")?.parse().ok()
}

/// A node's id: the proxy's `targetHost:targetPort@listenPort`.
pub(super) fn node_id(target: &Upstream, listen: SocketAddr) -> String {
    format!("{}@{}", target.addr, listen.port())
}

impl Api {
    pub(super) fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding it is a bug already reported; keep serving.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Binds a node and starts accepting on it; its id. Fails when the address is taken.
    pub(super) async fn add_node(
        self: &Arc<Self>,
        addr: SocketAddr,
        target: Upstream,
    ) -> Result<String, String> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let id = node_id(&target, addr);
        let (stop, stopped) = watch::channel(false);
        {
            let mut t = self.lock();
            // The proxy keeps one node per id: a second one replaces the first's entry.
            if let Some(i) = t.nodes.iter().position(|(n, _)| *n == id) {
                let (_, old) = t.nodes.remove(i);
                let _ = old.stop.send(true);
            }
            t.nodes.push((id.clone(), Node { addr, stop }));
        }
        self.shared.emit(What::Node {
            id: id.clone(),
            proxy: addr,
            up: true,
        });
        tokio::spawn(relay::listen(
            self.clone(),
            id.clone(),
            listener,
            target,
            stopped,
        ));
        Ok(id)
    }

    /// Stops a node's listener and closes its connections; whether it existed.
    pub(super) fn remove_node(&self, id: &str) -> bool {
        let (node, closing) = {
            let mut t = self.lock();
            let Some(i) = t.nodes.iter().position(|(n, _)| n == id) else {
                return false;
            };
            let (_, node) = t.nodes.remove(i);
            let ids: Vec<u64> = t
                .conns
                .iter()
                .filter(|(_, c)| c.node == id)
                .map(|(n, _)| *n)
                .collect();
            let closing: Vec<_> = ids.iter().filter_map(|n| t.conns.remove(n)).collect();
            (node, closing)
        };
        let _ = node.stop.send(true);
        for c in closing {
            let _ = c.tx.send(Msg::Close);
        }
        self.shared.emit(What::Node {
            id: id.to_string(),
            proxy: node.addr,
            up: false,
        });
        true
    }

    /// The nodes as the `cluster` interceptor names them: host (the announced one, or the
    /// listening address) and port, in the order they were added.
    pub(super) fn announced(&self, t: &Table) -> Vec<(String, u16)> {
        t.nodes
            .iter()
            .map(|(_, n)| {
                let host = self
                    .announce
                    .clone()
                    .unwrap_or_else(|| n.addr.ip().to_string());
                (host, n.addr.port())
            })
            .collect()
    }

    /// The listening nodes' addresses, in the order they were added.
    pub(super) fn node_addrs(&self) -> Vec<SocketAddr> {
        self.lock().nodes.iter().map(|(_, n)| n.addr).collect()
    }

    /// Installs the default interceptors again, in front, as the proxy does on every new node.
    pub(super) fn apply_defaults(&self) {
        for name in &self.defaults {
            if let Some(i) = Interceptor::default_named(name) {
                self.add_interceptor(i);
            }
        }
    }

    /// Puts an interceptor first; one of the same name goes (the proxy's `addGlobalInterceptor`).
    pub(super) fn add_interceptor(&self, i: Interceptor) {
        let mut t = self.lock();
        t.interceptors.retain(|o| o.name != i.name);
        t.interceptors.insert(0, i);
    }

    /// Queues `bytes` to the connections named (all, for `None`); per id, whether it was
    /// queued, in the proxy's `SendResult` form. Ids that name no connection are skipped when
    /// `skip_unknown` (`/send-to-clients` filters them out as the proxy does).
    pub(super) fn inject(
        &self,
        route: &str,
        ids: Option<&[String]>,
        bytes: Arc<[u8]>,
        skip_unknown: bool,
    ) -> Vec<serde_json::Value> {
        let t = self.lock();
        let wanted: Vec<(String, Option<&Conn>)> = match ids {
            None => t
                .conns
                .iter()
                .map(|(n, c)| (conn_id(*n), Some(c)))
                .collect(),
            Some(ids) => ids
                .iter()
                .map(|id| (id.clone(), conn_number(id).and_then(|n| t.conns.get(&n))))
                .filter(|(_, c)| c.is_some() || !skip_unknown)
                .collect(),
        };
        let proxies: Vec<SocketAddr> = {
            let mut p: Vec<SocketAddr> = wanted
                .iter()
                .filter_map(|(_, c)| c.and_then(|c| node_addr(&t, &c.node)))
                .collect();
            p.sort();
            p.dedup();
            p
        };
        let frame = intercept::describe(&bytes);
        self.shared.emit(What::Injected {
            route: route.to_string(),
            summary: frame.summary,
            kind: frame.kind,
            seq: frame.seq,
            window: frame.window,
            target: frame.target,
            proxies,
            recipients: wanted.iter().filter(|(_, c)| c.is_some()).count(),
        });
        wanted
            .into_iter()
            .map(|(id, c)| match c {
                None => send_result(&id, Some("Connection not found")),
                Some(c) if c.tx.send(Msg::Inject(bytes.clone())).is_err() => {
                    send_result(&id, Some("Client socket is not writable"))
                }
                Some(_) => send_result(&id, None),
            })
            .collect()
    }

    /// Closes one connection; whether it existed.
    pub(super) fn close(&self, id: &str) -> bool {
        let conn = conn_number(id).and_then(|n| self.lock().conns.remove(&n));
        match conn {
            Some(c) => c.tx.send(Msg::Close).is_ok(),
            None => false,
        }
    }
}

pub(super) fn node_addr(t: &Table, id: &str) -> Option<SocketAddr> {
    t.nodes.iter().find(|(n, _)| n == id).map(|(_, n)| n.addr)
}

/// The proxy's `SendResult`: `{success, connectionId}` or `{success, error, connectionId}`.
pub(super) fn send_result(id: &str, error: Option<&str>) -> serde_json::Value {
    match error {
        None => serde_json::json!({ "success": true, "connectionId": id }),
        Some(e) => serde_json::json!({ "success": false, "error": e, "connectionId": id }),
    }
}

/// The running API: where it answers, and its nodes' addresses as started.
pub struct ApiHandle {
    pub addr: SocketAddr,
    pub nodes: Vec<SocketAddr>,
    pub(in crate::simulator::sim) tasks: Vec<JoinHandle<()>>,
}

/// Binds the HTTP API and every `--listen` node (a taken port fails the start), installs the
/// default interceptors, and serves until the simulator shuts down.
pub(in crate::simulator::sim) async fn start(
    shared: Arc<Shared>,
    opts: ApiOptions,
) -> Result<ApiHandle, SimError> {
    for name in &opts.defaults {
        if Interceptor::default_named(name).is_none() {
            return Err(SimError::Options(format!(
                "unknown default interceptor {name:?}; the proxy's are {}",
                DEFAULT_INTERCEPTORS.join(", ")
            )));
        }
    }
    let api = Arc::new(Api {
        shared: shared.clone(),
        defaults: opts.defaults.clone(),
        announce: opts.announce.clone(),
        table: Mutex::default(),
    });
    let listener = std::net::TcpListener::bind(opts.addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|source| SimError::Bind {
            addr: opts.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| SimError::Bind {
        addr: opts.addr,
        source,
    })?;
    let mut nodes = Vec::new();
    for l in &opts.listen {
        api.add_node(*l, opts.upstream.clone())
            .await
            .map_err(|e| SimError::Options(format!("--listen {l}: {e}")))?;
        nodes.push(*api.node_addrs().last().unwrap_or(l));
    }
    api.apply_defaults();
    let tasks = vec![tokio::spawn(http::serve(api, listener))];
    Ok(ApiHandle { addr, nodes, tasks })
}

/// `/stats`: per node, its connections and the interceptors, in the proxy's shape.
pub(super) fn stats(api: &Api) -> serde_json::Value {
    let t = api.lock();
    let globals: Vec<serde_json::Value> = t.interceptors.iter().map(|i| i.state()).collect();
    let mut out = serde_json::Map::new();
    for (id, _) in &t.nodes {
        let conns: Vec<serde_json::Value> = t
            .conns
            .iter()
            .filter(|(_, c)| c.node == *id)
            .map(|(n, c)| {
                serde_json::json!({
                    "id": conn_id(*n),
                    "clientAddress": c.peer.ip().to_string(),
                    "clientPort": c.peer.port(),
                    "connectedAt": rfc3339(c.since),
                    "interceptors": [],
                })
            })
            .collect();
        out.insert(
            id.clone(),
            serde_json::json!({
                "activeConnections": conns.len(),
                "totalConnections": conns.len(),
                "globalInterceptors": globals,
                "connections": conns,
            }),
        );
    }
    serde_json::Value::Object(out)
}

/// `/connections`: per node, its connections' ids.
pub(super) fn connections(api: &Api) -> serde_json::Value {
    let t = api.lock();
    let mut by_node: HashMap<&str, Vec<String>> = HashMap::new();
    for (n, c) in &t.conns {
        by_node.entry(&c.node).or_default().push(conn_id(*n));
    }
    let mut out = serde_json::Map::new();
    for (id, _) in &t.nodes {
        let ids = by_node.remove(id.as_str()).unwrap_or_default();
        out.insert(id.clone(), serde_json::json!(ids));
    }
    serde_json::Value::Object(out)
}

/// A wall-clock time as JSON's usual `2026-12-04T17:00:00.000Z`.
pub(super) fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}
