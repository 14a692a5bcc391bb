//! `simulate --upstream`: the simulator in front of a real redis-server. Each test compares what a
//! client sees through the simulator with what it sees from the server directly (same commands,
//! byte for byte, on keys of its own), and checks that the scenario still does what it does: the
//! MOVING arrives and the proxy's close still cuts the connection. An upstream that is missing
//! or dies answers with an error reply, never a hang.
//!
//! The real-server tests SKIP (a visible line) when MAINTWATCH_REDIS_SERVER is unset or empty.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use maintwatch::protocol::resp::encode_command;
use maintwatch::simulator::sim::upstream::Upstream;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use tokio::net::TcpStream;

use crate::common;
use common::client::{is_push, Client};
use common::RealRedis;

/// Hang guard for a whole test; every wait inside waits for bytes or events, not for time.
const HANG_GUARD: Duration = Duration::from_secs(30);

async fn guarded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(HANG_GUARD, test)
        .await
        .expect("test did not finish within the hang guard");
}

async fn sim_with(upstream: Upstream, scenario: &str, speed: f64) -> Simulator {
    let mut opts = SimOptions::new(scenarios::by_name(scenario).unwrap());
    opts.upstream = Some(upstream);
    opts.speed = speed;
    Simulator::start(opts).await.unwrap()
}

fn upstream_of(r: &RealRedis) -> Upstream {
    Upstream::parse(&r.url()).unwrap()
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `script` on a direct connection and through the simulator, with `{k}` replaced by a
/// prefix of each side's own, and returns both sides' replies.
async fn both(
    server: SocketAddr,
    proxy: SocketAddr,
    script: &[&[&str]],
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut out = Vec::new();
    for (addr, prefix) in [(server, "direct"), (proxy, "sim")] {
        let mut c = Client::resp3(addr).await;
        let mut replies = Vec::new();
        for cmd in script {
            let args: Vec<String> = cmd.iter().map(|a| a.replace("{k}", prefix)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            replies.push(c.command(&args).await);
        }
        out.push(replies);
    }
    let sim = out.pop().unwrap();
    (out.pop().unwrap(), sim)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_commands_and_transactions_answer_as_the_server_does() {
    let Some(redis) = RealRedis::start("data_commands_and_transactions", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let script: &[&[&str]] = &[
            &["SET", "{k}:a", "1"],
            &["GET", "{k}:a"],
            &["INCR", "{k}:n"],
            &["INCR", "{k}:n"],
            &["EXPIRE", "{k}:a", "1000"],
            &["TTL", "{k}:a"],
            &["MGET", "{k}:a", "{k}:n", "{k}:missing"],
            &["GET", "{k}:missing"],
            &["MULTI"],
            &["SET", "{k}:b", "x"],
            &["INCR", "{k}:n"],
            &["GET", "{k}:b"],
            &["EXEC"],
            &["HSET", "{k}:h", "f", "v"],
            &["HGETALL", "{k}:h"],
            &["INCR", "{k}:a:b:c", "extra"],
        ];
        let (direct, through) = both(redis.addr, sim.proxies()[0], script).await;
        for (i, (d, s)) in direct.iter().zip(&through).enumerate() {
            assert_eq!(show(d), show(s), "reply {i} to {:?}", script[i]);
        }
        // Not the embedded store: those commands would be unknown there.
        assert_eq!(through[2], b":1\r\n");
        assert_eq!(through[12], b"*3\r\n+OK\r\n:3\r\n$1\r\nx\r\n");
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_mixing_relayed_and_owned_commands_keeps_its_order() {
    let Some(redis) = RealRedis::start("pipeline_order", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let mut batch = Vec::new();
        for cmd in [
            &["INCR", "p:n"][..],
            &["CLIENT", "SETINFO", "LIB-NAME", "mine"],
            &["INCR", "p:n"],
            &["CLIENT", "MAINT_NOTIFICATIONS", "ON"],
            &["CLIENT", "SETINFO", "LIB-VER", "9"],
            &["INCR", "p:n"],
        ] {
            batch.extend(encode_command(cmd));
        }
        c.write_raw(&batch).await;
        let mut got = Vec::new();
        for _ in 0..6 {
            got.push(show(&c.reply().await));
        }
        assert_eq!(
            got,
            [":1\r\n", "+OK\r\n", ":2\r\n", "+OK\r\n", "+OK\r\n", ":3\r\n"]
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resp2_client_gets_resp2_replies() {
    let Some(redis) = RealRedis::start("resp2_client", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let mut c = Client::connect(sim.proxies()[0]).await;
        // RESP3 would be `_` and a map; RESP2 is what a client without HELLO reads.
        assert_eq!(c.command(&["GET", "r2:none"]).await, b"$-1\r\n");
        c.command(&["HSET", "r2:h", "f", "v"]).await;
        assert_eq!(
            show(&c.command(&["HGETALL", "r2:h"]).await),
            "*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
        );
        // And switching to RESP3 switches the upstream too.
        c.command(&["HELLO", "3"]).await;
        assert_eq!(c.command(&["GET", "r2:none"]).await, b"_\r\n");
        sim.shutdown().await;
    })
    .await;
}

/// RESET returns a connection to RESP2 on the server; the relay follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_returns_to_resp2_through_the_relay() {
    let Some(redis) = RealRedis::start("reset", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let script: &[&[&str]] = &[
            &["GET", "{k}:none"],
            &["RESET"],
            &["GET", "{k}:none"],
            &["HELLO", "3", "SETNAME", "x"],
            &["GET", "{k}:none"],
        ];
        let (direct, through) = both(redis.addr, sim.proxies()[0], script).await;
        for i in [0, 1, 2, 4] {
            assert_eq!(show(&direct[i]), show(&through[i]), "reply {i}");
        }
        assert_eq!(through[2], b"$-1\r\n");
        sim.shutdown().await;
    })
    .await;
}

/// QUIT pipelined behind relayed commands closes only after their replies, as Redis does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_behind_relayed_commands_waits_for_their_replies() {
    let Some(redis) = RealRedis::start("quit", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let mut batch = encode_command(&["INCR", "quit:n"]);
        batch.extend(encode_command(&["INCR", "quit:n"]));
        batch.extend(encode_command(&["QUIT"]));
        batch.extend(encode_command(&["INCR", "quit:n"]));
        c.write_raw(&batch).await;
        let frames = c.until_closed().await;
        let got: Vec<String> = frames
            .iter()
            .filter(|f| !is_push(f))
            .map(|r| show(r))
            .collect();
        assert_eq!(got, [":1\r\n", ":2\r\n", "+OK\r\n"]);
        sim.shutdown().await;
    })
    .await;
}

/// A client that reads slowly: the relay holds back (bounded read-ahead) and loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_replies_to_a_slow_reader_arrive_whole_and_in_order() {
    let Some(redis) = RealRedis::start("slow_reader", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let big = "x".repeat(1 << 20);
        assert_eq!(c.command(&["SET", "big", &big]).await, b"+OK\r\n");
        let mut batch = Vec::new();
        for i in 0..40 {
            batch.extend(encode_command(&["GET", "big"]));
            batch.extend(encode_command(&["ECHO", &i.to_string()]));
        }
        c.write_raw(&batch).await;
        // Nothing read until everything was sent, then all of it, in order.
        let want = format!("${}\r\n{big}\r\n", big.len());
        for i in 0..40 {
            assert!(c.reply().await == want.as_bytes(), "GET {i}");
            let echo = show(&c.reply().await);
            assert_eq!(echo, format!("${}\r\n{i}\r\n", i.to_string().len()));
        }
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blpop_blocks_until_an_lpush_from_another_connection() {
    let Some(redis) = RealRedis::start("blpop", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let proxy = sim.proxies()[0];
        let mut blocked = Client::resp3(proxy).await;
        blocked.send(&["BLPOP", "q:list", "0"]).await;
        // Blocked on the server itself: wait until the server lists it as blocked.
        let mut admin = Client::resp3(redis.addr).await;
        loop {
            let list = show(&admin.command(&["CLIENT", "LIST"]).await);
            if list.contains("cmd=blpop") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(blocked.queued(), 0);
        let mut pusher = Client::resp3(proxy).await;
        assert_eq!(pusher.command(&["LPUSH", "q:list", "job"]).await, b":1\r\n");
        assert_eq!(
            show(&blocked.reply().await),
            "*2\r\n$6\r\nq:list\r\n$3\r\njob\r\n"
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_and_publish_relay_pushes_as_they_come() {
    let Some(redis) = RealRedis::start("pubsub", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let proxy = sim.proxies()[0];
        let mut sub = Client::resp3(proxy).await;
        sub.send(&["SUBSCRIBE", "ch1"]).await;
        assert_eq!(
            show(&sub.push().await),
            ">3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n"
        );
        // A relayed command still answers on a subscribed RESP3 connection.
        assert_eq!(sub.command(&["PING"]).await, b"+PONG\r\n");
        let mut publisher = Client::resp3(proxy).await;
        assert_eq!(
            publisher.command(&["PUBLISH", "ch1", "hello"]).await,
            b":1\r\n"
        );
        assert_eq!(
            show(&sub.push().await),
            ">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$5\r\nhello\r\n"
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tracking_invalidation_reaches_the_client() {
    let Some(redis) = RealRedis::start("tracking", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let proxy = sim.proxies()[0];
        let mut tracked = Client::resp3(proxy).await;
        assert_eq!(
            tracked.command(&["CLIENT", "TRACKING", "ON"]).await,
            b"+OK\r\n"
        );
        tracked.command(&["GET", "t:k"]).await;
        let mut writer = Client::resp3(proxy).await;
        writer.command(&["SET", "t:k", "2"]).await;
        assert_eq!(
            show(&tracked.push().await),
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nt:k\r\n"
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenario_still_moves_and_closes_with_an_upstream() {
    let Some(redis) = RealRedis::start("scenario_with_upstream", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 5.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        assert_eq!(c.command(&["SET", "s:k", "v"]).await, b"+OK\r\n");
        assert_eq!(
            c.command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await,
            b"+OK\r\n"
        );
        let moving = c.push().await;
        assert!(show(&moving).contains("MOVING"), "{}", show(&moving));
        // Data still flows inside the window, from the real server.
        assert_eq!(c.command(&["INCR", "s:n"]).await, b":1\r\n");
        assert_eq!(c.command(&["GET", "s:k"]).await, b"$1\r\nv\r\n");
        // Then the node-wide close ends the connection.
        assert!(c.closed().await);
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_answers_with_an_error_not_a_hang() {
    guarded(async {
        let nowhere = common::closed_port();
        let sim = sim_with(
            Upstream::parse(&format!("redis://{nowhere}")).unwrap(),
            "single-proxy",
            1.0,
        )
        .await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let r = show(&c.command(&["GET", "k"]).await);
        assert!(r.starts_with("-ERR maintwatch simulate: upstream"), "{r}");
        assert!(r.contains(&nowhere.to_string()), "{r}");
        // The simulator's own commands still answer, and later relayed ones fail the same way.
        assert_eq!(
            c.command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await,
            b"+OK\r\n"
        );
        assert!(show(&c.command(&["INCR", "n"]).await).starts_with("-ERR maintwatch simulate"));
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_dies_fails_the_waiting_command() {
    let Some(mut redis) = RealRedis::start("upstream_dies", &[]).await else {
        return;
    };
    guarded(async {
        let sim = sim_with(upstream_of(&redis), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        c.send(&["BLPOP", "never", "0"]).await;
        let mut admin = Client::resp3(redis.addr).await;
        loop {
            if show(&admin.command(&["CLIENT", "LIST"]).await).contains("cmd=blpop") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        redis.restart().await;
        let r = show(&c.reply().await);
        assert!(r.starts_with("-ERR maintwatch simulate:"), "{r}");
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_upstream_password_is_an_error_without_the_password() {
    let Some(redis) = RealRedis::start("upstream_auth", &["--requirepass", "right-pw"]).await
    else {
        return;
    };
    guarded(async {
        let url = format!("redis://default:Wrong-Pw-77@{}", redis.addr);
        let sim = sim_with(Upstream::parse(&url).unwrap(), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let r = show(&c.command(&["GET", "k"]).await);
        assert!(
            r.contains("refused HELLO 3") && r.contains("WRONGPASS"),
            "{r}"
        );
        assert!(!r.contains("Wrong-Pw-77"), "{r}");
        assert!(!format!("{:?}", Upstream::parse(&url).unwrap()).contains("Wrong-Pw-77"));
        sim.shutdown().await;

        let url = format!("redis://default:right-pw@{}", redis.addr);
        let sim = sim_with(Upstream::parse(&url).unwrap(), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        assert_eq!(c.command(&["SET", "k", "1"]).await, b"+OK\r\n");
        sim.shutdown().await;
    })
    .await;
}

/// `unix://[user:pass@]/path`: the relay reaches a server on this machine through its Unix
/// socket (the server says so: `flags=U`), with its password, and a wrong one is refused
/// without being shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_upstream_relays_with_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("r.sock");
    let sock_arg = sock.to_string_lossy().into_owned();
    let extra = ["--unixsocket", &sock_arg, "--requirepass", "right-pw"];
    let Some(redis) = RealRedis::start("upstream_unix", &extra).await else {
        return;
    };
    guarded(async {
        let url = format!("unix://default:right-pw@{sock_arg}");
        let up = Upstream::parse(&url).unwrap();
        assert!(!format!("{up:?}").contains("right-pw"), "{up:?}");
        let sim = sim_with(up, "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        assert_eq!(c.command(&["SET", "unix-k", "1"]).await, b"+OK\r\n");
        let info = show(&c.command(&["CLIENT", "INFO"]).await);
        assert!(
            info.contains("flags=U") && info.contains(&sock_arg),
            "{info}"
        );
        sim.shutdown().await;
        // The same key, read over TCP: one server behind both.
        let mut auth = Client::connect(redis.addr).await;
        auth.command(&["AUTH", "right-pw"]).await;
        assert_eq!(auth.command(&["GET", "unix-k"]).await, b"$1\r\n1\r\n");

        let url = format!("unix://default:Wrong-Pw-77@{sock_arg}");
        let sim = sim_with(Upstream::parse(&url).unwrap(), "single-proxy", 1.0).await;
        let mut c = Client::resp3(sim.proxies()[0]).await;
        let r = show(&c.command(&["GET", "unix-k"]).await);
        assert!(r.contains("WRONGPASS") && r.contains("unix:"), "{r}");
        assert!(!r.contains("Wrong-Pw-77"), "{r}");
        sim.shutdown().await;
    })
    .await;
}

/// A `unix://` URL without an absolute path is refused, and says what it needs.
#[test]
fn a_unix_url_needs_an_absolute_path() {
    for url in ["unix://relative.sock", "UNIX://", "unix://pw@relative"] {
        let e = Upstream::parse(url).unwrap_err();
        assert!(e.contains("absolute path"), "{url}: {e}");
        assert!(!e.contains("pw@"), "{e}");
    }
    assert!(Upstream::parse("Unix:///run/redis.sock").is_ok());
}

/// The CLI: a URL it cannot use is a usage error naming the flag, never showing the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_upstream_url_is_a_usage_error_without_the_password() {
    for url in [
        "rediss://app:Sekr1t-pw@127.0.0.1:6379",
        "redis://app:Sekr1t-pw@host:port",
    ] {
        let out = common::maintwatch_async(["simulate", "--upstream", url])
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(maintwatch::exit::USAGE), "{err}");
        assert!(err.contains("--upstream"), "{err}");
        assert!(!err.contains("Sekr1t") && out.stdout.is_empty(), "{err}");
    }
}

/// `--upstream spawn`: redis-server from PATH answers through the simulator, and is gone once
/// the simulator has exited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_spawn_relays_and_stops_the_server_at_exit() {
    let Some(redis) = common::redis_server_binary("upstream_spawn") else {
        return;
    };
    guarded(async {
        let dir = std::path::Path::new(&redis).parent().unwrap().to_path_buf();
        let path = std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        // The server's socket directory goes in a temporary directory of the test's own.
        let tmp = tempfile::tempdir().unwrap();
        let mut sim =
            common::maintwatch_async(["simulate", "--scenario", "single-proxy", "--speed", "20"])
                .args(["--upstream", "spawn", "--quiet"])
                .env("PATH", path)
                .env("TMPDIR", tmp.path())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            sim.stdout.take().unwrap(),
        ));
        let (mut proxy, mut upstream) = (None, None);
        while let Some(l) = lines.next_line().await.unwrap() {
            let l = l.trim().to_string();
            if let Some(rest) = l.strip_prefix("proxies") {
                proxy = rest
                    .split_whitespace()
                    .next()
                    .map(|a| a.parse::<SocketAddr>().unwrap());
            }
            if let Some(rest) = l.strip_prefix("upstream") {
                let addr = rest.split_whitespace().next().unwrap();
                upstream = Some(addr.trim_end_matches(':').parse::<SocketAddr>().unwrap());
                assert!(l.contains("redis-server started for this run"), "{l}");
                break;
            }
        }
        let (proxy, upstream) = (proxy.unwrap(), upstream.unwrap());
        let mut c = Client::resp3(proxy).await;
        assert_eq!(c.command(&["INCR", "spawned"]).await, b":1\r\n");
        // The relay reaches it through its Unix socket, in a directory only this user enters.
        let info = show(&c.command(&["CLIENT", "INFO"]).await);
        assert!(info.contains("flags=U"), "{info}");
        let dirs: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&dirs[0].metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700);
        // The server behind is the spawned one.
        assert_eq!(
            common::command(upstream, &["GET", "spawned"]).await,
            b"$1\r\n1\r\n"
        );
        // Opting in starts the clock; the scenario ends and the simulator exits.
        c.command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await;
        while lines.next_line().await.unwrap().is_some() {}
        assert_eq!(sim.wait().await.unwrap().code(), Some(0));
        assert!(
            TcpStream::connect(upstream).await.is_err(),
            "redis-server still runs"
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "socket directory left behind: {left:?}");
    })
    .await;
}
