//! One application connection read from both directions: the commands the application sent,
//! the replies and pushes the server sent back, and the handshake between them.
//!
//! Replies are matched to commands in order, as RESP guarantees; a command whose reply never
//! comes as a reply (the SUBSCRIBE family: RESP3 confirms it with push frames) is not queued.
//! A gap or a framing error on the client side only stops the matching: pushes on the server
//! side are still read, since they need no command to be understood.

use crate::network::conn::HelloInfo;
use crate::protocol::resp::{FlatFrame, Frame, Kind, Limits, StreamReader};
use crate::shared::escape::sanitize;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::SystemTime;

/// One frame the server sent, in order: a push, or a reply (its error text and HELLO map).
/// The map is boxed: nearly every reply carries none, and is moved twice per packet.
enum Said {
    Push(Box<crate::observe::record::FrameRecord>),
    Reply(Option<String>, Option<Box<HelloInfo>>),
}

/// What a command sent by the application was, as far as the reader cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Hello(Option<String>),
    OptIn {
        sent: String,
        endpoint_type: Option<String>,
    },
    /// Setup commands that may come before the opt-in (AUTH, SELECT, CLIENT SETNAME ...).
    Setup,
    /// `CLIENT SETINFO LIB-NAME|LIB-VER` or `CLIENT SETNAME`: how the client names itself (the
    /// grade groups connections by it).
    Named(&'static str, String),
    Other,
}

/// A command awaiting its reply.
#[derive(Debug)]
struct Waiting {
    cmd: Cmd,
    sent: SystemTime,
    in_window: bool,
}

/// The handshake as captured.
#[derive(Debug, Default, Clone)]
pub struct HandshakeState {
    pub hello: Option<String>,
    pub hello_error: Option<String>,
    pub info: Option<HelloInfo>,
    pub opt_in: Option<String>,
    pub endpoint_type: Option<String>,
    /// Set once reported.
    pub done: bool,
}

/// A thing one direction's bytes said.
#[derive(Debug)]
pub enum Event {
    /// A push frame: its bytes, offset and parse (as the watch records it).
    Push(Box<crate::observe::record::FrameRecord>),
    /// The opt-in's reply: `None` accepted, `Some(text)` refused.
    OptInReply(Option<String>),
    /// HELLO refused with this text.
    HelloRefused(String),
    /// The first ordinary command, with no opt-in before it.
    NoOptIn,
    /// Framing failed at this offset.
    Unreadable(u64, String),
}

pub struct App {
    pub id: u32,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub syn: bool,
    up: StreamReader,
    down: StreamReader,
    up_ok: bool,
    down_ok: bool,
    waiting: VecDeque<Waiting>,
    /// Passwords the application sent, hidden from every text shown (never printed).
    secrets: Vec<String>,
    /// More than [`MAX_SECRETS`] distinct passwords were sent: server texts are withheld.
    too_many_secrets: bool,
    /// Steps spent comparing and hiding passwords (see [`super::Stats::work`]).
    pub work: u64,
    /// Reused from call to call: what one batch of bytes said, before it is acted on.
    cmds: Vec<Cmd>,
    said: Vec<Said>,
    pub hs: HandshakeState,
    /// The MOVING this connection got (first one): event name and capture time.
    pub moving: Option<(String, SystemTime)>,
    /// The new connection from this host after the MOVING: its id and time.
    pub reconnect: Option<(u32, SystemTime)>,
    pub closed: Option<(String, SystemTime)>,
    pub verdict_done: bool,
    pub window_commands: u32,
    pub window_replies: u32,
    pub window_max_latency: Option<f64>,
    /// `CLIENT SETINFO` and `SETNAME` values, as sent.
    pub lib_name: Option<String>,
    pub lib_ver: Option<String>,
    pub name: Option<String>,
    /// Commands sent and error replies read, for the grade.
    pub commands: u64,
    pub errors: u64,
}

/// Distinct passwords remembered per connection. Hiding costs a pass over a text per password,
/// so an application (or a crafted file) sending thousands of them would make each error reply
/// cost thousands of passes. Past this many, error texts of the connection are not shown at all:
/// a password is never printed, and the work per reply stays bounded.
pub const MAX_SECRETS: usize = 16;

/// What is shown instead of a server's text once [`MAX_SECRETS`] is passed.
pub const WITHHELD: &str =
    "<text withheld: the connection sent too many distinct passwords to hide them reliably>";

/// The passwords a command carries (HELLO ... AUTH user pass, AUTH [user] pass): kept only to
/// be hidden if a server's reply echoes one.
fn secrets(frame: &Frame<'_>) -> Vec<String> {
    let Frame::Array(items) = frame else {
        return Vec::new();
    };
    // Every command of a capture passes here: only AUTH and HELLO are worth collecting words for.
    let first = items.first().and_then(Frame::as_text).unwrap_or_default();
    if !first.eq_ignore_ascii_case(b"AUTH") && !first.eq_ignore_ascii_case(b"HELLO") {
        return Vec::new();
    }
    let words: Vec<&[u8]> = items.iter().filter_map(Frame::as_text).collect();
    let is = |i: usize, w: &str| {
        words
            .get(i)
            .is_some_and(|x| x.eq_ignore_ascii_case(w.as_bytes()))
    };
    let mut out = Vec::new();
    if is(0, "AUTH") {
        if let Some(p) = words.last().filter(|_| words.len() > 1) {
            out.push(String::from_utf8_lossy(p).into_owned());
        }
    }
    if is(0, "HELLO") {
        if let Some(i) = (1..words.len()).find(|&i| is(i, "AUTH")) {
            if let Some(p) = words.get(i + 2) {
                out.push(String::from_utf8_lossy(p).into_owned());
            }
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Reads the command name and the arguments that matter from a client frame.
fn command(frame: &Frame<'_>) -> Cmd {
    let Frame::Array(items) = frame else {
        return Cmd::Other;
    };
    // Upper-cased on the stack: this runs for every command of a capture.
    let word = |i: usize| {
        let mut w = [0u8; 20];
        let t = items.get(i).and_then(Frame::as_text).unwrap_or_default();
        let n = if t.len() <= w.len() { t.len() } else { 0 };
        w[..n].copy_from_slice(&t[..n]);
        w.make_ascii_uppercase();
        (w, n)
    };
    let (first, n) = word(0);
    let (second, m) = word(1);
    match &first[..n] {
        b"HELLO" => Cmd::Hello(
            items
                .get(1)
                .and_then(Frame::as_text)
                .map(|v| sanitize(&String::from_utf8_lossy(v)).into_owned()),
        ),
        b"CLIENT" => match &second[..m] {
            b"MAINT_NOTIFICATIONS" => {
                // Only the words of this command are shown: it carries no secret.
                let sent: Vec<String> = items
                    .iter()
                    .filter_map(Frame::as_text)
                    .map(|t| sanitize(&String::from_utf8_lossy(t)).into_owned())
                    .collect();
                let endpoint_type = sent
                    .iter()
                    .position(|w| w.eq_ignore_ascii_case("moving-endpoint-type"))
                    .and_then(|i| sent.get(i + 1).cloned());
                Cmd::OptIn {
                    sent: sent.join(" "),
                    endpoint_type,
                }
            }
            b"SETINFO" | b"SETNAME" => named(items, &second[..m]),
            b"ID" | b"INFO" => Cmd::Setup,
            _ => Cmd::Other,
        },
        b"AUTH" | b"SELECT" | b"READONLY" | b"PING" => Cmd::Setup,
        _ => Cmd::Other,
    }
}

/// `CLIENT SETINFO LIB-NAME x`, `CLIENT SETINFO LIB-VER x`, `CLIENT SETNAME x`.
fn named(items: &[Frame<'_>], second: &[u8]) -> Cmd {
    let text = |i: usize| {
        items
            .get(i)
            .and_then(Frame::as_text)
            .map(|v| sanitize(&String::from_utf8_lossy(v)).into_owned())
    };
    let field = match (second, text(2)) {
        (b"SETNAME", _) => "name",
        (_, Some(f)) if f.eq_ignore_ascii_case("lib-name") => "lib-name",
        (_, Some(f)) if f.eq_ignore_ascii_case("lib-ver") => "lib-ver",
        _ => return Cmd::Setup,
    };
    let value = if field == "name" { text(2) } else { text(3) };
    value.map_or(Cmd::Setup, |v| Cmd::Named(field, v))
}

/// A client frame that is a whole array whose first word needs nothing but its name: its
/// [`Cmd`]. `None` for the rest (AUTH, HELLO, CLIENT, the SUBSCRIBE family, anything odd),
/// which are read from the tree by [`secrets`], [`unanswered`] and [`command`].
fn ordinary(flat: &FlatFrame<'_, '_>) -> Option<Cmd> {
    let root = flat.root();
    if root.kind() != Kind::Array || root.is_elided() {
        return None;
    }
    let first = root.children().next()?.as_text()?;
    let is = |w: &[u8]| first.eq_ignore_ascii_case(w);
    if is(b"AUTH") || is(b"HELLO") || is(b"CLIENT") || first.len() > 20 {
        return None;
    }
    if first.len() >= 9 && first[first.len() - 9..].eq_ignore_ascii_case(b"SUBSCRIBE") {
        return None;
    }
    Some(if is(b"SELECT") || is(b"READONLY") || is(b"PING") {
        Cmd::Setup
    } else {
        Cmd::Other
    })
}

/// One server frame: a push as the watch records it, or a reply's error text and HELLO map.
/// Only pushes, maps and attributed values are built as trees.
fn server_frame(flat: &FlatFrame<'_, '_>, offset: u64) -> Said {
    let root = flat.root();
    match root.kind() {
        Kind::Error | Kind::BlobError => Said::Reply(
            root.bytes()
                .map(|t| sanitize(&String::from_utf8_lossy(t)).into_owned()),
            None,
        ),
        Kind::Push | Kind::Map | Kind::Attributed => {
            let frame = flat.to_frame();
            if let Frame::Push(_) = frame.unattributed() {
                return Said::Push(Box::new(crate::observe::record::FrameRecord::new(
                    &frame,
                    flat.raw(),
                    offset,
                )));
            }
            let info = matches!(frame.unattributed(), Frame::Map(_))
                .then(|| Box::new(HelloInfo::from_frame(&frame)));
            Said::Reply(text_of(frame.unattributed()), info)
        }
        _ => Said::Reply(None, None),
    }
}

/// Commands answered by push frames in RESP3 and by no reply in order: not queued.
fn unanswered(frame: &Frame<'_>) -> bool {
    let Frame::Array(items) = frame else {
        return false;
    };
    let Some(name) = items.first().and_then(Frame::as_text) else {
        return false;
    };
    [
        &b"SUBSCRIBE"[..],
        b"PSUBSCRIBE",
        b"SSUBSCRIBE",
        b"UNSUBSCRIBE",
        b"PUNSUBSCRIBE",
        b"SUNSUBSCRIBE",
    ]
    .iter()
    .any(|n| n.eq_ignore_ascii_case(name))
}

fn text_of(frame: &Frame<'_>) -> Option<String> {
    match frame {
        Frame::Error(t) | Frame::BlobError(t) => {
            Some(sanitize(&String::from_utf8_lossy(t)).into_owned())
        }
        _ => None,
    }
}

fn is_auth_error(text: &str) -> bool {
    let code = text.split_whitespace().next().unwrap_or("");
    ["WRONGPASS", "NOAUTH", "NOPERM"]
        .iter()
        .any(|c| code.eq_ignore_ascii_case(c))
}

impl App {
    pub fn new(id: u32, client: SocketAddr, server: SocketAddr, syn: bool) -> App {
        App {
            id,
            client,
            server,
            syn,
            up: StreamReader::new(Limits::default()),
            down: StreamReader::new(Limits::default()),
            up_ok: true,
            down_ok: true,
            waiting: VecDeque::new(),
            secrets: Vec::new(),
            too_many_secrets: false,
            work: 0,
            cmds: Vec::new(),
            said: Vec::new(),
            hs: HandshakeState::default(),
            moving: None,
            reconnect: None,
            closed: None,
            verdict_done: false,
            window_commands: 0,
            window_replies: 0,
            window_max_latency: None,
            lib_name: None,
            lib_ver: None,
            name: None,
            commands: 0,
            errors: 0,
        }
    }

    /// A gap or an error on the client side: replies can no longer be matched.
    pub fn stop_client(&mut self) {
        self.up_ok = false;
        self.waiting.clear();
        self.up = StreamReader::new(Limits::default());
    }

    /// A gap on the server side: nothing more is read from it.
    pub fn stop_server(&mut self) {
        self.down_ok = false;
        self.down = StreamReader::new(Limits::default());
    }

    /// Bytes the application sent.
    pub fn client_bytes(&mut self, data: &[u8], at: SystemTime) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.up_ok {
            return events;
        }
        let mut cmds = std::mem::take(&mut self.cmds);
        let (known, too_many, work) = (
            &mut self.secrets,
            &mut self.too_many_secrets,
            &mut self.work,
        );
        // Framed straight from the packet: a command whole in one segment is never copied.
        let result = self.up.feed_flat(data, |flat, _| {
            // Nearly every command is an ordinary one named by its first word: that is read
            // flat. The few that carry a password, an opt-in or a subscription get the tree.
            if let Some(cmd) = ordinary(&flat) {
                cmds.push(cmd);
                return;
            }
            let frame = flat.to_frame();
            for s in secrets(&frame) {
                *work += known.len() as u64 + 1;
                if known.contains(&s) || *too_many {
                    continue;
                }
                if known.len() == MAX_SECRETS {
                    *too_many = true;
                    known.clear();
                } else {
                    known.push(s);
                }
            }
            if !unanswered(&frame) {
                cmds.push(command(&frame));
            }
        });
        // Mostly one command per packet: taken without a drain to set up and drop.
        if let [_] = cmds[..] {
            let cmd = cmds.pop().expect("one command");
            self.sent(cmd, at, &mut events);
        } else {
            for cmd in cmds.drain(..) {
                self.sent(cmd, at, &mut events);
            }
        }
        self.cmds = cmds;
        if let Err(e) = result {
            events.push(Event::Unreadable(e.offset, e.to_string()));
            self.stop_client();
        }
        events
    }

    fn sent(&mut self, cmd: Cmd, at: SystemTime, events: &mut Vec<Event>) {
        match &cmd {
            Cmd::Hello(v) => self.hs.hello = v.clone(),
            Cmd::OptIn {
                sent,
                endpoint_type,
            } => {
                self.hs.opt_in = Some(sent.clone());
                self.hs.endpoint_type = endpoint_type.clone();
            }
            Cmd::Setup => {}
            Cmd::Named(field, value) => match *field {
                "lib-name" => self.lib_name = Some(value.clone()),
                "lib-ver" => self.lib_ver = Some(value.clone()),
                _ => self.name = Some(value.clone()),
            },
            Cmd::Other => {
                if !self.hs.done && self.hs.opt_in.is_none() {
                    self.hs.done = true;
                    events.push(Event::NoOptIn);
                }
            }
        }
        self.commands += 1;
        let in_window = self.moving.is_some() && self.closed.is_none();
        if in_window {
            self.window_commands += 1;
        }
        self.waiting.push_back(Waiting {
            cmd,
            sent: at,
            in_window,
        });
    }

    /// Bytes the server sent.
    pub fn server_bytes(&mut self, data: &[u8], at: SystemTime) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.down_ok {
            return events;
        }
        let mut said = std::mem::take(&mut self.said);
        let result = self
            .down
            .feed_flat(data, |flat, offset| said.push(server_frame(&flat, offset)));
        // Mostly one frame per packet: taken without a drain to set up and drop.
        if let [_] = said[..] {
            let item = said.pop().expect("one frame");
            self.said(item, at, &mut events);
        } else {
            for item in said.drain(..) {
                self.said(item, at, &mut events);
            }
        }
        self.said = said;
        if let Err(e) = result {
            events.push(Event::Unreadable(e.offset, e.to_string()));
            self.stop_server();
        }
        events
    }

    fn said(&mut self, item: Said, at: SystemTime, events: &mut Vec<Event>) {
        match item {
            Said::Push(record) => events.push(Event::Push(record)),
            Said::Reply(error, info) => self.reply(error, info, at, events),
        }
    }

    fn reply(
        &mut self,
        error: Option<String>,
        info: Option<Box<HelloInfo>>,
        at: SystemTime,
        events: &mut Vec<Event>,
    ) {
        let error = error.map(|e| self.hide(e));
        self.errors += u64::from(error.is_some());
        // A reply nobody is waiting for (RESP2 pub/sub messages): nothing to match.
        let Some(w) = self.waiting.pop_front() else {
            return;
        };
        if w.in_window {
            self.window_replies += 1;
            let ms = at
                .duration_since(w.sent)
                .map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)
                .unwrap_or(0.0);
            self.window_max_latency = Some(self.window_max_latency.unwrap_or(0.0).max(ms));
        }
        match w.cmd {
            Cmd::Hello(_) => match error {
                Some(text) => {
                    self.hs.hello_error = Some(text.clone());
                    self.hs.done = true;
                    events.push(Event::HelloRefused(text));
                }
                None => self.hs.info = info.map(|i| *i),
            },
            Cmd::OptIn { .. } if !self.hs.done => {
                self.hs.done = true;
                events.push(Event::OptInReply(error));
            }
            _ => {}
        }
    }

    /// Commands still waiting for their reply.
    pub fn unanswered(&self) -> usize {
        self.waiting.len()
    }

    /// A server's text with any password the application sent replaced.
    fn hide(&mut self, mut text: String) -> String {
        if self.too_many_secrets {
            // The error code alone, when it is one of the server's own words, still says why.
            let code = text.split_whitespace().next().unwrap_or("");
            let known = [
                "ERR",
                "WRONGPASS",
                "NOAUTH",
                "NOPERM",
                "NOPROTO",
                "LOADING",
                "BUSY",
            ];
            return match known.iter().find(|k| code.eq_ignore_ascii_case(k)) {
                Some(k) => format!("{k} {WITHHELD}"),
                None => WITHHELD.into(),
            };
        }
        self.work += self.secrets.len() as u64;
        for s in &self.secrets {
            text = text.replace(s.as_str(), "<redacted>");
        }
        text
    }

    /// The watch's opt-in outcome for a refused HELLO.
    pub fn hello_outcome(text: &str) -> crate::observe::record::OptInOutcome {
        if is_auth_error(text) {
            crate::observe::record::OptInOutcome::AuthFailed
        } else {
            crate::observe::record::OptInOutcome::Resp3Unavailable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_echoed_by_the_server_is_hidden() {
        let mut app = App::new(
            1,
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            true,
        );
        let at = SystemTime::UNIX_EPOCH;
        app.client_bytes(
            b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$7\r\nhunter2\r\n",
            at,
        );
        let events = app.server_bytes(b"-WRONGPASS bad password hunter2 for app\r\n", at);
        let [Event::HelloRefused(text)] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(text, "WRONGPASS bad password <redacted> for app");
        assert_eq!(
            App::hello_outcome(text),
            crate::observe::record::OptInOutcome::AuthFailed
        );
    }

    #[test]
    fn subscribe_is_not_waiting_for_a_reply() {
        let mut app = App::new(
            1,
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            true,
        );
        let at = SystemTime::UNIX_EPOCH;
        app.client_bytes(b"*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n", at);
        app.client_bytes(OPT_IN_ON, at);
        let events = app.server_bytes(b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n+OK\r\n", at);
        assert!(
            matches!(events.as_slice(), [Event::Push(_), Event::OptInReply(None)]),
            "{events:?}"
        );
    }

    #[test]
    fn past_the_password_cap_server_texts_are_withheld_and_work_stays_flat() {
        let mut app = App::new(
            1,
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            true,
        );
        let at = SystemTime::UNIX_EPOCH;
        for i in 0..1000 {
            let pass = format!("secret{i:05}");
            let cmd = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{pass}\r\n", pass.len());
            app.client_bytes(cmd.as_bytes(), at);
            app.server_bytes(b"-WRONGPASS invalid password\r\n", at);
        }
        assert!(app.secrets.len() <= MAX_SECRETS);
        assert!(
            app.work <= 1000 * (2 * MAX_SECRETS as u64 + 2),
            "work {} for 1000 passwords",
            app.work
        );
        let cmd =
            b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$11\r\nsecret00001\r\n";
        app.client_bytes(cmd, at);
        let events = app.server_bytes(b"-WRONGPASS secret00001 is wrong\r\n", at);
        let [Event::HelloRefused(text)] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(text, &format!("WRONGPASS {WITHHELD}"));
        assert_eq!(
            App::hello_outcome(text),
            crate::observe::record::OptInOutcome::AuthFailed
        );
    }

    const OPT_IN_ON: &[u8] = b"*3\r\n$6\r\nCLIENT\r\n$19\r\nMAINT_NOTIFICATIONS\r\n$2\r\nON\r\n";
}
