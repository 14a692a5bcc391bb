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
//! The client connection's task owns its upstream socket too, and relays bytes both ways as
//! they arrive, cut at frame boundaries without being decoded ([`super::wire`]): a command of
//! any size within Redis' limits reaches the upstream whole, and a reply of any size reaches
//! the client whole. Each direction is bounded in bytes; the side that is ahead is not read
//! until the other has caught up, so TCP pushes back on it and memory stays flat whatever a
//! client pipelines. A reply of the simulator's own or a notification goes between two relayed
//! frames, never inside one. A command that cannot be relayed (the upstream is gone, the client
//! is not authenticated) gets an error reply in its place, so replies never shift. An upstream
//! that cannot be reached, refuses the handshake or goes away reaches the client as an error
//! reply, never as a hang.
//!
//! A redis-server started for the run ([`SpawnedRedis`]) is stopped on every way out: a normal
//! end or an error (it is dropped), SIGINT, SIGTERM or SIGHUP (`simulate` ends the run through its
//! normal teardown), a panic (unwinding drops it), and the simulator's own death by
//! SIGKILL or an abort (on Linux the child asks the kernel for SIGKILL when its parent dies).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{tcp, unix, TcpStream, UnixStream};

use super::notation::escape;
use crate::protocol::resp::{encode_command, Frame, Limits, StreamReader};
use crate::shared::url::RedisUrl;

/// One deadline for the upstream's connect, and one for its HELLO reply.
const PHASE_DEADLINE: Duration = Duration::from_secs(5);

/// Where relayed commands go, and how to log in there. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    pub addr: Address,
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

/// Where the relay connects: TCP, or a Unix socket on the same machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `host:port`.
    Tcp(String),
    Unix(PathBuf),
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Tcp(a) => f.write_str(a),
            Address::Unix(p) => write!(
                f,
                "unix:{}",
                crate::shared::escape::sanitize(&p.to_string_lossy())
            ),
        }
    }
}

impl Upstream {
    /// Parses `redis://[user:pass@]host[:port]`, `host:port` or `unix://[user:pass@]/path` (TLS
    /// and a database are refused: the relay is plain, and the database is the client's own
    /// SELECT).
    pub fn parse(url: &str) -> Result<Upstream, String> {
        if let Some((scheme, rest)) = url.trim().split_once("://") {
            if scheme.eq_ignore_ascii_case("unix") {
                return Upstream::parse_unix(rest);
            }
        }
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
            addr: Address::Tcp(format!(
                "{host}:{}",
                u.port.unwrap_or(crate::shared::url::DEFAULT_PORT)
            )),
            user: u.user,
            password: u.password.map(|p| p.expose().to_string()),
        })
    }

    /// `[user:pass@]/path`: the credentials are read as a `redis://` URL's would be.
    fn parse_unix(rest: &str) -> Result<Upstream, String> {
        let (userinfo, path) = match rest.rfind('@') {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        if !path.starts_with('/') {
            return Err("a unix:// URL needs an absolute path: unix:///path/to/redis.sock".into());
        }
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => {
                let u = RedisUrl::parse(&format!("redis://{info}@localhost"))
                    .map_err(|_| "the user and password of the unix:// URL are not valid")?;
                (u.user, u.password.map(|p| p.expose().to_string()))
            }
        };
        Ok(Upstream {
            addr: Address::Unix(PathBuf::from(path)),
            user,
            password,
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

/// A connection to the upstream, over TCP or a Unix socket.
pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// The half of a [`Stream`] the relay reads replies from.
pub(super) enum ReadHalf {
    Tcp(tcp::OwnedReadHalf),
    Unix(unix::OwnedReadHalf),
}

/// The half of a [`Stream`] the relay writes commands to.
pub(super) enum WriteHalf {
    Tcp(tcp::OwnedWriteHalf),
    Unix(unix::OwnedWriteHalf),
}

impl Stream {
    pub(super) fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        }
    }
}

impl ReadHalf {
    pub(super) async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            ReadHalf::Tcp(r) => r.read_buf(buf).await,
            ReadHalf::Unix(r) => r.read_buf(buf).await,
        }
    }
}

impl WriteHalf {
    pub(super) async fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.write(bytes).await,
            WriteHalf::Unix(w) => w.write(bytes).await,
        }
    }

    pub(super) fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.try_write(bytes),
            WriteHalf::Unix(w) => w.try_write(bytes),
        }
    }
}

/// Connects and says `HELLO 3` (with AUTH when the URL had a password); the stream is then
/// the client connection's to relay on. The error says why, with no password in it.
pub(super) async fn connect(up: &Upstream) -> Result<Stream, String> {
    let hello = up.hello();
    match open(up).await? {
        Stream::Tcp(mut t) => handshake(&mut t, up, &hello).await.map(|()| Stream::Tcp(t)),
        Stream::Unix(mut u) => handshake(&mut u, up, &hello)
            .await
            .map(|()| Stream::Unix(u)),
    }
}

/// Connects for a transparent relay (the proxy API's nodes): the client's own HELLO, or none,
/// decides the protocol, so only an `AUTH` is said first, and only when the URL had a password.
pub(super) async fn connect_transparent(up: &Upstream) -> Result<Stream, String> {
    let Some(p) = &up.password else {
        return open(up).await;
    };
    let user = up.user.as_deref().unwrap_or("default");
    let auth = encode_command(&[&b"AUTH"[..], user.as_bytes(), p.as_bytes()]);
    match open(up).await? {
        Stream::Tcp(mut t) => handshake(&mut t, up, &auth).await.map(|()| Stream::Tcp(t)),
        Stream::Unix(mut u) => handshake(&mut u, up, &auth).await.map(|()| Stream::Unix(u)),
    }
}

/// The socket alone, within [`PHASE_DEADLINE`].
async fn open(up: &Upstream) -> Result<Stream, String> {
    let connecting = async {
        match &up.addr {
            Address::Tcp(a) => TcpStream::connect(a).await.map(|s| {
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }),
            Address::Unix(p) => UnixStream::connect(p).await.map(Stream::Unix),
        }
    };
    tokio::time::timeout(PHASE_DEADLINE, connecting)
        .await
        .map_err(|_| format!("upstream {}: no connection within 5 s", up.addr))?
        .map_err(|e| format!("upstream {}: {e}", up.addr))
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    up: &Upstream,
    hello: &[u8],
) -> Result<(), String> {
    s.write_all(hello)
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
    Ok(())
}

/// A `redis-server` from PATH on a free loopback port, stopped when dropped. It also listens on
/// a Unix socket in a private directory, and the relay uses that: on one machine a Unix socket
/// costs the kernel less per write than loopback TCP (no TCP stack, no softirq delivery; about
/// 5 % of the relay's CPU, docs/benchmarks.md), and the relay is a third process on the same cores as
/// the client and the server.
pub struct SpawnedRedis {
    child: tokio::process::Child,
    pub addr: SocketAddr,
    /// The directory of the Unix socket, removed when dropped; `None` when none could be made.
    dir: Option<PathBuf>,
}

/// Longest Unix socket path the platforms take (`sun_path` is 104 or 108 bytes).
const UNIX_PATH_MAX: usize = 100;

impl SpawnedRedis {
    /// Starts it and waits until it accepts connections (bounded: 10 s).
    pub async fn start() -> Result<SpawnedRedis, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for redis-server: {e}"))?
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir = private_dir(port);
        let mut command = tokio::process::Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(d) = &dir {
            command
                .arg("--unixsocket")
                .arg(d.join(SOCKET))
                .args(["--unixsocketperm", "700"]);
        }
        die_with_parent(&mut command);
        let spawned = command
            .spawn()
            .map_err(|e| format!("--upstream spawn: cannot start redis-server from PATH: {e}"));
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                remove_dir(dir.as_deref());
                return Err(e);
            }
        };
        // Dropped on every way out below: the server is killed and the directory removed.
        let mut me = SpawnedRedis { child, addr, dir };
        for _ in 0..500 {
            if let Ok(Some(status)) = me.child.try_wait() {
                return Err(format!(
                    "--upstream spawn: redis-server exited at start: {status}"
                ));
            }
            if TcpStream::connect(addr).await.is_ok() {
                return Ok(me);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = me.child.start_kill();
        Err(format!(
            "--upstream spawn: redis-server did not listen on {addr} within 10 s"
        ))
    }

    /// Where the relay connects: the Unix socket, or the TCP port when there is none.
    pub fn upstream(&self) -> Upstream {
        let addr = match &self.dir {
            Some(d) if d.join(SOCKET).exists() => Address::Unix(d.join(SOCKET)),
            _ => Address::Tcp(self.addr.to_string()),
        };
        Upstream {
            addr,
            user: None,
            password: None,
        }
    }

    /// The server's process id (`None` once it has been waited for).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Dropped on an error or a panic: kill the server and reap it before going on, so that no
/// redis-server (not even a zombie) outlives the run. Bounded: 2 s.
impl Drop for SpawnedRedis {
    fn drop(&mut self) {
        self.reap();
        remove_dir(self.dir.as_deref());
    }
}

impl SpawnedRedis {
    fn reap(&mut self) {
        if self.child.id().is_none() {
            return;
        }
        let _ = self.child.start_kill();
        for _ in 0..100 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The spawned server's socket, in its private directory.
const SOCKET: &str = "redis.sock";

/// A new directory only this user can enter, for the spawned server's socket; `None` (the relay
/// then uses TCP) when it cannot be made or its path is too long for a socket.
fn private_dir(port: u16) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("maintwatch-redis-{}-{port}", std::process::id()));
    if dir.join(SOCKET).as_os_str().len() > UNIX_PATH_MAX {
        return None;
    }
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(&dir).ok().map(|()| dir)
}

fn remove_dir(dir: Option<&std::path::Path>) {
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// On Linux the child asks the kernel for SIGKILL when the simulator dies, however it dies
/// (SIGKILL and aborts included), and exits at once if the simulator is already gone.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (prctl, getppid).
    let parent = std::process::id() as libc::pid_t;
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::other("the simulator is already gone"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut tokio::process::Command) {}
