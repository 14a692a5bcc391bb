//! `watch --exec`: real hooks (`sh -c`) run by the real binary watching the simulator's
//! single-proxy maintenance. A hook that records what it got (its stdin and environment), hooks
//! that block, fail or outlive `--exec-timeout`; the watch's own lines are the same whatever the
//! hooks do, and no hook ever sees the password.
//!
//! Nothing is timed: the tests wait for events (a line, a file, a counter) under a hang guard.

use crate::common;
use common::scrape;

use maintwatch::observe::record::{line, Label, WatchLine};
use maintwatch::protocol::notification::{Classified, Kind};
use std::path::Path;
use std::time::Duration;

const SECRET: &str = "hook-Pw-0451";

fn reconnected(l: &[WatchLine]) -> bool {
    l.iter()
        .any(|l| matches!(l, WatchLine::Connected(line::Connected { session: 2, .. })))
}

fn moving_seen(l: &[WatchLine]) -> bool {
    l.iter().any(|l| {
        matches!(l, WatchLine::Push(line::Push { frame, .. })
            if matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == Kind::Moving))
    })
}

/// The default `--exec-on`: once per maintenance event (a new notification) and once for its
/// outcome (a close past the window, the dry-run verdict).
fn alerting(l: &WatchLine) -> bool {
    match l {
        WatchLine::Push(p) => {
            matches!(p.frame.parsed, Classified::Maintenance(_))
                && !p
                    .labels
                    .iter()
                    .any(|l| matches!(l, Label::CatchUp | Label::Resent))
                && p.copy_of.is_none()
        }
        WatchLine::Closed(c) => c.past_s.is_some_and(|past| past > 0.0),
        WatchLine::Verdict(_) => true,
        _ => false,
    }
}

fn files(dir: &Path, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// One recorded run: (TYPE, EVENT, ENDPOINT, the environment's lines, its stdin).
struct Recorded {
    kind: String,
    event: String,
    endpoint: String,
    env: Vec<String>,
    stdin: String,
    all: String,
}

fn recorded(dir: &Path) -> Vec<Recorded> {
    files(dir, "run.")
        .into_iter()
        .filter(|n| n.ends_with(".done"))
        .map(|n| {
            let all = std::fs::read_to_string(dir.join(&n)).unwrap();
            let (head, stdin) = all.split_once("\n---\n").expect("the record's separator");
            let mut lines = head.lines();
            let mut field = |name: &str| {
                let l = lines.next().unwrap();
                l.strip_prefix(name)
                    .unwrap_or_else(|| panic!("{name} in {l}"))
                    .to_string()
            };
            let (kind, event, endpoint) = (field("TYPE="), field("EVENT="), field("ENDPOINT="));
            Recorded {
                kind,
                event,
                endpoint,
                env: lines.map(str::to_string).collect(),
                stdin: stdin.to_string(),
                all: all.clone(),
            }
        })
        .collect()
}

/// Records TYPE, EVENT and ENDPOINT, the environment and stdin into `$HOOK_DIR/run.*.done`
/// (written whole, then renamed, so a file present is a run finished).
const RECORDER: &str = r#"f=$(mktemp "$HOOK_DIR/run.XXXXXX") && { printf 'TYPE=%s\nEVENT=%s\nENDPOINT=%s\n' "$MAINTWATCH_TYPE" "$MAINTWATCH_EVENT" "$MAINTWATCH_ENDPOINT"; env; printf -- '---\n'; cat; } > "$f" && mv "$f" "$f.done""#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_gets_each_alerting_line_on_stdin_and_its_event_in_the_environment_never_the_password(
) {
    let dir = tempfile::tempdir().unwrap();
    let hook_dir = dir.path().to_str().unwrap();
    let mut w = scrape::start(
        "single-proxy",
        5.0,
        Some(SECRET),
        &["--exec", RECORDER],
        &[
            ("HOOK_DIR", hook_dir),
            ("REDISCLI_AUTH", SECRET),
            // The password under another name (a unit's credential): not passed on either.
            ("MY_REDIS_PASSWORD", SECRET),
        ],
    )
    .await;
    w.until("the reconnect after the close", reconnected).await;
    assert_eq!(w.interrupt().await, 130, "{}", w.stderr_text());

    let runs = recorded(dir.path());
    let mut want: Vec<String> = w
        .seen
        .iter()
        .filter(|l| alerting(l))
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    let mut got: Vec<String> = runs.iter().map(|r| r.stdin.clone()).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "one run per alerting line, the line on stdin");
    assert!(
        runs.iter().any(|r| r.kind == "closed"),
        "the close ran the hook"
    );
    // One MOVING pages once for itself and once for each outcome, not for every line about it
    // (handshakes, DNS lines, the dry-run's steps).
    let mut kinds: Vec<&str> = runs.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        ["closed", "push", "verdict"],
        "one page per event and outcome"
    );
    let host = w.sim.host();
    for r in &runs {
        let line: WatchLine = serde_json::from_str(r.stdin.trim_end()).unwrap();
        let kind = serde_json::to_value(&line).unwrap()["type"].clone();
        assert_eq!(kind, r.kind.as_str(), "MAINTWATCH_TYPE is the line's type");
        assert_eq!(r.endpoint, format!("redis://{host}:{}", w.sim.port()));
        if let WatchLine::Push(p) = &line {
            let Classified::Maintenance(n) = &p.frame.parsed else {
                panic!("only notifications among pushes")
            };
            assert_eq!(r.event, n.event_name());
        }
        if matches!(line, WatchLine::Handoff(_) | WatchLine::Verdict(_)) {
            assert_eq!(r.event, "MOVING seq 0");
        }
        assert!(
            !r.all.contains(SECRET),
            "the password reached a hook: {}",
            r.all
        );
        assert!(
            !r.env
                .iter()
                .any(|e| e.starts_with("REDISCLI_AUTH=") || e.starts_with("MY_REDIS_PASSWORD=")),
            "{:?}",
            r.env
        );
        assert!(
            r.env.iter().any(|e| e == &format!("HOOK_DIR={hook_dir}")),
            "the rest is inherited"
        );
    }
    assert!(!w.stderr_text().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_that_block_do_not_delay_the_watch_and_at_most_four_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let hook_dir = dir.path().to_str().unwrap();
    // Each run says it started, waits for the test's release, then says it ended.
    let blocking = r#"touch "$HOOK_DIR/started.$$"; while [ ! -e "$HOOK_DIR/release" ]; do sleep 0.05; done; touch "$HOOK_DIR/ended.$$""#;
    let mut w = scrape::start(
        "single-proxy",
        5.0,
        None,
        &[
            "--exec",
            blocking,
            "--exec-on",
            "all",
            "--exec-timeout",
            "60s",
        ],
        &[("HOOK_DIR", hook_dir)],
    )
    .await;
    // The whole maintenance goes by while the hooks of its first lines are stuck.
    w.until("the MOVING", moving_seen).await;
    w.until("the reconnect after the close", reconnected).await;
    let started = files(dir.path(), "started.").len();
    assert!(
        files(dir.path(), "ended.").is_empty(),
        "no hook was released yet"
    );
    assert!((1..=4).contains(&started), "{started} runs at once");
    std::fs::write(dir.path().join("release"), b"").unwrap();
    assert_eq!(w.interrupt().await, 130, "{}", w.stderr_text());
    // Ctrl-C waited for the queue: every line (the summary too) ran the hook once.
    assert!(matches!(w.seen.last(), Some(WatchLine::Summary(_))));
    assert_eq!(
        files(dir.path(), "ended.").len(),
        w.seen.len(),
        "{}",
        w.stderr_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_and_overrunning_hooks_are_reported_counted_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let hook_dir = dir.path().to_str().unwrap();
    let failing = "echo 'oops from the hook' >&2; exit 3";
    // Its child's pid is kept, to check the whole process group was killed.
    let overrunning = r#"sleep 30 & echo $! > "$HOOK_DIR/sleep.$$"; wait"#;
    let mut w = scrape::start(
        "single-proxy",
        5.0,
        None,
        &[
            "--exec",
            failing,
            "--exec",
            overrunning,
            "--exec-timeout",
            "1s",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[("HOOK_DIR", hook_dir)],
    )
    .await;
    w.until("the reconnect after the close", reconnected).await;
    let runs = |result: &str| format!("maintwatch_hook_runs_total{{result=\"{result}\"}}");
    w.scrape_until("a failed and a timed-out run", |s| {
        s.get(&runs("failed")).is_some_and(|n| *n >= 1.0)
            && s.get(&runs("timed_out")).is_some_and(|n| *n >= 1.0)
    })
    .await;
    assert_eq!(w.interrupt().await, 130);
    let stderr = w.stderr_text();
    assert!(
        stderr.contains("--exec #1 (")
            && stderr.contains("failed: exit status: 3: oops from the hook"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--exec #2 (") && stderr.contains("(--exec-timeout): killed"),
        "{stderr}"
    );
    // The watch itself: the maintenance and its summary, as without hooks.
    assert!(moving_seen(&w.seen) && reconnected(&w.seen));
    assert!(matches!(w.seen.last(), Some(WatchLine::Summary(_))));
    // Every overrunning run's sleep is gone (killed with its group, or a zombie being reaped).
    let sleeps = files(dir.path(), "sleep.");
    assert!(!sleeps.is_empty());
    for f in sleeps {
        let pid = std::fs::read_to_string(dir.path().join(&f)).unwrap();
        let stat = Path::new("/proc").join(pid.trim()).join("stat");
        let gone = tokio::time::timeout(scrape::GUARD, async {
            loop {
                match std::fs::read_to_string(&stat) {
                    Err(_) => return,
                    // After the command name in parentheses: the state.
                    Ok(s) if s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')) => return,
                    Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        })
        .await;
        assert!(gone.is_ok(), "the hook's sleep {pid} outlived the watch");
    }
}

/// A hook that leaves a process in the background holding its stderr has ended when `sh`
/// exits: its runs count as ok, none as timed out (before, each waited for the background
/// process and was killed at `--exec-timeout`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_backgrounds_a_process_ends_when_sh_exits() {
    let mut w = scrape::start(
        "single-proxy",
        5.0,
        None,
        &[
            "--exec",
            "echo started >&2; sleep 8 &",
            "--exec-timeout",
            "4s",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[],
    )
    .await;
    w.until("the MOVING", moving_seen).await;
    let runs = |result: &str| format!("maintwatch_hook_runs_total{{result=\"{result}\"}}");
    let done = w
        .scrape_until("two finished runs", |s| {
            let n = |r: &str| s.get(&runs(r)).copied().unwrap_or(0.0);
            n("ok") + n("timed_out") + n("failed") >= 2.0
        })
        .await;
    let samples = scrape::samples(&done);
    assert_eq!(
        samples.get(&runs("timed_out")).copied().unwrap_or(0.0),
        0.0,
        "{done}"
    );
    assert!(
        samples.get(&runs("ok")).copied().unwrap_or(0.0) >= 2.0,
        "{done}"
    );
    assert_eq!(w.interrupt().await, 130);
    assert!(
        !w.stderr_text().contains("--exec-timeout"),
        "{}",
        w.stderr_text()
    );
}

/// Runs still queued when the watch's last `--exec-timeout` is over are said and counted, not
/// lost without a word: four hooks that never end fill every slot with one line's runs, so the
/// lines after it are still queued when Ctrl-C's wait ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_runs_dropped_at_exit_are_reported() {
    let stuck = "sleep 60";
    let mut w = scrape::start(
        "single-proxy",
        5.0,
        None,
        &[
            "--exec",
            stuck,
            "--exec",
            stuck,
            "--exec",
            stuck,
            "--exec",
            stuck,
            "--exec-on",
            "all",
            "--exec-timeout",
            "3s",
        ],
        &[],
    )
    .await;
    w.until("the MOVING", moving_seen).await;
    assert_eq!(w.interrupt().await, 130);
    let stderr = w.stderr_text();
    assert!(
        stderr.contains("queued hook run(s) never started: the watch ended first"),
        "{stderr}"
    );
}
