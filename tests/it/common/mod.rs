//! The real-server test tier, shared by the test binaries: a Debian `redis-server` started on a
//! free loopback port when `MAINTWATCH_REDIS_SERVER` names one. Unset or empty (the README's test
//! command gives an empty value on a machine without redis-server), a test prints a visible SKIP
//! line and passes; set but failing to start, it fails. SKIP lines, here and in every test file,
//! are written straight to the process's stderr (`std::io::Write::write_fmt` on
//! `std::io::stderr()`), not with `eprintln!`: the test harness captures `eprintln!` of a
//! passing test, and a skip nobody sees is a silent pass.
//!
//! Every test binary reads the variable only through [`redis_server_binary`] (a test in
//! `tests/it/sim.rs` enforces it), so the unset/empty rule cannot drift between files.
//!
//! Beside it: the process harness every test that starts the binary uses ([`process`]), the
//! metrics scraper ([`scrape`]), the client tier ([`tier`]), the raw RESP3 client ([`client`]),
//! the waits on the simulator's narration ([`narration`]) and the hand-written test servers.

pub mod client;
pub mod narration;
mod process;
pub mod scrape;
pub mod tier;
pub use process::*;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Prints `SKIP: TEST: WHY` where it is seen whatever the test's outcome: on the process's own
/// stderr, not through the harness's capture (see this module's doc).
pub fn skip(test: &str, why: &str) {
    visible(&format!("SKIP: {test}: {why}"));
}

/// Prints a line where it is seen whatever the test's outcome, as [`skip`] does: a note a
/// passing test prints with `eprintln!` is captured and never read.
pub fn visible(line: &str) {
    let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{line}\n"));
}

/// Whether this run rewrites the files tests check against (the matrix page, the pcap
/// fixtures) instead of checking them: `MAINTWATCH_REGENERATE` set, and not to 0.
pub fn regenerating() -> bool {
    std::env::var_os("MAINTWATCH_REGENERATE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// One HTTP/1.1 request to a control API of the simulator (the connection closed after it):
/// the status and the body. `guard` bounds the wait for the reply, against a hang only.
pub fn http(
    api: SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
    guard: Duration,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(api).expect("the API accepts");
    s.set_read_timeout(Some(guard)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {api}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("a reply");
    let status = reply[9..12].parse().expect("a status");
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// The name of the variable that turns the real-server tier on.
pub const REDIS_SERVER_VAR: &str = "MAINTWATCH_REDIS_SERVER";

/// The configured redis-server binary, or `None` after printing the SKIP line.
pub fn redis_server_binary(test: &str) -> Option<String> {
    let bin = redis_server_from(std::env::var_os(REDIS_SERVER_VAR));
    if bin.is_none() {
        crate::common::skip(test, &format!("{REDIS_SERVER_VAR} is unset or empty"));
    }
    bin
}

/// The rule itself, on the variable's value: absent or empty (or only blanks) means no server.
pub fn redis_server_from(value: Option<std::ffi::OsString>) -> Option<String> {
    let value = value?.to_string_lossy().trim().to_string();
    (!value.is_empty()).then_some(value)
}

pub struct RealRedis {
    child: Child,
    bin: String,
    extra: Vec<String>,
    pub addr: SocketAddr,
}

impl RealRedis {
    /// Starts redis-server on a free loopback port, or returns `None` (with a SKIP line) when
    /// the variable is unset.
    pub async fn start(test: &str, extra: &[&str]) -> Option<RealRedis> {
        let bin = redis_server_binary(test)?;
        let addr = closed_port();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(&bin, addr, &extra).await;
        Some(RealRedis {
            child,
            bin,
            extra,
            addr,
        })
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Kills the server (SIGKILL: no goodbye to clients); [`RealRedis::revive`] starts it again.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a killed server again on the same port, with the same arguments.
    pub async fn revive(&mut self) {
        self.child = spawn(&self.bin, self.addr, &self.extra).await;
    }

    /// Kills the server (SIGKILL: no goodbye to clients) and starts it again on the same port.
    pub async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.bin, self.addr, &self.extra).await;
    }
}

async fn spawn(bin: &str, addr: SocketAddr, extra: &[String]) -> Child {
    let port = addr.port().to_string();
    let mut child = Command::new(bin)
        .args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    // Readiness, not timing: poll until it accepts, failing if it exits or never does.
    for _ in 0..500 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{bin} exited at start: {status}");
        }
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = child.kill();
    panic!("{bin} did not accept connections on {addr}");
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts tcpdump on loopback, writing what `filter` (its words) passes to `file`, and waits until
/// it listens; `None` (after a SKIP line) when it is not installed or may not capture here. Any
/// other failure fails the test.
pub async fn tcpdump(
    test: &str,
    file: &std::path::Path,
    filter: &[&str],
) -> Option<tokio::process::Child> {
    use tokio::io::AsyncBufReadExt;
    let spawned = tokio::process::Command::new("tcpdump")
        .args(["-i", "lo", "-n", "-U", "-w"])
        .arg(file)
        .args(filter)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::common::skip(test, "tcpdump is not installed");
            return None;
        }
        Err(e) => panic!("tcpdump did not start: {e}"),
    };
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let listening = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = err.next_line().await.unwrap() {
            if line.contains("listening on") {
                return true;
            }
            said.push(line);
        }
        false
    })
    .await
    .expect("hang guard: tcpdump neither listened nor exited");
    if listening {
        // Keep draining its stderr so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });
        return Some(child);
    }
    let said = said.join("\n");
    if said.contains("ermission") || said.contains("not permitted") {
        crate::common::skip(test, &format!("tcpdump may not capture here: {said}"));
        return None;
    }
    panic!("tcpdump is installed but broken: {said}");
}

/// Runs a command on a server with redis-cli semantics over a plain RESP2 connection, returning
/// the raw reply bytes (enough for test setup: CLUSTER MEET, PUBLISH, SET ...).
pub async fn command(addr: SocketAddr, args: &[&str]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(&maintwatch::protocol::resp::encode_command(args))
        .await
        .unwrap();
    let mut reader = maintwatch::protocol::resp::StreamReader::default();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "server closed before replying to {args:?}");
        reader.extend(&buf[..n]);
        let mut reply = None;
        reader
            .drain(|_, raw, _| {
                if reply.is_none() {
                    reply = Some(raw.to_vec())
                }
            })
            .unwrap();
        if let Some(r) = reply {
            return r;
        }
    }
}

/// The lines of a running `maintwatch ... --json`.
pub type JsonLines = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>;

/// `maintwatch watch redis://ADDR --json` against a test server, stderr discarded, killed when
/// dropped; with its stdout lines.
pub fn watch_json(addr: SocketAddr) -> (tokio::process::Child, JsonLines) {
    spawn_lines(
        maintwatch_async(["watch", &format!("redis://{addr}"), "--json"]).stderr(Stdio::null()),
    )
}

/// Spawns `c` (a `maintwatch watch --json`, its stderr as the caller set it) killed when
/// dropped; with its stdout lines.
pub fn spawn_lines(c: &mut tokio::process::Command) -> (tokio::process::Child, JsonLines) {
    use tokio::io::AsyncBufReadExt;
    let mut child = c
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// Reads schema lines into `seen` until `done` holds over everything seen so far. Waiting is on
/// events; the guard only turns a hang into a failure that shows what was seen.
pub async fn read_until(
    lines: &mut JsonLines,
    seen: &mut Vec<maintwatch::observe::record::WatchLine>,
    guard: Duration,
    what: &str,
    done: impl Fn(&[maintwatch::observe::record::WatchLine]) -> bool,
) {
    let result = tokio::time::timeout(guard, async {
        while !done(seen) {
            let line = lines
                .next_line()
                .await
                .expect("stdout readable")
                .unwrap_or_else(|| panic!("watch ended before {what}: {seen:#?}"));
            let parsed = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a schema line ({e}): {line}"));
            seen.push(parsed);
        }
    })
    .await;
    if result.is_err() {
        panic!("hang guard: never saw {what}: {seen:#?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-written test servers
// ---------------------------------------------------------------------------------------------

/// Reads `n` commands, answering each with `reply(command name)`.
pub async fn answer_commands(
    socket: &mut tokio::net::TcpStream,
    n: usize,
    reply: impl Fn(&[u8]) -> Vec<u8>,
) -> Option<()> {
    let mut reader = maintwatch::protocol::resp::StreamReader::default();
    let mut buf = [0u8; 4096];
    let mut answered = 0;
    while answered < n {
        let got = tokio::io::AsyncReadExt::read(socket, &mut buf).await.ok()?;
        if got == 0 {
            return None;
        }
        reader.extend(&buf[..got]);
        let mut commands = Vec::new();
        reader.drain(|_, raw, _| commands.push(raw.to_vec())).ok()?;
        for raw in commands {
            // `*N\r\n$len\r\nNAME\r\n...`: the name is the first bulk string.
            let name = raw.split(|&b| b == b'\n').nth(2).unwrap_or_default();
            let name = name
                .strip_suffix(b"\r")
                .unwrap_or(name)
                .to_ascii_uppercase();
            tokio::io::AsyncWriteExt::write_all(socket, &reply(&name))
                .await
                .ok()?;
            answered += 1;
        }
    }
    Some(())
}

/// A RESP3 server's answers to HELLO (a map) and to anything else (`+OK`).
pub fn handshake_reply(name: &[u8]) -> Vec<u8> {
    if name == b"HELLO" {
        b"%2\r\n$6\r\nserver\r\n$5\r\nflood\r\n$5\r\nproto\r\n:3\r\n".to_vec()
    } else {
        b"+OK\r\n".to_vec()
    }
}

/// A server on 127.0.0.1 running `serve` on each accepted connection.
pub async fn test_server<F, Fut>(serve: F) -> SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket));
        }
    });
    addr
}
