//! A batch of commands read from one client: framed (RESP or inline), checked against the
//! command table in the order Redis checks them, then answered here, relayed upstream, or
//! held until the relayed ones before them are answered (pipelining keeps its order).

use super::super::notation::escape;
use super::super::wire::Head;
use super::super::{wire, What};
use crate::protocol::resp::{encode_command, Frame, Limits, Scan, Scanner};
use crate::simulator::sim::server::{
    is_error_reply, is_subscription, keyed, owned_with_upstream, Batch, Conn, LinkState, Pending,
    Streaming, INLINE_MAX, LOCAL_ARGS_MAX, LOCAL_MAX,
};

impl Conn {
    /// Runs every complete command in `buf` (pipelining) and passes on the relayed ones as far
    /// as they have arrived (appended to `up_out`), removing what it used from `buf`.
    pub(super) fn process(&mut self, buf: &mut Vec<u8>, up_out: Vec<u8>) -> Batch {
        let mut batch = Batch {
            up_out,
            ..Batch::default()
        };
        let mut used = 0;
        while used < buf.len() && !batch.close {
            let step = match self.cmd.as_mut() {
                Some(cmd) => cmd.command.advance(&buf[used..]).map(|(n, ended)| {
                    if cmd.relay {
                        batch.up_out.extend_from_slice(&buf[used..used + n]);
                    }
                    Some((n, ended))
                }),
                None => self
                    .next_command(&buf[used..], &mut batch)
                    .map(|n| n.map(|n| (n, false))),
            };
            match step {
                Ok(Some((n, ended))) => {
                    used += n;
                    if ended {
                        self.cmd = None;
                    }
                }
                Ok(None) => break,
                Err(why) => {
                    // As Redis: report the protocol error (after the replies owed before it),
                    // then close the connection.
                    let start = batch.out.len();
                    error(&mut batch.out, &format!("ERR Protocol error: {why}"));
                    self.hold_local(start, &mut batch);
                    batch.close = true;
                    used = buf.len();
                }
            }
        }
        buf.drain(..used);
        batch
    }

    /// Starts the command at the front of `data`: how many bytes it used (0 when its bytes now
    /// stream through [`Conn::cmd`]), `None` until enough of it has arrived.
    pub(super) fn next_command(
        &mut self,
        data: &[u8],
        batch: &mut Batch,
    ) -> Result<Option<usize>, String> {
        if data[0] != b'*' {
            let Some((args, n)) = next_inline(data)? else {
                return Ok(None);
            };
            if !args.is_empty() {
                batch.commands += 1;
                self.command(&args, &data[..n], batch);
            }
            return Ok(Some(n));
        }
        let Some(head) = wire::head(data)? else {
            return Ok(None);
        };
        if head.argc == 0 {
            // Redis skips an empty command.
            return Ok(Some(head.line));
        }
        batch.commands += 1;
        if self.relays(&head) {
            let start = batch.out.len();
            let refused = self.refusal();
            if let Some(text) = &refused {
                error(&mut batch.out, text);
            } else {
                self.expect_relayed(head.name.bytes(), batch);
            }
            self.hold_local(start, batch);
            // What the head read goes on now; the rest streams from there (a short command
            // is usually whole already).
            let relay = refused.is_none();
            if relay {
                batch.up_out.extend_from_slice(&data[..head.read]);
            }
            if head.args_read < head.argc {
                self.cmd = Some(Streaming {
                    command: wire::Command::resume(head.argc - head.args_read),
                    relay,
                });
            }
            return Ok(Some(head.read));
        }
        // Answered here (or relayed after a look at all its words): held whole, within a bound.
        if head.argc <= LOCAL_ARGS_MAX {
            if let Some((args, n)) = whole_command(data)? {
                self.command(&args, &data[..n], batch);
                return Ok(Some(n));
            }
            if data.len() <= LOCAL_MAX {
                return Ok(None);
            }
        }
        let start = batch.out.len();
        error(
            &mut batch.out,
            &format!(
                "ERR maintwatch simulate: '{}' with more than {LOCAL_ARGS_MAX} arguments or {} MiB \
                 is more than the simulator answers itself",
                head.name.as_str(),
                LOCAL_MAX >> 20
            ),
        );
        self.hold_local(start, batch);
        self.stream(false);
        Ok(Some(0))
    }

    /// The command at the front goes by as it arrives: to the upstream, or nowhere.
    pub(super) fn stream(&mut self, relay: bool) {
        self.cmd = Some(Streaming {
            command: wire::Command::new(),
            relay,
        });
    }

    /// Whether a command streams to the upstream as it arrives, unlooked at: any command the
    /// simulator neither answers nor watches (CLIENT SETNAME names the client, RESET changes
    /// the protocol; in a cluster, a keyed command's slot is checked first).
    pub(super) fn relays(&self, head: &Head) -> bool {
        let (name, sub) = (head.name.bytes(), head.sub.bytes());
        let cluster = self.is_cluster_node();
        let looked_at = owned_with_upstream(name, sub, (cluster, self.shared.azure))
            || (cluster && keyed(name))
            || (name == b"CLIENT" && sub == b"SETNAME")
            || name == b"RESET";
        self.up.is_some() && !looked_at
    }

    /// Why a command to relay gets an error reply instead, if it does.
    pub(super) fn refusal(&self) -> Option<String> {
        if !self.authed {
            return Some("NOAUTH Authentication required.".into());
        }
        let why = self.up.as_ref()?.failed.as_ref()?;
        Some(format!("ERR maintwatch simulate: {why}"))
    }

    pub(super) fn command(&mut self, args: &[Vec<u8>], raw: &[u8], batch: &mut Batch) {
        let start = batch.out.len();
        let narrated_before = batch.narration.len();
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        if self.up.is_some() {
            let sub = args
                .get(1)
                .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
                .unwrap_or_default();
            let cluster = self.is_cluster_node();
            if !owned_with_upstream(
                name.as_bytes(),
                sub.as_bytes(),
                (cluster, self.shared.azure),
            ) {
                if !self.authed {
                    error(&mut batch.out, "NOAUTH Authentication required.");
                } else {
                    if name == "CLIENT" && sub == "SETNAME" && args.len() == 3 {
                        self.client_info("name", &args[2]);
                    }
                    let elsewhere = cluster
                        && keyed(name.as_bytes())
                        && self.moved(&args[1..2], &mut batch.out);
                    if !elsewhere {
                        self.forward(&name, raw, batch);
                    }
                    if name == "RESET" {
                        // RESET puts the upstream connection back to RESP2, and the client
                        // with it; a connection that was opted in no longer is (no pushes in
                        // RESP2).
                        if let Some(up) = self.up.as_mut() {
                            up.resp3 = false;
                        }
                        self.resp3 = false;
                        if self.opted_in {
                            self.set_opted_in(false);
                        }
                    }
                }
                self.hold_local(start, batch);
                return;
            }
        }
        self.dispatch(&name, args, batch);
        if name == "CLIENT" && args.len() == 4 && batch.out[start..].starts_with(b"+OK") {
            let attr = String::from_utf8_lossy(&args[1]).to_ascii_uppercase();
            let field = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
            match (attr.as_str(), field.as_str()) {
                ("SETINFO", "LIB-NAME") => self.client_info("lib-name", &args[3]),
                ("SETINFO", "LIB-VER") => self.client_info("lib-ver", &args[3]),
                _ => {}
            }
        }
        if name == "CLIENT"
            && args.len() == 3
            && args[1].eq_ignore_ascii_case(b"SETNAME")
            && batch.out[start..].starts_with(b"+OK")
        {
            self.client_info("name", &args[2]);
        }
        let narrated = !matches!(
            name.as_str(),
            "GET"
                | "SET"
                | "DEL"
                | "EXISTS"
                | "PING"
                | "ECHO"
                | "SSUBSCRIBE"
                | "SUNSUBSCRIBE"
                | "SPUBLISH"
                | "SUBSCRIBE"
                | "UNSUBSCRIBE"
        );
        // The opt-in has its own narration (What::OptIn), unless it failed before being parsed.
        if narrated && batch.narration.len() == narrated_before {
            let reply = &batch.out[start..];
            batch.narration.push(What::Command {
                conn: self.id,
                proxy: self.proxy,
                command: redacted(args),
                reply: shorten(&escape(reply), 160),
            });
        }
        self.hold_local(start, batch);
    }

    /// Relays one whole command as the client wrote it; after an upstream failure, answers
    /// with the failure instead.
    pub(super) fn forward(&mut self, name: &str, raw: &[u8], batch: &mut Batch) {
        if let Some(text) = self.refusal() {
            return error(&mut batch.out, &text);
        }
        self.expect_relayed(name.as_bytes(), batch);
        batch.up_out.extend_from_slice(raw);
    }

    /// A command is about to be relayed: the connection opens on the first, the upstream's
    /// protocol follows the client's, and its reply takes its place in the queue.
    pub(super) fn expect_relayed(&mut self, name: &[u8], batch: &mut Batch) {
        let resp3 = self.resp3;
        let Some(up) = self.up.as_mut() else { return };
        if up.link == LinkState::Idle {
            up.link = LinkState::Wanted;
        }
        if up.resp3 != resp3 {
            let hello = encode_command(&[&b"HELLO"[..], if resp3 { b"3" } else { b"2" }]);
            batch.up_out.extend_from_slice(&hello);
            up.pending.push_back(Pending::Discard);
            up.resp3 = resp3;
        }
        up.states.relayed(name);
        if !is_subscription(name) {
            up.expect_reply();
        }
    }

    /// Counts an error reply of the simulator's own, and holds it back when relayed replies are
    /// still owed before it.
    pub(super) fn hold_local(&mut self, start: usize, batch: &mut Batch) {
        if batch.out.len() == start {
            return;
        }
        // Also behind a relayed frame still arriving (a push), never inside it.
        let up = self
            .up
            .as_mut()
            .filter(|u| !u.pending.is_empty() || u.cutter.mid_frame());
        match up {
            Some(up) => {
                let reply = batch.out.split_off(start);
                up.pending.push_back(Pending::Local(reply));
            }
            None => batch.errors += u32::from(is_error_reply(&batch.out[start..])),
        }
    }

    /// Answers one command the way Redis orders its checks: is it a command with a plausible
    /// argument count, then authentication, then the command itself. Routing only: each command
    /// family has its own handler, in the style of a command table.
    pub(super) fn dispatch(&mut self, name: &str, args: &[Vec<u8>], batch: &mut Batch) {
        let Some((family, arity)) = command_table(name) else {
            return unknown_command(&mut batch.out, args);
        };
        if !arity_ok(arity, args.len()) {
            let text = format!(
                "ERR wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            );
            return error(&mut batch.out, &text);
        }
        // CLIENT's subcommands have arities of their own, also checked before authentication.
        if family == Family::Client && !self.client_arity(args, batch) {
            return;
        }
        if !self.authed && !matches!(name, "HELLO" | "AUTH" | "QUIT") {
            return error(&mut batch.out, "NOAUTH Authentication required.");
        }
        let out = &mut batch.out;
        match family {
            Family::Hello => self.hello(args, out),
            Family::Auth => self.auth(args, out),
            Family::Client => self.client(args, batch),
            Family::Connection => self.connection(name, args, batch),
            Family::Keyspace => self.keyspace(name, args, out),
            Family::Server => self.server_command(name, args, out),
            Family::Cluster => self.cluster(&subcommand(args), args, out),
            Family::PubSub => self.pubsub(name, args, out),
        }
    }
}

pub(super) const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub(super) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";

/// The families of commands the simulator answers; each has one handler on `Conn`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Hello,
    Auth,
    Client,
    Connection,
    Keyspace,
    Server,
    Cluster,
    PubSub,
}

/// The command table: a command's family and its arity in Redis's convention (positive means
/// exactly that many arguments with the name, negative means at least that many).
pub(super) fn command_table(name: &str) -> Option<(Family, i32)> {
    Some(match name {
        "GET" => (Family::Keyspace, 2),
        "SET" => (Family::Keyspace, -3),
        "DEL" | "EXISTS" => (Family::Keyspace, -2),
        "ECHO" | "SELECT" => (Family::Connection, 2),
        "PING" | "QUIT" => (Family::Connection, -1),
        "AUTH" => (Family::Auth, -2),
        "CLIENT" => (Family::Client, -2),
        "CLUSTER" => (Family::Cluster, -2),
        "HELLO" => (Family::Hello, -1),
        "COMMAND" | "INFO" => (Family::Server, -1),
        "READONLY" | "READWRITE" => (Family::Server, 1),
        "SSUBSCRIBE" => (Family::PubSub, -2),
        "SUNSUBSCRIBE" => (Family::PubSub, -1),
        "SPUBLISH" => (Family::PubSub, 3),
        "SUBSCRIBE" => (Family::PubSub, -2),
        "UNSUBSCRIBE" => (Family::PubSub, -1),
        _ => return None,
    })
}

pub(super) fn arity_ok(arity: i32, n: usize) -> bool {
    let n = n as i32;
    !((arity > 0 && n != arity) || n < -arity)
}

/// The second argument upper-cased, or empty when there is none.
pub(super) fn subcommand(args: &[Vec<u8>]) -> String {
    args.get(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
        .unwrap_or_default()
}

/// Redis's error for a command it does not know, quoting at most 16 arguments.
pub(super) fn unknown_command(out: &mut Vec<u8>, args: &[Vec<u8>]) {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        String::from_utf8_lossy(&args[0])
    );
    for a in args[1..].iter().take(16) {
        text.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
    }
    error(out, &text)
}

/// CLIENT SETINFO accepts only LIB-NAME and LIB-VER, with printable values without spaces.
pub(super) fn client_setinfo(args: &[Vec<u8>], out: &mut Vec<u8>) {
    let attr = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
    if attr != "LIB-NAME" && attr != "LIB-VER" {
        let text = format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(&args[2])
        );
        return error(out, &text);
    }
    if args[3]
        .iter()
        .any(|&b| b == b' ' || b == b'\n' || !(b'!'..=b'~').contains(&b))
    {
        let text = format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            attr.to_ascii_lowercase()
        );
        return error(out, &text);
    }
    ok(out)
}

pub(super) fn ok(out: &mut Vec<u8>) {
    out.extend_from_slice(b"+OK\r\n");
}

pub(super) fn simple(out: &mut Vec<u8>, text: &str) {
    Frame::Simple(text.as_bytes()).encode(out);
}

pub(super) fn error(out: &mut Vec<u8>, text: &str) {
    // Redis never lets a CR or LF into an error line; neither may an echoed argument.
    let clean: String = text
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    Frame::Error(clean.as_bytes()).encode(out);
}

pub(super) fn int(out: &mut Vec<u8>, n: i64) {
    Frame::Integer(n).encode(out);
}

pub(super) fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    Frame::Blob(bytes).encode(out);
}

pub(super) fn parse_int(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

pub(super) fn endpoint_type_arg(args: &[Vec<u8>]) -> Option<String> {
    args.windows(2)
        .find(|w| w[0].eq_ignore_ascii_case(b"moving-endpoint-type"))
        .map(|w| String::from_utf8_lossy(&w[1]).into_owned())
}

/// The command for the narration, with any password replaced.
pub(super) fn redacted(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let mut words: Vec<String> = args.iter().map(|a| escape(a)).collect();
    match name.as_str() {
        "AUTH" => {
            if let Some(last) = words.last_mut() {
                *last = "<redacted>".into();
            }
        }
        "HELLO" => {
            for i in 2..args.len() {
                if args[i].eq_ignore_ascii_case(b"AUTH") && i + 2 < args.len() {
                    words[i + 2] = "<redacted>".into();
                }
            }
        }
        _ => {}
    }
    shorten(&words.join(" "), 200)
}

pub(super) fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// A command's arguments and how many bytes of the buffer it took.
type Parsed = (Vec<Vec<u8>>, usize);

/// The whole multibulk command at the front of `buf` (at most [`LOCAL_ARGS_MAX`] arguments,
/// checked by the caller), `None` if incomplete.
pub(super) fn whole_command(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let scanner = Scanner::new(Limits {
        max_depth: 1,
        ..Limits::default()
    });
    match scanner.scan(buf) {
        Ok(Scan::Incomplete { .. }) => Ok(None),
        Ok(Scan::Frame(Frame::Array(items), n)) => {
            let args = items
                .iter()
                .map(|f| match f {
                    Frame::Blob(b) => Ok(b.to_vec()),
                    other => Err(format!("expected '$', got a {}", other.type_name())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some((args, n)))
        }
        Ok(Scan::Frame(other, _)) => Err(format!("expected an array, got a {}", other.type_name())),
        Err(e) => Err(e.to_string()),
    }
}

/// The inline (telnet-style) command at the front of `buf` (`PING\r\n`), `None` if incomplete.
pub(super) fn next_inline(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > INLINE_MAX {
            return Err("too big inline request".into());
        }
        return Ok(None);
    };
    let line = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
    let args = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Ok(Some((args, end + 1)))
}
