//! Every error a user meets in the first minutes, through the binary on a pipe: each is said in
//! lines of words, never with an escaped line break (`\n`, backslash and n) in the middle, which
//! is what `watch redis://HOST/99` and `watch redis://no-such-host.invalid` printed when a
//! remedy held a line break and the one-line error escaped it. Each path also ends with its
//! documented exit code.
//!
//! The paths that need a server use a real `redis-server` (`MAINTWATCH_REDIS_SERVER`; unset,
//! they print a SKIP line); the unresolvable name is asked of the simulator's DNS, which has no
//! record for it, so nothing depends on the machine's resolver.

use crate::common;

use maintwatch::exit;
use maintwatch::simulator::sim::dns_server::SimDns;
use std::net::TcpListener;
use std::time::Duration;

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(60);

/// Runs the binary with stdin closed; returns the exit code, stdout and stderr.
async fn run(args: &[String]) -> (Option<i32>, String, String) {
    let child = common::maintwatch_async(args)
        .env_remove("REDISCLI_AUTH")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(GUARD, child.wait_with_output())
        .await
        .expect("maintwatch ends")
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The path's output holds no escaped line break and it ended with `code`.
fn assert_plain(args: &[String], got: &(Option<i32>, String, String), code: i32) {
    let (status, out, err) = got;
    assert_eq!(*status, Some(code), "{args:?}:\n{out}\n{err}");
    for (stream, text) in [("stdout", out), ("stderr", err)] {
        assert!(
            !text.contains("\\n"),
            "{args:?}: an escaped line break on {stream}:\n{text}"
        );
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A port that accepts connections and never answers: a TLS client's handshake waits on it.
fn silent_port() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept() {
            held.push(s);
        }
    });
    addr
}

#[tokio::test]
async fn errors_without_a_server_are_lines_of_words() {
    let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), "sim.maintwatch.test.")
        .await
        .unwrap();
    let dns_addr = dns.addr().to_string();
    let closed = common::closed_port();
    let silent = silent_port();
    let nameless = format!("redis://db.sim.maintwatch.test:{}", closed.port());
    let tls = format!("rediss://{silent}");
    let cases: Vec<(Vec<String>, i32)> = vec![
        (
            strings(&["watch", &nameless, "--dns-server", &dns_addr]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["probe", &nameless, "--dns-server", &dns_addr]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["doctor", &nameless, "--dns-server", &dns_addr]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["doctor", &tls, "--connect-timeout", "1s"]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["probe", &tls, "--connect-timeout", "1s"]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["doctor", &format!("redis://{closed}")]),
            exit::CONNECTION_FAILED,
        ),
        (strings(&["watch", "redis://"]), exit::USAGE),
        (strings(&["watch", "unix:"]), exit::USAGE),
        (strings(&["doctor", "redis://h:99999"]), exit::USAGE),
        (strings(&["watch", "--heartbeat", "soon"]), exit::USAGE),
        (
            strings(&["certify", "--scenarios", "nope", "--", "true"]),
            exit::USAGE,
        ),
    ];
    for (args, code) in &cases {
        assert_plain(args, &run(args).await, *code);
    }
    dns.shutdown().await;
    // unix:// is decided against (docs/service.md), and the error says why and what to give.
    let args = strings(&["watch", "unix:///tmp/maintwatch-none.sock"]);
    let got = run(&args).await;
    assert_plain(&args, &got, exit::USAGE);
    assert!(got.2.contains("unix:// is not watched"), "{}", got.2);
    assert!(got.2.contains("redis://HOST:PORT"), "{}", got.2);
}

#[tokio::test]
async fn errors_from_a_real_server_are_lines_of_words() {
    let test = "errors_from_a_real_server_are_lines_of_words";
    let Some(redis) = common::RealRedis::start(test, &["--requirepass", "right"]).await else {
        return;
    };
    let addr = redis.addr;
    let cases: Vec<(Vec<String>, i32)> = vec![
        (
            strings(&["watch", &format!("redis://:right@{addr}/99")]),
            exit::SELECT_FAILED,
        ),
        // probe counts a refused SELECT among the connection failures.
        (
            strings(&["probe", &format!("redis://:right@{addr}/99")]),
            exit::CONNECTION_FAILED,
        ),
        (
            strings(&["watch", &format!("redis://:wrong@{addr}")]),
            exit::AUTH_FAILED,
        ),
        (
            strings(&["doctor", &format!("redis://:wrong@{addr}")]),
            exit::AUTH_FAILED,
        ),
        (
            strings(&["doctor", &format!("redis://{addr}")]),
            exit::AUTH_FAILED,
        ),
    ];
    for (args, code) in &cases {
        assert_plain(args, &run(args).await, *code);
    }
    // Stopped by the password, doctor --json still says where it got to, as probe --json does.
    let wrong = format!("redis://:wrong@{addr}");
    let address = |command: &str, out: &str| -> serde_json::Value {
        let line: serde_json::Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{command} --json: {e}: {out}"));
        line["address"].clone()
    };
    let (_, doctor, _) = run(&strings(&["doctor", "--json", &wrong])).await;
    let (_, probe, _) = run(&strings(&["probe", "--json", &wrong])).await;
    assert_eq!(address("doctor", &doctor), address("probe", &probe));
    assert_eq!(address("doctor", &doctor), addr.to_string().as_str());
}
