//! `maintwatch replay` end to end on the committed captures (written by the real `watch
//! --capture` against `simulate` scenarios): streaming, the schema version, files with nothing
//! valid in them, torn tails, `--check`'s output, and the examples the README and `--help` give.

use crate::common;

use maintwatch::observe::replay::{replay, Event};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

const FIXTURES: [&str; 3] = [
    "single-proxy.jsonl",
    "oss-cluster.jsonl",
    "shard-migration.jsonl",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/captures").join(name)
}

fn maintwatch(args: &[&str]) -> Output {
    common::maintwatch(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("running maintwatch")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A temporary capture holding `bytes`, named `capture.jsonl`.
fn temp_capture(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn committed_captures_replay_and_check_clean() {
    for name in FIXTURES {
        let path = fixture(name);
        let body = std::fs::read_to_string(&path).unwrap();
        assert!(
            body.contains("\"type\":\"push\""),
            "{name} holds a notification"
        );
        assert!(
            body.contains("\"type\":\"summary\""),
            "{name} ends with its summary"
        );
        let out = maintwatch(&["replay", "--check", path_str(&path)]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&format!("{}: ok:", path.display())),
            "{}",
            text(&out.stderr)
        );
    }
    let oss = text(&std::fs::read(fixture("oss-cluster.jsonl")).unwrap());
    assert!(oss.contains(r"SMIGRATED\\r\\n") && oss.contains("\"type\":\"topology\""));
}

#[test]
fn check_prints_differences_and_a_verdict_and_the_timeline_only_with_v() {
    let path = fixture("single-proxy.jsonl");
    let quiet = maintwatch(&["replay", "--check", path_str(&path)]);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(text(&quiet.stdout), "", "no timeline without -v");
    let verdict = text(&quiet.stderr);
    assert!(
        verdict.contains("ok: 13 lines, 1 frame checked, 0 differ"),
        "{verdict}"
    );

    let verbose = maintwatch(&["replay", "--check", "-v", path_str(&path)]);
    assert_eq!(verbose.status.code(), Some(0));
    assert!(
        text(&verbose.stdout).contains("MOVING seq 0 window 15 s"),
        "{}",
        text(&verbose.stdout)
    );

    // Without --check the timeline is the output, as before.
    let plain = maintwatch(&["replay", path_str(&path)]);
    assert!(text(&plain.stdout).contains("MOVING seq 0 window 15 s"));

    // A changed byte: the difference, then a failing verdict.
    let body = std::fs::read_to_string(&path).unwrap();
    let changed = body.replacen(r"MOVING\\r\\n:0\\r\\n:15", r"MOVING\\r\\n:0\\r\\n:16", 1);
    assert_ne!(body, changed);
    let (_dir, bad) = temp_capture(changed.as_bytes());
    let out = maintwatch(&["replay", "--check", path_str(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let diff = err.find("capture.jsonl:5: parse differs").expect(&err);
    let verdict = err.find("capture.jsonl: FAILED: 13 lines, 1 frame checked, 1 differ");
    assert!(verdict.is_some_and(|v| v > diff), "{err}");
    assert_eq!(text(&out.stdout), "");
}

#[test]
fn a_newer_schema_version_is_refused_naming_the_line() {
    let body = std::fs::read_to_string(fixture("shard-migration.jsonl")).unwrap();
    let lines: Vec<String> = body
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 2 {
                l.replacen("\"v\":1,", "\"v\":99,", 1)
            } else {
                l.into()
            }
        })
        .collect();
    assert!(lines[2].contains("\"v\":99,"));
    let (_dir, path) = temp_capture((lines.join("\n") + "\n").as_bytes());
    for args in [
        vec!["replay"],
        vec!["replay", "--check"],
        vec!["replay", "--json"],
    ] {
        let mut args = args.clone();
        args.push(path_str(&path));
        let out = maintwatch(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(
                "capture.jsonl:3: schema version 99 is newer than this maintwatch reads (1)"
            ),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_file_with_no_valid_line_is_an_error() {
    for body in [
        &b""[..],
        b"\n\n",
        b"hello\nworld\n",
        b"{\"type\":\"push\",\"v\":1,\"t\":0.5",
    ] {
        let (_dir, path) = temp_capture(body);
        let out = maintwatch(&["replay", "--check", path_str(&path)]);
        assert_eq!(out.status.code(), Some(1), "{body:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("capture.jsonl: no maintwatch JSON line in it"),
            "{body:?}: {err}"
        );
        assert!(!err.contains(" ok:"), "{err}");
    }
}

#[test]
fn a_last_line_is_torn_only_if_it_starts_like_ours() {
    let body = std::fs::read(fixture("shard-migration.jsonl")).unwrap();
    let count = body.iter().filter(|&&b| b == b'\n').count();

    let torn = [&body[..], b"{\"type\":\"push\",\"v\":1,\"t\":9.9"].concat();
    let (_dir, path) = temp_capture(&torn);
    let out = maintwatch(&["replay", "--check", path_str(&path)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("capture.jsonl:{}: torn last line", count + 1)));

    let foreign = [&body[..], b"PING"].concat();
    let (_dir2, path) = temp_capture(&foreign);
    let out = maintwatch(&["replay", "--check", path_str(&path)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(!err.contains("torn"), "{err}");
    assert!(
        err.contains(&format!(
            "capture.jsonl:{}: not a maintwatch JSON line",
            count + 1
        )),
        "{err}"
    );
}

#[test]
fn a_line_longer_than_64_mib_is_refused_naming_it() {
    let mut body = std::fs::read(fixture("shard-migration.jsonl")).unwrap();
    body.extend_from_slice(b"{\"type\":\"push\",\"raw\":\"");
    body.resize(body.len() + (64 << 20), b'x');
    body.extend_from_slice(b"\"}\n");
    let count = body.iter().filter(|&&b| b == b'\n').count();
    let (_dir, path) = temp_capture(&body);
    let out = maintwatch(&["replay", path_str(&path)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "capture.jsonl:{count}: line longer than 64 MiB; stopped reading"
        )),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("MIGRATING seq 0"),
        "lines before it replayed"
    );
}

#[test]
fn an_endless_line_stops_at_the_limit() {
    // An input that never ends and holds no newline: only a bounded reader returns.
    let reader = BufReader::new(std::io::repeat(b'x'));
    let report = replay(reader, 1 << 20, |_| Ok(())).unwrap();
    assert_eq!(report.stopped, Some((1, "line longer than 1 MiB".into())));

    // Small limit, several lines: the long one is named, those before it were read.
    let body = std::fs::read(fixture("shard-migration.jsonl")).unwrap();
    let longest = body.split(|&b| b == b'\n').map(<[u8]>::len).max().unwrap();
    let input = [&body[..], &vec![b'y'; longest + 1], b"\n"].concat();
    let mut seen = 0;
    let report = replay(&input[..], longest, |e| {
        seen += usize::from(matches!(e, Event::Line(_)));
        Ok(())
    })
    .unwrap();
    let count = body.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(seen, count);
    assert_eq!(report.stopped.map(|s| s.0), Some(count + 1));
}

#[test]
fn replay_streams_standard_input_line_by_line() {
    let body = std::fs::read(fixture("single-proxy.jsonl")).unwrap();
    let mut child = common::maintwatch(["replay", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // The writer keeps standard input open until the reader has seen output.
    let writer = std::thread::spawn(move || {
        for _ in 0..400 {
            if stdin.write_all(&body).is_err() {
                return;
            }
        }
        let _ = done_rx.recv();
        drop(stdin);
    });
    let stdout = child.stdout.take().unwrap();
    let (line_tx, line_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut first = String::new();
        let _ = reader.read_line(&mut first);
        let _ = line_tx.send(first);
        // Keep reading: a closed pipe would fail the replay.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    // A hang guard only: a replay that waits for the end of its input never prints.
    let first = line_rx.recv_timeout(Duration::from_secs(60));
    let _ = done_tx.send(());
    writer.join().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    let first = first.expect("output before the input ended");
    assert!(first.starts_with("{\"type\":\"start\""), "{first} {stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// `maintwatch replay --check PATTERN...` lines in `text`, their arguments after `replay`.
fn replay_examples(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("maintwatch replay "))
        .map(|args| args.split_whitespace().map(String::from).collect())
        .collect()
}

/// Expands a `dir/*.ext` argument the way a shell would, relative to the repository.
fn expand(arg: &str) -> Vec<String> {
    let Some((dir, pattern)) = arg.rsplit_once('/') else {
        return vec![arg.into()];
    };
    let Some(suffix) = pattern.strip_prefix('*') else {
        return vec![arg.into()];
    };
    let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    files.sort();
    files
}

#[test]
fn readme_and_help_replay_check_examples_run_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let help = text(&maintwatch(&["replay", "--help"]).stdout);
    let man = std::fs::read_to_string(root().join("man/maintwatch-replay.1")).unwrap();
    let man = man.replace("\\-", "-");
    for (source, doc) in [("README.md", readme), ("--help", help), ("man page", man)] {
        let examples: Vec<_> = replay_examples(&doc)
            .into_iter()
            .filter(|a| a.first().is_some_and(|a| a == "--check"))
            .collect();
        assert!(
            !examples.is_empty(),
            "{source} shows a replay --check example"
        );
        for example in examples {
            let args: Vec<String> = example.iter().flat_map(|a| expand(a)).collect();
            assert!(
                args.len() >= 3,
                "{source}: {example:?} names captures: {args:?}"
            );
            let mut argv = vec!["replay".to_string()];
            argv.extend(args);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let out = maintwatch(&argv);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{source}: {example:?}: {}",
                text(&out.stderr)
            );
        }
    }
}

/// `single-proxy.jsonl` with `from` replaced by `to` once, replayed with `--check`: the exit code
/// and standard error.
fn check_changed(from: &str, to: &str) -> (Option<i32>, String) {
    let body = std::fs::read_to_string(fixture("single-proxy.jsonl")).unwrap();
    let changed = body.replacen(from, to, 1);
    assert_ne!(body, changed, "{from:?} is in the capture");
    let (_dir, path) = temp_capture(changed.as_bytes());
    let out = maintwatch(&["replay", "--check", path_str(&path)]);
    (out.status.code(), text(&out.stderr))
}

#[test]
fn check_reruns_the_timeline_and_names_a_changed_label() {
    // The MOVING is new: the timeline labels it nothing; the capture now says it was re-sent.
    let (code, err) = check_changed(r#""conn":1,"labels":[]"#, r#""conn":1,"labels":["resent"]"#);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(r#"capture.jsonl:5: timeline differs: push: labels recorded ["resent"], the timeline computes []"#),
        "{err}"
    );
    // The frame parses as before: only the timeline tells.
    assert!(!err.contains("parse differs"), "{err}");
    assert!(
        err.contains("capture.jsonl: FAILED: 13 lines, 1 frame checked, 1 differ"),
        "{err}"
    );
}

#[test]
fn check_reruns_the_timeline_and_names_a_changed_offset() {
    // The close came 1.6 s past the 15 s window; the capture now says 2.6 s.
    let (code, err) = check_changed(r#""past_s":1.599546"#, r#""past_s":2.599546"#);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        // (Recomputed from microsecond timestamps: 1.599546 or 1.599547.)
        err.contains("capture.jsonl:8: timeline differs: closed: past_s recorded 2.599546, the timeline computes 1.59954"),
        "{err}"
    );

    // An offset relative to the event, on a line the timeline derives from a DNS change.
    let (code, err) = check_changed(r#""s":9.995629"#, r#""s":8.995629"#);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("capture.jsonl:6: timeline differs: dns: rel recorded"),
        "{err}"
    );

    // A verdict's margin, which the timeline computes from the dry-run and the close.
    let (code, err) = check_changed(r#""margin_s":6.078145}"#, r#""margin_s":7.078145}"#);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("capture.jsonl:9: timeline differs: verdict: margin_s"),
        "{err}"
    );
}

/// `replay --grade`: a kept `grade_input` line (here from `pcap --grade --json` on the
/// maintenance fixture) is graded again by the current judge.
#[test]
fn replay_grade_regrades_a_kept_grade_input() {
    let file = root().join("tests/fixtures/grades/maintenance-v4.jsonl");
    let file = file.to_str().unwrap();
    let out = maintwatch(&["replay", "--grade", file]);
    let table = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{table}");
    for want in [
        "conn 1: moved to 10.0.0.10 at +9.0 s after its MOVING seq 7, 7.6 s before the close",
        "conn 2: stayed: nothing else was offered; cut by the close at +16.6 s after its MOVING seq 7",
        "PASS       opt-in              0 connection(s) never opted in; 1 asked and was refused by the server",
        "grade: a rule failed",
    ] {
        assert!(table.contains(want), "{want:?} missing from:\n{table}");
    }
    let out = maintwatch(&["replay", "--grade", "--json", file]);
    let json = text(&out.stdout);
    let inputs = maintwatch::grading::judge::grade_lines::inputs(&json).unwrap();
    let kept =
        maintwatch::grading::judge::grade_lines::inputs(&std::fs::read_to_string(file).unwrap())
            .unwrap();
    assert_eq!(inputs, kept);
    let grade = maintwatch::grading::judge::grade_lines::grade_of(&json).expect("a grade line");
    assert_eq!(grade, maintwatch::grading::judge::judge(&kept[0]));
}

#[test]
fn replay_grade_names_the_line_it_cannot_read() {
    let (_dir, path) = temp_capture(
        b"{\"v\":1,\"type\":\"start\"}\n{\"v\":1,\"type\":\"grade_input\",\"observations\":{\"source\":\"x\",\"bogus\":1}}\n",
    );
    let out = maintwatch(&["replay", "--grade", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("line 2: grade_input:"), "{err}");
    let (_dir, path) = temp_capture(b"{\"v\":1,\"type\":\"start\"}\n");
    let out = maintwatch(&["replay", "--grade", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no grade_input line"));
}

/// A crafted capture whose key holds ESC, an OSC title sequence and CR: serde's error quotes
/// the key, and the report shows it escaped, never as the bytes a terminal would obey.
#[test]
fn error_texts_quoting_the_input_are_escaped() {
    let body = b"{\"type\":\"push\",\"v\":1,\"\\u001b]0;pwned\\u0007\\rforged\":1}\n";
    let (_dir, path) = temp_capture(body);
    let out = maintwatch(&["replay", path_str(&path)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("capture.jsonl:1: not a maintwatch JSON line"),
        "{err}"
    );
    assert!(err.contains("\\x1b]0;pwned\\x07\\rforged"), "{err}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\r']), "{err:?}");
}

/// A file that is not a capture at all gives a few bad lines and their count, not one report
/// per line of it.
#[test]
fn a_file_that_is_no_capture_reports_a_few_bad_lines_and_their_count() {
    let body = "not json\n".repeat(5000);
    let (_dir, path) = temp_capture(body.as_bytes());
    let out = maintwatch(&["replay", path_str(&path)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("not a maintwatch JSON line").count(),
        10,
        "{err}"
    );
    assert!(
        err.contains("capture.jsonl: 4990 more bad lines not shown (5000 in all)"),
        "{err}"
    );
}
