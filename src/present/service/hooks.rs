//! `watch --exec CMD`: a command run (with `sh -c`) for each line an operator alerts on, with the
//! JSON line on its standard input and `MAINTWATCH_TYPE`, `MAINTWATCH_EVENT` and
//! `MAINTWATCH_ENDPOINT` in its environment.
//!
//! A hook must never slow the watch: the sink only queues a run (`try_send`; a full queue drops
//! and counts it), a dispatcher task starts at most [`CONCURRENCY`] at once, and each run is
//! killed (its whole process group) when it outlives `--exec-timeout`. Failures are reported on
//! stderr, sanitised, naming the hook by its position (its text may hold a webhook token), and
//! counted in `maintwatch_hook_runs_total`. The hook's environment is the watch's without the
//! passwords: `REDISCLI_AUTH`, and any variable whose value contains any endpoint's password,
//! are removed. The queue is bounded in bytes too ([`QUEUE_BYTES`]): lines may be megabytes.

use super::metrics::HookResult;
use crate::observe::record::{Label, WatchLine};
use crate::present::output::sink::Sink;
use crate::protocol::notification::Classified;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::collections::{BTreeSet, HashSet};
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};

/// Hook runs at once.
pub const CONCURRENCY: usize = 4;
/// Lines waiting for a free run; past it a line's runs are dropped and counted.
pub const QUEUE: usize = 256;
/// The JSON of the lines queued or running, at most: lines can be megabytes (a MOVING with a
/// 4 MB target), and 256 of them would be a gigabyte. Past it a line is dropped and counted.
pub const QUEUE_BYTES: usize = 16 << 20;
/// What of a failing hook's stderr is kept for the report.
const STDERR_KEPT: usize = 4096;

/// Every line type, as `--exec-on` names them (the JSON `type`).
pub const LINE_TYPES: [&str; 15] = [
    "start",
    "connected",
    "connect_failed",
    "handshake",
    "push",
    "malformed",
    "closed",
    "dns",
    "handoff",
    "verdict",
    "advertised",
    "ping",
    "topology",
    "summary",
    "heartbeat",
];

/// Which lines run the hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecOn {
    /// Once per maintenance event and once for its outcome: a notification that is new (not
    /// resent, not a catch-up replay, not a copy from another node), a socket close past the
    /// declared window, and the dry-run verdict. A page per event, not per line about it.
    Alerting,
    /// Every line of these types.
    Types(BTreeSet<&'static str>),
}

impl ExecOn {
    /// Parses `--exec-on` values (each a comma list; `all` is every type).
    pub fn parse(values: &[String]) -> anyhow::Result<ExecOn> {
        if values.is_empty() {
            return Ok(ExecOn::Alerting);
        }
        let mut types = BTreeSet::new();
        for name in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
            if name == "all" {
                types.extend(LINE_TYPES);
            } else if let Some(t) = LINE_TYPES.iter().find(|t| **t == name) {
                types.insert(*t);
            } else {
                anyhow::bail!(
                    "--exec-on: {:?} is not a line type (one of: all, {})",
                    crate::shared::escape::sanitize(name),
                    LINE_TYPES.join(", ")
                );
            }
        }
        Ok(ExecOn::Types(types))
    }

    fn wants(&self, line: &WatchLine) -> bool {
        // The end of a simulated scenario is a test ending: nothing to act on.
        if let WatchLine::Closed(c) = line {
            if c.by == crate::observe::record::ClosedBy::ScenarioEnd {
                return false;
            }
        }
        match self {
            ExecOn::Types(types) => types.contains(type_name(line)),
            ExecOn::Alerting => match line {
                WatchLine::Push(p) => {
                    // A MOVING that came with the opt-in is new to this watch; a resent or
                    // replayed one is not.
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
            },
        }
    }
}

/// The line's JSON `type`.
pub fn type_name(line: &WatchLine) -> &'static str {
    match line {
        WatchLine::Start(_) => "start",
        WatchLine::Connected(_) => "connected",
        WatchLine::ConnectFailed(_) => "connect_failed",
        WatchLine::Handshake(_) => "handshake",
        WatchLine::Push(_) => "push",
        WatchLine::AzureEvent(_) => "azure_event",
        WatchLine::AzureRefused(_) => "azure_refused",
        WatchLine::Malformed(_) => "malformed",
        WatchLine::Closed(_) => "closed",
        WatchLine::Dns(_) => "dns",
        WatchLine::Handoff(_) => "handoff",
        WatchLine::Verdict(_) => "verdict",
        WatchLine::Advertised(_) => "advertised",
        WatchLine::Ping(_) => "ping",
        WatchLine::Topology(_) => "topology",
        WatchLine::Summary(_) => "summary",
        WatchLine::Heartbeat(_) => "heartbeat",
    }
}

/// The event a line is about (`MOVING seq 3`), or empty.
fn event_of(line: &WatchLine) -> String {
    match line {
        WatchLine::Push(p) => match &p.frame.parsed {
            Classified::Maintenance(n) => n.event_name(),
            _ => p.rel.as_ref().map(|r| r.to.clone()).unwrap_or_default(),
        },
        WatchLine::Handoff(h) => h.event.clone(),
        WatchLine::Verdict(v) => v.event.clone(),
        WatchLine::Closed(l) => l.rel.as_ref().map(|r| r.to.clone()).unwrap_or_default(),
        WatchLine::Dns(l) => l.rel.as_ref().map(|r| r.to.clone()).unwrap_or_default(),
        WatchLine::Connected(l) => l.rel.as_ref().map(|r| r.to.clone()).unwrap_or_default(),
        WatchLine::Advertised(l) => l.rel.as_ref().map(|r| r.to.clone()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// `--exec`, `--exec-on`, `--exec-timeout`, validated.
#[derive(Debug, Clone)]
pub struct HookSettings {
    pub commands: Vec<String>,
    pub on: ExecOn,
    pub timeout: Duration,
}

/// One line to hand to every hook.
struct Job {
    json: Arc<str>,
    kind: &'static str,
    event: String,
    endpoint: Arc<str>,
    /// Its JSON's share of [`QUEUE_BYTES`], given back when the last run of it ends.
    _held: Held,
}

/// Bytes counted against [`QUEUE_BYTES`] while a job lives.
struct Held {
    shared: Arc<Shared>,
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.shared.bytes.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

struct Shared {
    commands: Vec<String>,
    timeout: Duration,
    counters: Family<HookResult, Counter>,
    /// Variables the hooks must not inherit (the password's).
    hidden: Vec<OsString>,
    /// Process groups of the runs in progress, killed if the watch ends before they do.
    running: Mutex<HashSet<i32>>,
    warned_full: AtomicBool,
    /// JSON bytes of the jobs queued or running, and their bound ([`QUEUE_BYTES`]).
    bytes: AtomicUsize,
    max_bytes: usize,
    /// Jobs queued, not yet taken by the dispatcher (reported if the watch ends first).
    queued: AtomicUsize,
    /// Where what the runs did wrong goes: the command shows it (this module prints nothing).
    notices: super::Notices,
}

impl Shared {
    fn count(&self, result: &'static str) {
        self.counters.get_or_create(&HookResult { result }).inc();
    }

    /// Hands a notice to the command; one sent after the command stopped listening is lost.
    fn notice(&self, text: String) {
        let _ = self.notices.send(text);
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The hook runner shared by every endpoint: the queue, the concurrency limit, the counters.
pub struct Hooks {
    tx: mpsc::Sender<Job>,
    on: ExecOn,
    shared: Arc<Shared>,
    dispatcher: tokio::task::JoinHandle<()>,
}

impl Hooks {
    /// Starts the dispatcher on the current runtime. `passwords`: every endpoint's; a variable
    /// whose value contains any of them (`REDIS_URL=redis://:pw@...` too) is removed from the
    /// hooks' environment (`REDISCLI_AUTH` always is).
    pub fn start(
        settings: &HookSettings,
        counters: Family<HookResult, Counter>,
        passwords: &[&str],
        notices: super::Notices,
    ) -> Hooks {
        Hooks::start_bounded(settings, counters, passwords, QUEUE_BYTES, notices)
    }

    fn start_bounded(
        settings: &HookSettings,
        counters: Family<HookResult, Counter>,
        passwords: &[&str],
        max_bytes: usize,
        notices: super::Notices,
    ) -> Hooks {
        let hidden = hidden_variables(std::env::vars_os(), passwords);
        let shared = Arc::new(Shared {
            commands: settings.commands.clone(),
            timeout: settings.timeout,
            counters,
            hidden,
            running: Mutex::new(HashSet::new()),
            warned_full: AtomicBool::new(false),
            bytes: AtomicUsize::new(0),
            max_bytes,
            queued: AtomicUsize::new(0),
            notices,
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        let dispatcher = tokio::spawn(dispatch(rx, Arc::clone(&shared)));
        Hooks {
            tx,
            on: settings.on.clone(),
            shared,
            dispatcher,
        }
    }

    /// The sink of one endpoint: `endpoint` is what `MAINTWATCH_ENDPOINT` says (never with a
    /// password: `ConnectOptions::display_endpoint`).
    pub fn endpoint_sink(&self, endpoint: &str) -> HookSink {
        HookSink {
            tx: self.tx.clone(),
            on: self.on.clone(),
            shared: Arc::clone(&self.shared),
            endpoint: Arc::from(endpoint),
        }
    }

    /// After the watch (its sinks dropped): lets the queued and running hooks finish, for at
    /// most `--exec-timeout`; what is still running then is killed.
    pub async fn finish(self) {
        let Hooks {
            tx,
            shared,
            mut dispatcher,
            ..
        } = self;
        drop(tx);
        if tokio::time::timeout(shared.timeout, &mut dispatcher)
            .await
            .is_err()
        {
            dispatcher.abort();
            let groups: Vec<i32> = shared.running().drain().collect();
            for pgid in &groups {
                kill_group(*pgid);
            }
            if !groups.is_empty() {
                shared.notice(format!(
                    "--exec: {} hook run(s) still going when the watch ended were killed",
                    groups.len()
                ));
            }
            let jobs = shared.queued.swap(0, Ordering::SeqCst);
            if jobs > 0 {
                let runs = jobs * shared.commands.len();
                for _ in 0..runs {
                    shared.count("dropped");
                }
                shared.notice(format!(
                    "--exec: {runs} queued hook run(s) never started: the watch ended \
                     first (--exec-timeout {:?} after the last line); counted as dropped",
                    shared.timeout
                ));
            }
        }
    }
}

/// The names of the variables the hooks must not inherit: `REDISCLI_AUTH`, the OTLP exporter's
/// headers (`OTEL_EXPORTER_OTLP_*HEADERS`: collector credentials), and every one whose value
/// contains one of `passwords`.
fn hidden_variables(
    vars: impl Iterator<Item = (OsString, OsString)>,
    passwords: &[&str],
) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let holds = |value: &[u8], p: &[u8]| !p.is_empty() && value.windows(p.len()).any(|w| w == p);
    let otlp_headers = |k: &[u8]| k.starts_with(b"OTEL_EXPORTER_OTLP_") && k.ends_with(b"HEADERS");
    vars.filter(|(k, v)| {
        k == "REDISCLI_AUTH"
            || otlp_headers(k.as_bytes())
            || passwords.iter().any(|p| holds(v.as_bytes(), p.as_bytes()))
    })
    .map(|(k, _)| k)
    .collect()
}

/// Takes queued lines in order and starts each hook on each, at most [`CONCURRENCY`] at once;
/// returns when the queue is closed and every run it started has ended.
async fn dispatch(mut rx: mpsc::Receiver<Job>, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    while let Some(job) = rx.recv().await {
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        let job = Arc::new(job);
        for index in 0..shared.commands.len() {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let (job, shared) = (Arc::clone(&job), Arc::clone(&shared));
            tokio::spawn(async move {
                let result = run(&shared, index, &job).await;
                shared.count(result);
                drop(slot);
            });
        }
    }
    let _ = slots.acquire_many(CONCURRENCY as u32).await;
}

/// One run of hook `index` (0-based) on `job`; the result's name for the counter.
async fn run(shared: &Shared, index: usize, job: &Job) -> &'static str {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&shared.commands[index])
        .env("MAINTWATCH_TYPE", job.kind)
        .env("MAINTWATCH_EVENT", &job.event)
        .env("MAINTWATCH_ENDPOINT", &*job.endpoint)
        .stdin(Stdio::piped())
        // Its stdout would land in the watch's own (JSON lines, perhaps): not there.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills what it started too.
        .process_group(0)
        .kill_on_drop(true);
    for name in &shared.hidden {
        command.env_remove(name);
    }
    let name = format!(
        "--exec #{} ({}{})",
        index + 1,
        job.kind,
        event_suffix(&job.event)
    );
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            shared.notice(format!("{name}: cannot start sh: {e}"));
            return "failed";
        }
    };
    let pgid = child.id().map(|id| id as i32);
    if let Some(g) = pgid {
        shared.running().insert(g);
    }
    let outcome = tokio::time::timeout(shared.timeout, talk(&mut child, &job.json)).await;
    if let Some(g) = pgid {
        shared.running().remove(&g);
    }
    match outcome {
        Ok(Ok((status, _))) if status.success() => "ok",
        Ok(Ok((status, stderr))) => {
            shared.notice(format!("{name} failed: {status}{}", last_line(&stderr)));
            "failed"
        }
        Ok(Err(e)) => {
            shared.notice(format!("{name} failed: {e}"));
            "failed"
        }
        Err(_) => {
            if let Some(g) = pgid {
                kill_group(g);
            }
            let _ = child.wait().await;
            shared.notice(format!(
                "{name} still running after {:?} (--exec-timeout): killed",
                shared.timeout
            ));
            "timed_out"
        }
    }
}

/// Writes the line to the hook's stdin (a hook that does not read it is fine), keeps the start
/// of its stderr, and waits for it. The run ends when `sh` exits: a process it left in the
/// background may hold stderr open for as long as it lives, so after the exit only what is
/// already there is read.
async fn talk(
    child: &mut tokio::process::Child,
    json: &str,
) -> std::io::Result<(std::process::ExitStatus, Vec<u8>)> {
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let write = async {
        if let Some(s) = &mut stdin {
            let _ = s.write_all(json.as_bytes()).await;
            let _ = s.write_all(b"\n").await;
        }
        drop(stdin);
    };
    let mut kept = Vec::new();
    let read = keep_stderr(&mut stderr, &mut kept);
    let (status, ()) = tokio::join!(
        async {
            tokio::pin!(read);
            tokio::select! {
                status = child.wait() => {
                    // What sh wrote before it exited is in the pipe: read it without waiting
                    // for an end that a background process may never give.
                    let _ = tokio::time::timeout(AFTER_EXIT, &mut read).await;
                    status
                }
                () = &mut read => child.wait().await,
            }
        },
        write
    );
    Ok((status?, kept))
}

/// How long stderr is still read once `sh` exited.
const AFTER_EXIT: Duration = Duration::from_millis(100);

/// Reads `stderr` to its end, keeping its first [`STDERR_KEPT`] bytes in `kept`.
async fn keep_stderr(stderr: &mut Option<tokio::process::ChildStderr>, kept: &mut Vec<u8>) {
    let mut buf = [0u8; 1024];
    while let Some(s) = stderr {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = STDERR_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

fn event_suffix(event: &str) -> String {
    if event.is_empty() {
        String::new()
    } else {
        format!(" {event}")
    }
}

/// `: <the last non-empty line of stderr>`, sanitised for the terminal and cut to 200 chars.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => {
            let cut: String = l.trim().chars().take(200).collect();
            format!(": {}", crate::shared::escape::sanitize(&cut))
        }
        None => String::new(),
    }
}

fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// One endpoint's hooks: queues the lines `--exec-on` selects; never waits.
pub struct HookSink {
    tx: mpsc::Sender<Job>,
    on: ExecOn,
    shared: Arc<Shared>,
    endpoint: Arc<str>,
}

impl HookSink {
    /// Counts a line's runs as dropped, saying so once.
    fn drop_line(&self, why: &str) {
        for _ in 0..self.shared.commands.len() {
            self.shared.count("dropped");
        }
        if !self.shared.warned_full.swap(true, Ordering::Relaxed) {
            self.shared.notice(format!(
                "--exec: hooks are not keeping up ({why}): runs are dropped and counted"
            ));
        }
    }
}

impl Sink for HookSink {
    fn line(&mut self, line: &WatchLine) -> std::io::Result<()> {
        if !self.on.wants(line) {
            return Ok(());
        }
        // Decided before the line is made: a full queue costs no serialising.
        let max = self.shared.max_bytes;
        let full = format!("{QUEUE} lines or {} KiB queued", max >> 10);
        if self.tx.capacity() == 0 || self.shared.bytes.load(Ordering::SeqCst) >= max {
            self.drop_line(&full);
            return Ok(());
        }
        let json: Arc<str> = Arc::from(serde_json::to_string(line)?);
        let bytes = json.len();
        let before = self.shared.bytes.fetch_add(bytes, Ordering::SeqCst);
        let job = Job {
            json,
            kind: type_name(line),
            event: event_of(line),
            endpoint: Arc::clone(&self.endpoint),
            _held: Held {
                shared: Arc::clone(&self.shared),
                bytes,
            },
        };
        // One line alone may be larger than the bound: it runs when nothing else is queued.
        if before > 0 && before + bytes > max {
            drop(job);
            self.drop_line(&full);
            return Ok(());
        }
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.try_send(job).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            self.drop_line(&full);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_on_names_every_type_or_says_which_is_wrong() {
        assert_eq!(ExecOn::parse(&[]).unwrap(), ExecOn::Alerting);
        let ExecOn::Types(t) = ExecOn::parse(&["push, closed".into(), "dns".into()]).unwrap()
        else {
            panic!()
        };
        assert_eq!(t.into_iter().collect::<Vec<_>>(), ["closed", "dns", "push"]);
        let ExecOn::Types(all) = ExecOn::parse(&["all".into()]).unwrap() else {
            panic!()
        };
        assert_eq!(all.len(), LINE_TYPES.len());
        let err = ExecOn::parse(&["push,moving".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--exec-on") && err.contains("\"moving\""),
            "{err}"
        );
    }

    #[test]
    fn every_variable_holding_any_endpoints_password_is_hidden() {
        let vars = [
            ("REDISCLI_AUTH", "x"),
            ("REDIS_URL", "redis://:first-Pw@db:6379"),
            ("SECOND", "second-Pw"),
            ("BOTH", "first-Pw;second-Pw"),
            ("HOOK_DIR", "/tmp/hooks"),
            ("EMPTY", ""),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k"),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-api-key=k"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let hidden = hidden_variables(vars.into_iter(), &["first-Pw", "second-Pw", ""]);
        assert_eq!(
            hidden,
            [
                "REDISCLI_AUTH",
                "REDIS_URL",
                "SECOND",
                "BOTH",
                "OTEL_EXPORTER_OTLP_HEADERS",
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS"
            ]
        );
    }

    /// A line of `bytes` of JSON (a malformed line's error text).
    fn big_line(bytes: usize) -> WatchLine {
        WatchLine::Malformed(crate::observe::record::line::Malformed {
            v: 1,
            t: 0.0,
            at: String::new(),
            conn: 1,
            offset: 0,
            error: "x".repeat(bytes),
        })
    }

    /// 300 lines of 16 KB behind a hook that is not taking them: the queue holds at most its
    /// byte bound (64 KiB here, plus one line), not 300 lines' worth, and the rest are dropped
    /// and counted. (The same with 4 MB lines and the real bound is in docs/benchmarks.md.)
    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_drops_what_does_not_fit() {
        let counters = Family::<HookResult, Counter>::default();
        let settings = HookSettings {
            commands: vec!["sleep 60".into()],
            on: ExecOn::Types(LINE_TYPES.into_iter().collect()),
            timeout: Duration::from_secs(60),
        };
        let hooks = Hooks::start_bounded(
            &settings,
            counters.clone(),
            &[],
            64 << 10,
            tokio::sync::mpsc::unbounded_channel().0,
        );
        let mut sink = hooks.endpoint_sink("e");
        let line = big_line(16 << 10);
        let mut peak = 0;
        for _ in 0..300 {
            sink.line(&line).unwrap();
            peak = peak.max(hooks.shared.bytes.load(Ordering::SeqCst));
        }
        assert!(peak <= (64 << 10) + (16 << 10) + 200, "{peak} bytes queued");
        let dropped = counters
            .get_or_create(&HookResult { result: "dropped" })
            .get();
        // Four lines fit under 64 KiB (each a little over 16 KB); the others were dropped.
        assert!(dropped >= 295, "{dropped} dropped");
        hooks.dispatcher.abort();
        for pgid in hooks.shared.running().drain() {
            kill_group(pgid);
        }
    }

    #[test]
    fn a_failure_report_keeps_one_sanitised_line() {
        assert_eq!(
            last_line(b"first\nboom \x1b[31mred\n\n"),
            ": boom \\x1b[31mred"
        );
        assert_eq!(last_line(b""), "");
    }
}
