//! The simulator in front of a real Redis (`simulate --upstream`): what the simulator does not
//! own is relayed to a real server, so a client's test suite runs against real Redis semantics
//! (MULTI/EXEC, blocking commands, pub/sub, client tracking) while the scenario still sends the
//! notifications, moves DNS and closes sockets.
//!
//! One upstream connection per client connection, opened on the client's first relayed command:
//! state that lives on a connection (a transaction, a subscription, tracking, the selected
//! database, a blocked BLPOP) then lives on exactly one upstream connection, as it would on a
//! proxy. The upstream speaks RESP3 from its own `HELLO 3` (with the upstream's AUTH); the
//! connection task switches it with `HELLO 2` when its client speaks RESP2.
//!
//! Two tasks per upstream connection, a writer and a reader, so a large pipeline being written
//! can never wait on replies nobody reads. The reader cuts the byte stream into whole frames with
//! the project's RESP scanner and hands them over in batches; the client connection's task is the
//! only writer to the client socket, so a relayed frame, a reply of the simulator's own and a
//! notification never interleave inside one another. An upstream that cannot be reached, refuses
//! the handshake or goes away reaches the client as an error reply, never as a hang.

use std::fmt;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::escape::escape;
use crate::conn::url::RedisUrl;
use crate::resp::{encode_command, Frame, Limits, StreamReader};

/// Batches of frames read ahead of the client: beyond this the reader stops reading, and the
/// upstream server holds the rest (bounded memory here whatever the client reads).
pub(super) const READ_AHEAD: usize = 16;

/// One deadline for the upstream's connect, and one for its HELLO reply.
const PHASE_DEADLINE: Duration = Duration::from_secs(5);

/// Where relayed commands go, and how to log in there. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    /// `host:port`.
    pub addr: String,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Upstream {
    /// Parses `redis://[user:pass@]host[:port]` or `host:port` (TLS and a database are refused:
    /// the relay is plain TCP, and the database is the client's own SELECT).
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let u = RedisUrl::parse(url).map_err(|e| e.to_string())?;
        if u.tls {
            return Err("rediss:// is not supported (the relay is plain TCP)".into());
        }
        if u.db.is_some() {
            return Err("a database in the URL is not supported; clients SELECT their own".into());
        }
        let host = if u.host.contains(':') {
            format!("[{}]", u.host)
        } else {
            u.host.clone()
        };
        Ok(Upstream {
            addr: format!(
                "{host}:{}",
                u.port.unwrap_or(crate::conn::url::DEFAULT_PORT)
            ),
            user: u.user,
            password: u.password.map(|p| p.expose().to_string()),
        })
    }

    /// `HELLO 3`, with AUTH when the URL had a password.
    fn hello(&self) -> Vec<u8> {
        let mut args: Vec<&[u8]> = vec![b"HELLO", b"3"];
        if let Some(p) = &self.password {
            args.extend([
                &b"AUTH"[..],
                self.user.as_deref().unwrap_or("default").as_bytes(),
                p.as_bytes(),
            ]);
        }
        encode_command(&args)
    }
}

/// Frames from the upstream, in arrival order, as one batch per read.
pub(super) struct Frames {
    pub bytes: Vec<u8>,
    /// Each frame's end offset in `bytes`, and whether it is a push (`>`).
    pub ends: Vec<(usize, bool)>,
}

/// What the reader tells the client connection's task.
pub(super) enum UpMsg {
    Frames(Frames),
    /// The upstream is gone or never came; the text says why (no password in it).
    Failed(String),
}

/// The sending end of one upstream connection: bytes written to it go out in order.
pub(super) struct Link {
    tx: mpsc::UnboundedSender<Vec<u8>>,
}

impl Link {
    /// Connects in the background; until then (and after a failure) writes are queued or dropped,
    /// and the failure arrives on `replies`.
    pub fn open(up: Upstream, replies: mpsc::Sender<UpMsg>) -> Link {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(up, rx, replies));
        Link { tx }
    }

    /// Queues bytes for the upstream; false when its writer has ended.
    pub fn send(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(bytes).is_ok()
    }
}

async fn run(up: Upstream, mut rx: mpsc::UnboundedReceiver<Vec<u8>>, replies: mpsc::Sender<UpMsg>) {
    let stream = match connect(&up).await {
        Ok(s) => s,
        Err(why) => {
            let _ = replies.send(UpMsg::Failed(why)).await;
            return;
        }
    };
    let (mut rd, mut wr) = stream.into_split();
    let reader = tokio::spawn(async move {
        let why = read_frames(&mut rd, &replies).await;
        let _ = replies.send(UpMsg::Failed(why)).await;
    });
    while let Some(bytes) = rx.recv().await {
        if wr.write_all(&bytes).await.is_err() {
            break;
        }
    }
    // The client connection ended (or the upstream stopped taking bytes): an orderly end, after
    // which the server closes its side and the reader ends too.
    let _ = wr.shutdown().await;
    let _ = tokio::time::timeout(PHASE_DEADLINE, reader).await;
}

async fn connect(up: &Upstream) -> Result<TcpStream, String> {
    let mut s = tokio::time::timeout(PHASE_DEADLINE, TcpStream::connect(&up.addr))
        .await
        .map_err(|_| format!("upstream {}: no connection within 5 s", up.addr))?
        .map_err(|e| format!("upstream {}: {e}", up.addr))?;
    let _ = s.set_nodelay(true);
    s.write_all(&up.hello())
        .await
        .map_err(|e| format!("upstream {}: {e}", up.addr))?;
    let mut reader = StreamReader::new(Limits::default());
    let reply = tokio::time::timeout(PHASE_DEADLINE, async {
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("closed during HELLO 3".to_string());
            }
            reader.extend(&buf[..n]);
            let mut first: Option<Result<(), String>> = None;
            reader
                .drain(|f, _, _| {
                    if first.is_none() {
                        first = Some(match f.unattributed() {
                            Frame::Error(t) | Frame::BlobError(t) => {
                                Err(String::from_utf8_lossy(t).into_owned())
                            }
                            _ => Ok(()),
                        });
                    }
                })
                .map_err(|e| e.to_string())?;
            if let Some(r) = first {
                return r;
            }
        }
    })
    .await
    .map_err(|_| format!("upstream {}: no reply to HELLO 3 within 5 s", up.addr))?;
    // An AUTH failure's text names no password (Redis says WRONGPASS ...), but keep it short.
    reply.map_err(|e| {
        format!(
            "upstream {} refused HELLO 3: {}",
            up.addr,
            escape(e.as_bytes())
        )
    })?;
    if !reader.buffered().is_empty() {
        return Err(format!(
            "upstream {}: unexpected bytes after HELLO 3",
            up.addr
        ));
    }
    Ok(s)
}

/// Reads until the upstream goes away; returns why.
async fn read_frames(
    rd: &mut tokio::net::tcp::OwnedReadHalf,
    replies: &mpsc::Sender<UpMsg>,
) -> String {
    let mut reader = StreamReader::new(Limits::default());
    loop {
        let buf = reader.buffer_mut();
        buf.reserve(64 * 1024);
        match rd.read_buf(buf).await {
            Ok(0) => return "the upstream closed the connection".into(),
            Err(e) => return format!("upstream read failed: {e}"),
            Ok(_) => {}
        }
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        let scanned = reader.drain(|_, raw, _| {
            bytes.extend_from_slice(raw);
            ends.push((bytes.len(), raw.first() == Some(&b'>')));
        });
        if !ends.is_empty()
            && replies
                .send(UpMsg::Frames(Frames { bytes, ends }))
                .await
                .is_err()
        {
            return "the client connection ended".into();
        }
        if let Err(e) = scanned {
            return format!("upstream sent bytes that are not RESP: {e}");
        }
    }
}

/// A `redis-server` from PATH on a free loopback port, stopped when dropped.
pub struct SpawnedRedis {
    child: tokio::process::Child,
    pub addr: SocketAddr,
}

impl SpawnedRedis {
    /// Starts it and waits until it accepts connections (bounded: 10 s).
    pub async fn start() -> Result<SpawnedRedis, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for redis-server: {e}"))?
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = tokio::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("--upstream spawn: cannot start redis-server from PATH: {e}"))?;
        for _ in 0..500 {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "--upstream spawn: redis-server exited at start: {status}"
                ));
            }
            if TcpStream::connect(addr).await.is_ok() {
                return Ok(SpawnedRedis { child, addr });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = child.start_kill();
        Err(format!(
            "--upstream spawn: redis-server did not listen on {addr} within 10 s"
        ))
    }

    pub fn upstream(&self) -> Upstream {
        Upstream {
            addr: self.addr.to_string(),
            user: None,
            password: None,
        }
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
