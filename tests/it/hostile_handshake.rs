//! Hostile servers during the handshake: a push storm instead of the HELLO reply, a trickle of
//! pushes that would keep a restarting timeout alive forever, and a MOVING sent as the answer to
//! the opt-in just before the server closes. For `watch` (the real binary, `--json` and
//! `--capture`) and `probe` (the library and the binary with `--from`).
//!
//! The servers are written here, on 127.0.0.1. Nothing asserts a duration: the handshake must
//! *end* with the documented message, and each wait has a hang guard that only turns "never" into
//! a failure. One deadline (`--connect-timeout 1s`) covers the handshake, so the trickle server
//! (a push every 100 ms) can only be stopped by that deadline.

use crate::common;

use maintwatch::exit;
use maintwatch::network::conn::probe::{self, ProbeOutcome, PushRole};
use maintwatch::network::conn::{ConnectConfig, RedisUrl, Stage, MAX_EARLY_FRAMES};
use maintwatch::observe::record::line;
use maintwatch::observe::record::WatchLine;
use maintwatch::protocol::resp::{Frame, StreamReader};
use maintwatch::shared::escape::unescape;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(60);

/// The watch's peak RSS under the storm must stay below this (it needs a few MiB; before the
/// bound it grew by hundreds of MiB a second).
const MEMORY_BOUND_KIB: u64 = 64 * 1024;

const HELLO_MAP: &[u8] = b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n\
$5\r\nproto\r\n:3\r\n";
const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:31\r\n:15\r\n$14\r\n10.0.0.9:12000\r\n";
/// An unrelated push (the storm's and the trickle's).
const NOISE: &[u8] = b">2\r\n$7\r\nmessage\r\n$5\r\nhello\r\n";

#[derive(Clone, Copy)]
enum Hostile {
    /// Pushes as fast as the socket takes them instead of the HELLO reply (capped at 256 MiB so
    /// that a broken client cannot take the machine down with it).
    Storm,
    /// One push every 100 ms instead of the HELLO reply, forever.
    Trickle,
    /// HELLO answered; the opt-in answered with a MOVING, then the connection closed.
    MovingThenClose,
}

async fn hostile(kind: Hostile) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, kind));
        }
    });
    addr
}

/// Reads until one whole command arrived; returns its name, or `None` when the client left.
async fn next_command(s: &mut TcpStream, reader: &mut StreamReader) -> Option<String> {
    let mut buf = [0u8; 4096];
    loop {
        let mut name = None;
        reader
            .drain(|frame, _, _| {
                if let (None, Frame::Array(items)) = (&name, frame) {
                    name = items
                        .first()
                        .and_then(|f| f.as_text())
                        .map(|t| String::from_utf8_lossy(t).to_ascii_uppercase());
                }
            })
            .ok()?;
        if name.is_some() {
            return name;
        }
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => reader.extend(&buf[..n]),
        }
    }
}

async fn serve(mut s: TcpStream, kind: Hostile) {
    let mut reader = StreamReader::default();
    if next_command(&mut s, &mut reader).await.is_none() {
        return;
    }
    match kind {
        Hostile::Storm => {
            let burst = NOISE.repeat(64 * 1024 / NOISE.len());
            let mut sent = 0usize;
            while sent < 256 << 20 && s.write_all(&burst).await.is_ok() {
                sent += burst.len();
            }
        }
        Hostile::Trickle => {
            // Pacing only: the client's deadline is what must end this.
            while s.write_all(NOISE).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Hostile::MovingThenClose => {
            if s.write_all(HELLO_MAP).await.is_err() {
                return;
            }
            while let Some(cmd) = next_command(&mut s, &mut reader).await {
                if cmd == "CLIENT" {
                    let _ = s.write_all(MOVING).await;
                    let _ = s.shutdown().await;
                    return;
                }
                if s.write_all(b"+OK\r\n").await.is_err() {
                    return;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// watch
// ---------------------------------------------------------------------------------------------

struct Watch(common::JsonWatch);

impl std::ops::Deref for Watch {
    type Target = common::JsonWatch;
    fn deref(&self) -> &common::JsonWatch {
        &self.0
    }
}

impl Watch {
    fn start(addr: SocketAddr, capture: &Path) -> Watch {
        let mut cmd =
            common::maintwatch_async(["watch", &format!("redis://{addr}"), "--json", "--no-dns"]);
        cmd.args(["--no-handoff", "--connect-timeout", "1s", "--capture"])
            .arg(capture);
        Watch(common::JsonWatch::spawn(cmd))
    }

    async fn until(&mut self, what: &str, done: impl Fn(&[WatchLine]) -> bool) {
        self.0.until(GUARD, what, done).await;
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        common::peak_rss_kib(self.pid(), "the memory bound under the handshake storm")
    }

    async fn stop(mut self) {
        self.0.proc.signal(libc::SIGINT);
        let _ = tokio::time::timeout(GUARD, self.0.proc.child.wait()).await;
    }
}

fn closed_errors(lines: &[WatchLine]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Closed(line::Closed { error: Some(e), .. }) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

fn pushes(lines: &[WatchLine]) -> Vec<Vec<u8>> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => {
                Some(unescape(&frame.raw.escaped()).unwrap())
            }
            _ => None,
        })
        .collect()
}

fn capture_lines(path: &Path) -> Vec<WatchLine> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_push_storm_during_the_handshake_ends_it_with_bounded_memory() {
    let addr = hostile(Hostile::Storm).await;
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("storm.jsonl");
    let mut watch = Watch::start(addr, &capture);
    watch
        .until("two handshakes given up on the storm", |l| {
            closed_errors(l).len() >= 2
        })
        .await;
    let peak = watch.peak_rss_kib();
    let errors = closed_errors(&watch.seen);
    let seen_pushes = pushes(&watch.seen);
    watch.stop().await;

    for e in &errors {
        assert!(
            e.contains(&format!("{} push frames", MAX_EARLY_FRAMES + 1))
                && e.contains("the handshake keeps at most 64 push frames or 1024 KiB"),
            "says why it gave up: {e}"
        );
    }
    // Every frame it read before giving up is shown: the bound's worth per attempt.
    assert!(
        seen_pushes.len() > MAX_EARLY_FRAMES,
        "{} pushes shown",
        seen_pushes.len()
    );
    assert!(seen_pushes.iter().all(|p| p == NOISE));
    if let Some(kib) = peak {
        assert!(kib < MEMORY_BOUND_KIB, "peak RSS {kib} KiB under the storm");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_trickle_of_pushes_cannot_keep_the_handshake_open() {
    let addr = hostile(Hostile::Trickle).await;
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("trickle.jsonl");
    let mut watch = Watch::start(addr, &capture);
    watch
        .until("the handshake deadline", |l| !closed_errors(l).is_empty())
        .await;
    let errors = closed_errors(&watch.seen);
    let shown = pushes(&watch.seen);
    watch.stop().await;
    assert!(
        errors[0].contains("timed out after 1s waiting for the HELLO reply")
            && errors[0].contains("--connect-timeout, for connect, TLS and the handshake together"),
        "{}",
        errors[0]
    );
    // The pushes that trickled in before the deadline were shown, not dropped.
    assert!(!shown.is_empty() && shown.iter().all(|p| p == NOISE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_a_moving_just_before_a_failed_handshake_is_shown_and_captured_byte_for_byte() {
    let addr = hostile(Hostile::MovingThenClose).await;
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("moving.jsonl");
    let mut watch = Watch::start(addr, &capture);
    watch
        .until("three failed handshakes", |l| closed_errors(l).len() >= 3)
        .await;
    let closes = closed_errors(&watch.seen);
    let shown = pushes(&watch.seen);
    let seen = std::mem::take(&mut watch.0.seen);
    watch.stop().await;

    assert!(
        closes[0].contains(
            "the server closed the connection waiting for the CLIENT MAINT_NOTIFICATIONS reply"
        ),
        "{}",
        closes[0]
    );
    assert!(shown.len() >= 3, "one MOVING per attempt: {}", shown.len());
    assert!(shown.iter().all(|p| p == MOVING), "byte for byte");
    // Each MOVING comes before the close of its attempt.
    let order: Vec<&str> = seen
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { .. }) => Some("push"),
            WatchLine::Closed(line::Closed { .. }) => Some("closed"),
            _ => None,
        })
        .collect();
    assert_eq!(&order[..4], ["push", "closed", "push", "closed"]);

    let captured = capture_lines(&capture);
    let captured_pushes = pushes(&captured);
    assert!(captured_pushes.len() >= shown.len().min(3));
    assert!(captured_pushes.iter().all(|p| p == MOVING), "byte for byte");
}

// ---------------------------------------------------------------------------------------------
// probe
// ---------------------------------------------------------------------------------------------

fn options(addr: SocketAddr) -> maintwatch::network::conn::ConnectOptions {
    let mut config = ConnectConfig::default();
    config.connect_timeout = Duration::from_secs(1);
    let url = RedisUrl::parse(&format!("redis://{addr}")).unwrap();
    config.options_for(&url).unwrap()
}

async fn probe_guarded(addr: SocketAddr) -> probe::ProbeReport {
    tokio::time::timeout(GUARD, probe::probe(&options(addr), None, Duration::ZERO))
        .await
        .expect("the probe ends")
}

#[tokio::test]
async fn probe_a_push_storm_is_a_protocol_error_with_the_bounded_pushes() {
    let report = probe_guarded(hostile(Hostile::Storm).await).await;
    assert_eq!(report.outcome.exit_code(), exit::CONNECTION_FAILED);
    let detail = report.outcome.detail().unwrap_or_default();
    assert!(
        matches!(report.outcome, ProbeOutcome::ProtocolError { .. })
            && detail.contains("65 push frames")
            && detail.contains("waiting for the HELLO reply"),
        "{detail}"
    );
    assert!(report.pushes.len() > MAX_EARLY_FRAMES && report.pushes.len() < 1024);
    // They came while HELLO was answered, not with the opt-in.
    assert!(report.pushes.iter().all(|p| !p.with_opt_in));
}

#[tokio::test]
async fn probe_a_trickle_of_pushes_times_out_at_the_one_deadline() {
    let report = probe_guarded(hostile(Hostile::Trickle).await).await;
    match &report.outcome {
        ProbeOutcome::TimedOut { stage, detail } => {
            assert_eq!(*stage, Stage::Hello);
            assert!(
                detail.contains("timed out after 1s waiting for the HELLO reply"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!report.pushes.is_empty(), "what trickled in is reported");
}

#[tokio::test]
async fn probe_reports_the_moving_received_before_the_server_closed() {
    let report = probe_guarded(hostile(Hostile::MovingThenClose).await).await;
    assert!(
        matches!(report.outcome, ProbeOutcome::ProtocolError { .. }),
        "{:?}",
        report.outcome
    );
    assert_eq!(report.pushes.len(), 1);
    let push = &report.pushes[0];
    assert_eq!(push.received.raw, MOVING);
    assert_eq!(push.role, PushRole::Moving);
    assert!(push.with_opt_in);
    assert!(report.json_line().contains("MOVING"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_from_a_list_is_not_blocked_by_hostile_endpoints() {
    let storm = hostile(Hostile::Storm).await;
    let trickle = hostile(Hostile::Trickle).await;
    let closed = common::closed_port();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("fleet.txt");
    std::fs::write(
        &list,
        format!("redis://{trickle}\nredis://{storm}\nredis://{closed}\n"),
    )
    .unwrap();
    let run = common::maintwatch_async(["probe", "--json", "--connect-timeout", "1s", "--from"])
        .arg(&list)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(GUARD, run)
        .await
        .expect("the probe run ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcomes: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["outcome"].to_string())
        .collect();
    assert_eq!(
        outcomes,
        ["\"timed_out\"", "\"protocol_error\"", "\"unreachable\""],
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(exit::CONNECTION_FAILED));
}
