//! `maintwatch pcap` on the captures that go wrong in practice or on purpose: a pool captured
//! mid-connection whose first segment is a retransmission from before the capture began,
//! pcapng files with one malformed block in the middle, and files with tens of thousands of
//! open streams or passwords, whose reading must stay linear in the file.
//!
//! The small fixtures in `tests/fixtures/pcap/` are made by the code below
//! (`tests/it/pcapgen/mod.rs` writes the packets and containers);
//! `robust_fixtures_are_what_this_file_makes` keeps the committed files equal to what it makes.
//! Refresh them with
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test it pcap_robust::
//!
//! The large inputs are written to a temporary directory by the tests themselves. Their linearity
//! is asserted with the reader's work counter ([`maintwatch::observe::pcap::Stats::work`]), never a clock.

use crate::common;

use crate::pcapgen;

use maintwatch::observe::pcap::capture_lines::{Line, PcapLine};
use maintwatch::observe::pcap::{read, Analyzer, Settings, Stats};
use maintwatch::observe::record::WatchLine;
use pcapgen::*;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pcap")
}

/// A pool connection open before tcpdump started: no SYN. The server had sent a 7-byte reply
/// before the capture; the first server segment captured is the next reply, then the server
/// retransmits from 7 bytes before it (the uncaptured reply, the captured one, and the MOVING,
/// new). Then one more command and reply, and the application closes.
fn mid_connection() -> Vec<Pkt> {
    let mut c = Tcp::new("10.0.0.5:40001", "10.0.0.9:12000", [1000, 5000]);
    let before = c.seq[1];
    c.seq[1] += VALUE.len() as u32;
    let mut out = vec![c.send(true, GET, T0), c.send(false, VALUE, T0 + 300)];
    let mut again = VALUE.to_vec();
    again.extend_from_slice(VALUE);
    again.extend_from_slice(MOVING);
    out.push(c.seg(false, before, "", &again, T0 + S));
    c.seq[1] = before + again.len() as u32;
    out.push(c.send(true, GET, T0 + 2 * S));
    out.push(c.send(false, VALUE, T0 + 2 * S + 300));
    out.push(c.close(true, "F", T0 + 3 * S));
    out.push(c.close(false, "F", T0 + 3 * S + 100));
    out
}

/// A connection with its handshake, a MOVING and a close, split in two halves: the bad block
/// goes between them.
fn halves() -> (Vec<Pkt>, Vec<Pkt>) {
    let mut c = Tcp::new("10.0.0.6:40002", "10.0.0.9:12000", [100, 200]);
    let mut first = c.open(T0);
    first.push(c.send(true, HELLO, T0 + 1000));
    first.push(c.send(false, HELLO_REPLY, T0 + 1200));
    let second = vec![
        c.send(false, MOVING, T0 + S),
        c.close(false, "F", T0 + 2 * S),
        c.close(true, "F", T0 + 2 * S + 100),
    ];
    (first, second)
}

/// A name-resolution block whose one IPv4 record claims 64 bytes of value where the block
/// holds 8.
fn bad_name_resolution() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&64u16.to_le_bytes());
    body.extend_from_slice(&[10, 0, 0, 9, b'd', b'b', 0, 0]);
    ng_block(4, &body)
}

/// A decryption-secrets block (TLS key log) claiming 1000 bytes of secrets in a 16-byte body.
fn bad_decryption_secrets() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0x544c_534bu32.to_le_bytes());
    body.extend_from_slice(&1000u32.to_le_bytes());
    body.extend_from_slice(b"CLIENT_RANDOM 00");
    ng_block(0x0a, &body)
}

/// An enhanced packet block whose captured length (5000) exceeds the packet it holds.
fn bad_enhanced_packet() -> Vec<u8> {
    let mut c = Tcp::new("10.0.0.7:40003", "10.0.0.9:12000", [1, 2]);
    let p = c.send(true, GET, T0 + 500);
    ng_block(6, &epb_body(&p, 5000))
}

/// A pcapng file with `bad` between the two halves, and the bad block's byte offset.
fn with_bad_block(bad: Vec<u8>) -> (Vec<u8>, u64) {
    let (first, second) = halves();
    let mut f = ng_head();
    for p in &first {
        f.extend(epb(p));
    }
    let at = f.len() as u64;
    f.extend(bad);
    for p in &second {
        f.extend(epb(p));
    }
    (f, at)
}

const BAD_BLOCKS: [(&str, &str); 3] = [
    ("bad-name-resolution.pcapng", "name resolution"),
    ("bad-decryption-secrets.pcapng", "decryption secrets"),
    ("bad-enhanced-packet.pcapng", "enhanced packet"),
];

/// Every fixture, its bytes, and (pcapng) the offset of its bad block.
fn made() -> Vec<(&'static str, Vec<u8>, u64)> {
    let mut out = vec![(
        "mid-connection-retransmission.pcap",
        pcap_file(&mid_connection()),
        0,
    )];
    let bad = [
        bad_name_resolution(),
        bad_decryption_secrets(),
        bad_enhanced_packet(),
    ];
    for ((name, _), block) in BAD_BLOCKS.iter().zip(bad) {
        let (bytes, at) = with_bad_block(block);
        out.push((name, bytes, at));
    }
    out
}

#[test]
fn robust_fixtures_are_what_this_file_makes() {
    let regenerate = crate::common::regenerating();
    for (name, bytes, _) in made() {
        let path = fixtures().join(name);
        if regenerate {
            std::fs::write(&path, &bytes).unwrap();
            continue;
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (MAINTWATCH_REGENERATE=1 cargo test --test it pcap_robust::)",
                path.display()
            )
        });
        assert!(
            committed == bytes,
            "{name} differs from what tests/it/pcap_robust.rs makes"
        );
    }
}

struct Run {
    code: i32,
    lines: Vec<Line>,
    stderr: String,
}

fn pcap(args: &[&str]) -> Run {
    let out = common::maintwatch(["pcap"])
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    Run {
        code: out.status.code().unwrap(),
        lines: stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn pcap_lines(lines: &[Line]) -> impl Iterator<Item = &PcapLine> {
    lines.iter().filter_map(|l| match l {
        Line::Pcap(p) => Some(p),
        _ => None,
    })
}

/// The raw bytes of every push read, in order.
fn pushes(lines: &[Line]) -> Vec<Vec<u8>> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Watch(WatchLine::Push(p)) => {
                Some(maintwatch::shared::escape::unescape(&p.frame.raw.escaped()).unwrap())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_retransmission_from_before_the_first_captured_byte_keeps_the_moving() {
    let file = fixtures().join("mid-connection-retransmission.pcap");
    let file = file.to_str().unwrap();
    for args in [vec![file], vec!["--port", "12000", file]] {
        let run = pcap(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(pushes(&run.lines), vec![MOVING.to_vec()], "{args:?}");
        let gaps: Vec<_> = pcap_lines(&run.lines)
            .filter(|l| matches!(l, PcapLine::PcapGap { .. }))
            .collect();
        assert!(gaps.is_empty(), "{gaps:?}");
        // The handshake was before the capture: the output says so instead of guessing.
        assert!(
            pcap_lines(&run.lines).any(|l| matches!(l, PcapLine::PcapStream { syn: false, .. })),
            "the stream is marked as captured without its SYN"
        );
        assert!(
            pcap_lines(&run.lines).any(|l| matches!(
                l,
                PcapLine::PcapHandshake { outcome, .. } if outcome == "not_captured"
            )),
            "the handshake is reported as not captured"
        );
    }
}

#[test]
fn a_push_before_any_client_command_is_read_without_a_port() {
    // Captured mid-connection, the server's MOVING is the first payload: no command has said
    // which side is the client, and no --port either.
    let mut c = Tcp::new("10.0.0.5:40011", "10.0.0.9:12000", [1000, 5000]);
    let packets = vec![
        c.send(false, MOVING, T0),
        c.send(true, GET, T0 + S),
        c.send(false, VALUE, T0 + S + 300),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("push-first.pcap");
    std::fs::write(&path, pcap_file(&packets)).unwrap();
    let (stats, lines) = read_stats(&path, Settings::default());
    assert_eq!(stats.resp_conns, 1);
    assert_eq!(pushes(&lines), vec![MOVING.to_vec()]);
    assert!(pcap_lines(&lines).any(|l| matches!(
        l,
        PcapLine::PcapStream { syn: false, client, .. } if client == "10.0.0.5:40011"
    )));
}

#[test]
fn each_malformed_pcapng_block_is_skipped_with_its_offset_and_the_rest_is_read() {
    let (first, second) = halves();
    for ((name, bytes, at), (_, kind)) in made().into_iter().skip(1).zip(BAD_BLOCKS) {
        let path = fixtures().join(name);
        let run = pcap(&[path.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "skipped a malformed pcapng {kind} block at byte {at}"
            )),
            "{name}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("ends inside a packet"),
            "{name}: not a truncation: {}",
            run.stderr
        );
        let warnings = pcap_lines(&run.lines)
            .filter(|l| matches!(l, PcapLine::PcapWarning { text, .. } if text.contains(&format!("byte {at}"))))
            .count();
        assert_eq!(warnings, 1, "{name}: one JSON warning line");
        assert_eq!(pushes(&run.lines), vec![MOVING.to_vec()], "{name}");
        let Some(PcapLine::PcapEnd { files, gaps, .. }) = pcap_lines(&run.lines).last() else {
            panic!("{name}: the last line is pcap_end")
        };
        assert_eq!(
            (files[0].packets, files[0].truncated_bytes, *gaps),
            ((first.len() + second.len()) as u64, None, 0),
            "{name}: every packet after the bad block is read, nothing is cut"
        );
        let _ = bytes;
    }
}

#[test]
fn a_block_whose_own_length_is_wrong_is_still_a_cut() {
    let (first, _) = halves();
    let mut f = ng_head();
    for p in &first {
        f.extend(epb(p));
    }
    // The trailing length disagrees with the leading one: there is no next block to trust.
    let mut bad = bad_enhanced_packet();
    let n = bad.len();
    bad[n - 4..].copy_from_slice(&12345u32.to_le_bytes());
    f.extend(bad);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-length.pcapng");
    std::fs::write(&path, &f).unwrap();
    let run = pcap(&[path.to_str().unwrap()]);
    assert!(
        !run.stderr.contains("skipped a malformed"),
        "{}",
        run.stderr
    );
    assert!(
        run.code != 0 || run.stderr.contains("ends inside a packet"),
        "reported as a cut or an error: {} {}",
        run.code,
        run.stderr
    );
}

/// Reads a capture file in-process and returns the reader's counters.
fn read_stats(path: &Path, settings: Settings) -> (Stats, Vec<Line>) {
    let mut a = Analyzer::new(settings, "test".into());
    let mut lines = Vec::new();
    read::read_file(path, |p| {
        a.packet(&p);
        lines.extend(a.take_lines());
        Ok(())
    })
    .unwrap();
    let summary = a.finish();
    lines.extend(a.take_lines());
    lines.push(Line::Watch(summary));
    (a.stats.clone(), lines)
}

/// `n` connections, each opened, with its HELLO and reply, left open; every tenth gets a MOVING.
fn open_streams(dir: &Path, n: u32) -> PathBuf {
    let mut f = pcap_header();
    for i in 0..n {
        let client = format!(
            "10.{}.{}.{}:{}",
            1 + i / 65536 % 200,
            i / 256 % 256,
            i % 256,
            20000 + i % 40000
        );
        let mut c = Tcp::new(&client, "10.0.0.9:12000", [i, i.wrapping_mul(7)]);
        let us = T0 + u64::from(i) * 100;
        for p in c.open(us) {
            pcap_record(&mut f, &p);
        }
        pcap_record(&mut f, &c.send(true, HELLO, us + 10));
        pcap_record(&mut f, &c.send(false, HELLO_REPLY, us + 20));
        if i % 10 == 0 {
            pcap_record(&mut f, &c.send(false, MOVING, us + 30));
        }
    }
    let path = dir.join(format!("open-{n}.pcap"));
    std::fs::write(&path, f).unwrap();
    path
}

#[test]
fn open_streams_are_read_in_work_linear_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut per_packet = Vec::new();
    for n in [20_000, 80_000] {
        let path = open_streams(dir.path(), n);
        let (stats, _) = read_stats(&path, Settings::default());
        assert_eq!(stats.resp_conns, u64::from(n));
        assert_eq!(stats.pruned_streams, 0);
        assert!(
            stats.work <= 3 * stats.packets,
            "{n} open streams: work {} for {} packets",
            stats.work,
            stats.packets
        );
        per_packet.push(stats.work as f64 / stats.packets as f64);
        std::fs::remove_file(path).unwrap();
    }
    // The bound per packet does not depend on how many streams are open: a scan of the open
    // connections per new one would be n/2 steps per stream, thousands per packet at 80,000.
    // (What varies below the bound is the sweep for finished streams, spaced by the table's size.)
    assert!(
        per_packet[1] < per_packet[0] + 1.0,
        "work per packet {per_packet:?}"
    );
}

/// One connection sending `n` AUTH commands with distinct passwords, each refused, then a
/// HELLO with one of them that the server echoes in its error.
fn many_passwords(dir: &Path, n: u32) -> PathBuf {
    let mut f = pcap_header();
    let mut c = Tcp::new("10.0.0.5:40009", "10.0.0.9:12000", [10, 20]);
    for p in c.open(T0) {
        pcap_record(&mut f, &p);
    }
    for i in 0..n {
        let pass = format!("pw-{i:08}");
        let cmd = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{pass}\r\n", pass.len());
        let us = T0 + 1000 + u64::from(i) * 10;
        pcap_record(&mut f, &c.send(true, cmd.as_bytes(), us));
        pcap_record(
            &mut f,
            &c.send(
                false,
                b"-WRONGPASS invalid username-password pair\r\n",
                us + 5,
            ),
        );
    }
    let hello =
        b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$11\r\npw-00000007\r\n";
    let us = T0 + 2000 + u64::from(n) * 10;
    pcap_record(&mut f, &c.send(true, hello, us));
    pcap_record(
        &mut f,
        &c.send(false, b"-WRONGPASS pw-00000007 is not it\r\n", us + 5),
    );
    let path = dir.join(format!("auth-{n}.pcap"));
    std::fs::write(&path, f).unwrap();
    path
}

#[test]
fn distinct_passwords_are_read_in_work_linear_in_the_file_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let mut per_packet = Vec::new();
    for n in [5_000, 20_000] {
        let path = many_passwords(dir.path(), n);
        let (stats, lines) = read_stats(&path, Settings::default());
        assert_eq!(stats.resp_conns, 1);
        assert!(
            stats.work <= 40 * stats.packets,
            "{n} passwords: work {} for {} packets",
            stats.work,
            stats.packets
        );
        per_packet.push(stats.work as f64 / stats.packets as f64);
        let json: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap())
            .collect();
        assert!(!json.contains("pw-0"), "a password is shown");
        assert!(
            json.contains("WRONGPASS <text withheld"),
            "the refusal keeps its code"
        );
    }
    assert!(
        per_packet[1] <= per_packet[0] * 1.1,
        "work per packet {per_packet:?}"
    );
}
