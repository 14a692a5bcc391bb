//! Reliability: `maintwatch watch` (the real binary) against a simulator that misbehaves, restarts
//! over and over, or outlives the watch when it is killed.
//!
//! - Hostile servers (scenario steps `hostile P huge-blob|deep|trickle|mid-frame`, `mode silent`,
//!   see scenarios/README.md): the watch stays within bounded memory, says what happened in words a
//!   person can act on, and reconnects.
//! - Restarts: every notification the simulator wrote between restarts is in the capture, byte for
//!   byte and in order. CI runs 10 restarts; `MAINTWATCH_RESTARTS=100` (scripts/bench/reliability-full.sh)
//!   runs the full count.
//! - SIGKILL: every complete line of the capture is a valid schema line, the lines are a prefix of
//!   what was sent, and `replay` tolerates a torn last line.
//!
//! Nothing here asserts a duration. The simulator runs sped up; sleeps only pace polling, and
//! every wait has a hang guard that fails loudly instead of hanging.

use crate::common;

use maintwatch::observe::record::line;
use maintwatch::observe::record::{OptInOutcome, WatchLine};
use maintwatch::protocol::notification::Classified;
use maintwatch::shared::escape::unescape;
use maintwatch::simulator::sim::scenario::{Hostile, HUGE_BLOB_SENT, MID_FRAME, TRICKLE_FRAME};
use maintwatch::simulator::sim::{
    scenarios, Scenario, SimEvent, SimOptions, Simulator, What as SimWhat,
};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::TryRecvError};

/// A hang guard only: no test waits this long unless something is broken.
const GUARD: Duration = Duration::from_secs(120);

/// Peak resident memory allowed to the watch while a hostile server does its worst. The watch
/// needs a few MiB; a reader that believed a declared 4 GiB blob, or buffered the 64 MiB that
/// follows it, would be far above this.
const MEMORY_BOUND_KIB: u64 = 64 * 1024;

fn scenario(text: &str) -> Scenario {
    Scenario::parse("tests/it/reliability.rs", text).expect("the test scenario parses")
}

fn scenario_file(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    scenarios::load(&path).expect("the scenario file loads")
}

async fn simulator(scenario: Scenario, speed: f64, repeat: bool) -> Simulator {
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    opts.repeat = repeat;
    Simulator::start(opts).await.expect("the simulator starts")
}

fn url(sim: &Simulator) -> String {
    format!("redis://127.0.0.2:{}", sim.port())
}

/// `maintwatch watch URL --json EXTRA...`, stdout read line by line.
struct Watch(common::JsonWatch);

impl std::ops::Deref for Watch {
    type Target = common::JsonWatch;
    fn deref(&self) -> &common::JsonWatch {
        &self.0
    }
}

impl Watch {
    fn start(sim: &Simulator, speed: f64, extra: &[&str]) -> Watch {
        let mut cmd = common::maintwatch_async([
            "watch",
            &url(sim),
            "--json",
            "--sim-speed",
            &speed.to_string(),
        ]);
        cmd.args(extra);
        Watch(common::JsonWatch::spawn(cmd))
    }

    /// Reads lines until `done` holds over everything seen so far.
    async fn until(&mut self, what: &str, done: impl Fn(&[WatchLine]) -> bool) {
        self.0.until(GUARD, what, done).await;
    }

    /// Ctrl-C, then the rest of the output; returns the exit code.
    async fn interrupt(&mut self) -> i32 {
        self.0.interrupt(GUARD).await
    }
}

fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {sig} {pid}");
}

/// The watch's peak RSS is under the bound (where /proc cannot tell, a SKIP line says the bound
/// went unchecked).
fn assert_bounded_memory(watch: &Watch) {
    if let Some(kib) = common::peak_rss_kib(watch.pid(), "the watch's memory bound") {
        assert!(
            kib < MEMORY_BOUND_KIB,
            "the watch peaked at {kib} KiB, over the bound of {MEMORY_BOUND_KIB} KiB"
        );
    }
}

fn malformed(lines: &[WatchLine]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Malformed(line::Malformed { error, .. }) => Some(error.clone()),
            _ => None,
        })
        .collect()
}

fn closed_errors(lines: &[WatchLine]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Closed(line::Closed {
                by, error: Some(e), ..
            }) if by == "error" => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// A second session connected and opted in again.
fn reconnected_and_opted_in(lines: &[WatchLine]) -> bool {
    lines
        .iter()
        .any(|l| matches!(l, WatchLine::Connected(line::Connected { session: 2, .. })))
        && lines
            .iter()
            .filter(|l| {
                matches!(
                    l,
                    WatchLine::Handshake(line::Handshake {
                        opt_in: OptInOutcome::Accepted,
                        ..
                    })
                )
            })
            .count()
            >= 2
}

fn push_raws(lines: &[WatchLine]) -> Vec<Vec<u8>> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => {
                Some(unescape(&frame.raw.escaped()).expect("escaped bytes"))
            }
            _ => None,
        })
        .collect()
}

/// Everything the simulator narrated so far (without waiting).
fn drain(events: &mut broadcast::Receiver<SimEvent>) -> Vec<SimEvent> {
    let mut out = Vec::new();
    loop {
        match events.try_recv() {
            Ok(e) => out.push(e),
            Err(TryRecvError::Empty | TryRecvError::Closed) => return out,
            Err(TryRecvError::Lagged(n)) => panic!("the test fell {n} events behind"),
        }
    }
}

fn sent_frames(events: &[SimEvent]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|e| match &e.what {
            SimWhat::Sent { bytes, .. } => Some(bytes.clone()),
            _ => None,
        })
        .collect()
}

fn hostile_written(events: &[SimEvent], kind: Hostile) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match &e.what {
            SimWhat::Hostile {
                kind: k, written, ..
            } if *k == kind => Some(*written),
            _ => None,
        })
        .collect()
}

const ONE_PROXY: &str = "name t\nabout a test\nproxies 127.0.0.2\ndns 127.0.0.2\n";

// ---------------------------------------------------------------------------------------------
// Hostile servers
// ---------------------------------------------------------------------------------------------

// Each hostile scenario lasts far longer than its test (60 scenario s, 6 s at 10x): the test ends
// the watch itself once it has reconnected. A scenario that ended first would close the new
// connection and push the simulator's end marker into what the test reads: on a loaded machine
// the reconnect took longer than the 0.1 s the scenario used to last, and the test saw a push.

/// A watch of a simulator whose only act is the hostile frame `kind` (`name` in the scenario) at
/// once, lasting far longer than the test. The watch, ended once it has reconnected and opted in
/// again (its memory bounded), and the bytes the server wrote of each such frame.
async fn hostile_then_reconnect(name: &str, kind: Hostile) -> (Watch, Vec<usize>) {
    let text = format!("{ONE_PROXY}start opt-in\nat 0 hostile * {name}\nend 60\n");
    let sim = simulator(scenario(&text), 10.0, false).await;
    let mut events = sim.events();
    let mut watch = Watch::start(&sim, 10.0, &[]);
    let what = format!("the reconnect after the {name} frame");
    watch.until(&what, reconnected_and_opted_in).await;
    assert_bounded_memory(&watch);
    watch.interrupt().await;
    sim.shutdown().await;
    (watch, hostile_written(&drain(&mut events), kind))
}

/// The one malformed-frame error the watch printed, which `says` what was wrong; its connection
/// closed once, after it.
fn the_one_malformed(watch: &Watch, says: &str) -> String {
    let errors = malformed(&watch.seen);
    assert_eq!(errors.len(), 1, "{:#?}", watch.seen);
    assert_eq!(closed_errors(&watch.seen).len(), 1, "{:#?}", watch.seen);
    assert!(
        errors[0].contains(says),
        "says what was wrong: {}",
        errors[0]
    );
    errors[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_4_gib_blob_is_refused_at_its_header_and_the_watch_reconnects() {
    let (watch, written) = hostile_then_reconnect("huge-blob", Hostile::HugeBlob).await;
    let says = "blob declares 4294967296 bytes, over the limit of 536870912";
    let error = the_one_malformed(&watch, says);
    assert!(error.starts_with("at byte "), "says where: {error}");
    assert!(push_raws(&watch.seen).is_empty(), "no frame was made up");
    assert_eq!(written.len(), 1);
    assert!(
        written[0] < HUGE_BLOB_SENT,
        "the watch hung up before the server could write the 64 MiB ({} bytes went)",
        written[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nesting_10000_deep_stops_at_the_depth_limit_and_the_watch_reconnects() {
    let (watch, written) = hostile_then_reconnect("deep", Hostile::Deep).await;
    the_one_malformed(&watch, "aggregates nested deeper than the limit of 64");
    assert_eq!(written, vec![Hostile::Deep.bytes().len()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_trickled_byte_by_byte_arrives_whole_and_what_waited_follows_it() {
    // Speed 200: one byte every 5 ms of real time instead of every second.
    let speed = 200.0;
    let sim = simulator(
        scenario(&format!(
            "{ONE_PROXY}start opt-in\nat 0 hostile * trickle\n\
             at 1 push * MIGRATING time=2 shards=[\"1\"]\nend 2\n"
        )),
        speed,
        false,
    )
    .await;
    let mut events = sim.events();
    let mut watch = Watch::start(&sim, speed, &[]);
    watch
        .until("the trickled frame and the push after it", |l| {
            push_raws(l).len() >= 2
        })
        .await;
    assert_bounded_memory(&watch);
    watch.interrupt().await;

    let raws = push_raws(&watch.seen);
    assert_eq!(raws[0], TRICKLE_FRAME, "the trickled frame, byte for byte");
    assert!(
        raws[1].starts_with(b">4\r\n$9\r\nMIGRATING\r\n"),
        "the push that waited came after it, whole"
    );
    let first = watch
        .seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => Some(frame.parsed.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(first, Classified::OtherPush(_)),
        "a push, not a notification: {first:?}"
    );
    assert!(malformed(&watch.seen).is_empty());
    assert!(
        closed_errors(&watch.seen).is_empty(),
        "a slow frame is not an error"
    );
    sim.shutdown().await;
    let events = drain(&mut events);
    assert_eq!(sent_frames(&events), raws, "nothing else was sent");
    assert_eq!(
        hostile_written(&events, Hostile::Trickle),
        vec![TRICKLE_FRAME.len()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_in_the_middle_of_a_frame_is_reported_as_such_and_the_watch_reconnects() {
    let (watch, written) = hostile_then_reconnect("mid-frame", Hostile::MidFrame).await;
    assert_eq!(written, vec![MID_FRAME.len() / 2], "half the frame went");
    let errors = closed_errors(&watch.seen);
    assert_eq!(errors.len(), 1, "{:#?}", watch.seen);
    let half = MID_FRAME.len() / 2;
    assert!(
        errors[0].contains("the connection closed in the middle of a frame at byte")
            && errors[0].contains(&format!("({half} bytes unparsed)")),
        "{}",
        errors[0]
    );
    assert!(
        push_raws(&watch.seen).is_empty(),
        "half a frame is no frame"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_hello_times_out_and_the_watch_keeps_trying() {
    let sim = simulator(scenario_file("silent.scn"), 1.0, false).await;
    let mut events = sim.events();
    let mut watch = Watch::start(&sim, 1.0, &["--connect-timeout", "0.3"]);
    watch
        .until("two handshake timeouts", |l| closed_errors(l).len() >= 2)
        .await;
    assert_bounded_memory(&watch);
    watch.interrupt().await;

    for e in closed_errors(&watch.seen) {
        assert!(
            e.contains("timed out after 300ms waiting for the HELLO reply"),
            "says what it waited for: {e}"
        );
    }
    assert!(
        !watch
            .seen
            .iter()
            .any(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. }))),
        "no handshake outcome is made up"
    );
    let sessions = watch
        .seen
        .iter()
        .filter(|l| matches!(l, WatchLine::Connected(line::Connected { .. })))
        .count();
    assert!(sessions >= 2, "it reconnected: {sessions} sessions");
    sim.shutdown().await;
    let events = drain(&mut events);
    assert!(
        events
            .iter()
            .any(|e| matches!(e.what, SimWhat::Ignored { bytes, .. } if bytes > 0)),
        "the server did read the HELLO"
    );
    assert!(sent_frames(&events).is_empty());
}

#[test]
fn the_reliability_scenario_files_parse() {
    let hostile = scenario_file("hostile.scn");
    let kinds: Vec<Hostile> = hostile
        .steps
        .iter()
        .filter_map(|s| match s.action {
            maintwatch::simulator::sim::scenario::Action::Hostile { kind, .. } => Some(kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds.len(), Hostile::ALL.len());
    assert!(Hostile::ALL.iter().all(|k| kinds.contains(k)));
    assert!(scenario_file("silent.scn").silent);
    assert!(!scenario_file("restarts.scn").catch_up);
    let bad = Scenario::parse("x.scn", &format!("{ONE_PROXY}at 0 hostile * huge\nend 1\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        bad,
        "x.scn:5: field 'hostile': expected huge-blob, deep, trickle or mid-frame, found \"huge\""
    );
}

// ---------------------------------------------------------------------------------------------
// Restarts
// ---------------------------------------------------------------------------------------------

fn restarts() -> u64 {
    std::env::var("MAINTWATCH_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(10)
}

fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(name);
    (dir, path)
}

/// The capture's complete lines, parsed (a torn last line is left out).
/// `maintwatch watch --json --capture CAPTURE EXTRA...` of `sim`, its own output thrown away:
/// the capture is what the test reads.
fn capturing(sim: &Simulator, capture: &Path, extra: &[&str]) -> tokio::process::Child {
    common::maintwatch_async(["watch", &url(sim), "--json"])
        .args(extra)
        .arg("--capture")
        .arg(capture)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs")
}

fn capture_lines(path: &Path) -> Vec<WatchLine> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut out = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let Some(line) = line.strip_suffix(b"\n") else {
            break;
        };
        let parsed: WatchLine = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "capture line {} is not a schema line ({e}): {}",
                i + 1,
                String::from_utf8_lossy(line)
            )
        });
        out.push(parsed);
    }
    out
}

/// Polls the capture file until `done` holds over its complete lines.
async fn until_captured(path: &Path, what: &str, done: impl Fn(&[WatchLine]) -> bool) {
    let result = tokio::time::timeout(GUARD, async {
        while !done(&capture_lines(path)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if result.is_err() {
        panic!("hang guard: the capture never showed {what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_notification_sent_between_restarts_is_in_the_capture() {
    let rounds = restarts();
    let speed = 4.0;
    let sim = simulator(scenario_file("restarts.scn"), speed, true).await;
    let mut events = sim.events();
    let (_dir, capture) = temp_path("restarts.jsonl");
    let mut child = capturing(&sim, &capture, &["--sim-speed", &speed.to_string()]);

    // Follow the narration until the last round has ended, then stop the server.
    let mut seen = Vec::new();
    let finished = tokio::time::timeout(GUARD * 4, async {
        loop {
            let e = events.recv().await.expect("narration");
            let done = matches!(e.what, SimWhat::Finished { iteration } if iteration >= rounds);
            seen.push(e);
            if done {
                break;
            }
        }
    })
    .await;
    assert!(finished.is_ok(), "hang guard: {rounds} rounds never ended");
    sim.shutdown().await;
    seen.extend(drain(&mut events));
    let sent = sent_frames(&seen);
    let closes = seen
        .iter()
        .filter(|e| matches!(e.what, SimWhat::Closed { restart: true, .. }))
        .count() as u64;
    assert!(closes >= rounds, "{closes} restarts in {rounds} rounds");
    assert!(sent.len() as u64 >= 2 * rounds);

    until_captured(&capture, "every notification sent", |l| {
        push_raws(l).len() >= sent.len()
    })
    .await;
    signal(child.id().expect("running"), "-INT");
    let code = child.wait().await.unwrap().code();
    assert_eq!(code, Some(130));

    let lines = capture_lines(&capture);
    assert_eq!(
        push_raws(&lines),
        sent,
        "every notification the server wrote, in order, byte for byte"
    );
    let sessions = lines
        .iter()
        .filter(|l| matches!(l, WatchLine::Connected(line::Connected { .. })))
        .count() as u64;
    assert!(
        sessions >= rounds,
        "one session per round at least: {sessions}"
    );
    let by_server = lines
        .iter()
        .filter(|l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by == "server"))
        .count() as u64;
    assert!(by_server >= rounds, "every restart was seen: {by_server}");
    assert!(matches!(
        lines.last(),
        Some(WatchLine::Summary(line::Summary { .. }))
    ));
}

// ---------------------------------------------------------------------------------------------
// SIGKILL
// ---------------------------------------------------------------------------------------------

/// 200 notifications 10 ms apart (at speed 1), played in a loop.
fn stream_scenario() -> Scenario {
    let mut text = format!("{ONE_PROXY}start opt-in\ncatch-up off\n");
    for i in 0..200 {
        let t = f64::from(i) * 0.01;
        if i % 2 == 0 {
            text.push_str(&format!(
                "at {t:.2} push * MIGRATING time=2 shards=[\"{i}\"]\n"
            ));
        } else {
            text.push_str(&format!("at {t:.2} push * MIGRATED shards=[\"{i}\"]\n"));
        }
    }
    text.push_str("end 2.0\n");
    scenario(&text)
}

fn replay(path: &Path) -> std::process::Output {
    common::maintwatch(["replay", "--check", "--json", "--color", "never"])
        .arg(path)
        .output()
        .expect("replay runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_survives_sigkill_and_replay_tolerates_a_torn_tail() {
    let sim = simulator(stream_scenario(), 1.0, true).await;
    let mut events = sim.events();
    let (dir, capture) = temp_path("killed.jsonl");
    let mut child = capturing(&sim, &capture, &[]);
    // Killed while notifications are still streaming in.
    until_captured(&capture, "50 notifications", |l| push_raws(l).len() >= 50).await;
    signal(child.id().expect("running"), "-KILL");
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    sim.shutdown().await;
    let sent = sent_frames(&drain(&mut events));

    // Every complete line is a schema line (capture_lines panics otherwise), and what was
    // captured is exactly what was sent, up to the kill.
    let lines = capture_lines(&capture);
    let got = push_raws(&lines);
    assert!(got.len() >= 50);
    assert!(
        sent.starts_with(&got),
        "the captured notifications are the first {} sent, in order",
        got.len()
    );
    assert!(
        !lines
            .iter()
            .any(|l| matches!(l, WatchLine::Summary(line::Summary { .. }))),
        "a killed watch writes no summary"
    );

    let bytes = std::fs::read(&capture).unwrap();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let whole = &bytes[..complete];
    let whole_lines = whole.iter().filter(|&&b| b == b'\n').count();

    // replay reads back the killed capture as it is.
    let out = replay(&capture);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(replayed.lines().count(), whole_lines);

    // And a capture torn in the middle of its last line (the writer killed mid-write).
    let last_start = whole[..complete - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let torn_at = last_start + (complete - last_start) / 2;
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, &whole[..torn_at]).unwrap();
    let out = replay(&torn);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(":{whole_lines}: torn last line")),
        "the torn line is named: {stderr}"
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        whole_lines - 1,
        "every line before the torn one is replayed"
    );
}

// ---------------------------------------------------------------------------------------------
// Bounded state
// ---------------------------------------------------------------------------------------------

/// Distinct MOVINGs a server sends in the bounded-state test, every tenth declaring a window of
/// `i64::MAX` seconds.
const DISTINCT_MOVINGS: u64 = 100_000;

fn moving(seq: u64) -> Vec<u8> {
    let window = if seq % 10 == 0 { i64::MAX } else { 15 };
    format!(">4\r\n$6\r\nMOVING\r\n:{seq}\r\n:{window}\r\n_\r\n").into_bytes()
}

/// Completes the handshake, sends the MOVINGs, then stays quiet with the connection open.
async fn serve_movings(mut socket: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    if common::answer_commands(&mut socket, 2, common::handshake_reply)
        .await
        .is_none()
    {
        return;
    }
    for chunk in (0..DISTINCT_MOVINGS).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<u8> = chunk.iter().flat_map(|&s| moving(s)).collect();
        if socket.write_all(&batch).await.is_err() {
            return;
        }
    }
    tokio::time::sleep(GUARD).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_the_summary_stay_bounded_after_100000_distinct_movings() {
    let addr = common::test_server(serve_movings).await;
    let (mut child, mut lines) = common::watch_json(addr);
    let pid = child.id().unwrap();
    // Counted, not kept: the test itself stays small.
    let got = tokio::time::timeout(GUARD * 2, async {
        let mut movings = 0u64;
        while movings < DISTINCT_MOVINGS {
            let line = lines.next_line().await.unwrap().expect("the watch runs");
            if line.contains("\"push\"") && line.contains("MOVING") {
                movings += 1;
            }
        }
    })
    .await;
    assert!(got.is_ok(), "hang guard: the MOVINGs never all arrived");
    let peak = common::peak_rss_kib(pid, "the memory bound after distinct MOVINGs");
    signal(pid, "-INT");
    let mut last = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        last = line;
    }
    assert_eq!(child.wait().await.unwrap().code(), Some(130));

    if let Some(kib) = peak {
        assert!(
            kib < MEMORY_BOUND_KIB,
            "the watch peaked at {kib} KiB after {DISTINCT_MOVINGS} MOVINGs"
        );
    }
    assert!(
        last.len() < 64 * 1024,
        "the summary line is bounded: {} bytes",
        last.len()
    );
    let WatchLine::Summary(line::Summary { events, notes, .. }) =
        serde_json::from_str(&last).unwrap()
    else {
        panic!("the last line is the summary: {last}")
    };
    assert_eq!(events.len(), maintwatch::observe::timeline::KEPT_EVENTS);
    assert_eq!(
        events.last().and_then(|e| e.seq),
        Some(DISTINCT_MOVINGS as i64 - 1),
        "the rows kept are the latest"
    );
    assert_eq!(
        notes.retired_events,
        DISTINCT_MOVINGS - maintwatch::observe::timeline::KEPT_EVENTS as u64,
        "the rest are counted"
    );
    assert!(notes.skipped_dry_runs > 0, "{notes:?}");
    assert!(notes.capped_windows > 0, "{notes:?}");
}
