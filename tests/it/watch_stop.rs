//! Stopping `maintwatch watch` (the real binary) while a server floods it: Ctrl-C, SIGTERM,
//! SIGHUP, `--duration` and `--count` end the watch although frames never stop coming, with
//! everything read until then written, the summary printed and the capture flushed.
//!
//! The floods never end, so a watch that ends at all shows the stop conditions are seen between
//! frames; the only timing here is a generous hang guard. The capture is checked line by line: all
//! complete, schema lines, and the pushes a prefix of what the server sent.

use crate::common;

use maintwatch::observe::record::line;
use maintwatch::observe::record::WatchLine;
use maintwatch::shared::escape::unescape;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Child;

/// A hang guard only: waiting for the flood to show up.
const GUARD: Duration = Duration::from_secs(60);

/// A hang guard only, for "it stops rather than never": a watch stops at once after the signal
/// or deadline (it writes at most the frames in flight); one that waits for the flood to end
/// never does.
const STOP_GUARD: Duration = Duration::from_secs(20);

/// What the flood server sends, frame `i` of an endless stream.
#[derive(Clone, Copy)]
enum Flood {
    /// Pub/sub messages (`>3 message ch <i>`): not notifications, so `--count` never ends it.
    Messages,
    /// MIGRATED notifications with seq `i`.
    Notifications,
}

impl Flood {
    fn frame(self, i: u64) -> Vec<u8> {
        match self {
            Flood::Messages => {
                let payload = i.to_string();
                format!(
                    ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${}\r\n{payload}\r\n",
                    payload.len()
                )
                .into_bytes()
            }
            Flood::Notifications => {
                format!(">3\r\n$8\r\nMIGRATED\r\n:{i}\r\n$5\r\n[\"1\"]\r\n").into_bytes()
            }
        }
    }
}

/// Answers HELLO and the opt-in on each connection, then writes `flood` frames until the peer
/// goes away. The counter is the flood bytes the server has offered so far (counted before each
/// write, so it is never below what a reader can have read).
async fn flood_server(flood: Flood) -> (SocketAddr, Arc<AtomicU64>) {
    let offered = Arc::new(AtomicU64::new(0));
    let counter = offered.clone();
    let addr = common::test_server(move |socket| serve_flood(socket, flood, counter.clone())).await;
    (addr, offered)
}

/// Frames in one turn of the flood: written from one buffer built once, so the server is never
/// slower than the watch (the flood must outrun it for the stop to be tested).
const CYCLE: u64 = 50_000;

async fn serve_flood(mut socket: TcpStream, flood: Flood, offered: Arc<AtomicU64>) {
    // HELLO, then CLIENT MAINT_NOTIFICATIONS ON.
    if common::answer_commands(&mut socket, 2, common::handshake_reply)
        .await
        .is_none()
    {
        return;
    }
    let cycle: Vec<u8> = (0..CYCLE).flat_map(|i| flood.frame(i)).collect();
    loop {
        offered.fetch_add(cycle.len() as u64, Ordering::SeqCst);
        if socket.write_all(&cycle).await.is_err() {
            return;
        }
    }
}

/// A running `maintwatch watch URL --json --capture FILE EXTRA...`; stdout is read all along
/// (a watch blocked on a full pipe would prove nothing), keeping its lines.
struct Run {
    child: Child,
    stdout: tokio::task::JoinHandle<Vec<String>>,
    stderr: tokio::task::JoinHandle<String>,
    _dir: tempfile::TempDir,
    /// `None`: no `--capture` (SIGHUP then stops the watch); stdout holds the same lines.
    capture: Option<std::path::PathBuf>,
    /// Bytes read from stdout so far.
    out_bytes: std::sync::Arc<AtomicU64>,
}

impl Run {
    fn start(url: &str, extra: &[&str]) -> Run {
        Run::start_with(url, extra, true)
    }

    fn start_with(url: &str, extra: &[&str], capture: bool) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let capture = capture.then(|| dir.path().join("flood.jsonl"));
        let mut child = common::maintwatch_async(["watch", url, "--json", "--no-handoff"])
            .args(
                capture
                    .iter()
                    .flat_map(|c| [std::ffi::OsStr::new("--capture"), c.as_os_str()]),
            )
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the binary runs");
        let out = child.stdout.take().unwrap();
        let out_bytes = std::sync::Arc::new(AtomicU64::new(0));
        let counted = out_bytes.clone();
        let stdout = tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            let mut all = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                counted.fetch_add(line.len() as u64 + 1, Ordering::SeqCst);
                all.push(line);
            }
            all
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text).await;
            text
        });
        Run {
            child,
            stdout,
            stderr,
            _dir: dir,
            capture,
            out_bytes,
        }
    }

    /// Waits until the capture holds at least `bytes` (the flood is on).
    async fn flooding(&self, bytes: u64) {
        let waited = tokio::time::timeout(GUARD, async {
            while self.written() < bytes {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "hang guard: the flood never reached the capture"
        );
    }

    /// Bytes of lines written: the capture's, or stdout's without one.
    fn written(&self) -> u64 {
        match &self.capture {
            Some(c) => std::fs::metadata(c).map_or(0, |m| m.len()),
            None => self.out_bytes.load(Ordering::SeqCst),
        }
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the exit (within the hang guard); returns the code, stdout's lines and stderr.
    async fn ended(mut self) -> (i32, Vec<String>, String, Vec<u8>) {
        let status = tokio::time::timeout(STOP_GUARD, self.child.wait()).await;
        let Ok(status) = status else {
            panic!("hang guard: the watch did not stop under the flood");
        };
        let code = status.unwrap().code().expect("an exit code, not a signal");
        let lines = self.stdout.await.unwrap();
        let stderr = self.stderr.await.unwrap();
        let capture = match &self.capture {
            Some(c) => std::fs::read(c).unwrap(),
            // The same JSON lines as a capture would hold.
            None => lines
                .iter()
                .flat_map(|l| [l.as_bytes(), b"\n"])
                .flatten()
                .copied()
                .collect(),
        };
        (code, lines, stderr, capture)
    }
}

/// The summary on stdout's last line, with its reason.
fn summary_reason(lines: &[String]) -> String {
    let last = lines.last().expect("stdout has lines");
    match serde_json::from_str::<WatchLine>(last) {
        Ok(WatchLine::Summary(line::Summary { reason, .. })) => reason,
        other => panic!("the last stdout line is not the summary: {other:?}"),
    }
}

/// Every capture line is complete and a schema line, the last is the summary, and the pushes
/// are what the server sent, in order, from its frame `first` on.
/// `at_least`: frames the capture must hold (0 where the test cannot wait for the flood to
/// reach the watch before the stop, as with `--duration`: how much arrives in a second depends
/// on the machine's load, not on the watch).
fn assert_capture_is_a_prefix(
    capture: &[u8],
    expected: impl Fn(u64) -> Vec<u8>,
    first: u64,
    at_least: usize,
) {
    assert!(
        capture.ends_with(b"\n"),
        "the capture ends with a whole line"
    );
    let lines: Vec<WatchLine> = capture
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(n, l)| {
            serde_json::from_slice(l)
                .unwrap_or_else(|e| panic!("capture line {} is not a schema line: {e}", n + 1))
        })
        .collect();
    assert!(
        matches!(lines.last(), Some(WatchLine::Summary(line::Summary { .. }))),
        "the capture ends with the summary"
    );
    let raws: Vec<Vec<u8>> = lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => {
                Some(unescape(&frame.raw.escaped()).unwrap())
            }
            _ => None,
        })
        .collect();
    assert!(
        raws.len() >= at_least,
        "the flood was captured: {}",
        raws.len()
    );
    for (k, raw) in raws.iter().enumerate() {
        let want = expected(first + k as u64);
        assert!(
            *raw == want,
            "push {k} is not frame {} of the flood: {}",
            first + k as u64,
            String::from_utf8_lossy(raw)
        );
    }
}

async fn signal_under_flood(sig: &str, code: i32, reason: &str) {
    let (addr, offered) = flood_server(Flood::Messages).await;
    // With a capture SIGHUP reopens it (logrotate) instead of stopping: it stops a watch without
    // one, whose stdout then holds the lines a capture would.
    let run = Run::start_with(&format!("redis://{addr}"), &[], sig != "-HUP");
    run.flooding(256 * 1024).await;
    let at_signal = offered.load(Ordering::SeqCst);
    run.signal(sig);
    let (got, lines, stderr, capture) = run.ended().await;
    assert_eq!(got, code, "{sig}: {stderr}");
    assert_eq!(summary_reason(&lines), reason);
    assert_capture_is_a_prefix(&capture, |i| Flood::Messages.frame(i % CYCLE), 0, 100);
    assert_read_little_after_the_stop(&capture, at_signal);
}

/// Flood cycles a watch may still read between the signal and its stop (it is handled at the next
/// turn of the loop): generous, for a loaded machine. A watch that kept reading until the flood
/// paused read seconds' worth, hundreds of cycles.
const CYCLES_AFTER_STOP: u64 = 8;

/// The pushes captured are at most what the server had offered when the signal was sent, plus
/// [`CYCLES_AFTER_STOP`] cycles: the watch stopped reading, it did not go on until the flood
/// let it see the signal.
fn assert_read_little_after_the_stop(capture: &[u8], offered_at_signal: u64) {
    let cycle_bytes: u64 = (0..CYCLE)
        .map(|i| Flood::Messages.frame(i).len() as u64)
        .sum();
    let read: u64 = capture
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<WatchLine>(l).ok())
        .filter_map(|l| match l {
            WatchLine::Push(p) => Some(p.frame.len as u64),
            _ => None,
        })
        .sum();
    let allowed = offered_at_signal + CYCLES_AFTER_STOP * cycle_bytes;
    assert!(
        read <= allowed,
        "the watch read {read} bytes of the flood, {} past what was offered when the signal was \
         sent ({offered_at_signal}): it kept reading instead of stopping",
        read - offered_at_signal
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_watch_under_an_endless_flood() {
    signal_under_flood("-INT", 130, "interrupted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_a_watch_under_an_endless_flood_with_143_and_a_summary() {
    signal_under_flood("-TERM", 143, "terminated").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_stops_a_watch_under_an_endless_flood_with_129_and_a_summary() {
    signal_under_flood("-HUP", 129, "hangup").await;
}

/// logrotate under a flood: the capture is moved, SIGHUP reopens it by its name, and the two
/// files read in order hold every push, whole, in the order sent; the watch goes on until Ctrl-C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_under_a_flood_with_a_capture_reopens_it_and_loses_nothing() {
    let (addr, _) = flood_server(Flood::Messages).await;
    let run = Run::start(&format!("redis://{addr}"), &[]);
    run.flooding(256 * 1024).await;
    let path = run.capture.clone().expect("a capture");
    let moved = path.with_extension("jsonl.1");
    std::fs::rename(&path, &moved).unwrap();
    run.signal("-HUP");
    // The reopened file fills in turn: the watch did not stop.
    run.flooding(256 * 1024).await;
    // Closed by the reopen: nothing more goes into it (and the directory goes with `run`).
    let mut both = std::fs::read(&moved).unwrap();
    run.signal("-INT");
    let (code, lines, stderr, capture) = run.ended().await;
    assert_eq!(code, 130, "{stderr}");
    assert_eq!(summary_reason(&lines), "interrupted");
    assert!(
        both.ends_with(b"\n"),
        "the moved file ends with a whole line"
    );
    both.extend(capture);
    assert_capture_is_a_prefix(&both, |i| Flood::Messages.frame(i % CYCLE), 0, 100);
}

/// A watch of an endless `flood` that `stop` (a flag and its value) ends: exit 0, the summary's
/// reason `reason`, and a capture of the flood's frames from the first, `at_least` of them.
async fn stopped_under(flood: Flood, stop: [&str; 2], reason: &str, at_least: usize) {
    let (addr, _) = flood_server(flood).await;
    let run = Run::start(&format!("redis://{addr}"), &stop);
    let (code, lines, stderr, capture) = run.ended().await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary_reason(&lines), reason);
    assert_capture_is_a_prefix(&capture, |i| flood.frame(i % CYCLE), 0, at_least);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_stops_a_watch_under_an_endless_flood() {
    stopped_under(Flood::Messages, ["--duration", "1s"], "duration", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_stops_a_watch_under_an_endless_flood_of_notifications() {
    stopped_under(Flood::Notifications, ["--count", "500"], "count", 100).await;
}

/// A second connection that PUBLISHes `m<i>` on `ch` forever, pipelined, until dropped.
fn publisher(addr: SocketAddr) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let socket = TcpStream::connect(addr).await.unwrap();
        let (mut rd, mut wr) = socket.into_split();
        // The replies are read and dropped, so the server never stalls on them.
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            while matches!(rd.read(&mut buf).await, Ok(n) if n > 0) {}
        });
        let mut i = 0u64;
        loop {
            let mut batch = Vec::new();
            for _ in 0..500 {
                let payload = format!("m{i}");
                batch.extend(maintwatch::protocol::resp::encode_command(&[
                    "PUBLISH", "ch", &payload,
                ]));
                i += 1;
            }
            if wr.write_all(&batch).await.is_err() {
                return;
            }
        }
    })
}

fn published(i: u64) -> Vec<u8> {
    let payload = format!("m{i}");
    format!(
        ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${}\r\n{payload}\r\n",
        payload.len()
    )
    .into_bytes()
}

/// The index of the first message the watch got (it subscribed while the publisher ran).
fn first_published(capture: &[u8]) -> u64 {
    capture
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<WatchLine>(l).ok())
        .find_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => {
                let raw = unescape(&frame.raw.escaped()).unwrap();
                let text = String::from_utf8(raw).unwrap();
                let payload = text.strip_prefix(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$")?;
                let digits = payload.split("\r\nm").nth(1)?.trim_end();
                digits.parse().ok()
            }
            _ => None,
        })
        .expect("a published message in the capture")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_watch_subscribed_to_a_real_redis_flood() {
    let test = "ctrl_c_stops_a_watch_subscribed_to_a_real_redis_flood";
    let Some(redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let run = Run::start(&redis.url(), &["--subscribe", "ch"]);
    // The watch subscribes first, so the flood starts while it listens.
    let waited = tokio::time::timeout(GUARD, async {
        loop {
            let reply = common::command(redis.addr, &["PUBSUB", "NUMSUB", "ch"]).await;
            if !reply.ends_with(b":0\r\n") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "hang guard: the watch never subscribed");
    let flood = publisher(redis.addr);
    run.flooding(256 * 1024).await;
    run.signal("-INT");
    let (code, lines, stderr, capture) = run.ended().await;
    flood.abort();
    assert_eq!(code, 130, "{stderr}");
    assert_eq!(summary_reason(&lines), "interrupted");
    let first = first_published(&capture);
    // Every push in the capture is a message, in order; the SUBSCRIBE confirmation too is a
    // push, so it is taken out first.
    let without_confirmation: Vec<u8> = String::from_utf8_lossy(&capture)
        .lines()
        .filter(|l| !l.contains("subscribe"))
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    assert_capture_is_a_prefix(&without_confirmation, published, first, 100);
}

#[test]
fn the_flood_frames_are_what_the_watch_reads_as_pushes() {
    // The test's own frames parse as one push each, so the prefix check compares whole frames.
    for flood in [Flood::Messages, Flood::Notifications] {
        let raw = flood.frame(12);
        let mut reader = maintwatch::protocol::resp::StreamReader::default();
        reader.extend(&raw);
        let mut frames = 0;
        reader.drain(|_, _, _| frames += 1).unwrap();
        assert_eq!(frames, 1);
    }
    assert!(Path::new(common::BIN).exists());
}

/// A watch whose stdout nobody reads (a pipe left full) still hears SIGTERM: it ends with 143,
/// says on stderr how many lines stdout could not take, and writes the summary there. Before,
/// the watch sat in a write to the full pipe and never saw the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_watch_whose_stdout_nobody_reads_with_the_summary_on_stderr() {
    let (addr, offered) = flood_server(Flood::Notifications).await;
    let mut child = common::maintwatch_async(["watch", &format!("redis://{addr}"), "--no-handoff"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    // Held, never read: the pipe fills and stays full.
    let _unread = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text).await;
        text
    });
    // The watch is held up once the flood stops moving: what it read fills the pipe, its queue
    // and the frames in flight, and TCP pushes back on the server.
    let waited = tokio::time::timeout(GUARD, async {
        let mut last = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = offered.load(Ordering::SeqCst);
            if now > 0 && now == last {
                break;
            }
            last = now;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "hang guard: the watch never stopped reading"
    );
    let pid = child.id().expect("running") as i32;
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let Ok(status) = tokio::time::timeout(STOP_GUARD, child.wait()).await else {
        panic!("hang guard: SIGTERM did not end a watch whose stdout is full");
    };
    let stderr = stderr.await.unwrap();
    assert_eq!(status.unwrap().code(), Some(143), "{stderr}");
    assert!(
        stderr.contains("not written (its reader stopped reading); the summary follows here"),
        "{stderr}"
    );
    assert!(stderr.contains("summary"), "{stderr}");
}

/// `watch | head -c 1000`: the reader goes away; the watch stops, says so on stderr with the
/// summary, and does not exit 0 as if all was well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_goes_away_stops_the_watch_with_a_word_and_exit_1() {
    let (addr, _) = flood_server(Flood::Notifications).await;
    let mut child = common::maintwatch_async(["watch", &format!("redis://{addr}"), "--no-handoff"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 1000];
    out.read_exact(&mut first).await.unwrap();
    drop(out);
    let mut err = child.stderr.take().unwrap();
    let mut stderr = String::new();
    let Ok(status) = tokio::time::timeout(STOP_GUARD, child.wait()).await else {
        panic!("hang guard: the watch went on after its reader left");
    };
    let _ = err.read_to_string(&mut stderr).await;
    assert_eq!(status.unwrap().code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("(its reader went away); the summary follows here"),
        "{stderr}"
    );
    assert!(stderr.contains("summary"), "{stderr}");
}
