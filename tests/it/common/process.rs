//! The process harness: every test that starts the binary starts it here, so the binary's path,
//! the pipes, the hang guard, the signals and the exit code are handled one way.
//!
//! - [`maintwatch`] and [`maintwatch_async`]: the binary with its arguments, as a
//!   `std::process::Command` or a `tokio::process::Command` (killed when dropped), for a test
//!   that adds its own environment, limits or stdin, then runs it to completion (`.output()`).
//! - [`Proc`]: a started process whose stdout is read line by line, whose stderr is collected in
//!   the background (a line can be waited for, with a deadline), which can be sent a signal, and
//!   whose exit is collected with what it still wrote.
//!
//! Deadlines here are hang guards: a test asserts what it read, never how long it took.

use std::ffi::OsStr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_maintwatch");

/// `maintwatch ARGS` for a run to completion, stdin closed.
pub fn maintwatch<I, S>(args: I) -> std::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// `maintwatch ARGS` on tokio, stdin closed, killed when dropped.
pub fn maintwatch_async<I, S>(args: I) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    cmd
}

/// Sends `signal` to `pid` (a child the test started).
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process this test started.
    let rc = unsafe { libc::kill(pid as i32, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal})");
}

/// The stdout lines of a started process.
pub type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// A started process: stdout line by line, stderr collected as it comes.
pub struct Proc {
    pub child: tokio::process::Child,
    pub stdout: Lines,
    stderr: Arc<(Mutex<Vec<String>>, tokio::sync::Notify)>,
    stderr_done: tokio::task::JoinHandle<()>,
}

/// How a process ended: its exit code (`None` when a signal killed it), the stdout it wrote
/// after what the test read, and all of its stderr.
#[derive(Debug)]
pub struct Exit {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Proc {
    /// `maintwatch ARGS`, started.
    pub fn start<I, S>(args: I) -> Proc
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Proc::spawn(maintwatch_async(args))
    }

    /// Starts `cmd` (the binary from [`maintwatch_async`], or a real part beside it) with stdout
    /// and stderr piped, killed when dropped.
    pub fn spawn(mut cmd: tokio::process::Command) -> Proc {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr = Arc::new((Mutex::new(Vec::new()), tokio::sync::Notify::new()));
        let mut err_lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let kept = Arc::clone(&stderr);
        let stderr_done = tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                kept.0.lock().unwrap().push(line);
                kept.1.notify_waiters();
            }
            kept.1.notify_waiters();
        });
        Proc {
            child,
            stdout,
            stderr,
            stderr_done,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("still running")
    }

    pub fn signal(&self, sig: i32) {
        signal(self.pid(), sig);
    }

    /// Reads stdout up to the first line `want` accepts, within `guard`: that line and the
    /// ones before it.
    pub async fn line(
        &mut self,
        guard: Duration,
        what: &str,
        want: impl Fn(&str) -> bool,
    ) -> (String, Vec<String>) {
        let mut before = Vec::new();
        let lines = &mut self.stdout;
        let found = tokio::time::timeout(guard, async {
            while let Some(line) = lines.next_line().await.expect("stdout readable") {
                if want(&line) {
                    return Some(line);
                }
                before.push(line);
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => (line, before),
            Ok(None) => panic!("stdout ended before {what}: {before:#?}"),
            Err(_) => panic!("hang guard: never saw {what} on stdout: {before:#?}"),
        }
    }

    /// Waits, within `guard`, for a stderr line `want` accepts, and returns it.
    pub async fn stderr_line(
        &self,
        guard: Duration,
        what: &str,
        want: impl Fn(&str) -> bool,
    ) -> String {
        let found = tokio::time::timeout(guard, async {
            loop {
                // Registered before the look, so a line arriving in between is not missed.
                let more = self.stderr.1.notified();
                if let Some(l) = self.stderr.0.lock().unwrap().iter().find(|l| want(l)) {
                    return Some(l.clone());
                }
                if self.stderr_done.is_finished() {
                    return None;
                }
                more.await;
            }
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            Ok(None) => panic!("stderr ended before {what}: {}", self.stderr_text()),
            Err(_) => panic!(
                "hang guard: never saw {what} on stderr: {}",
                self.stderr_text()
            ),
        }
    }

    /// Everything on stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.0.lock().unwrap().join("\n")
    }

    /// Waits, within `guard`, for the process to exit, reading the rest of its output.
    pub async fn finish(mut self, guard: Duration) -> Exit {
        let mut rest = String::new();
        let mut stdout = self.stdout.into_inner();
        let waited = tokio::time::timeout(guard, async {
            stdout
                .read_to_string(&mut rest)
                .await
                .expect("stdout readable");
            let status = self.child.wait().await.expect("wait");
            let _ = (&mut self.stderr_done).await;
            status
        })
        .await;
        let Ok(status) = waited else {
            let _ = self.child.kill().await;
            panic!(
                "hang guard: the process did not exit; stdout: {rest}\nstderr: {}",
                self.stderr.0.lock().unwrap().join("\n")
            );
        };
        let stderr = self.stderr.0.lock().unwrap().join("\n");
        Exit {
            code: status.code(),
            stdout: rest,
            stderr,
        }
    }

    /// Sends `sig`, then [`Proc::finish`].
    pub async fn stop(self, sig: i32, guard: Duration) -> Exit {
        self.signal(sig);
        self.finish(guard).await
    }
}

/// The peak resident set of process `pid` in KiB (`VmHWM` in /proc), for a memory bound. Where
/// /proc cannot tell, `None` after a visible SKIP line naming `check`: a memory check that could
/// not look says so instead of passing in silence.
pub fn peak_rss_kib(pid: u32, check: &str) -> Option<u64> {
    let path = format!("/proc/{pid}/status");
    let found = std::fs::read_to_string(&path).ok().and_then(|status| {
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    });
    if found.is_none() {
        crate::common::skip(
            check,
            &format!("no VmHWM in {path}; the memory bound is not checked"),
        );
    }
    found
}

/// A started `maintwatch watch --json`: its stdout parsed into schema lines as they are read.
pub struct JsonWatch {
    pub proc: Proc,
    pub seen: Vec<maintwatch::observe::record::WatchLine>,
}

impl JsonWatch {
    /// `cmd` (from [`maintwatch_async`], with more set on it), started.
    pub fn spawn(cmd: tokio::process::Command) -> JsonWatch {
        JsonWatch {
            proc: Proc::spawn(cmd),
            seen: Vec::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Reads lines until `done` holds over everything seen so far; `guard` is a hang guard.
    pub async fn until(
        &mut self,
        guard: Duration,
        what: &str,
        done: impl Fn(&[maintwatch::observe::record::WatchLine]) -> bool,
    ) {
        super::read_until(&mut self.proc.stdout, &mut self.seen, guard, what, done).await;
    }

    /// Sends `sig`, reads the rest of the lines and returns the exit code.
    pub async fn stop(&mut self, sig: i32, guard: Duration) -> i32 {
        self.proc.signal(sig);
        let seen = &mut self.seen;
        let proc = &mut self.proc;
        let code = tokio::time::timeout(guard, async {
            while let Some(line) = proc.stdout.next_line().await.expect("stdout readable") {
                seen.push(
                    serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not a schema line ({e}): {line}")),
                );
            }
            proc.child.wait().await.expect("wait").code()
        })
        .await
        .expect("hang guard: the watch exits after the signal");
        code.expect("an exit code, not a signal")
    }

    /// Ctrl-C: [`JsonWatch::stop`] with SIGINT.
    pub async fn interrupt(&mut self, guard: Duration) -> i32 {
        self.stop(libc::SIGINT, guard).await
    }
}
