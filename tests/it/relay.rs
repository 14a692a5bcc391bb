//! The relay of `simulate --upstream` never changes a reply: a command of any size within
//! Redis' limits reaches the real server whole and every reply keeps its place; a command the
//! simulator cannot take gets an error in its place; a client pipelining at a server that does
//! not read leaves the simulator's memory flat; and a redis-server started for the run does not
//! outlive it, however the simulator is stopped.
//!
//! The real-server tests SKIP (a visible line) when MAINTWATCH_REDIS_SERVER is unset or empty.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use maintwatch::protocol::resp::encode_command;
use maintwatch::simulator::sim::upstream::Upstream;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};

use crate::common;

/// Hang guard for a whole test; every wait inside waits for bytes or a state, not for time.
const HANG_GUARD: Duration = Duration::from_secs(240);

/// Reads exactly `n` bytes (blocking, under the hang guard's read timeout).
fn read_n(s: &mut std::net::TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).expect("the replies");
    buf
}

fn connect(addr: SocketAddr) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(HANG_GUARD)).unwrap();
    s.set_write_timeout(Some(HANG_GUARD)).unwrap();
    s
}

/// A redis-server of the test's own (its pid is needed to stop it), ready to accept.
fn start_redis(bin: &str) -> (Child, SocketAddr) {
    let addr = common::closed_port();
    let mut child = Command::new(bin)
        .args(["--port", &addr.port().to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    for _ in 0..500 {
        assert!(child.try_wait().unwrap().is_none(), "{bin} exited at start");
        if std::net::TcpStream::connect(addr).is_ok() {
            return (child, addr);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("{bin} did not accept connections on {addr}");
}

/// `maintwatch simulate` in a process of its own, with `args`; returns it and its first proxy
/// once the banner has named the upstream.
fn simulate(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> (Child, SocketAddr) {
    let mut cmd = common::maintwatch(["simulate", "--scenario", "single-proxy", "--quiet"]);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.envs(env.iter().copied());
    let mut sim = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(sim.stdout.take().unwrap());
    let mut proxy = None;
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
        let l = line.trim().to_string();
        line.clear();
        if let Some(rest) = l.strip_prefix("proxies") {
            proxy = rest.split_whitespace().next().map(|a| a.parse().unwrap());
        }
        if l.starts_with("upstream") {
            // The narration goes on; nobody needs to read it (--quiet keeps it short).
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            return (sim, proxy.expect("a proxies line before the upstream line"));
        }
    }
    let status = sim.wait();
    panic!("the simulator ended before naming its upstream: {status:?}");
}

/// A field of /proc/PID/status in KiB (Linux).
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("cannot read /proc/{pid}/status: {e}"));
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid this test started.
    assert_eq!(
        unsafe { libc::kill(pid as libc::pid_t, sig) },
        0,
        "kill {sig}"
    );
}

/// An SADD of 300,000 members (past the 262,144 values the project's decoder keeps per frame)
/// reaches the server whole, gets its own reply, and every command after it gets its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300000_member_sadd_gets_its_reply_and_the_replies_after_it_keep_their_place() {
    let Some(bin) = common::redis_server_binary("relay_large_command") else {
        return;
    };
    let (mut redis, addr) = start_redis(&bin);
    let mut opts = SimOptions::new(scenarios::by_name("single-proxy").unwrap());
    opts.upstream = Some(Upstream::parse(&format!("redis://{addr}")).unwrap());
    let sim = Simulator::start(opts).await.unwrap();
    let proxy = sim.proxies()[0];
    let replies = tokio::task::spawn_blocking(move || {
        let mut c = connect(proxy);
        let members: Vec<String> = (0..300_000).map(|i| format!("m{i}")).collect();
        let mut sadd: Vec<&str> = vec!["SADD", "big"];
        sadd.extend(members.iter().map(String::as_str));
        let mut pipeline = encode_command(&sadd);
        pipeline.extend(encode_command(&["SCARD", "big"]));
        pipeline.extend(encode_command(&["ECHO", "after"]));
        pipeline.extend(encode_command(&["CLIENT", "SETINFO", "LIB-NAME", "x"]));
        pipeline.extend(encode_command(&["DEL", "big"]));
        c.write_all(&pipeline).unwrap();
        let want = b":300000\r\n:300000\r\n$5\r\nafter\r\n+OK\r\n:1\r\n";
        read_n(&mut c, want.len())
    })
    .await
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&replies),
        "\
:300000\r\n:300000\r\n$5\r\nafter\r\n+OK\r\n:1\r\n"
    );
    sim.shutdown().await;
    let _ = redis.kill();
    let _ = redis.wait();
}

/// A command the simulator answers itself but will not hold (70,000 arguments) gets an error
/// reply in its place, and the commands after it get theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_too_big_to_answer_gets_an_error_in_its_place() {
    let sim = Simulator::start(SimOptions::new(scenarios::by_name("single-proxy").unwrap()))
        .await
        .unwrap();
    let proxy = sim.proxies()[0];
    let replies = tokio::task::spawn_blocking(move || {
        let mut c = connect(proxy);
        let keys: Vec<String> = (0..70_000).map(|i| format!("k{i}")).collect();
        let mut del: Vec<&str> = vec!["DEL"];
        del.extend(keys.iter().map(String::as_str));
        let mut pipeline = encode_command(&["SET", "a", "1"]);
        pipeline.extend(encode_command(&del));
        pipeline.extend(encode_command(&["GET", "a"]));
        c.write_all(&pipeline).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"$1\r\n1\r\n") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "closed after {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    })
    .await
    .unwrap();
    let lines: Vec<&str> = replies.split("\r\n").collect();
    assert_eq!(lines[0], "+OK", "{replies}");
    assert!(
        lines[1].starts_with("-ERR maintwatch simulate: 'DEL' with more than 65536 arguments"),
        "{replies}"
    );
    assert_eq!(&lines[2..], ["$1", "1", ""], "{replies}");
    sim.shutdown().await;
}

/// A client pipelining 1 GiB of SETs at an upstream that stopped reading (SIGSTOP) is held
/// back by TCP, not by the simulator's memory: the pipeline stalls well short of its end, and
/// once the server goes on every SET gets its reply, with the simulator's peak resident memory
/// (VmHWM) under 100 MiB throughout.
#[test]
fn pipelining_a_gigabyte_at_a_stopped_upstream_keeps_the_simulator_small() {
    let Some(bin) = common::redis_server_binary("relay_backpressure") else {
        return;
    };
    if !cfg!(target_os = "linux") {
        crate::common::skip("relay_backpressure", "reads /proc/PID/status, Linux only");
        return;
    }
    const VALUE: usize = 64 * 1024;
    const SETS: u64 = 16 * 1024; // 1 GiB of values
    let (mut redis, addr) = start_redis(&bin);
    let (mut sim, proxy) = simulate(&["--upstream", &format!("redis://{addr}")], &[]);
    let sim_pid = sim.id();
    signal(redis.id(), libc::SIGSTOP);

    let c = connect(proxy);
    let mut writer = c.try_clone().unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let progress = written.clone();
    let write = std::thread::spawn(move || {
        let value = vec![b'v'; VALUE];
        let set = encode_command(&[&b"SET"[..], b"k", &value]);
        for _ in 0..SETS {
            writer.write_all(&set).expect("the pipeline");
            progress.fetch_add(set.len() as u64, Ordering::Relaxed);
        }
    });
    let mut reader = c;
    let read = std::thread::spawn(move || read_n(&mut reader, SETS as usize * 5));

    // Wait for the pipeline to stall: no progress across ten looks in a row.
    let mut last = u64::MAX;
    let mut still = 0;
    for _ in 0..1200 {
        std::thread::sleep(Duration::from_millis(100));
        let now = written.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still == 10 {
            break;
        }
    }
    assert_eq!(
        still, 10,
        "the pipeline never stalled ({last} bytes written)"
    );
    let total = SETS * (VALUE as u64 + 30);
    assert!(
        last < total / 4,
        "{last} of {total} bytes went out at a stopped server"
    );
    let stalled_rss = status_kib(sim_pid, "VmRSS");

    signal(redis.id(), libc::SIGCONT);
    write.join().expect("the writer");
    let replies = read.join().expect("the reader");
    assert!(replies.chunks(5).all(|r| r == b"+OK\r\n"));
    let peak = status_kib(sim_pid, "VmHWM");
    eprintln!(
        "relay_backpressure: stalled after {} MiB written, simulator VmRSS {} KiB then; \
         VmHWM {} KiB after 1 GiB relayed",
        last >> 20,
        stalled_rss,
        peak
    );
    assert!(peak < 100 * 1024, "the simulator peaked at {peak} KiB");
    let _ = sim.kill();
    let _ = sim.wait();
    let _ = redis.kill();
    let _ = redis.wait();
}

/// The children of `parent` whose command name is `name` (from /proc/PID/stat).
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split at the last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c);
        let ppid = tail.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if comm == name && ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// Running (not gone and not a zombie waiting for its parent to reap it).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, t)| t.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// SIGTERM, SIGHUP and SIGINT end `simulate --upstream spawn` through its teardown, which stops
/// the redis-server it started and removes its socket directory; SIGKILL, which nothing can catch, stops it too (Linux: the
/// child asked for SIGKILL on its parent's death).
#[test]
fn every_way_of_stopping_the_simulator_stops_the_spawned_redis_server() {
    let Some(redis) = common::redis_server_binary("relay_spawn_signals") else {
        return;
    };
    if !cfg!(target_os = "linux") {
        crate::common::skip(
            "relay_spawn_signals",
            "finds the child in /proc, Linux only",
        );
        return;
    }
    let dir = std::path::Path::new(&redis).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    use maintwatch::exit::{HANGUP, INTERRUPTED, TERMINATED};
    for (sig, name, code) in [
        (libc::SIGTERM, "SIGTERM", TERMINATED),
        (libc::SIGHUP, "SIGHUP", HANGUP),
        (libc::SIGINT, "SIGINT", INTERRUPTED),
        (libc::SIGKILL, "SIGKILL", 0),
    ] {
        // The server's socket directory goes in a temporary directory of the test's own.
        let tmp = tempfile::tempdir().unwrap();
        let env = [
            ("PATH", path.as_os_str()),
            ("TMPDIR", tmp.path().as_os_str()),
        ];
        let (mut sim, _) = simulate(&["--upstream", "spawn"], &env);
        let children = children_named(sim.id(), "redis-server");
        assert_eq!(children.len(), 1, "{name}: children {children:?}");
        let child = children[0];
        signal(sim.id(), sig);
        let status = sim.wait().unwrap();
        if sig != libc::SIGKILL {
            // Each signal keeps its own exit code, as the watch's do.
            assert_eq!(status.code(), Some(code), "{name}: {status}");
        }
        let mut gone = false;
        for _ in 0..500 {
            if !running(child) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone, "{name}: redis-server {child} still runs");
        if sig != libc::SIGKILL {
            let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
            assert!(left.is_empty(), "{name}: socket directory left: {left:?}");
        }
    }
}
