//! Exits scripts can trust, and what `maintwatch watch` does with its capture file:
//!
//! - before the first session, a wrong or missing password, a refused SELECT, and (with
//!   `--require`) an unreachable endpoint stop the watch with their exit codes and say what to
//!   change; a watch that never had a session never exits 0;
//! - after a session existed, a permanent error is retried, counted and reflected in the exit;
//! - a server that breaks every session right after the handshake gets a growing backoff;
//! - usage errors exit 2 naming the flag;
//! - `--capture` creates 0600, refuses an existing file or a symlink, and a full disk is named
//!   while the summary still reaches stdout.
//!
//! Against the simulator, hand-written servers on 127.0.0.1 and, when `MAINTWATCH_REDIS_SERVER`
//! is set, a real redis-server. Nothing asserts a duration; waits have a hang guard only.

use crate::common;

use maintwatch::observe::record::line;
use maintwatch::observe::record::WatchLine;
use maintwatch::simulator::sim::{Scenario, SimOptions, Simulator};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const GUARD: Duration = Duration::from_secs(60);

const ONE_PUSH: &str = "name t\nabout a test\nproxies 127.0.0.2\ndns 127.0.0.2\nstart opt-in\n\
at 0 push * MIGRATING time=2 shards=[\"1\"]\nend 3600\n";

async fn simulator(password: Option<&str>) -> Simulator {
    let mut opts = SimOptions::new(Scenario::parse("t.scn", ONE_PUSH).unwrap());
    opts.password = password.map(str::to_string);
    Simulator::start(opts).await.expect("the simulator starts")
}

fn sim_url(sim: &Simulator) -> String {
    format!("redis://127.0.0.2:{}", sim.port())
}

/// Runs `maintwatch ARGS` to its end (within the hang guard).
async fn run(args: &[&str]) -> Output {
    let child = common::maintwatch_async(args)
        .env_remove("REDISCLI_AUTH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    match tokio::time::timeout(GUARD, child.wait_with_output()).await {
        Ok(out) => out.unwrap(),
        Err(_) => panic!("hang guard: maintwatch {args:?} did not end"),
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("an exit code")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_lines(out: &Output) -> Vec<WatchLine> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn summary(lines: &[WatchLine]) -> &WatchLine {
    let last = lines.last().expect("lines");
    assert!(
        matches!(last, WatchLine::Summary(line::Summary { .. })),
        "{last:?}"
    );
    last
}

// ---------------------------------------------------------------------------------------------
// Permanent errors before the first session
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_password_stops_the_watch_with_exit_5_and_says_how_to_give_one() {
    let sim = simulator(Some("s3cret-pw")).await;
    let out = run(&["watch", &sim_url(&sim), "--json"]).await;
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("NOAUTH"), "{err}");
    assert!(
        err.contains("-a, --askpass or REDISCLI_AUTH"),
        "says what to change: {err}"
    );
    let lines = json_lines(&out);
    let WatchLine::Summary(line::Summary { reason, .. }) = summary(&lines) else {
        unreachable!()
    };
    assert_eq!(reason, "permanent error");
    let sessions = lines
        .iter()
        .filter(|l| matches!(l, WatchLine::Connected(line::Connected { .. })))
        .count();
    assert_eq!(sessions, 1, "no retry: {lines:#?}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_stops_the_watch_with_exit_5() {
    let sim = simulator(Some("s3cret-pw")).await;
    let out = run(&["watch", &sim_url(&sim), "--json", "-a", "wrong-pw"]).await;
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("WRONGPASS"), "{err}");
    assert!(
        err.contains("password (-a, --askpass or REDISCLI_AUTH)"),
        "{err}"
    );
    assert!(!err.contains("wrong-pw"), "never the password: {err}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_to_a_real_redis_stops_the_watch_with_exit_5() {
    let test = "a_wrong_password_to_a_real_redis_stops_the_watch_with_exit_5";
    let Some(redis) = common::RealRedis::start(test, &["--requirepass", "s3cret-pw"]).await else {
        return;
    };
    let out = run(&["watch", &redis.url(), "--json", "-a", "wrong-pw"]).await;
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("REDISCLI_AUTH"), "{}", stderr(&out));
}

/// What a person reads (stdout and stderr together) after a failed authentication, without
/// `--json`: the server's text and what to change appear once, and a handshake failure is not
/// called unannounced (that is for a server-side close).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_authentication_on_screen_says_it_once_with_what_to_change() {
    let test = "a_failed_authentication_on_screen_says_it_once_with_what_to_change";
    let Some(redis) = common::RealRedis::start(test, &["--requirepass", "s3cret-pw"]).await else {
        return;
    };
    let url = redis.url();
    // A refused password: check it and the user; none given: how to give one.
    for (args, text, change) in [
        (
            vec!["watch", &url, "-a", "wrong-pw"],
            "WRONGPASS",
            "check the user (--user)",
        ),
        (vec!["watch", &url], "NOAUTH", "no password was given"),
    ] {
        let out = run(&args).await;
        assert_eq!(code(&out), 5, "{}", stderr(&out));
        let screen = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(screen.matches(text).count(), 1, "{text} once: {screen}");
        // The password warning of `-a` names REDISCLI_AUTH too; what to change is said once.
        assert_eq!(
            screen.matches(change).count(),
            1,
            "what to change, once: {screen}"
        );
        assert_eq!(
            screen.matches("authentication failed").count(),
            2,
            "the timeline's line and the summary's count: {screen}"
        );
        assert!(!screen.contains("unannounced"), "{screen}");
        assert!(!screen.contains("wrong-pw"), "never the password: {screen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_select_stops_the_watch_with_exit_7_and_names_the_database() {
    let sim = simulator(None).await;
    let url = format!("{}/99", sim_url(&sim));
    let out = run(&["watch", &url, "--json"]).await;
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("DB index is out of range"), "{err}");
    assert!(err.contains("/N picks the database"), "{err}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_select_on_a_real_redis_stops_the_watch_with_exit_7() {
    let test = "a_refused_select_on_a_real_redis_stops_the_watch_with_exit_7";
    let Some(redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let out = run(&["watch", &format!("{}/99", redis.url()), "--json"]).await;
    assert_eq!(code(&out), 7, "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_exits_6_on_an_unreachable_endpoint() {
    let port = common::closed_port();
    let out = run(&["watch", &format!("redis://{port}"), "--json", "--require"]).await;
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_never_had_a_session_does_not_exit_0() {
    let port = common::closed_port();
    let url = format!("redis://{port}");
    let out = run(&["watch", &url, "--json", "--duration", "1s"]).await;
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no session was established"),
        "{}",
        stderr(&out)
    );
    let lines = json_lines(&out);
    let WatchLine::Summary(line::Summary { reason, .. }) = summary(&lines) else {
        unreachable!()
    };
    assert_eq!(reason, "duration");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_session_a_permanent_error_is_retried_and_counted() {
    let test = "after_a_session_a_permanent_error_is_retried_and_counted";
    let Some(redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let (mut child, mut lines) = common::spawn_lines(
        common::maintwatch_async(["watch", &redis.url(), "--json"])
            .env_remove("REDISCLI_AUTH")
            .stderr(Stdio::null()),
    );
    let mut seen = Vec::new();
    common::read_until(&mut lines, &mut seen, GUARD, "the handshake", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
    })
    .await;
    // A password appears, and the watch's connection is dropped: it must reconnect, and fail.
    let mut admin = tokio::net::TcpStream::connect(redis.addr).await.unwrap();
    let mut both =
        maintwatch::protocol::resp::encode_command(&["CONFIG", "SET", "requirepass", "new-pw"]);
    both.extend(maintwatch::protocol::resp::encode_command(&[
        "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes",
    ]));
    admin.write_all(&both).await.unwrap();
    common::read_until(
        &mut lines,
        &mut seen,
        GUARD,
        "two refused reconnects",
        |l| {
            l.iter()
                .filter(|l| {
                    // The server's text is on the handshake's line; the close does not repeat it.
                    matches!(l, WatchLine::Handshake(line::Handshake { text: Some(e), .. }) if e.contains("NOAUTH"))
                })
                .count()
                >= 2
        },
    )
    .await;
    let pid = child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let code = child.wait().await.unwrap().code();
    assert_eq!(code, Some(143), "a signal's code comes first");
    let WatchLine::Summary(line::Summary { notes, .. }) = summary(&seen) else {
        unreachable!()
    };
    assert!(notes.session_errors >= 2, "{notes:?}");
}

// ---------------------------------------------------------------------------------------------
// Backoff
// ---------------------------------------------------------------------------------------------

/// Completes the handshake, then sends bytes that are not RESP.
async fn serve_then_break(mut socket: tokio::net::TcpStream) {
    if common::answer_commands(&mut socket, 2, common::handshake_reply)
        .await
        .is_some()
    {
        let _ = socket.write_all(b"?not resp\r\n").await;
        // Held open: the watch is the one that hangs up.
        tokio::time::sleep(GUARD).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_breaks_every_session_at_once_gets_a_growing_backoff() {
    let addr = common::test_server(serve_then_break).await;
    let (mut child, mut lines) = common::watch_json(addr);
    let mut seen = Vec::new();
    let closes = |l: &[WatchLine]| -> Vec<Option<f64>> {
        l.iter()
            .filter_map(|l| match l {
                WatchLine::Closed(line::Closed { retry_in_s, .. }) => Some(*retry_in_s),
                _ => None,
            })
            .collect()
    };
    common::read_until(&mut lines, &mut seen, GUARD, "five broken sessions", |l| {
        closes(l).len() >= 5
    })
    .await;
    let _ = child.start_kill();
    let delays: Vec<f64> = closes(&seen)
        .into_iter()
        .map(|d| d.expect("each close says when the watch retries"))
        .collect();
    assert!(
        delays.windows(2).all(|w| w[0] < w[1]),
        "each quick failure waits longer than the one before: {delays:?}"
    );
}

/// A server that goes away after one session (a simulator stopped): the watch keeps trying, and
/// from the second failed attempt on each line says how long it has been failing and how many
/// attempts failed. (The growth to the cap is asserted on the paused clock in
/// `watch::connection`'s tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_after_a_session_is_said_to_be_failing_for_so_long() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (mut child, mut lines) = common::watch_json(addr);
    // One session, then the server and its listener are gone: later connects are refused.
    let (mut socket, _) = listener.accept().await.unwrap();
    drop(listener);
    common::answer_commands(&mut socket, 2, common::handshake_reply)
        .await
        .expect("the watch's handshake");
    drop(socket);
    let failures = |l: &[WatchLine]| -> Vec<(String, Option<f64>)> {
        l.iter()
            .filter_map(|l| match l {
                WatchLine::ConnectFailed(line::ConnectFailed {
                    error, retry_in_s, ..
                }) => Some((error.clone(), *retry_in_s)),
                _ => None,
            })
            .collect()
    };
    let mut seen = Vec::new();
    common::read_until(
        &mut lines,
        &mut seen,
        GUARD,
        "three refused attempts",
        |l| failures(l).len() >= 3,
    )
    .await;
    let _ = child.start_kill();
    let failures = failures(&seen);
    assert!(!failures[0].0.contains("failing for"), "{failures:?}");
    for (n, (error, retry)) in failures.iter().enumerate().skip(1) {
        assert!(
            error.contains("failing for ") && error.ends_with(&format!(", {} attempts", n + 1)),
            "{error}"
        );
        assert!(retry.is_some(), "each failure says when the next try is");
    }
}

// ---------------------------------------------------------------------------------------------
// Usage errors
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn count_0_and_sim_speed_0_are_usage_errors_naming_the_flag() {
    for (flag, value) in [
        ("--count", "0"),
        ("--sim-speed", "0"),
        ("--sim-speed", "-1"),
    ] {
        let arg = format!("{flag}={value}");
        let out = run(&["watch", "redis://127.0.0.1:1", &arg]).await;
        assert_eq!(code(&out), 2, "{flag} {value}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{}", stderr(&out));
    }
}

// ---------------------------------------------------------------------------------------------
// The capture file
// ---------------------------------------------------------------------------------------------

/// `watch --count 1 --capture PATH EXTRA` against a simulator pushing one notification.
async fn capture_run(path: &Path, extra: &[&str]) -> Output {
    let sim = simulator(None).await;
    let url = sim_url(&sim);
    let mut args = vec!["watch", &url, "--json", "--count", "1", "--capture"];
    let path = path.to_str().unwrap();
    args.push(path);
    args.extend(extra);
    let out = run(&args).await;
    sim.shutdown().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_is_created_readable_by_its_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let out = capture_run(&path, &[]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_capture_is_refused_unless_append_or_force_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "last week\n").unwrap();
    let out = capture_run(&path, &[]).await;
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("--append") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "last week\n");

    let out = capture_run(&path, &["--append"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("last week\n{"), "appended: {text}");

    let out = capture_run(&path, &["--force"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with('{') && !text.contains("last week"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_path_that_is_a_symlink_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, "precious\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for extra in [&[][..], &["--append"], &["--force"]] {
        let out = capture_run(&link, extra).await;
        assert_eq!(code(&out), 1, "{extra:?}");
        assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    }
    // A dangling link is not followed either: nothing is created where it points.
    let missing = dir.path().join("missing");
    let dangling = dir.path().join("dangling.jsonl");
    std::os::unix::fs::symlink(&missing, &dangling).unwrap();
    let out = capture_run(&dangling, &[]).await;
    assert_eq!(code(&out), 1);
    assert!(!missing.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_path_that_is_a_directory_is_named_as_one_without_a_false_remedy() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--append"], &["--force"]] {
        let out = capture_run(dir.path(), extra).await;
        assert_eq!(code(&out), 1, "{extra:?}");
        let err = stderr(&out);
        assert!(err.contains("is a directory; give a file name"), "{err}");
        assert!(
            !err.contains("--append"),
            "no remedy that fails next: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_names_the_capture_and_the_summary_still_reaches_stdout() {
    let out = capture_run(Path::new("/dev/full"), &["--append"]).await;
    let err = stderr(&out);
    assert!(err.contains("--capture /dev/full"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let lines = json_lines(&out);
    summary(&lines);
    assert_eq!(code(&out), 1, "the lost capture shows in the exit code");
}

/// `--from /dev/zero` (watch and probe) and `yes | watch --from -`: refused at the first line
/// past a bound, naming it, with the usage exit; before, the whole device was read into memory.
#[test]
fn endless_endpoint_lists_are_refused_at_the_line_past_a_bound() {
    for command in ["watch", "probe"] {
        let out = common::maintwatch([command, "--from", "/dev/zero"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("--from: /dev/zero, line 1: longer than 8192 bytes"),
            "{command}: {stderr}"
        );
    }
    let mut watch = common::maintwatch(["watch", "--from", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = watch.stdin.take().unwrap();
    // `yes`: written until the watch closes its end.
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let lines = "y\n".repeat(4096);
        while stdin.write_all(lines.as_bytes()).is_ok() {}
    });
    let out = watch.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("standard input, line 100001: more than 100000 endpoints"),
        "{stderr}"
    );
}

/// A host name longer than DNS allows is refused where it is parsed, quoted short.
#[test]
fn a_100_kb_host_name_is_refused_without_being_echoed() {
    // As long as one argument may be (128 KiB).
    let host = "h".repeat(100_000);
    for args in [
        vec!["watch", host.as_str()],
        vec!["probe", "-h", host.as_str()],
    ] {
        let out = common::maintwatch(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            &stderr[..stderr.len().min(300)]
        );
        assert!(
            stderr.contains("a host name has at most 253"),
            "{}",
            &stderr[..300.min(stderr.len())]
        );
        assert!(
            out.stdout.len() + out.stderr.len() < 4096,
            "the host is not echoed"
        );
    }
}

/// A host name that does not exist, before any session: a permanent error, exit 6 naming the
/// host, not a retry every few seconds forever. The simulator's authoritative DNS answers
/// NXDOMAIN for a name outside its records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_does_not_resolve_stops_the_watch_with_6_naming_it() {
    let sim = simulator(None).await;
    let host = format!("nope.{}", sim.host());
    let url = format!("redis://{host}:{}", sim.port());
    let dns = sim.dns_addr().to_string();
    let out = run(&["watch", &url, "--dns-server", &dns]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains(&format!("the name {host} does not resolve")),
        "{stderr}"
    );
}

/// Small usage texts (issue 25): `--count 0` says what N counts, not a range of u32; a
/// malformed `decide --endpoint` is a usage error (2), not a generic one; a missing pcap names
/// the OS error once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_texts_say_what_to_change_once_with_the_usage_exit() {
    let out = run(&["watch", "redis://127.0.0.1:1", "--count", "0"]).await;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("N is at least 1 (leave --count out"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("4294967295"), "{}", stderr(&out));

    let out = run(&["decide", "--endpoint", "foo"]).await;
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--endpoint"), "{}", stderr(&out));

    let out = run(&["pcap", "/nonexistent/capture.pcap"]).await;
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out).matches("No such file or directory").count(),
        1,
        "{}",
        stderr(&out)
    );
}

/// `--metrics 9464` is loopback port 9464 and `--metrics localhost:PORT` is resolved; before,
/// both were "invalid socket address syntax".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_takes_a_port_alone_or_a_host_name() {
    for value in ["0", "localhost:0"] {
        let out = run(&[
            "watch",
            "redis://127.0.0.1:1",
            "--metrics",
            value,
            "--duration",
            "1s",
        ])
        .await;
        let err = stderr(&out);
        // A port alone is loopback; `localhost` is whichever loopback address it resolves to.
        let want = if value == "0" {
            "maintwatch: metrics at http://127.0.0.1:"
        } else {
            "maintwatch: metrics at http://"
        };
        assert!(err.contains(want), "{value}: {err}");
    }
}
