//! The connection commands a client sends before any work: HELLO, AUTH, CLIENT, SELECT's
//! neighbours and the opt-in (`CLIENT MAINT_NOTIFICATIONS`), answered with Redis' own replies and
//! errors, because real client libraries are picky about each.

use super::super::cluster_slots::as_map;
use super::super::scenario::Mode;
use super::super::{What, Why};
use crate::protocol::resp::Frame;
use crate::simulator::sim::server::{
    arity_ok, bulk, client_setinfo, endpoint_type_arg, error, int, ok, parse_int, simple,
    subcommand, Batch, Conn, ENDPOINT_TYPES, ENTERPRISE_VERSION, OSS_VERSION, WRONGPASS,
};
use std::sync::Arc;

impl Conn {
    /// Checks a CLIENT subcommand and its argument count; false when an error was written.
    /// An unknown subcommand is echoed in the case the client sent it (docs/protocol.md
    /// section 7), and a refused opt-in is still narrated and counted as an attempt.
    pub(super) fn client_arity(&mut self, args: &[Vec<u8>], batch: &mut Batch) -> bool {
        let refusing = self.shared.scenario.mode == Mode::Refusing
            || self
                .shared
                .refusing
                .load(std::sync::atomic::Ordering::Relaxed);
        let sub = subcommand(args);
        let sub_arity: i32 = match sub.as_str() {
            "ID" | "GETNAME" => 2,
            "SETNAME" => 3,
            "SETINFO" => 4,
            "MAINT_NOTIFICATIONS" if !refusing => -3,
            _ => {
                if sub == "MAINT_NOTIFICATIONS" {
                    self.shared.triggers.send_modify(|t| t.attempts += 1);
                    batch.narration.push(What::OptIn {
                        conn: self.id,
                        proxy: self.proxy,
                        on: !args.get(2).is_some_and(|a| a.eq_ignore_ascii_case(b"OFF")),
                        accepted: false,
                        endpoint_type: endpoint_type_arg(args),
                    });
                }
                let text = format!(
                    "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(&args[1])
                );
                error(&mut batch.out, &text);
                return false;
            }
        };
        if !arity_ok(sub_arity, args.len()) {
            let text = format!(
                "ERR wrong number of arguments for 'client|{}' command",
                sub.to_ascii_lowercase()
            );
            error(&mut batch.out, &text);
            return false;
        }
        true
    }

    /// AUTH with a password, or a user and a password.
    pub(super) fn auth(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let (user, pass) = match args.len() {
            2 => (None, &args[1]),
            3 => (Some(&args[1][..]), &args[2]),
            _ => return error(out, "ERR syntax error"),
        };
        if user.is_none() && self.shared.password.is_none() {
            return error(
                out,
                "ERR AUTH <password> called without any password configured for the \
                 default user. Are you sure your configuration is correct?",
            );
        }
        if self.credentials_ok(user.unwrap_or(b"default"), pass) {
            self.authed = true;
            ok(out);
        } else {
            error(out, WRONGPASS);
        }
    }

    /// CLIENT ID, GETNAME, SETNAME, SETINFO and MAINT_NOTIFICATIONS (arity already checked).
    pub(super) fn client(&mut self, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        match subcommand(args).as_str() {
            "ID" => int(out, self.id as i64),
            "GETNAME" => match &self.name {
                Some(n) => bulk(out, n),
                None => self.null(out),
            },
            "SETNAME" => match self.set_name(&args[2]) {
                Ok(()) => ok(out),
                Err(e) => error(out, e),
            },
            "SETINFO" => client_setinfo(args, out),
            _ => self.maint_notifications(args, batch),
        }
    }

    /// PING, ECHO, QUIT and SELECT: the connection's own commands.
    pub(super) fn connection(&mut self, name: &str, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        match name {
            "PING" => match args.len() {
                1 => simple(out, "PONG"),
                2 => bulk(out, &args[1]),
                _ => error(out, "ERR wrong number of arguments for 'ping' command"),
            },
            "ECHO" => bulk(out, &args[1]),
            "QUIT" => {
                ok(out);
                batch.close = true;
            }
            _ => self.select(args, out),
        }
    }

    pub(super) fn version(&self) -> &'static str {
        match self.shared.scenario.mode {
            Mode::Enterprise => ENTERPRISE_VERSION,
            Mode::Refusing => OSS_VERSION,
        }
    }

    pub(super) fn mode(&self) -> &'static str {
        if self.is_cluster_node() {
            "cluster"
        } else {
            "standalone"
        }
    }

    pub(super) fn credentials_ok(&self, user: &[u8], pass: &[u8]) -> bool {
        match &self.shared.password {
            Some(p) => user == self.shared.user.as_bytes() && pass == p.as_bytes(),
            // No password: the default user is `nopass`, anyone else does not exist.
            None => user == b"default",
        }
    }

    pub(super) fn set_name(&mut self, name: &[u8]) -> Result<(), &'static str> {
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return Err("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        self.name = (!name.is_empty()).then(|| name.to_vec());
        Ok(())
    }

    pub(super) fn null(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    /// A verbatim string in RESP3, a bulk string in RESP2, as Redis sends INFO and CLUSTER NODES.
    pub(super) fn verbatim(&self, out: &mut Vec<u8>, text: &str) {
        if self.resp3 {
            Frame::Verbatim {
                format: b"txt",
                text: text.as_bytes(),
            }
            .encode(out)
        } else {
            bulk(out, text.as_bytes())
        }
    }

    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`, checked in Redis' order.
    pub(super) fn hello(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let mut resp3 = self.resp3;
        if let Some(v) = args.get(1) {
            match parse_int(v) {
                Some(2) => resp3 = false,
                Some(3) => resp3 = true,
                Some(_) => return error(out, "NOPROTO unsupported protocol version"),
                None => {
                    return error(
                        out,
                        "ERR Protocol version is not an integer or out of range",
                    )
                }
            }
        }
        let mut auth = None;
        let mut setname = None;
        let mut i = 2;
        while i < args.len() {
            let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
            let more = args.len() - i - 1;
            match opt.as_str() {
                "AUTH" if more >= 2 => {
                    auth = Some((&args[i + 1], &args[i + 2]));
                    i += 3;
                }
                "SETNAME" if more >= 1 => {
                    setname = Some(&args[i + 1]);
                    i += 2;
                }
                _ => {
                    return error(
                        out,
                        &format!(
                            "ERR Syntax error in HELLO option '{}'",
                            String::from_utf8_lossy(&args[i])
                        ),
                    )
                }
            }
        }
        if let Some((user, pass)) = auth {
            if !self.credentials_ok(user, pass) {
                return error(out, WRONGPASS);
            }
            self.authed = true;
        }
        if !self.authed {
            return error(
                out,
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
                 HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
                 the RESP protocol version at the same time",
            );
        }
        if let Some(name) = setname {
            if let Err(e) = self.set_name(name) {
                return error(out, e);
            }
            self.client_info("name", name);
        }
        if self.opted_in && !resp3 {
            // Push frames do not exist in RESP2: a connection going back to it cannot be told.
            self.set_opted_in(false);
        }
        self.resp3 = resp3;
        let version = self.version();
        let speed = self.shared.speed.to_string();
        let proto = if resp3 { 3 } else { 2 };
        let mut fields = vec![
            (Frame::Blob(b"server"), Frame::Blob(b"redis")),
            (Frame::Blob(b"version"), Frame::Blob(version.as_bytes())),
            (Frame::Blob(b"proto"), Frame::Integer(proto)),
            (Frame::Blob(b"id"), Frame::Integer(self.id as i64)),
            (Frame::Blob(b"mode"), Frame::Blob(self.mode().as_bytes())),
            (Frame::Blob(b"role"), Frame::Blob(b"master")),
            (Frame::Blob(b"modules"), Frame::Array(Vec::new())),
        ];
        // Ours, not Redis': how much faster than real time this simulator runs, so a watch reads
        // its windows right without --sim-speed. Not in refusing mode, which answers byte for
        // byte as Redis OSS does.
        if self.shared.scenario.mode != Mode::Refusing {
            fields.push((
                Frame::Blob(b"maintwatch-sim-speed"),
                Frame::Blob(speed.as_bytes()),
            ));
        }
        as_map(fields, resp3).encode(out);
    }

    pub(super) fn set_opted_in(&mut self, on: bool) {
        self.opted_in = on;
        let mut st = self.shared.lock();
        if let Some(c) = st.conns.get_mut(&self.id) {
            c.opted_in = on;
        }
        self.shared.sync_opted_in(&st);
    }

    /// `CLIENT MAINT_NOTIFICATIONS ON [moving-endpoint-type T] | OFF` on a server that has it.
    pub(super) fn maint_notifications(&mut self, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        let mode = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
        let endpoint_type = endpoint_type_arg(args);
        // What Enterprise answers to malformed options was not captured; these texts are ours.
        let on = match mode.as_str() {
            "ON" => true,
            "OFF" => false,
            _ => return error(out, "ERR syntax error"),
        };
        match &args[3..] {
            [] => {}
            [k, v] if on && k.eq_ignore_ascii_case(b"moving-endpoint-type") => {
                let v = String::from_utf8_lossy(v).to_ascii_lowercase();
                if !ENDPOINT_TYPES.contains(&v.as_str()) {
                    return error(
                        out,
                        &format!(
                            "ERR invalid moving-endpoint-type '{v}', expected one of {}",
                            ENDPOINT_TYPES.join(", ")
                        ),
                    );
                }
            }
            _ => return error(out, "ERR syntax error"),
        }
        if on && !self.resp3 {
            return error(
                out,
                "ERR CLIENT MAINT_NOTIFICATIONS ON needs RESP3 (HELLO 3): push frames do not exist in RESP2",
            );
        }
        self.shared.triggers.send_modify(|t| t.attempts += 1);
        ok(out);
        if on {
            // Opt in and collect what is owed under the same lock as the player's pushes, so a
            // concurrent push is either queued to us or included here, never both or neither.
            let mut st = self.shared.lock();
            let owed: Vec<(Arc<[u8]>, Why)> = self
                .shared
                .catch_up
                .then(|| st.retained.as_ref().filter(|r| r.kept_at(self.ip)))
                .flatten()
                .map(|r| (r.bytes.clone(), Why::CatchUp))
                .into_iter()
                .chain(st.open_moving.get(&self.ip).map(|m| {
                    let port = self.shared.port;
                    (m.for_conn(port, endpoint_type.as_deref()), Why::Resent)
                }))
                .chain(
                    st.open_window
                        .as_ref()
                        .filter(|(_, to)| to.contains(&self.ip))
                        .map(|(bytes, _)| (bytes.clone(), Why::Resent)),
                )
                .collect();
            if let Some(c) = st.conns.get_mut(&self.id) {
                c.opted_in = true;
                c.endpoint_type = endpoint_type.clone();
            }
            self.opted_in = true;
            self.shared.sync_opted_in(&st);
            drop(st);
            // Same write as the +OK: measured arriving in the same read (docs/protocol.md section 1).
            for (bytes, why) in owed {
                out.extend_from_slice(&bytes);
                batch.notes.push((bytes, why));
            }
        } else {
            self.set_opted_in(false);
        }
        batch.narration.push(What::OptIn {
            conn: self.id,
            proxy: self.proxy,
            on,
            accepted: true,
            endpoint_type,
        });
    }
}
