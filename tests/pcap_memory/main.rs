//! `maintwatch pcap` on a flood of SYNs keeps its memory bounded: a million connection attempts
//! that never say what they are must not each keep a stream. The real binary reads a capture
//! written by the test to a temporary directory, and its peak resident set is read from the
//! kernel's accounting for that child (`wait4`'s `ru_maxrss`), not estimated.
//!
//! A binary of its own, not a module of `tests/it`: Linux carries the memory of the process that
//! spawned a child into the child's `ru_maxrss` (the spawning image's high-water mark is kept
//! across `exec`), so beside the other tests' hundreds of MiB this child read 460 MiB it never
//! used. Here the test process is small, and the figure is the reader's own.

// The capture writer is shared with tests/it, which uses more of it than this test does.
#[allow(dead_code)]
#[path = "../it/pcapgen/mod.rs"]
mod pcapgen;

use maintwatch::observe::pcap::capture_lines::{Line, PcapLine};
use pcapgen::*;
use std::io::{BufWriter, Read, Write};
use std::process::Stdio;

const SYNS: u32 = 1_000_000;
const LIMIT_KIB: i64 = 200 * 1024;

/// Writes `SYNS` SYNs from distinct client addresses and ports to one server port.
fn syn_flood(path: &std::path::Path) {
    let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(&pcap_header()).unwrap();
    let mut rec = Vec::new();
    for i in 0..SYNS {
        let client = format!(
            "10.{}.{}.{}:{}",
            i >> 16 & 0xff,
            i >> 8 & 0xff,
            i & 0xff,
            1024 + i % 60000
        );
        let c = Tcp::new(&client, "10.0.0.9:12000", [i, 0]);
        rec.clear();
        pcap_record(&mut rec, &c.seg(true, i, "S", b"", T0 + u64::from(i)));
        f.write_all(&rec).unwrap();
    }
    f.flush().unwrap();
}

/// Waits for the child and returns its exit status and peak RSS in KiB.
fn wait_with_peak_rss(pid: u32) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it for this child only.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(
        got,
        pid as libc::pid_t,
        "wait4: {}",
        std::io::Error::last_os_error()
    );
    assert!(libc::WIFEXITED(status), "the reader did not exit normally");
    // Linux reports ru_maxrss in KiB; zero would mean the kernel told us nothing.
    assert!(usage.ru_maxrss > 0, "no peak RSS reported for the child");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

#[test]
fn a_million_syns_stay_under_200_mib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("syn-flood.pcap");
    syn_flood(&path);
    for ports in [&[][..], &["--port", "12000"][..]] {
        // Reaped by `wait4` below, which is what reads the child's peak RSS.
        #[allow(clippy::zombie_processes)]
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_maintwatch"))
            .args(["pcap", "--json"])
            .stdin(Stdio::null())
            .args(ports)
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let (code, peak_kib) = wait_with_peak_rss(child.id());
        eprintln!("{ports:?}: peak RSS {} MiB", peak_kib / 1024);
        assert_eq!(code, 0);
        let end: Line = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let Line::Pcap(PcapLine::PcapEnd {
            packets,
            tcp_streams,
            pruned_streams,
            ..
        }) = end
        else {
            panic!("the last line is pcap_end: {end:?}")
        };
        assert_eq!((packets, tcp_streams), (u64::from(SYNS), u64::from(SYNS)));
        assert_eq!(
            pruned_streams,
            u64::from(SYNS) - maintwatch::observe::pcap::MAX_UNDECIDED as u64,
            "every stream past the cap is counted as forgotten"
        );
        assert!(
            peak_kib < LIMIT_KIB,
            "{ports:?}: peak RSS {peak_kib} KiB for {SYNS} SYNs"
        );
    }
}
