//! Long runs: SIGHUP reopens the capture file (logrotate moved it), `--capture-max-size`
//! rotates it. Real processes and real signals; every assertion is on content: the capture
//! files, read in order, hold exactly the lines the watch wrote on stdout, none split or lost.

use crate::common;

use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const GUARD: Duration = Duration::from_secs(60);

struct Watch {
    _sim: Simulator,
    proc: common::Proc,
    /// What stdout said so far, line by line.
    out: Vec<String>,
}

/// `watch --json --heartbeat 20ms` on a refusing simulator (a steady stream of small lines).
async fn watch(extra: &[&str]) -> Watch {
    let sim = Simulator::start(SimOptions::new(scenarios::by_name("refusing").unwrap()))
        .await
        .unwrap();
    let mut cmd = common::maintwatch_async(["watch", &format!("redis://{}", sim.proxies()[0])]);
    cmd.args(["--json", "--heartbeat", "20ms"]).args(extra);
    Watch {
        _sim: sim,
        proc: common::Proc::spawn(cmd),
        out: Vec::new(),
    }
}

impl Watch {
    /// Reads stdout until `done` holds (checked after every line).
    async fn until(&mut self, what: &str, mut done: impl FnMut(&[String]) -> bool) {
        let out = &mut self.out;
        let lines = &mut self.proc.stdout;
        tokio::time::timeout(GUARD, async {
            while !done(out) {
                out.push(lines.next_line().await.unwrap().expect("the watch runs on"));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("hang guard: never saw {what}"));
    }

    fn signal(&self, signal: i32) {
        self.proc.signal(signal);
    }

    /// SIGINT, the rest of stdout, the exit code and stderr.
    async fn stop(mut self) -> (Vec<String>, i32, String) {
        let exit = self.proc.stop(libc::SIGINT, GUARD).await;
        self.out.extend(exit.stdout.lines().map(str::to_string));
        (self.out, exit.code.unwrap(), exit.stderr)
    }
}

fn numbered(path: &Path, n: u32) -> PathBuf {
    PathBuf::from(format!("{}.{n}", path.display()))
}

/// The lines of the rotated files, oldest first, then the current one; each file checked to end
/// with a whole line and to be 0600.
fn capture_lines(path: &Path) -> (Vec<String>, Vec<u64>) {
    let mut files: Vec<PathBuf> = (1..)
        .map(|n| numbered(path, n))
        .take_while(|p| p.exists())
        .collect();
    files.reverse();
    files.push(path.to_path_buf());
    let mut lines = Vec::new();
    let mut sizes = Vec::new();
    for f in files {
        let meta = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{}", f.display());
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{} ends mid-line",
            f.display()
        );
        for l in text.lines() {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("{}: a split line ({e}): {l}", f.display()));
            lines.push(l.to_string());
        }
        sizes.push(meta.len());
    }
    (lines, sizes)
}

fn heartbeats(out: &[String]) -> usize {
    out.iter()
        .filter(|l| l.contains(r#""type":"heartbeat""#))
        .count()
}

#[tokio::test]
async fn sighup_reopens_the_capture_after_logrotate_moved_it() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.jsonl");
    let mut w = watch(&["--capture", cap.to_str().unwrap()]).await;
    w.until("three heartbeats", |out| heartbeats(out) >= 3)
        .await;
    std::fs::rename(&cap, numbered(&cap, 1)).unwrap();
    w.signal(libc::SIGHUP);
    // Lines keep coming; once the new file has two of them, the reopen is proven.
    let fresh = cap.clone();
    w.until("lines in the reopened file", |_| {
        std::fs::read_to_string(&fresh).is_ok_and(|t| t.lines().count() >= 2)
    })
    .await;
    let (out, code, err) = w.stop().await;
    assert_eq!(
        code, 130,
        "SIGHUP with a capture does not stop the watch: {err}"
    );
    let (lines, _) = capture_lines(&cap);
    assert_eq!(
        lines, out,
        "every stdout line is in exactly one of the files, in order"
    );
    let moved = std::fs::read_to_string(numbered(&cap, 1)).unwrap();
    assert!(moved.starts_with(r#"{"type":"start""#));
    let now = std::fs::read_to_string(&cap).unwrap();
    assert!(now.ends_with("\n") && now.contains(r#""type":"summary""#));
}

#[tokio::test]
async fn sighup_without_a_capture_still_stops_the_watch_with_129() {
    let mut w = watch(&[]).await;
    w.until("a heartbeat", |out| heartbeats(out) >= 1).await;
    let exit = w.proc.stop(libc::SIGHUP, GUARD).await;
    w.out.extend(exit.stdout.lines().map(str::to_string));
    assert_eq!(exit.code, Some(129));
    assert!(w.out.last().unwrap().contains(r#""reason":"hangup""#));
}

#[tokio::test]
async fn sighup_refuses_a_symlink_put_where_the_capture_was() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.jsonl");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "untouched\n").unwrap();
    let mut w = watch(&["--capture", cap.to_str().unwrap()]).await;
    w.until("a heartbeat", |out| heartbeats(out) >= 1).await;
    std::fs::rename(&cap, numbered(&cap, 1)).unwrap();
    std::os::unix::fs::symlink(&victim, &cap).unwrap();
    w.signal(libc::SIGHUP);
    let before = w.out.len();
    w.until("more lines", |out| heartbeats(&out[before..]) >= 3)
        .await;
    let (_, code, err) = w.stop().await;
    assert_eq!(code, 130);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
}

#[tokio::test]
async fn rotation_keeps_every_line_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.jsonl");
    let args = [
        "--capture",
        cap.to_str().unwrap(),
        "--capture-max-size",
        "1K",
    ];
    let mut w = watch(&[&args[..], &["--capture-keep", "1000"]].concat()).await;
    let first = cap.clone();
    w.until("five rotations", |_| numbered(&first, 5).exists())
        .await;
    let (out, code, _) = w.stop().await;
    assert_eq!(code, 130);
    let (lines, sizes) = capture_lines(&cap);
    assert_eq!(lines, out, "no line lost or split across rotations");
    let texts: Vec<&String> = lines.iter().collect();
    assert!(texts.len() > 10);
    for (i, size) in sizes.iter().enumerate() {
        // Only a single line longer than the limit (the summary may be) makes a bigger file.
        assert!(
            *size <= 1024 || i == sizes.len() - 1,
            "file {i} has {size} bytes: {sizes:?}"
        );
    }
}

#[tokio::test]
async fn rotation_keeps_a_bounded_number_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.jsonl");
    let mut w = watch(&[
        "--capture",
        cap.to_str().unwrap(),
        "--capture-max-size",
        "1K",
        "--capture-keep",
        "2",
    ])
    .await;
    // Rotations are counted by the lines written: twenty files' worth, about.
    w.until("many rotations", |out| {
        out.iter().map(|l| l.len() + 1).sum::<usize>() > 20 * 1024
    })
    .await;
    let (out, code, _) = w.stop().await;
    assert_eq!(code, 130);
    assert!(numbered(&cap, 2).exists() && !numbered(&cap, 3).exists());
    let (lines, _) = capture_lines(&cap);
    assert!(
        out.ends_with(&lines),
        "the files kept are the latest lines, whole"
    );
    assert!(lines.len() < out.len());
}
