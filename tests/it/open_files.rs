//! The open-file limit: a watch of thousands of connections needs more file descriptors than the
//! usual soft limit of 1024, so the binary raises its soft RLIMIT_NOFILE to the hard limit at
//! start, and says on stderr, naming the flag and the limit, when even the hard limit is too low
//! for what was asked.
//!
//! The binary is started with a small limit set in the child alone (`setrlimit` before `exec`);
//! connections go to listeners on 127.0.0.1 written here. Nothing asserts a duration; waits have
//! a hang guard only.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `maintwatch ARGS` with RLIMIT_NOFILE set to `soft`/`hard` in the child.
fn maintwatch_limited(args: &[&str], soft: u64, hard: u64) -> Command {
    let mut cmd = common::maintwatch(args);
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    cmd
}

/// The stderr of a short watch of `connections` to a closed port, under a 128/256 limit.
fn watch_stderr(port: &str, connections: &str) -> String {
    let args = [
        "watch",
        "-h",
        "127.0.0.1",
        "-p",
        port,
        "--connections",
        connections,
    ];
    let out = maintwatch_limited(&args, 128, 256)
        .args(["--duration", "200ms", "--no-dns"])
        .stdout(Stdio::null())
        .output()
        .expect("the binary runs");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_hard_limit_below_the_connections_asked_is_said_with_the_flag_and_the_limit() {
    let port = common::closed_port().port().to_string();
    let err = watch_stderr(&port, "1000");
    assert!(
        err.contains("--connections 1000") && err.contains("hard limit") && err.contains("is 256"),
        "{err}"
    );

    // A probe list may be long: its concurrency is what is opened at once.
    let list =
        std::env::temp_dir().join(format!("maintwatch-open-files-{}.txt", std::process::id()));
    std::fs::write(&list, format!("127.0.0.1:{port}\n127.0.0.1:{port}\n")).unwrap();
    let out = maintwatch_limited(
        &[
            "probe",
            "--from",
            list.to_str().unwrap(),
            "--concurrency",
            "500",
        ],
        128,
        256,
    )
    .arg("--quiet")
    .output()
    .expect("the binary runs");
    std::fs::remove_file(&list).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--concurrency 500") && err.contains("is 256"),
        "{err}"
    );
    // One endpoint on the command line is one socket, whatever the concurrency.
    let one = [
        "probe",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "--concurrency",
        "500",
    ];
    let out = maintwatch_limited(&one, 128, 256)
        .arg("--quiet")
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("hard limit"), "{err}");

    // Within the hard limit, nothing is said about it.
    let err = watch_stderr(&port, "100");
    assert!(!err.contains("hard limit"), "{err}");
}

#[test]
fn the_soft_limit_is_raised_to_the_hard_one_so_every_connection_opens() {
    // A listener that accepts and holds every connection (never answers HELLO). With the soft
    // limit of 64 left as it was, the watch could not open more than about 50 sockets.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let want = 300;
    let mut watch = maintwatch_limited(
        &[
            "watch",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--connections",
            "300",
        ],
        64,
        1024,
    )
    .args(["--no-dns", "--connect-timeout", "60s"])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("the binary runs");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.push(conn.expect("accept"));
            if tx.send(held.len()).is_err() {
                return;
            }
        }
    });
    let mut accepted = 0;
    while accepted < want {
        // Hang guard only: the count, not the time, is what is asserted.
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(n) => accepted = n,
            Err(_) => break,
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        accepted, want,
        "connections the watch opened under a soft limit of 64"
    );
}
