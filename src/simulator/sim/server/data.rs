//! The data the simulator owns: its small keyspace shared by every proxy, the server commands
//! clients probe, and in cluster mode the slot map, `-MOVED` for slots served elsewhere and
//! CLUSTER SLOTS/SHARDS/NODES.

use super::super::cluster_slots::{key_slot, node_id};
use super::super::What;
use crate::simulator::sim::server::{
    bulk, error, int, ok, parse_int, subcommand, Conn, NOT_AN_INTEGER,
};

impl Conn {
    pub(super) fn select(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if self.is_cluster_node() {
            return error(out, "ERR SELECT is not allowed in cluster mode");
        }
        match parse_int(&args[1]) {
            Some(db) if (0..16).contains(&db) => {
                self.db = db as u8;
                ok(out);
            }
            Some(_) => error(out, "ERR DB index is out of range"),
            None => error(out, NOT_AN_INTEGER),
        }
    }

    /// GET, SET, DEL and EXISTS; in a cluster a key of another shard gets MOVED first.
    pub(super) fn keyspace(&mut self, name: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if name == "SET" {
            return self.set(args, out);
        }
        let keys = if name == "GET" {
            &args[1..2]
        } else {
            &args[1..]
        };
        if self.moved(keys, out) {
            return;
        }
        if name == "GET" {
            let value = self
                .shared
                .lock()
                .keys
                .get(&(self.db, args[1].clone()))
                .cloned();
            return match value {
                Some(v) => bulk(out, &v),
                None => self.null(out),
            };
        }
        let mut st = self.shared.lock();
        let n = keys
            .iter()
            .filter(|k| {
                let key = (self.db, k.to_vec());
                if name == "DEL" {
                    st.keys.remove(&key).is_some()
                } else {
                    st.keys.contains_key(&key)
                }
            })
            .count();
        int(out, n as i64);
    }

    /// COMMAND, READONLY/READWRITE and INFO: what clients ask about the server.
    pub(super) fn server_command(&self, name: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        match name {
            "COMMAND" if subcommand(args) == "COUNT" => int(out, 0),
            "COMMAND" => out.extend_from_slice(b"*0\r\n"),
            "READONLY" | "READWRITE" if self.is_cluster_node() => ok(out),
            "READONLY" | "READWRITE" => {
                error(out, "ERR This instance has cluster support disabled")
            }
            _ => {
                let text = format!(
                    "# Server\r\nredis_version:{}\r\nredis_mode:{}\r\ntcp_port:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\n",
                    self.version(),
                    self.mode(),
                    self.shared.port,
                    self.shared.lock().conns.len()
                );
                self.verbatim(out, &text);
            }
        }
    }

    /// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`; expiry is accepted and
    /// ignored (no scenario runs long enough for it to matter).
    pub(super) fn set(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let (mut nx, mut xx, mut get, mut expiry) = (false, false, false, false);
        let mut i = 3;
        while i < args.len() {
            let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
            match opt.as_str() {
                "NX" if !xx => nx = true,
                "XX" if !nx => xx = true,
                "GET" => get = true,
                "KEEPTTL" if !expiry => expiry = true,
                "EX" | "PX" | "EXAT" | "PXAT" if !expiry && i + 1 < args.len() => {
                    match parse_int(&args[i + 1]) {
                        Some(n) if n > 0 => {}
                        Some(_) => return error(out, "ERR invalid expire time in 'set' command"),
                        None => return error(out, NOT_AN_INTEGER),
                    }
                    expiry = true;
                    i += 1;
                }
                _ => return error(out, "ERR syntax error"),
            }
            i += 1;
        }
        if self.moved(&args[1..2], out) {
            return;
        }
        let key = (self.db, args[1].clone());
        let mut st = self.shared.lock();
        let old = st.keys.get(&key).cloned();
        let write = !(nx && old.is_some() || xx && old.is_none());
        if write {
            st.keys.insert(key, args[2].clone());
        }
        drop(st);
        match (get, write) {
            (true, _) => match old {
                Some(v) => bulk(out, &v),
                None => self.null(out),
            },
            (false, true) => ok(out),
            (false, false) => self.null(out),
        }
    }

    /// On a cluster, keys must hash to one slot and that slot must be ours; otherwise answers
    /// `-CROSSSLOT` or `-MOVED slot ip:port` and returns true.
    pub(super) fn moved(&self, keys: &[Vec<u8>], out: &mut Vec<u8>) -> bool {
        if !self.is_cluster_node() || keys.is_empty() {
            return false;
        }
        let slot = key_slot(&keys[0]);
        if keys[1..].iter().any(|k| key_slot(k) != slot) {
            error(out, "CROSSSLOT Keys in request don't hash to the same slot");
            return true;
        }
        match self.shared.lock().topology.owner(slot) {
            Some(owner) if owner == self.ip => false,
            Some(owner) => {
                let to = self.shared.addr(owner);
                error(out, &format!("MOVED {slot} {to}"));
                self.shared.emit(What::Redirected {
                    conn: self.id,
                    proxy: self.proxy,
                    slot,
                    to,
                });
                true
            }
            None => {
                error(out, "CLUSTERDOWN Hash slot not served");
                true
            }
        }
    }

    pub(super) fn cluster(&self, sub: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if !self.is_cluster_node() {
            return error(out, "ERR This instance has cluster support disabled");
        }
        let port = self.shared.port;
        let st = self.shared.lock();
        match (sub, args.len()) {
            ("SLOTS", 2) => out.extend_from_slice(&st.topology.slots_reply(port, self.resp3)),
            ("SHARDS", 2) => out.extend_from_slice(&st.topology.shards_reply(port, self.resp3)),
            ("NODES", 2) => self.verbatim(out, &st.topology.nodes_text(port, self.ip)),
            ("INFO", 2) => self.verbatim(out, &st.topology.info_text()),
            ("MYID", 2) => bulk(out, node_id(self.ip).as_bytes()),
            ("KEYSLOT", 3) => int(out, i64::from(key_slot(&args[2]))),
            ("SLOTS" | "SHARDS" | "NODES" | "INFO" | "MYID" | "KEYSLOT", _) => error(
                out,
                &format!(
                    "ERR wrong number of arguments for 'cluster|{}' command",
                    sub.to_ascii_lowercase()
                ),
            ),
            _ => error(
                out,
                &format!(
                    "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                    String::from_utf8_lossy(&args[1])
                ),
            ),
        }
    }
}
