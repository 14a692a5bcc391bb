//! No password in any output: not when a server echoes it back in an error (Redis 5, or a server
//! with HELLO renamed), not when a malformed URL holds it, whatever the entry point. Searched in
//! stdout, stderr and the capture of `watch` (JSON and human), `probe` (table and `--json`).
//!
//! The echoing server is written here (it answers HELLO the way Redis answers an unknown
//! command, cut at 128 characters as Redis cuts it, after a push that carries the password in a
//! blob); a real `redis-server --rename-command HELLO ""` is used too when
//! `MAINTWATCH_REDIS_SERVER` names one.

use crate::common;

use maintwatch::protocol::resp::{Frame, StreamReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PASSWORD: &str = "S3cretPW";
/// Long enough that Redis' 128-character cut leaves only a prefix of it in the echo.
const LONG_PASSWORD: &str = "S3cretPW-0123456789-0123456789-0123456789-0123456789-0123456789-\
0123456789-0123456789-0123456789-0123456789-0123456789-0123456789";
/// Hang guard only.
const GUARD: Duration = Duration::from_secs(60);
/// The start of our warning for a password on the command line (its end names REDISCLI_AUTH).
const WARNING: &str = "is on the command line, where other users of this machine can read it";

/// Redis' "unknown command" text: each argument quoted, the list cut at 128 characters.
fn unknown_command(cmd: &[String]) -> Vec<u8> {
    let mut args = String::new();
    for arg in &cmd[1..] {
        let room = 128usize.saturating_sub(args.len());
        if room == 0 {
            break;
        }
        let shown: String = arg.chars().take(room).collect();
        args.push_str(&format!("'{shown}' "));
    }
    format!(
        "-ERR unknown command '{}', with args beginning with: {args}\r\n",
        cmd[0]
    )
    .into_bytes()
}

/// A server with HELLO renamed away, that also pushes the password back in a blob first.
async fn echoing_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(echo(s));
        }
    });
    addr
}

async fn echo(mut s: TcpStream) {
    let mut reader = StreamReader::default();
    let mut buf = [0u8; 4096];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        reader.extend(&buf[..n]);
        let mut commands = Vec::new();
        if reader
            .drain(|frame, _, _| {
                if let Frame::Array(items) = frame {
                    commands.push(
                        items
                            .iter()
                            .map(|i| String::from_utf8_lossy(i.as_text().unwrap_or(b"")).into())
                            .collect::<Vec<String>>(),
                    );
                }
            })
            .is_err()
        {
            return;
        }
        for cmd in commands {
            let mut reply = Vec::new();
            if cmd[0].eq_ignore_ascii_case("HELLO") {
                if let Some(pw) = cmd.iter().skip_while(|a| *a != "AUTH").nth(2) {
                    let push = format!(">2\r\n$4\r\necho\r\n${}\r\n{pw}\r\n", pw.len());
                    reply.extend_from_slice(push.as_bytes());
                }
            }
            reply.extend(unknown_command(&cmd));
            if s.write_all(&reply).await.is_err() {
                return;
            }
        }
    }
}

/// Runs maintwatch to its end with `env` and `stdin`, without the developer's REDISCLI_AUTH.
async fn run(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Output {
    let mut child = common::maintwatch_async(args)
        .env_remove("REDISCLI_AUTH")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start maintwatch");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    tokio::time::timeout(GUARD, child.wait_with_output())
        .await
        .expect("maintwatch ends")
        .unwrap()
}

/// Asserts that no output holds the password or, for a long one, any 8 characters of it.
fn assert_no_secret(what: &str, texts: &[&str], password: &str) {
    for text in texts {
        let leaked = password
            .as_bytes()
            .windows(8.min(password.len()))
            .any(|w| text.contains(std::str::from_utf8(w).unwrap()));
        assert!(!leaked, "{what}: password in the output:\n{text}");
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `watch` for a while (the server never gets past HELLO): JSON with a capture, then human.
async fn watch_outputs(url: &str, auth: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.jsonl");
    let capture_arg = capture.display().to_string();
    let mut args = vec!["watch", url, "--no-dns", "--no-handoff", "--duration", "2s"];
    args.extend_from_slice(auth);
    let mut json = args.clone();
    json.extend(["--json", "--capture", &capture_arg]);
    let json_run = run(&json, env, b"").await;
    let human_run = run(&args, env, b"").await;
    let captured = std::fs::read_to_string(Path::new(&capture)).unwrap_or_default();
    vec![
        text(&json_run.stdout),
        text(&json_run.stderr),
        captured,
        text(&human_run.stdout),
        text(&human_run.stderr),
    ]
}

async fn probe_outputs(url: &str, auth: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let mut args = vec!["probe", url, "--linger", "0"];
    args.extend_from_slice(auth);
    let table = run(&args, env, b"").await;
    args.push("--json");
    let json = run(&args, env, b"").await;
    vec![
        text(&table.stdout),
        text(&table.stderr),
        text(&json.stdout),
        text(&json.stderr),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_echoes_the_password_never_gets_it_printed() {
    let server = echoing_server().await;
    let url = format!("redis://{server}");
    for password in [PASSWORD, LONG_PASSWORD] {
        let env = [("REDISCLI_AUTH", password)];
        let watched = watch_outputs(&url, &[], &env).await;
        let refs: Vec<&str> = watched.iter().map(String::as_str).collect();
        assert_no_secret("watch", &refs, password);
        // The echo was there and is shown redacted, not dropped.
        assert!(
            watched[0].contains("'AUTH' 'default' '<redacted>'"),
            "{}",
            watched[0]
        );
        assert!(
            watched[2].contains("<redacted>"),
            "the capture: {}",
            watched[2]
        );
        assert!(watched[3].contains("<redacted>"), "human: {}", watched[3]);

        let probed = probe_outputs(&url, &[], &env).await;
        let refs: Vec<&str> = probed.iter().map(String::as_str).collect();
        assert_no_secret("probe", &refs, password);
        assert!(probed[2].contains("resp3_unavailable") && probed[2].contains("<redacted>"));
        // The pushed copy is redacted in its raw bytes too, and still a well-formed frame.
        assert!(
            probed[2].contains(r#"$10\\r\\n<redacted>\\r\\n"#),
            "{}",
            probed[2]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_redis_with_hello_renamed_never_gets_the_password_printed() {
    let Some(redis) =
        common::RealRedis::start("secrets: HELLO renamed", &["--rename-command", "HELLO", ""])
            .await
    else {
        return;
    };
    let url = redis.url();
    let env = [("REDISCLI_AUTH", PASSWORD)];
    let probed = probe_outputs(&url, &[], &env).await;
    let refs: Vec<&str> = probed.iter().map(String::as_str).collect();
    assert_no_secret("probe", &refs, PASSWORD);
    assert!(
        probed[2].contains("unknown command") && probed[2].contains("<redacted>"),
        "the server did echo it: {}",
        probed[2]
    );
    let watched = watch_outputs(&url, &[], &env).await;
    let refs: Vec<&str> = watched.iter().map(String::as_str).collect();
    assert_no_secret("watch", &refs, PASSWORD);
    assert!(watched[2].contains("<redacted>"), "{}", watched[2]);
}

#[tokio::test]
async fn a_malformed_url_never_shows_its_password_at_any_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        "redis://alice:S3cret/PW@127.0.0.1:notaport",
        "redis://alice:S3cret?PW@127.0.0.1:6379/x",
        "redis://alice:S3cret#PW@[::1",
        "redis://S3cret/PW@127.0.0.1:6379?x=1",
    ] {
        let list = dir.path().join("list.txt");
        std::fs::write(&list, format!("{url}\n")).unwrap();
        let list = list.display().to_string();
        for args in [
            vec!["watch", "-u", url],
            vec!["watch", url],
            vec!["probe", url],
            vec!["probe", "-u", url],
            vec!["probe", "--from", &list],
        ] {
            let out = run(&args, &[], b"").await;
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains("invalid"), "{args:?}: {stderr}");
            assert_no_secret(&format!("{args:?}"), &[&stdout, &stderr], "S3cret");
        }
    }
}

#[tokio::test]
async fn a_password_on_the_command_line_is_warned_about_naming_where_and_redis_cli_auth() {
    let closed = common::closed_port();
    let url = format!("redis://{closed}");
    let with_pw = format!("redis://:{PASSWORD}@{closed}");
    let (flag, in_url) = (Some("given with -a"), Some("in the URL"));
    for (args, env, warned) in [
        (vec!["probe", &url, "-a", PASSWORD], vec![], flag),
        (vec!["probe", &with_pw], vec![], in_url),
        (vec!["probe", "-u", &with_pw], vec![], in_url),
        (vec!["doctor", &with_pw], vec![], in_url),
        (vec!["probe", &url], vec![("REDISCLI_AUTH", PASSWORD)], None),
        (vec!["probe", &url], vec![], None),
    ] {
        let out = run(&args, &env, b"").await;
        // Off a terminal the warning is one line: its words are not split across lines.
        let stderr = text(&out.stderr);
        assert_eq!(
            stderr.contains(WARNING),
            warned.is_some(),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            stderr.matches(WARNING).count(),
            usize::from(warned.is_some())
        );
        if let Some(place) = warned {
            let line = stderr.lines().find(|l| l.contains(WARNING)).unwrap();
            assert!(
                line.starts_with("maintwatch: warning: the password"),
                "{line}"
            );
            assert!(line.contains(place), "{args:?}: {line}");
            assert!(line.contains("set REDISCLI_AUTH instead"), "{line}");
            assert!(!line.contains("'-u' option"), "redis-cli's wording: {line}");
        }
        assert_no_secret(&format!("{args:?}"), &[&stderr], PASSWORD);
    }
}

#[tokio::test]
async fn askpass_reads_the_password_from_standard_input_when_it_is_not_a_terminal() {
    let server = echoing_server().await;
    let url = format!("redis://{server}");
    let out = run(
        &["probe", &url, "--askpass", "--json", "--linger", "0"],
        &[],
        format!("{PASSWORD}\n").as_bytes(),
    )
    .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The server received it (its echo, redacted, is in the report) ...
    assert!(stdout.contains("'AUTH' 'default' '<redacted>'"), "{stdout}");
    // ... and it was never on the command line: no warning, and no copy anywhere.
    assert!(!stderr.contains(WARNING), "{stderr}");
    assert_no_secret("askpass", &[&stdout, &stderr], PASSWORD);

    let out = run(&["probe", &url, "--askpass"], &[], b"").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--askpass: no password was entered"));
}
