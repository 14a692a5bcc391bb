//! `simulate --fault-injector-api`: the HTTP API of Redis Enterprise's fault injector, the
//! service the client libraries' real-cluster suites drive (redis-py's `tests/test_scenario`,
//! go-redis' `maintnotifications/e2e` in fault-injector mode), served by the simulator.
//!
//! The fault injector has no public repository: the shapes here are read from its callers,
//! redis-py 8.1.0's `fault_injector_client.py` and go-redis v9.23.0's `fault_injector.go`
//! (docs/fault-injector.md lists them). Without this those suites need a Redis Enterprise
//! cluster; served here they run on loopback, and every maintenance an action asks for is played
//! by the simulator's own engine ([`super::run_step`]): its notifications numbered from the
//! database's counter, its MOVING windows, DNS changes and closes narrated and recorded like a
//! scenario's steps.
//!
//! Four parts:
//!
//! - the databases ([`databases`]): the table of what `create_database` made, the endpoints
//!   file the suites read, and `rladmin status`;
//! - the maintenances ([`effects`]): each action and effect as scenario steps, and the triggers
//!   the suites build their test lists from;
//! - the actions ([`actions`]): their table (bounded) and how each runs;
//! - the routes ([`routes`]) on the simulator's HTTP plumbing ([`super::http_api`]).

mod actions;
mod databases;
mod effects;
mod routes;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::dns_server::SimDns;
use super::scenario::Scenario;
use super::{proxy_host, Shared, SimError};

/// What `--fault-injector-api` serves, and on what.
#[derive(Debug, Clone)]
pub struct FaultInjectorOptions {
    /// Where the HTTP API listens.
    pub addr: SocketAddr,
    /// Where the endpoints file is written (`REDIS_ENDPOINTS_CONFIG_PATH`), rewritten whenever a
    /// database is created or deleted.
    pub endpoints_file: Option<PathBuf>,
}

/// The two proxies every database is served by: a bind moves the endpoint from one to the other.
pub const PROXIES: [Ipv4Addr; 2] = [Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)];

/// The nodes of the OSS-cluster databases: the first three own the slots when a database is
/// created ([`oss_topology`]); the fourth is the node an `add` or `remove-add` brings in.
pub const OSS_NODES: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 0, 4),
    Ipv4Addr::new(127, 0, 0, 5),
    Ipv4Addr::new(127, 0, 0, 6),
    Ipv4Addr::new(127, 0, 0, 7),
];

/// The proxies that answer as OSS-cluster nodes: [`OSS_NODES`] when the fault injector is served,
/// none otherwise.
pub(in crate::simulator::sim) fn cluster_nodes(
    served: Option<&FaultInjectorOptions>,
) -> Vec<Ipv4Addr> {
    served.map_or_else(Vec::new, |_| OSS_NODES.to_vec())
}

/// The OSS-cluster databases' name (without the final dot): it resolves to the nodes that own
/// slots, as a cluster's endpoint names its nodes.
pub fn oss_host() -> String {
    format!("oss.{}", super::ZONE.trim_end_matches('.'))
}

/// A new OSS-cluster database's slots: three nodes, a third each, as a three-shard database.
pub(in crate::simulator::sim) fn oss_topology() -> super::cluster_slots::Topology {
    let [a, b, c, _] = OSS_NODES;
    super::cluster_slots::Topology::new(&[
        (a, vec![(0, 5460)]),
        (b, vec![(5461, 10922)]),
        (c, vec![(10923, 16383)]),
    ])
}

/// The databases made when the API starts, so that a suite reading the endpoints file before
/// creating any finds one: go-redis' e2e reads `standalone`, redis-py's `m-standard`.
pub const INITIAL_DATABASES: [&str; 2] = ["standalone", "m-standard"];

impl Scenario {
    /// The deployment `simulate --fault-injector-api` serves: two proxies that both listen, DNS
    /// naming the first, a clock started at once and no steps or end. Nothing happens until an
    /// action asks.
    pub fn fault_injector() -> Scenario {
        Scenario {
            name: "fault-injector".into(),
            about: "The fault injector's API alone: maintenances are played when an action asks."
                .into(),
            source: "--fault-injector-api".into(),
            proxies: PROXIES.iter().chain(&OSS_NODES).copied().collect(),
            dns: vec![IpAddr::V4(PROXIES[0])],
            catch_up: true,
            ..Scenario::api_only()
        }
    }
}

/// The running fault injector, shared by the HTTP server and every action.
pub(in crate::simulator::sim) struct Injector {
    shared: Arc<Shared>,
    dns: Arc<SimDns>,
    endpoints_file: Option<PathBuf>,
    state: Mutex<State>,
    /// One maintenance at a time on the deployment, as a cluster runs one per database.
    maintenance: tokio::sync::Mutex<()>,
}

/// The tables, behind one lock.
struct State {
    actions: actions::Table,
    databases: databases::Table,
    /// The proxy the database name resolves to now (a bind moves it).
    current: Ipv4Addr,
    /// Steps played so far: the next one is numbered past them.
    lines: usize,
}

impl Injector {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a bug already reported; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The OSS-cluster name resolves to the nodes that own slots now.
    async fn follow_topology(&self) {
        let owners: Vec<IpAddr> = self
            .shared
            .lock()
            .topology
            .owners()
            .into_iter()
            .map(IpAddr::V4)
            .collect();
        let name = format!("{}.", oss_host());
        self.dns.set_records(&name, &owners, self.shared.ttl).await;
    }
}

/// The options and the API's listener, bound.
pub(in crate::simulator::sim) type Bound = (FaultInjectorOptions, TcpListener);

/// Binds the API's address (when it is asked for), before anything else is spawned: a port it
/// cannot have ends the start cleanly.
pub(in crate::simulator::sim) async fn bind(
    opts: Option<FaultInjectorOptions>,
) -> Result<Option<Bound>, SimError> {
    let Some(opts) = opts else {
        return Ok(None);
    };
    match TcpListener::bind(opts.addr).await {
        Ok(l) => Ok(Some((opts, l))),
        Err(source) => Err(SimError::Bind {
            addr: opts.addr,
            source,
        }),
    }
}

/// Starts serving on the bound listener: the initial databases, the proxies' own names in the
/// DNS (for MOVING targets in an fqdn form), the endpoints file, and the HTTP server, whose task
/// joins `tasks`. Returns the address it answers on.
pub(in crate::simulator::sim) async fn start(
    shared: &Arc<Shared>,
    dns: &Arc<SimDns>,
    (opts, listener): Bound,
    tasks: &mut Vec<JoinHandle<()>>,
) -> SocketAddr {
    let addr = listener.local_addr().unwrap_or(opts.addr);
    for ip in PROXIES.iter().chain(&OSS_NODES) {
        let name = format!("{}.", proxy_host(*ip));
        dns.set_records(&name, &[IpAddr::V4(*ip)], shared.ttl).await;
    }
    shared.lock().topology = oss_topology();
    let mut databases = databases::Table::default();
    for name in INITIAL_DATABASES {
        // An empty table has room, and a plain name is valid: this cannot fail.
        let _ = databases.create(serde_json::json!({ "name": name }));
    }
    let injector = Arc::new(Injector {
        shared: shared.clone(),
        dns: dns.clone(),
        endpoints_file: opts.endpoints_file,
        state: Mutex::new(State {
            actions: actions::Table::default(),
            databases,
            current: PROXIES[0],
            lines: 0,
        }),
        maintenance: tokio::sync::Mutex::new(()),
    });
    injector.follow_topology().await;
    injector.write_endpoints();
    let shutdown = injector.shared.shutdown.clone();
    tasks.push(tokio::spawn(super::http_api::serve(
        listener,
        shutdown,
        move |req| {
            let injector = injector.clone();
            async move { routes::answer(&injector, req).await }
        },
    )));
    addr
}
