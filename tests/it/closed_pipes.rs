//! A reader that goes away early (`| head`) on stdout, on stderr, or on both (`2>&1 | head`):
//! no command panics (`eprintln!` did, exit 101, "failed printing to stderr"), each exits with
//! the code the README's table gives, and the files it was asked for are written.
//!
//! The reader is a real pipe: it takes the command's first line, then its end is closed, so the
//! command's next write on it meets `EPIPE`. Nothing waits on a clock.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use maintwatch::exit;
use maintwatch::simulator::sim::{Scenario, SimOptions, Simulator};

use crate::common;

/// A hang guard only: each run takes a second or two.
const GUARD: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy)]
enum Closed {
    Stdout,
    Stderr,
    Both,
}

/// A scenario that pushes once and lasts: the watch has lines to write after its first.
const ONE_PUSH: &str = "name t\nabout a test\nproxies 127.0.0.2\ndns 127.0.0.2\nstart opt-in\n\
at 0 push * MIGRATING time=2 shards=[\"1\"]\nend 3600\n";

const ALL: [Closed; 3] = [Closed::Stdout, Closed::Stderr, Closed::Both];

/// A pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes; each is owned once.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Runs `cmd` with `closed` going to a reader that takes one line and goes away; the other
/// stream, if any, goes to a file. Returns the exit code and that file's text.
fn run(mut cmd: Command, closed: Closed) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    let (read, write) = pipe();
    let file = || Stdio::from(std::fs::File::create(&other).unwrap());
    match closed {
        Closed::Stdout => cmd.stdout(Stdio::from(write)).stderr(file()),
        Closed::Stderr => cmd.stderr(Stdio::from(write)).stdout(file()),
        Closed::Both => cmd
            .stdout(Stdio::from(write.try_clone().unwrap()))
            .stderr(Stdio::from(write)),
    };
    let mut child = cmd.stdin(Stdio::null()).spawn().unwrap();
    // The command holds the only write ends now.
    drop(cmd);
    let mut reader = std::fs::File::from(read);
    let mut byte = [0u8; 1];
    while reader.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {}
    drop(reader);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            panic!("{closed:?} closed: the command did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&other).unwrap_or_default();
    assert!(!text.contains("panicked"), "{closed:?} closed:\n{text}");
    (status.code(), text)
}

/// Each closed stream gives its code: `expect` is (stdout, stderr, both).
fn check(what: &str, make: impl Fn() -> Command, expect: [i32; 3], after: impl Fn(Closed)) {
    for (closed, code) in ALL.into_iter().zip(expect) {
        let (got, other) = run(make(), closed);
        assert_eq!(got, Some(code), "{what}, {closed:?} closed:\n{other}");
        after(closed);
    }
}

/// A watch of the simulator for a second: stdout gone stops it with 1 (the summary on
/// stderr), stderr gone changes nothing, both gone is stdout gone (it panicked, exit 101).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_on_a_closed_pipe_exits_with_its_documented_code() {
    let scenario = Scenario::parse("t.scn", ONE_PUSH).unwrap();
    let sim = Simulator::start(SimOptions::new(scenario)).await.unwrap();
    let url = format!("redis://127.0.0.2:{}", sim.port());
    let expect = [exit::FAILURE, exit::SUCCESS, exit::FAILURE];
    tokio::task::spawn_blocking(move || {
        let make = || common::maintwatch(["watch", &url, "--duration", "1s"]);
        check("watch", make, expect, |_| {});
    })
    .await
    .unwrap();
}

/// The demo and `simulate --grade`: a closed stdout stops them where they are, with 0; a closed
/// stderr loses nothing they say (the client here fails `survives`: 1).
#[test]
fn demo_and_simulate_on_a_closed_pipe_exit_with_their_documented_codes() {
    let demo = || common::maintwatch(["demo", "--scenario", "refusing", "--speed", "20"]);
    check("demo", demo, [0, 0, 0], |_| {});
    let simulate = || {
        common::maintwatch([
            "simulate",
            "--scenario",
            "refusing",
            "--speed",
            "5",
            "--grade",
            "--",
            "false",
        ])
    };
    check("simulate --grade", simulate, [0, exit::FAILURE, 0], |_| {});
}

/// certify plays to the end whatever its readers do: the grade's code (a client that exits 1
/// fails `survives`) and the JUnit file, on every closed stream.
#[test]
fn certify_on_a_closed_pipe_keeps_its_grade_and_writes_its_files() {
    let Some(redis) = common::redis_server_binary("certify_on_a_closed_pipe") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let path = path_with(&redis);
    let make = || {
        let _ = std::fs::remove_file(&junit);
        let mut cmd = common::maintwatch(["certify", "--scenarios", "refusing", "--speed", "5"]);
        cmd.arg("--junit").arg(&junit).args(["--", "false"]);
        cmd.env("PATH", &path);
        cmd
    };
    let fail = exit::FAILURE;
    check("certify", make, [fail, fail, fail], |closed| {
        let xml = std::fs::read_to_string(&junit).unwrap_or_default();
        assert!(xml.contains("<failure"), "{closed:?} closed: {xml}");
    });
}

/// `--upstream spawn` takes redis-server from PATH: the configured one first.
fn path_with(redis: &str) -> std::ffi::OsString {
    let bin_dir = Path::new(redis).parent().map(Path::to_path_buf);
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(bin_dir.into_iter().chain(std::env::split_paths(&rest))).unwrap()
}
