//! A proxy-API node: a listener, and per connection a transparent relay to the upstream.
//!
//! Unlike the scenario proxies (`super::super::server`), a node owns no command: the client's
//! own HELLO, opt-in and everything else go to the upstream unless an interceptor answers them,
//! as through cae-resp-proxy. Commands are cut into whole frames ([`Cutter`]) because an
//! interceptor compares whole frames; replies are kept in command order (an interceptor's answer
//! waits for the upstream replies owed before it, where the proxy could let it overtake them);
//! the upstream's RESP3 pushes pass through as they come; and a frame the API injects is written
//! only between two whole frames, never inside one. Both directions hold at most one frame of
//! [`FRAME_MAX`] bytes: past it the connection is closed with an error, which a test proxy can
//! afford and which keeps a client from growing the simulator's memory without bound.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::super::notation::escape;
use super::super::upstream::{self, Upstream};
use super::super::wire::Cutter;
use super::super::{What, Why};
use super::{intercept, Api, Conn, Msg};

/// The largest single frame held, either way (a command or a reply).
const FRAME_MAX: usize = 64 * 1024 * 1024;
/// What one read asks for.
const READ_SIZE: usize = 64 * 1024;
/// The longest escaped command or reply in the narration of an interception.
const SHOWN_MAX: usize = 80;

/// Accepts connections on a node until `stop` says so.
pub(super) async fn listen(
    api: Arc<Api>,
    id: String,
    listener: TcpListener,
    target: Upstream,
    mut stop: watch::Receiver<bool>,
) {
    let mut shutdown = api.shared.shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => accept(&api, &id, stream, peer, &target),
                Err(e) => {
                    api.shared.emit(What::Error { message: format!("api node {id}: accept: {e}") });
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = super::stopped(&mut stop) => return,
            _ = super::stopped(&mut shutdown) => return,
        }
    }
}

fn accept(api: &Arc<Api>, node: &str, stream: TcpStream, peer: SocketAddr, target: &Upstream) {
    let _ = stream.set_nodelay(true);
    let proxy = stream.local_addr().unwrap_or(peer);
    let n = {
        let mut st = api.shared.lock();
        let n = st.next_conn;
        st.next_conn += 1;
        n
    };
    let (tx, rx) = mpsc::unbounded_channel();
    api.lock().conns.insert(
        n,
        Conn {
            node: node.to_string(),
            peer,
            since: SystemTime::now(),
            tx,
        },
    );
    api.shared.emit(What::Connected {
        conn: n,
        proxy,
        peer,
    });
    let relay = Relay {
        api: api.clone(),
        n,
        proxy,
        owed: VecDeque::new(),
        errors: 0,
    };
    tokio::spawn(relay.run(stream, target.clone(), rx));
}

/// A reply owed to the client, in command order.
enum Owed {
    /// The upstream's next reply; `Some` when the command was the opt-in (with its endpoint
    /// type), so its answer is narrated as one.
    Upstream(Option<Option<String>>),
    /// An interceptor's answer, written once everything before it is.
    Local(Vec<u8>),
}

struct Relay {
    api: Arc<Api>,
    n: u64,
    proxy: SocketAddr,
    owed: VecDeque<Owed>,
    /// Error replies written since the last traffic event.
    errors: u32,
}

/// Why a relay ended: by the server's side (a close, the upstream, an error) or the client's.
enum End {
    Server,
    Client,
}

impl Relay {
    async fn run(
        mut self,
        client: TcpStream,
        target: Upstream,
        mut rx: mpsc::UnboundedReceiver<Msg>,
    ) {
        let end = match upstream::connect_transparent(&target).await {
            Ok(up) => self.relay(client, up, &mut rx).await,
            Err(e) => {
                self.api.shared.emit(What::Error {
                    message: format!("api conn {}: {e}", self.n),
                });
                End::Server
            }
        };
        self.api.lock().conns.remove(&self.n);
        if self.api.shared.traffic {
            self.traffic(0, self.owed.len() as u32);
        }
        self.api.shared.emit(What::Disconnected {
            conn: self.n,
            proxy: self.proxy,
            by_server: matches!(end, End::Server),
        });
    }

    async fn relay(
        &mut self,
        client: TcpStream,
        up: upstream::Stream,
        rx: &mut mpsc::UnboundedReceiver<Msg>,
    ) -> End {
        let (mut crd, mut cwr) = client.into_split();
        let (mut urd, mut uwr) = up.into_split();
        let mut shutdown = self.api.shared.shutdown.clone();
        let (mut cbuf, mut ubuf) = (Vec::new(), Vec::new());
        let (mut ccut, mut ucut) = (Cutter::default(), Cutter::default());
        let (mut cseen, mut useen) = (0usize, 0usize);
        loop {
            cbuf.reserve(READ_SIZE);
            ubuf.reserve(READ_SIZE);
            tokio::select! {
                r = crd.read_buf(&mut cbuf) => {
                    if !matches!(r, Ok(n) if n > 0) {
                        return End::Client;
                    }
                    let frames = match take_frames(&mut cbuf, &mut ccut, &mut cseen) {
                        Ok(f) => f,
                        Err(e) => return self.fail(&e),
                    };
                    let count = frames.len() as u32;
                    for f in frames {
                        if let Err(e) = self.command(f, &mut uwr).await {
                            return self.fail(&e);
                        }
                    }
                    if self.flush(&mut cwr).await.is_err() {
                        return End::Client;
                    }
                    if self.api.shared.traffic && count > 0 {
                        self.traffic(count, 0);
                    }
                }
                r = urd.read_buf(&mut ubuf) => {
                    if !matches!(r, Ok(n) if n > 0) {
                        return self.fail("the upstream closed the connection");
                    }
                    let frames = match take_frames(&mut ubuf, &mut ucut, &mut useen) {
                        Ok(f) => f,
                        Err(e) => return self.fail(&format!("upstream: {e}")),
                    };
                    for f in frames {
                        if self.reply(f, &mut cwr).await.is_err() {
                            return End::Client;
                        }
                    }
                }
                msg = rx.recv() => match msg {
                    Some(Msg::Inject(bytes)) => {
                        // Between two frames: every write of this task is a whole frame.
                        let writing = SystemTime::now();
                        if cwr.write_all(&bytes).await.is_err() {
                            return End::Client;
                        }
                        self.api.shared.emit_at(SystemTime::now(), What::Sent {
                            conn: self.n,
                            proxy: self.proxy,
                            bytes: bytes.to_vec(),
                            why: Why::Api,
                            writing,
                        });
                    }
                    Some(Msg::Close) | None => return End::Server,
                },
                _ = super::stopped(&mut shutdown) => return End::Server,
            }
        }
    }

    /// One whole command: an interceptor's answer, or on to the upstream.
    async fn command(
        &mut self,
        frame: Vec<u8>,
        uwr: &mut upstream::WriteHalf,
    ) -> Result<(), String> {
        let answered = {
            let mut t = self.api.lock();
            let nodes = self.api.announced(&t);
            intercept::answer(&mut t.interceptors, &frame, &nodes)
        };
        let opt_in = opt_in(&frame);
        match answered {
            Some((name, reply)) => {
                self.api.shared.emit(What::Intercepted {
                    conn: self.n,
                    proxy: self.proxy,
                    name,
                    command: command_text(&frame),
                    reply: short(&reply),
                });
                if let Some(endpoint_type) = opt_in {
                    self.opted_in(reply.first() == Some(&b'+'), endpoint_type);
                }
                self.owed.push_back(Owed::Local(reply));
                Ok(())
            }
            None => {
                let mut rest = &frame[..];
                while !rest.is_empty() {
                    let n = uwr
                        .write(rest)
                        .await
                        .map_err(|e| format!("upstream: {e}"))?;
                    if n == 0 {
                        return Err("upstream: closed".into());
                    }
                    rest = &rest[n..];
                }
                self.owed.push_back(Owed::Upstream(opt_in));
                Ok(())
            }
        }
    }

    /// One whole frame from the upstream: a push goes through now, a reply in its turn.
    async fn reply(
        &mut self,
        frame: Vec<u8>,
        cwr: &mut tokio::net::tcp::OwnedWriteHalf,
    ) -> std::io::Result<()> {
        if frame.first() != Some(&b'>') {
            if let Some(Owed::Upstream(Some(endpoint_type))) = self.owed.front() {
                let endpoint_type = endpoint_type.clone();
                self.opted_in(frame.first() == Some(&b'+'), endpoint_type);
            }
            // More replies than commands (RESP2 pub/sub): passed on all the same.
            if matches!(self.owed.front(), Some(Owed::Upstream(_))) {
                self.owed.pop_front();
            }
            self.count_error(&frame);
        }
        cwr.write_all(&frame).await?;
        self.flush(cwr).await
    }

    /// Writes the interceptors' answers that are next in line.
    async fn flush(&mut self, cwr: &mut tokio::net::tcp::OwnedWriteHalf) -> std::io::Result<()> {
        while let Some(Owed::Local(_)) = self.owed.front() {
            if let Some(Owed::Local(reply)) = self.owed.pop_front() {
                self.count_error(&reply);
                cwr.write_all(&reply).await?;
            }
        }
        Ok(())
    }

    fn count_error(&mut self, reply: &[u8]) {
        if matches!(reply.first(), Some(b'-' | b'!')) {
            self.errors += 1;
        }
    }

    fn opted_in(&self, accepted: bool, endpoint_type: Option<String>) {
        self.api.shared.emit(What::OptIn {
            conn: self.n,
            proxy: self.proxy,
            on: true,
            accepted,
            endpoint_type,
        });
    }

    fn traffic(&mut self, commands: u32, unanswered: u32) {
        let errors = std::mem::take(&mut self.errors);
        self.api.shared.emit(What::Traffic {
            conn: self.n,
            proxy: self.proxy,
            commands,
            errors,
            unanswered,
        });
    }

    fn fail(&self, why: &str) -> End {
        self.api.shared.emit(What::Error {
            message: format!("api conn {}: {}", self.n, escape(why.as_bytes())),
        });
        End::Server
    }
}

/// The whole frames at the start of `buf`, taken out of it; `seen` is how far `cut` has read
/// into the frame that is still incomplete. More than [`FRAME_MAX`] bytes of one frame is an
/// error.
fn take_frames(
    buf: &mut Vec<u8>,
    cut: &mut Cutter,
    seen: &mut usize,
) -> Result<Vec<Vec<u8>>, String> {
    let mut frames = Vec::new();
    loop {
        let (used, ended) = cut.advance(&buf[*seen..])?;
        *seen += used;
        if !ended {
            if *seen > FRAME_MAX {
                return Err(format!("a frame longer than {FRAME_MAX} bytes"));
            }
            return Ok(frames);
        }
        let rest = buf.split_off(*seen);
        frames.push(std::mem::replace(buf, rest));
        *seen = 0;
        if buf.is_empty() {
            return Ok(frames);
        }
    }
}

/// Whether a command is `CLIENT MAINT_NOTIFICATIONS ON`, and with which endpoint type.
fn opt_in(frame: &[u8]) -> Option<Option<String>> {
    let Ok(crate::protocol::resp::Scan::Frame(crate::protocol::resp::Frame::Array(args), _)) =
        crate::protocol::resp::Scanner::new(crate::protocol::resp::Limits::default()).scan(frame)
    else {
        return None;
    };
    let word = |i: usize| {
        args.get(i)
            .and_then(|a| a.as_text())
            .map(|t| t.to_ascii_lowercase())
    };
    if word(0)? != b"client" || word(1)? != b"maint_notifications" || word(2)? != b"on" {
        return None;
    }
    let endpoint = (word(3).as_deref() == Some(b"moving-endpoint-type"))
        .then(|| word(4).map(|t| String::from_utf8_lossy(&t).into_owned()))
        .flatten();
    Some(endpoint)
}

/// A command as words (`CLUSTER SLOTS`), for the narration and the grade's topology count.
fn command_text(frame: &[u8]) -> String {
    match crate::protocol::resp::Scanner::new(crate::protocol::resp::Limits::default()).scan(frame)
    {
        Ok(crate::protocol::resp::Scan::Frame(crate::protocol::resp::Frame::Array(args), _)) => {
            // A password may follow AUTH or HELLO: those are shown by name only.
            let name = args.first().and_then(|a| a.as_text()).unwrap_or(b"");
            if name.eq_ignore_ascii_case(b"AUTH") || name.eq_ignore_ascii_case(b"HELLO") {
                return format!("{} (arguments not shown)", escape(name));
            }
            // Every argument, so that the opt-in's value shows (`moving-endpoint-type
            // internal-ip`, the fifth word); only a long command is cut, and says so.
            let words: Vec<String> = args
                .iter()
                .map(|a| escape(a.as_text().unwrap_or(b"?")))
                .collect();
            let text = words.join(" ");
            if text.len() <= SHOWN_MAX {
                return text;
            }
            let mut cut = SHOWN_MAX;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}...", &text[..cut])
        }
        _ => short(frame),
    }
}

fn short(bytes: &[u8]) -> String {
    let mut text = escape(&bytes[..bytes.len().min(SHOWN_MAX)]);
    if bytes.len() > SHOWN_MAX {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{command_text, SHOWN_MAX};

    fn frame(words: &[&str]) -> Vec<u8> {
        let mut f = format!("*{}\r\n", words.len()).into_bytes();
        for w in words {
            f.extend(format!("${}\r\n{w}\r\n", w.len()).bytes());
        }
        f
    }

    /// The opt-in's value is its fifth word: the narration showed the opt-in without it.
    #[test]
    fn a_command_is_shown_whole_and_only_a_long_one_is_cut() {
        let opt_in = [
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "ON",
            "moving-endpoint-type",
            "internal-ip",
        ];
        assert_eq!(
            command_text(&frame(&opt_in)),
            "CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type internal-ip"
        );
        let long = "k".repeat(200);
        let text = command_text(&frame(&["GET", &long]));
        assert!(
            text.ends_with("...") && text.len() == SHOWN_MAX + 3,
            "{text}"
        );
        assert_eq!(
            command_text(&frame(&["AUTH", "secret"])),
            "AUTH (arguments not shown)"
        );
    }
}
