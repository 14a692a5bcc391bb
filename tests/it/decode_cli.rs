//! `maintwatch decode` end to end: the built binary on the captures, in every input format, with
//! `--json` checked against the schema (both the library's own `DecodeLine` and a mirror kept
//! here, so a schema change has to be made on purpose), and on damaged input.

use crate::common;

use maintwatch::observe::record::{DecodeLine, SCHEMA_VERSION};
use maintwatch::protocol::notification::{classify, Kind};
use maintwatch::protocol::resp::{Scan, Scanner};
use maintwatch::shared::escape::escape;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

// ---------------------------------------------------------------------------------------------
// helpers

const CAPTURES: [(&str, Kind, i64); 7] = [
    ("moving-null-target.resp", Kind::Moving, 0),
    ("migrating.resp", Kind::Migrating, 0),
    ("migrated.resp", Kind::Migrated, 1),
    ("failing-over.resp", Kind::FailingOver, 0),
    ("failed-over.resp", Kind::FailedOver, 1),
    ("smigrating.resp", Kind::SMigrating, 18),
    ("smigrated.resp", Kind::SMigrated, 19),
];

fn capture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures")
        .join(name)
}

fn capture(name: &str) -> Vec<u8> {
    std::fs::read(capture_path(name)).unwrap()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `maintwatch decode ARGS` with nothing on standard input.
fn decode(args: &[&str]) -> Run {
    let output = common::maintwatch(["decode"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running maintwatch");
    finish(output)
}

/// Runs `maintwatch decode ARGS` with `input` on standard input.
fn decode_stdin(args: &[&str], input: &[u8]) -> Run {
    let mut child = common::maintwatch(["decode"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running maintwatch");
    child.stdin.take().unwrap().write_all(input).unwrap();
    finish(child.wait_with_output().unwrap())
}

/// A temporary file holding `bytes`.
fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    file.flush().unwrap();
    file
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Hex text of bytes, spaced and wrapped the way a dump is.
fn hex(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|line| {
            line.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// A mirror of the documented `decode --json` schema (src/observe/record/, docs/jsonl.md). Every struct
// refuses unknown fields, and required fields are not optional, so adding, renaming or removing
// a field fails here until this mirror is updated with it.

// Size does not matter in a test mirror; its shape must match the schema, unboxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum JsonLine {
    Frame {
        v: u32,
        source: String,
        frame: JsonFrame,
    },
    Error {
        v: u32,
        source: String,
        offset: u64,
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonFrame {
    offset: u64,
    len: usize,
    raw: String,
    parsed: JsonParsed,
}

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case", deny_unknown_fields)]
enum JsonParsed {
    Maintenance {
        kind: String,
        type_text: String,
        seq: Option<i64>,
        #[serde(default)]
        time: Option<i64>,
        #[serde(default)]
        target: Option<JsonTarget>,
        #[serde(default)]
        shards: Option<JsonShards>,
        #[serde(default)]
        slots: Option<JsonSlots>,
        #[serde(default)]
        migrations: Option<JsonMigrations>,
        #[serde(default)]
        notes: Vec<String>,
    },
    OtherPush {
        name: Option<String>,
        elements: usize,
        known: bool,
    },
    NotPush,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    raw: Option<String>,
    address: Option<JsonHostPort>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonHostPort {
    host: String,
    port: u16,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonShards {
    raw: String,
    ids: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonSlots {
    raw: String,
    ranges: Option<Vec<(u16, u16)>>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonMigrations {
    form: String,
    moves: Vec<JsonMove>,
    skipped: usize,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonMove {
    source: Option<String>,
    target: String,
    slots: JsonSlots,
}

/// Parses every stdout line both ways: the library's `DecodeLine` and the mirror.
fn json_lines(stdout: &str) -> Vec<(DecodeLine, JsonLine)> {
    stdout
        .lines()
        .map(|line| {
            let ours: DecodeLine = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("DecodeLine rejects {line}: {e}"));
            let mirror: JsonLine = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("the schema mirror rejects {line}: {e}"));
            (ours, mirror)
        })
        .collect()
}

fn keys(value: &serde_json::Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    keys
}

// ---------------------------------------------------------------------------------------------
// text output

#[test]
fn decode_prints_the_parsed_line_and_the_raw_bytes() {
    for (name, kind, seq) in CAPTURES {
        let path = capture_path(name);
        let run = decode(&[path_str(&path)]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert_eq!(run.stderr, "", "{name}");
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "{name}: parsed line and raw line\n{}",
            run.stdout
        );
        let head = format!("{} @0: {} seq {seq}", path_str(&path), kind.name());
        assert!(lines[0].starts_with(&head), "{name}: {:?}", lines[0]);
        assert_eq!(
            lines[1],
            format!("    {}", escape(&capture(name))),
            "{name}"
        );
    }
}

#[test]
fn decode_text_shows_each_field_of_the_captures() {
    let run = decode(&[path_str(&capture_path("moving-null-target.resp"))]);
    assert!(
        run.stdout.contains("MOVING seq 0 window 15 s target none"),
        "{}",
        run.stdout
    );
    let run = decode(&[path_str(&capture_path("migrating.resp"))]);
    assert!(
        run.stdout.contains("MIGRATING seq 0 window 2 s shards 27"),
        "{}",
        run.stdout
    );
    let run = decode(&[path_str(&capture_path("smigrating.resp"))]);
    assert!(
        run.stdout.contains("SMIGRATING seq 18 slots 8892-8991"),
        "{}",
        run.stdout
    );
    let run = decode(&[path_str(&capture_path("smigrated.resp"))]);
    assert!(
        run.stdout
            .contains("[10.129.228.140:13486 -> 10.252.90.18:13486 slots 8892-8991]"),
        "{}",
        run.stdout
    );
}

#[test]
fn decode_names_pushes_that_are_not_maintenance_and_shows_notes() {
    let input = b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$5\r\nhello\r\n+OK\r\n>4\r\n+moving\r\n:3\r\n:15\r\n$1\r\n?\r\n";
    let file = temp_file(input);
    let run = decode(&[path_str(file.path())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].contains("@0: "), "{}", lines[0]);
    assert!(lines[0].contains("'message'"), "{}", lines[0]);
    assert!(
        lines[0].contains("not a maintenance notification"),
        "{}",
        lines[0]
    );
    assert!(lines[2].contains("@37: "), "{}", lines[2]);
    assert!(lines[2].contains("not a push"), "{}", lines[2]);
    assert!(lines[4].contains("@42: MOVING seq 3"), "{}", lines[4]);
    // The tolerances applied are shown under the frame.
    assert!(
        run.stdout
            .contains("    note: type sent as a simple string"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("placeholder"), "{}", run.stdout);

    let run = decode(&["--json", path_str(file.path())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parsed: Vec<JsonParsed> = json_lines(&run.stdout)
        .into_iter()
        .map(|(_, mirror)| match mirror {
            JsonLine::Frame { frame, .. } => frame.parsed,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(parsed.len(), 3);
    match &parsed[0] {
        JsonParsed::OtherPush {
            name,
            elements,
            known,
        } => assert_eq!(
            (name.as_deref(), *elements, *known),
            (Some("message"), 3, true)
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(parsed[1], JsonParsed::NotPush), "{:?}", parsed[1]);
    match &parsed[2] {
        JsonParsed::Maintenance {
            kind,
            type_text,
            target,
            notes,
            ..
        } => {
            assert_eq!((kind.as_str(), type_text.as_str()), ("MOVING", "moving"));
            assert_eq!(
                target,
                &Some(JsonTarget {
                    raw: Some("?".into()),
                    address: None
                })
            );
            assert!(
                notes.iter().any(|n| n.contains("simple string")),
                "{notes:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// --json

#[test]
fn decode_json_lines_deserialize_with_deny_unknown_fields() {
    let paths: Vec<PathBuf> = CAPTURES.iter().map(|(n, ..)| capture_path(n)).collect();
    let mut args = vec!["--json"];
    args.extend(paths.iter().map(|p| path_str(p)));
    let run = decode(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), CAPTURES.len());

    for (((name, kind, seq), path), (ours, mirror)) in CAPTURES.iter().zip(&paths).zip(&lines) {
        let bytes = capture(name);
        let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(&bytes) else {
            panic!("{name}")
        };
        // The library's own type, compared with a fresh parse of the same bytes.
        match ours {
            DecodeLine::Frame {
                v,
                source,
                frame: record,
                clients: None,
            } => {
                assert_eq!(*v, SCHEMA_VERSION);
                assert_eq!(source, path_str(path));
                assert_eq!(record.offset, 0);
                assert_eq!(record.len, bytes.len());
                assert_eq!(record.raw, escape(&bytes));
                assert_eq!(record.parsed, classify(&frame), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        // The mirror, field by field.
        let JsonLine::Frame { v, source, frame } = mirror else {
            panic!("{name}: {mirror:?}")
        };
        assert_eq!(*v, 1);
        assert_eq!(source, path_str(path));
        assert_eq!((frame.offset, frame.len), (0, bytes.len()));
        assert_eq!(
            maintwatch::shared::escape::unescape(&frame.raw).unwrap(),
            bytes
        );
        let JsonParsed::Maintenance {
            kind: k,
            type_text,
            seq: s,
            notes,
            ..
        } = &frame.parsed
        else {
            panic!("{name}: {:?}", frame.parsed)
        };
        assert_eq!(k, kind.name());
        assert_eq!(type_text, kind.name());
        assert_eq!(*s, Some(*seq));
        assert!(notes.is_empty(), "{name}: {notes:?}");
    }
}

#[test]
fn decode_json_carries_every_field_of_the_captures() {
    let parsed = |name: &str| -> JsonParsed {
        let run = decode(&["--json", path_str(&capture_path(name))]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut lines = json_lines(&run.stdout);
        assert_eq!(lines.len(), 1);
        match lines.remove(0).1 {
            JsonLine::Frame { frame, .. } => frame.parsed,
            other => panic!("{other:?}"),
        }
    };
    match parsed("moving-null-target.resp") {
        JsonParsed::Maintenance {
            time,
            target,
            shards,
            slots,
            migrations,
            ..
        } => {
            assert_eq!(time, Some(15));
            assert_eq!(
                target,
                Some(JsonTarget {
                    raw: None,
                    address: None
                })
            );
            assert_eq!((shards, slots, migrations), (None, None, None));
        }
        other => panic!("{other:?}"),
    }
    match parsed("failed-over.resp") {
        JsonParsed::Maintenance { time, shards, .. } => {
            assert_eq!(time, None);
            assert_eq!(
                shards,
                Some(JsonShards {
                    raw: "[\"21\"]".into(),
                    ids: Some(vec!["21".into()])
                })
            );
        }
        other => panic!("{other:?}"),
    }
    match parsed("smigrating.resp") {
        JsonParsed::Maintenance { slots, .. } => assert_eq!(
            slots,
            Some(JsonSlots {
                raw: "8892-8991".into(),
                ranges: Some(vec![(8892, 8991)])
            })
        ),
        other => panic!("{other:?}"),
    }
    match parsed("smigrated.resp") {
        JsonParsed::Maintenance { migrations, .. } => assert_eq!(
            migrations,
            Some(JsonMigrations {
                form: "triplets".into(),
                moves: vec![JsonMove {
                    source: Some("10.129.228.140:13486".into()),
                    target: "10.252.90.18:13486".into(),
                    slots: JsonSlots {
                        raw: "8892-8991".into(),
                        ranges: Some(vec![(8892, 8991)])
                    },
                }],
                skipped: 0,
            })
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn decode_json_field_names_are_the_documented_ones() {
    let run = decode(&["--json", path_str(&capture_path("moving-null-target.resp"))]);
    let line: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(keys(&line), ["frame", "source", "type", "v"]);
    assert_eq!(line["type"], "frame");
    assert_eq!(keys(&line["frame"]), ["len", "offset", "parsed", "raw"]);
    assert_eq!(
        keys(&line["frame"]["parsed"]),
        ["class", "kind", "seq", "target", "time", "type_text"]
    );
    assert_eq!(line["frame"]["parsed"]["class"], "maintenance");
    assert_eq!(line["frame"]["parsed"]["kind"], "MOVING");
    assert_eq!(keys(&line["frame"]["parsed"]["target"]), ["address", "raw"]);
    assert!(line["frame"]["parsed"]["target"]["raw"].is_null());
}

#[test]
fn schema_mirror_refuses_unknown_fields() {
    // The guard above only works if the mirror really refuses what it does not know.
    let good = r#"{"type":"error","v":1,"source":"-","offset":3,"message":"x"}"#;
    assert!(serde_json::from_str::<JsonLine>(good).is_ok());
    for bad in [
        r#"{"type":"error","v":1,"source":"-","offset":3,"message":"x","extra":1}"#,
        r#"{"type":"frame","v":1,"source":"-","frame":{"offset":0,"len":3,"raw":"_\r\n","parsed":{"class":"not_push"},"x":0}}"#,
        r#"{"type":"frame","v":1,"source":"-","frame":{"offset":0,"len":3,"raw":"_\r\n","parsed":{"class":"other_push","name":null,"elements":0,"known":false,"x":0}}}"#,
        r#"{"type":"frame","v":1,"source":"-","frame":{"offset":0,"len":3,"raw":"_\r\n","parsed":{"class":"maintenance","kind":"MOVING","type_text":"MOVING","seq":1,"window":3}}}"#,
        r#"{"type":"error","v":1,"source":"-","offset":3}"#,
    ] {
        assert!(serde_json::from_str::<JsonLine>(bad).is_err(), "{bad}");
        assert!(serde_json::from_str::<DecodeLine>(bad).is_err(), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// input formats

#[test]
fn decode_escaped_input_gives_the_same_frames() {
    let bytes = [
        capture("moving-null-target.resp"),
        capture("smigrated.resp"),
    ]
    .concat();
    let raw = decode_stdin(&["--json"], &bytes);
    assert_eq!(raw.code, 0, "{}", raw.stderr);
    let escaped_text = escape(&bytes);
    assert!(
        escaped_text.starts_with(">4\\r\\n$6\\r\\nMOVING"),
        "{escaped_text}"
    );

    // Auto-detected, and named explicitly; from a file and from standard input.
    let file = temp_file(escaped_text.as_bytes());
    for run in [
        decode(&["--json", path_str(file.path())]),
        decode(&["--json", "--format", "escaped", path_str(file.path())]),
        decode_stdin(&["--json", "-"], escaped_text.as_bytes()),
    ] {
        assert_eq!(run.code, 0, "{}", run.stderr);
        let got: Vec<_> = json_lines(&run.stdout)
            .into_iter()
            .map(|(line, _)| match line {
                DecodeLine::Frame { frame, .. } => frame,
                other => panic!("{other:?}"),
            })
            .collect();
        let want: Vec<_> = json_lines(&raw.stdout)
            .into_iter()
            .map(|(line, _)| match line {
                DecodeLine::Frame { frame, .. } => frame,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].offset, 28, "offsets count decoded bytes");
    }

    // Pasted the way people paste: quoted, wrapped over lines.
    let pasted = "\">4\\r\\n$6\\r\\nMOVING\\r\\n\"\n\":0\\r\\n:15\\r\\n_\\r\\n\"\n";
    let run = decode_stdin(&[], pasted.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("- @0: MOVING seq 0 window 15 s"),
        "{}",
        run.stdout
    );
}

#[test]
fn decode_hex_input_gives_the_same_frames() {
    let bytes = capture("migrating.resp");
    let text = hex(&bytes);
    assert!(text.starts_with("3e 34 0d 0a"), "{text}");
    let file = temp_file(text.as_bytes());
    for run in [
        decode(&[path_str(file.path())]),
        decode(&["--format", "hex", path_str(file.path())]),
        decode_stdin(
            &["--format", "hex"],
            format!("0x{}", text.replace(' ', " 0x")).as_bytes(),
        ),
    ] {
        assert_eq!(run.code, 0, "{}", run.stderr);
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert!(
            lines[0].contains("@0: MIGRATING seq 0 window 2 s shards 27"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[1], format!("    {}", escape(&bytes)));
    }
}

#[test]
fn decode_raw_format_is_taken_literally() {
    // Escaped text read as raw bytes is not RESP: the push header runs on to the text file's
    // final line feed, a bare LF where CRLF belongs.
    let text = b">4\\r\\n$6\\r\\nMOVING\\r\\n:0\\r\\n:15\\r\\n_\\r\\n\n";
    let file = temp_file(text);
    let run = decode(&["--format", "raw", path_str(file.path())]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    let at = format!("at byte {}", text.len() - 1);
    assert!(run.stderr.contains(&at), "{}", run.stderr);
    assert!(run.stderr.contains("bare"), "{}", run.stderr);
    // The same file auto-detected is escaped text.
    assert_eq!(decode(&[path_str(file.path())]).code, 0);
}

#[test]
fn decode_bad_escape_names_line_and_column() {
    let run = decode_stdin(&["--format", "escaped"], b"+OK\\r\\n\n+X\\q\\r\\n");
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("line 2, column 4"), "{}", run.stderr);
    assert!(run.stderr.contains("\\q"), "{}", run.stderr);
}

#[test]
fn decode_bad_hex_names_line_and_column() {
    let run = decode_stdin(&["--format", "hex"], b"3e 34 0d 0a\n2b zz\n");
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("hex text"), "{}", run.stderr);
    assert!(run.stderr.contains("line 2, column 4"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// damaged input

#[test]
fn invalid_input_names_the_offset_after_printing_every_frame_before_it() {
    let moving = capture("moving-null-target.resp");
    let migrated = capture("migrated.resp");
    let bad_at = moving.len() + migrated.len() + 3;
    let input = [moving.as_slice(), &migrated, b"+OK\rX\r\n:1\r\n"].concat();
    let file = temp_file(&input);
    let path = path_str(file.path());

    let run = decode(&[path]);
    assert_eq!(run.code, 1, "a framing error is a failure");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "both frames before the error:\n{}",
        run.stdout
    );
    assert!(lines[0].contains("@0: MOVING seq 0"), "{}", lines[0]);
    assert!(lines[2].contains("@28: MIGRATED seq 1"), "{}", lines[2]);
    assert!(
        run.stderr.contains(&format!("at byte {}", bad_at + 1)),
        "the byte after the CR: {}",
        run.stderr
    );
    assert!(run.stderr.contains(path), "{}", run.stderr);
    assert!(run.stderr.contains("'\\n' after '\\r'"), "{}", run.stderr);

    let run = decode(&["--json", path]);
    assert_eq!(run.code, 1);
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), 3);
    assert!(matches!(&lines[0].0, DecodeLine::Frame { frame, .. } if frame.offset == 0));
    assert!(matches!(&lines[1].0, DecodeLine::Frame { frame, .. } if frame.offset == 28));
    match &lines[2].1 {
        JsonLine::Error {
            v,
            source,
            offset,
            message,
        } => {
            assert_eq!(*v, 1);
            assert_eq!(source, path);
            assert_eq!(*offset, (bad_at + 1) as u64);
            assert!(
                message.contains(&format!("at byte {}", bad_at + 1)),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        run.stderr.contains(&format!("at byte {}", bad_at + 1)),
        "{}",
        run.stderr
    );
}

#[test]
fn invalid_escaped_input_names_the_offset_in_the_decoded_bytes() {
    let text = format!("{}?oops\\r\\n", escape(&capture("migrated.resp")));
    let run = decode_stdin(&[], text.as_bytes());
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("@0: MIGRATED seq 1"), "{}", run.stdout);
    assert!(
        run.stderr.contains("at byte 34") && run.stderr.contains("of the decoded bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn torn_trailing_frame_is_reported() {
    let smigrated = capture("smigrated.resp");
    let moving = capture("moving-null-target.resp");
    let input = [moving.as_slice(), &smigrated[..40]].concat();
    let file = temp_file(&input);
    let path = path_str(file.path());

    let run = decode(&[path]);
    assert_eq!(run.code, 1, "a torn frame is reported as a failure");
    assert!(run.stdout.contains("@0: MOVING seq 0"), "{}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 2);
    assert!(run.stderr.contains("incomplete frame"), "{}", run.stderr);
    assert!(run.stderr.contains("at byte 28"), "{}", run.stderr);
    assert!(run.stderr.contains("40 of its bytes"), "{}", run.stderr);

    let run = decode(&["--json", path]);
    assert_eq!(run.code, 1);
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), 2);
    match &lines[1].0 {
        DecodeLine::Error {
            offset, message, ..
        } => {
            assert_eq!(*offset, 28);
            assert!(message.contains("incomplete frame"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_input_does_not_stop_the_next_one() {
    let torn = temp_file(&capture("migrating.resp")[..10]);
    let good = capture_path("failed-over.resp");
    let run = decode(&[path_str(torn.path()), path_str(&good)]);
    assert_eq!(run.code, 1, "any failing input fails the run");
    assert!(run.stderr.contains("incomplete frame"), "{}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("{} @0: FAILED_OVER seq 1", path_str(&good))),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let run = decode(&["/nonexistent/capture.resp"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("/nonexistent/capture.resp"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// pastes: hex dumps, the tool's own indented lines, nothing at all

fn dump_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dumps")
        .join(name)
}

/// The frames `decode --json` finds in `run`, which must have succeeded.
fn frames_of(run: &Run) -> Vec<maintwatch::observe::record::FrameRecord> {
    assert_eq!(run.code, 0, "{}", run.stderr);
    json_lines(&run.stdout)
        .into_iter()
        .map(|(line, _)| match line {
            DecodeLine::Frame { frame, .. } => frame,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Output of `tool ARGS FILE`, or `None` (with a visible SKIP) when the tool is not installed.
fn tool_output(tool: &str, args: &[&str], file: &Path) -> Option<String> {
    match Command::new(tool).args(args).arg(file).output() {
        Ok(out) if out.status.success() => Some(String::from_utf8(out.stdout).unwrap()),
        _ => {
            crate::common::visible(&format!(
                "SKIP: {tool} is not installed; the committed samples still run"
            ));
            None
        }
    }
}

/// A pub/sub message whose 64-byte payload makes `hexdump -C` collapse lines into `*`.
fn repeated_frame() -> Vec<u8> {
    [
        &b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$64\r\n"[..],
        &[b'a'; 64],
        b"\r\n",
    ]
    .concat()
}

#[test]
fn decode_accepts_committed_hexdump_and_xxd_samples() {
    let want = frames_of(&decode(&[
        "--json",
        path_str(&capture_path("smigrated.resp")),
    ]));
    for sample in ["smigrated.hexdump-C.txt", "smigrated.xxd.txt"] {
        let path = dump_path(sample);
        for args in [vec!["--json"], vec!["--json", "--format", "hex"]] {
            let mut args = args.clone();
            args.push(path_str(&path));
            assert_eq!(frames_of(&decode(&args)), want, "{sample} {args:?}");
        }
    }
    // `*` stands for repeated lines; the next offset says how many.
    let text = std::fs::read_to_string(dump_path("repeated.hexdump-C.txt")).unwrap();
    assert!(text.lines().any(|l| l == "*"), "{text}");
    let got = frames_of(&decode_stdin(&["--json"], text.as_bytes()));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].raw, escape(&repeated_frame()));
}

#[test]
fn decode_accepts_hexdump_and_xxd_output_of_every_capture() {
    let mut names: Vec<&str> = CAPTURES.iter().map(|(n, ..)| *n).collect();
    names.push("repeated");
    let repeated = temp_file(&repeated_frame());
    for name in names {
        let path = if name == "repeated" {
            repeated.path().to_path_buf()
        } else {
            capture_path(name)
        };
        let want = frames_of(&decode(&["--json", path_str(&path)]));
        for (tool, args) in [
            ("hexdump", &["-C"][..]),
            ("xxd", &[][..]),
            ("xxd", &["-g1"][..]),
        ] {
            let Some(text) = tool_output(tool, args, &path) else {
                continue;
            };
            let run = decode_stdin(&["--json"], text.as_bytes());
            assert_eq!(frames_of(&run), want, "{tool} {args:?} of {name}:\n{text}");
        }
    }
}

#[test]
fn decode_hexdump_with_a_missing_line_names_it() {
    let text = std::fs::read_to_string(dump_path("smigrated.hexdump-C.txt")).unwrap();
    let cut: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| l)
        .collect();
    let run = decode_stdin(&[], cut.join("\n").as_bytes());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("hexdump -C output, line 3: offset 0x30"),
        "{}",
        run.stderr
    );

    // A forged offset after `*` does not expand a few bytes of text without bound.
    let forged = "00000000  61 61 61 61 61 61 61 61  61 61 61 61 61 61 61 61  |aaaaaaaaaaaaaaaa|\n*\nfffffff0\n";
    let run = decode_stdin(&[], forged.as_bytes());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("line 3: offset 0xfffffff0 repeats a line over more than 64 MiB"),
        "{}",
        run.stderr
    );
}

#[test]
fn decode_accepts_the_indented_raw_bytes_lines_it_prints() {
    let bytes = [
        capture("moving-null-target.resp"),
        capture("migrating.resp"),
    ]
    .concat();
    // What `decode` (4 spaces) and `watch` (6 spaces) print under each frame.
    let pasted = format!(
        "    {}\n      {}\n",
        escape(&capture("moving-null-target.resp")),
        escape(&capture("migrating.resp"))
    );
    let want = frames_of(&decode_stdin(&["--json"], &bytes));
    assert_eq!(want.len(), 2);
    for args in [vec!["--json"], vec!["--json", "--format", "escaped"]] {
        assert_eq!(frames_of(&decode_stdin(&args, pasted.as_bytes())), want);
    }
    // An error's column still counts the indentation as pasted.
    let run = decode_stdin(&[], b"      +X\\q\\r\\n\n");
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("line 1, column 10"), "{}", run.stderr);
}

#[test]
fn decode_of_empty_input_is_an_error() {
    for input in [&b""[..], b"\n", b"   \n\n"] {
        let run = decode_stdin(&[], input);
        assert_eq!(run.code, 1, "{input:?}");
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.contains("-: no frames in the input"),
            "{input:?}: {}",
            run.stderr
        );
    }
    let empty = temp_file(b"");
    let run = decode(&["--json", path_str(empty.path())]);
    assert_eq!(run.code, 1);
    let lines = json_lines(&run.stdout);
    assert!(
        matches!(&lines[..], [(DecodeLine::Error { message, .. }, _)] if message == "no frames in the input"),
        "{}",
        run.stdout
    );
}

/// `--clients`: one line per known client under each frame, the endpoint type asked for
/// deciding node-redis's verdict on a MOVING with no target; a verdict quoting the frame's
/// text is escaped; without --clients nothing changes.
#[test]
fn clients_says_what_each_client_does_with_the_frame() {
    let moving = capture("moving-null-target.resp");
    let run = decode_stdin(&["--format", "raw", "--clients"], &moving);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2 + 7, "{}", run.stdout);
    assert!(
        lines[3].starts_with("    node-redis 6.3.1: fails: AssertionError"),
        "{}",
        run.stdout
    );
    // The client tier measured it in these releases (src/grading/clients/library/, `measured`).
    assert!(
        lines[3].ends_with(
            "; measured in node-redis 5.9.0 through 6.3.1 (the client matrix of 2026-12-03)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].starts_with("    redis-py 8.1.0: acts: "),
        "{}",
        run.stdout
    );
    // An action the go-redis tier measured more of: the releases, what, and the run.
    assert!(
        lines[4].starts_with("    go-redis 9.22.0: acts: no endpoint: ")
            && lines[4].contains(
                "; measured in go-redis 9.16.0 through 9.23.0: it acts on every copy of a MOVING"
            )
            && lines[4].ends_with("(the client matrix of 2026-12-04)"),
        "{}",
        run.stdout
    );
    // The JVM libraries: Lettuce's parser was read (a null target: it reconnects where it is);
    // Jedis's was not, and the release Maven Central serves has no maintenance notifications.
    assert!(
        run.stdout
            .contains("    Lettuce 7.8.0-SNAPSHOT: acts: no endpoint"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("    Jedis 8.1: unknown"),
        "{}",
        run.stdout
    );

    let none = decode_stdin(
        &["--format", "raw", "--clients", "--endpoint-type", "none"],
        &moving,
    );
    assert!(
        none.stdout
            .contains("    node-redis 6.3.1: acts: no endpoint"),
        "{}",
        none.stdout
    );

    let hostile = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$9\r\nh\x1b[2J:1:2\r\n";
    let run = decode_stdin(&["--format", "raw", "--clients"], hostile);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(
        run.stdout
            .contains(r#"node-redis 6.3.1: acts: moves to host "h\u{1b}[2J" port 1"#),
        "{}",
        run.stdout
    );

    let plain = decode_stdin(&["--format", "raw"], &moving);
    assert_eq!(plain.stdout.lines().count(), 2, "{}", plain.stdout);
}
