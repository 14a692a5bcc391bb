//! Latency from bytes arriving to their timestamp, on loopback.
//!
//! The simulator runs in this process and records, for every notification frame, the wall clock
//! right before its write began (`SimEvent::Sent { writing }`) and right after it returned
//! (`SimEvent::Sent.at`); on loopback the bytes reach the reader's socket inside that write. The
//! real `maintwatch watch` binary watches it with `--json`; each push line's `at` is the wall clock
//! stamped in `src/network/conn` right after the read that completed the frame returned. The difference,
//! frame by frame (matched by their bytes: every frame carries its own sequence id), is reported
//! against both: from the write's start (an upper bound: it includes the write call) and from its
//! end (a lower bound: negative when the writer was preempted by the woken reader right after its
//! write, before it could read the clock).
//!
//!   latency --bin target/release/maintwatch [--pushes 10000] [--gap-ms 1]
//!           [--reader watch|baseline|both] [--rounds 1]
//!
//! `--reader baseline` replaces the watch with the floor of this machine: a minimal blocking
//! reader (this program again, one thread, `std::net::TcpStream`) that opts in, reads, scans with
//! the same scanner and stamps each push the same way, doing nothing else. The difference between
//! the two is what the watch adds; the baseline is what the machine (scheduler, loopback) costs.
//! `--reader both` measures the two in the same run, in `--rounds` alternating rounds (baseline
//! first; `--pushes` is shared between the rounds of each reader), and prints the percentiles side
//! by side with their difference.
//!
//! Frames are sent one at a time, `--gap-ms` apart, so each is its own read (the figure is per
//! frame, not amortised over a batch).

use maintwatch::observe::record::{line, WatchLine};
use maintwatch::simulator::sim::{Scenario, SimOptions, Simulator, What};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

struct Args {
    bin: String,
    pushes: usize,
    gap_ms: f64,
    /// Which readers to measure, in the order of the rounds.
    readers: Vec<bool>,
    rounds: usize,
}

fn args() -> Args {
    let mut a = Args {
        bin: "target/release/maintwatch".into(),
        pushes: 10_000,
        gap_ms: 1.0,
        readers: vec![false],
        rounds: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--bin" => a.bin = value,
            "--rounds" => a.rounds = value.parse().expect("--rounds N"),
            "--pushes" => a.pushes = value.parse().expect("--pushes N"),
            "--gap-ms" => a.gap_ms = value.parse().expect("--gap-ms MS"),
            "--reader" => {
                a.readers = match value.as_str() {
                    "watch" => vec![false],
                    "baseline" => vec![true],
                    "both" => vec![true, false],
                    other => panic!("--reader watch|baseline|both, not {other}"),
                }
            }
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// `2026-11-30T00:15:33.123456Z` as microseconds since the epoch (the JSON-lines `at` format).
fn parse_at(text: &str) -> i64 {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> i64 { text[r].parse().expect("a digit field") };
    assert!(
        b.len() == 27 && b[26] == b'Z',
        "unexpected timestamp {text}"
    );
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    let (hh, mm, ss, us) = (num(11..13), num(14..16), num(17..19), num(20..26));
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + us
}

fn micros(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as i64
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The baseline reader: opt in, then print `<wall micros> <escaped frame>` for every push.
fn baseline_child(port: &str) {
    use maintwatch::protocol::resp::{encode_command, Frame, Scan, Scanner};
    use std::io::{Read, Write};
    let mut sock = std::net::TcpStream::connect(format!("127.0.0.2:{port}")).expect("connect");
    sock.set_nodelay(true).expect("nodelay");
    sock.write_all(&encode_command(&["HELLO", "3"]))
        .expect("write");
    sock.write_all(&encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]))
        .expect("write");
    let out = std::io::stdout();
    let mut out = out.lock();
    let scanner = Scanner::default();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = micros(SystemTime::now());
        buf.extend_from_slice(&chunk[..n]);
        let mut pos = 0;
        while let Ok(Scan::Frame(frame, len)) = scanner.scan(&buf[pos..]) {
            if matches!(frame, Frame::Push(_)) {
                let raw = maintwatch::shared::escape::escape(&buf[pos..pos + len]);
                writeln!(out, "{at} {raw}").expect("stdout");
                out.flush().expect("stdout");
            }
            pos += len;
        }
        buf.drain(..pos);
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--baseline-child") {
        return baseline_child(&argv[2]);
    }
    run();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn run() {
    let a = args();
    // With both readers, rounds alternate between them (baseline first) so that a change of
    // load during the run weighs on both alike; each reader's rounds are pooled.
    let per_round = a.pushes.div_ceil(a.rounds.max(1));
    let mut pooled: Vec<(bool, Vec<i64>, Vec<i64>)> = a
        .readers
        .iter()
        .map(|&b| (b, Vec::new(), Vec::new()))
        .collect();
    for _ in 0..a.rounds.max(1) {
        for (baseline, start, end) in &mut pooled {
            let (s, e) = measure(&a, *baseline, per_round).await;
            start.extend(s);
            end.extend(e);
        }
    }
    for (baseline, start, end) in &pooled {
        let who = if *baseline { "baseline reader" } else { "watch" };
        report(who, "from the write's start", start.clone(), a.gap_ms);
        report(who, "from the write's end", end.clone(), a.gap_ms);
    }
    if let [(true, base, _), (false, watch, _)] = pooled.as_slice() {
        compare(base.clone(), watch.clone(), a.rounds.max(1));
    }
}

/// One round: `pushes` frames through a fresh simulator to one reader; the latencies of every
/// frame from its write's start and from its end, in microseconds.
async fn measure(a: &Args, baseline: bool, pushes: usize) -> (Vec<i64>, Vec<i64>) {
    // Scenario seconds are spaced 0.1 apart and the clock runs 100 / gap_ms times faster, so the
    // frames leave gap_ms apart in real time.
    let speed = 100.0 / a.gap_ms;
    let mut text = String::from(
        "name latency\nabout latency benchmark\nproxies 127.0.0.2\ndns 127.0.0.2\n\
         start opt-in\ncatch-up off\n",
    );
    for i in 0..pushes {
        let t = i as f64 * 0.1;
        if i % 2 == 0 {
            text.push_str(&format!(
                "at {t:.1} push * MIGRATING time=2 shards=[\"1\"]\n"
            ));
        } else {
            text.push_str(&format!("at {t:.1} push * MIGRATED shards=[\"1\"]\n"));
        }
    }
    text.push_str(&format!("end {:.1}\n", pushes as f64 * 0.1 + 0.1));
    let scenario = Scenario::parse("latency", &text).expect("scenario");
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    let sim = Simulator::start(opts).await.expect("simulator");
    let mut events = sim.events();

    let mut child = if baseline {
        Command::new(std::env::current_exe().expect("own path"))
            .args(["--baseline-child", &sim.port().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the baseline reader runs")
    } else {
        Command::new(&a.bin)
            .args([
                "watch",
                &format!("redis://127.0.0.2:{}", sim.port()),
                "--json",
                "--no-handoff",
                "--sim-speed",
                &speed.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the maintwatch binary runs")
    };
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let reader = tokio::spawn(async move {
        let mut got: Vec<(Vec<u8>, i64)> = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some((at, raw)) = line.split_once(' ').filter(|_| baseline) {
                let raw = maintwatch::shared::escape::unescape(raw).expect("escaped");
                got.push((raw, at.parse().expect("micros")));
            } else if let Ok(WatchLine::Push(line::Push { at, frame, .. })) = serde_json::from_str(&line) {
                let raw = frame.raw.bytes().expect("escaped").into_owned();
                got.push((raw, parse_at(&at)));
            }
        }
        got
    });

    let mut sent: HashMap<Vec<u8>, (i64, i64)> = HashMap::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(120), events.recv())
            .await
            .expect("the scenario ends in time")
            .expect("narration");
        match e.what {
            What::Sent { bytes, writing, .. } => {
                sent.insert(bytes, (micros(writing), micros(e.at)));
            }
            What::Finished { .. } => break,
            _ => {}
        }
    }
    // The last frames reach the watch within moments; then Ctrl-C and collect.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The watch ends on Ctrl-C (printing its summary); the baseline reader is simply killed (a
    // SIGINT may be ignored: shells start background jobs with SIGINT ignored).
    if baseline {
        child.start_kill().expect("kill");
    } else {
        let pid = child.id().expect("running");
        std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .expect("kill");
    }
    let got = reader.await.expect("reader");
    let _ = child.wait().await;
    sim.shutdown().await;

    let from_start: Vec<i64> = got
        .iter()
        .filter_map(|(raw, at)| sent.get(raw).map(|s| at - s.0))
        .collect();
    let from_end: Vec<i64> = got
        .iter()
        .filter_map(|(raw, at)| sent.get(raw).map(|s| at - s.1))
        .collect();
    assert_eq!(
        from_start.len(),
        sent.len(),
        "every frame sent was printed by the watch"
    );
    assert_eq!(sent.len(), pushes, "every step sent its frame");
    (from_start, from_end)
}

/// The watch against the baseline reader measured in the same run: each percentile side by
/// side and what the watch adds.
fn compare(mut base: Vec<i64>, mut watch: Vec<i64>, rounds: usize) {
    base.sort_unstable();
    watch.sort_unstable();
    let cols = [50.0, 90.0, 99.0, 99.9];
    let row = |lat: &[i64]| {
        cols.iter()
            .map(|&p| format!("p{p} {} us", percentile(lat, p)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let added = cols
        .iter()
        .map(|&p| format!("p{p} {:+} us", percentile(&watch, p) - percentile(&base, p)))
        .collect::<Vec<_>>()
        .join(", ");
    println!("latency side by side, from the write's start, {rounds} alternating rounds each:");
    println!("  baseline reader: {}", row(&base));
    println!("  watch:           {}", row(&watch));
    println!("  watch adds:      {added}");
}

fn report(who: &str, what: &str, mut lat: Vec<i64>, gap_ms: f64) {
    lat.sort_unstable();
    let mean = lat.iter().sum::<i64>() as f64 / lat.len() as f64;
    println!(
        "latency {who}, {what}: {} frames, {} ms apart: min {} us, p50 {} us, p90 {} us, p99 {} us, \
         p99.9 {} us, max {} us, mean {:.1} us",
        lat.len(),
        gap_ms,
        lat[0],
        percentile(&lat, 50.0),
        percentile(&lat, 90.0),
        percentile(&lat, 99.0),
        percentile(&lat, 99.9),
        lat[lat.len() - 1],
        mean
    );
}
