//! The databases `create_database` makes: their table, what Redis Enterprise says of each
//! (`bdb_id`, `endpoints`, `raw_endpoints`), the endpoints file the suites read, and `rladmin
//! status`.
//!
//! Every database is served by the same simulated endpoint (the simulator's database name and
//! port, through its DNS): the suites use one database at a time, and what they test is how the
//! client follows that endpoint through a maintenance, not the isolation of two databases. The
//! table is bounded: at most [`LIVE_MAX`] databases at once, and the ids of the last
//! [`DELETED_MAX`] deleted are remembered, so that a request naming one says it was deleted.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

use super::super::What;
use super::Injector;

/// Databases at once.
pub const LIVE_MAX: usize = 256;
/// Deleted databases remembered as such (older ones are unknown).
pub const DELETED_MAX: usize = 1024;

#[derive(Clone)]
pub(super) struct Database {
    pub(super) id: u64,
    pub(super) name: String,
    /// Served with the OSS-cluster API on [`super::OSS_NODES`], under [`super::oss_host`].
    pub(super) cluster: bool,
}

pub(super) struct Table {
    next: u64,
    live: BTreeMap<u64, Database>,
    deleted: VecDeque<u64>,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            next: 1,
            live: BTreeMap::new(),
            deleted: VecDeque::new(),
        }
    }
}

impl Table {
    /// A new database from its `database_config`; its id, or why not.
    pub(super) fn create(&mut self, config: Value) -> Result<u64, String> {
        let Value::Object(config) = config else {
            return Err("database_config: expected a JSON object".into());
        };
        if self.live.len() >= LIVE_MAX {
            return Err(format!(
                "{LIVE_MAX} databases exist already: delete one first"
            ));
        }
        if config.get("tls").and_then(Value::as_bool) == Some(true) {
            return Err(
                "database_config.tls: not served by maintwatch yet (docs/fault-injector.md)".into(),
            );
        }
        let cluster = config.get("oss_cluster").and_then(Value::as_bool) == Some(true);
        let id = self.next;
        self.next += 1;
        let name = match config.get("name").and_then(Value::as_str) {
            Some(n) if !n.trim().is_empty() => n.to_string(),
            _ => format!("db-{id}"),
        };
        self.live.insert(id, Database { id, name, cluster });
        Ok(id)
    }

    pub(super) fn delete(&mut self, id: u64) -> Result<(), String> {
        self.get(id)?;
        self.live.remove(&id);
        if self.deleted.len() >= DELETED_MAX {
            self.deleted.pop_front();
        }
        self.deleted.push_back(id);
        Ok(())
    }

    /// The database, or a message saying it was deleted or never existed.
    pub(super) fn get(&self, id: u64) -> Result<&Database, String> {
        if let Some(db) = self.live.get(&id) {
            return Ok(db);
        }
        Err(if self.deleted.contains(&id) {
            format!("database {id} was deleted")
        } else {
            format!("no database {id}")
        })
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &Database> {
        self.live.values()
    }
}

/// A `bdb_id` parameter: a number or a numeric string, as the suites send it.
pub(super) fn bdb_id(params: &Value) -> Result<u64, String> {
    let id = match params.get("bdb_id") {
        None | Some(Value::Null) => return Err("parameters.bdb_id is required".into()),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    id.ok_or_else(|| "parameters.bdb_id: expected a database id, a whole number".into())
}

impl Injector {
    /// What Redis Enterprise answers for a database: its id, credentials and endpoints. The
    /// password is the simulator's own (`--password`), which a suite needs to connect.
    pub(super) fn describe(&self, db: &Database) -> Value {
        let port = self.shared.port;
        let (host, addr, policy) = match db.cluster {
            // An OSS-cluster database: its name resolves to the nodes that own slots now, and
            // `raw_endpoints` lists them, as Redis Enterprise does for the OSS-cluster API.
            true => {
                let nodes = self.shared.lock().topology.owners();
                let addr: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
                (super::oss_host(), addr, "all-master-shards")
            }
            false => {
                let host = super::super::HOSTNAME.trim_end_matches('.').to_string();
                (host, vec![self.lock().current.to_string()], "single")
            }
        };
        // An OSS-cluster database's seed is its first node's address, not its name: go-redis
        // rewrites a loopback node address to the host it asked when that host is a name
        // (`replaceLoopbackHost`), so on this project's loopback nodes a seed by name folds the
        // three masters into one. Redis Enterprise's nodes are not loopback; an address seed
        // keeps what its clients see, three nodes. `raw_endpoints` still gives the name.
        let seed = match (db.cluster, addr.first()) {
            (true, Some(first)) => first.clone(),
            _ => host.clone(),
        };
        let mut out = json!({
            "bdb_id": db.id,
            "name": db.name,
            "username": self.shared.user,
            "password": self.shared.password.clone().unwrap_or_default(),
            "tls": false,
            "endpoints": [format!("redis://{seed}:{port}")],
            "raw_endpoints": [{
                "addr": addr,
                "addr_type": "external",
                "dns_name": host,
                "oss_cluster_api_preferred_endpoint_type": "ip",
                "oss_cluster_api_preferred_ip_type": "external",
                "port": port,
                "proxy_policy": policy,
                "uid": format!("{}:1", db.id),
            }],
        });
        if db.cluster {
            out["oss_cluster"] = Value::Bool(true);
        }
        out
    }

    /// The endpoints file (`REDIS_ENDPOINTS_CONFIG_PATH`): every database by name. Written to a
    /// temporary file and renamed, so a suite never reads half of it; a failure is narrated.
    pub(super) fn write_endpoints(&self) {
        let Some(path) = &self.endpoints_file else {
            return;
        };
        let dbs: Vec<(String, Value)> = {
            let all: Vec<Database> = self.lock().databases.all().cloned().collect();
            all.into_iter()
                .map(|db| (db.name.clone(), self.describe(&db)))
                .collect()
        };
        let text = Value::Object(dbs.into_iter().collect()).to_string();
        let tmp = path.with_extension("tmp");
        let written = private_file(&tmp, text.as_bytes()).and_then(|_| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            self.shared.emit(What::Error {
                message: format!("cannot write the endpoints file {}: {e}", path.display()),
            });
        }
    }

    /// `rladmin status`, in the shape redis-py reads: its `DATABASES:` section last, one line
    /// per database, `db:ID NAME ...`.
    pub(super) fn rladmin_status(&self) -> String {
        let st = self.lock();
        let host = super::super::HOSTNAME.trim_end_matches('.');
        let port = self.shared.port;
        let mut out = String::from(
            "CLUSTER NODES:\nNODE:ID ROLE ADDRESS EXTERNAL_ADDRESS HOSTNAME SHARDS STATUS\n",
        );
        for (i, ip) in super::PROXIES.iter().enumerate() {
            let star = if *ip == st.current { "*" } else { "" };
            out.push_str(&format!(
                "{star}node:{} master {ip} {ip} {} 1 OK\n",
                i + 1,
                super::super::proxy_host(*ip)
            ));
        }
        out.push_str("\nDATABASES:\nDB:ID NAME TYPE STATUS SHARDS PLACEMENT REPLICATION PERSISTENCE ENDPOINT\n");
        for db in st.databases.all() {
            let (shards, endpoint) = if db.cluster {
                (3, super::oss_host())
            } else {
                (1, host.to_string())
            };
            out.push_str(&format!(
                "db:{} {} redis active {shards} dense disabled disabled {endpoint}:{port}\n",
                db.id, db.name
            ));
        }
        out
    }
}

/// Writes `bytes` to a new file only its owner reads: the endpoints file holds the databases'
/// password, as Redis Enterprise's does.
fn private_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_database_says_so_and_an_unknown_one_too() {
        let mut t = Table::default();
        let id = t.create(json!({"name": "a"})).unwrap();
        assert_eq!(t.get(id).unwrap().name, "a");
        t.delete(id).unwrap();
        assert_eq!(
            t.get(id).err().unwrap(),
            format!("database {id} was deleted")
        );
        assert_eq!(
            t.delete(id).err().unwrap(),
            format!("database {id} was deleted")
        );
        assert_eq!(t.get(99).err().unwrap(), "no database 99");
    }

    #[test]
    fn the_table_is_bounded_and_refuses_what_it_cannot_serve() {
        let mut t = Table::default();
        for _ in 0..LIVE_MAX {
            t.create(json!({})).unwrap();
        }
        assert!(t.create(json!({})).unwrap_err().contains("exist already"));
        let mut t = Table::default();
        assert!(t.create(json!({"tls": true})).unwrap_err().contains("tls"));
        let id = t.create(json!({"oss_cluster": true})).unwrap();
        assert!(t.get(id).unwrap().cluster);
        assert!(t.create(json!([1])).unwrap_err().contains("object"));
    }

    #[test]
    fn bdb_id_takes_a_number_or_a_numeric_string() {
        assert_eq!(bdb_id(&json!({"bdb_id": 3})), Ok(3));
        assert_eq!(bdb_id(&json!({"bdb_id": "4"})), Ok(4));
        assert!(bdb_id(&json!({})).unwrap_err().contains("required"));
        assert!(bdb_id(&json!({"bdb_id": "x"}))
            .unwrap_err()
            .contains("whole number"));
    }
}
