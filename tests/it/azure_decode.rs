//! `maintwatch decode` on Azure Cache for Redis's `AzureRedisEvents` messages, end to end: the
//! built binary given pub/sub frames (RESP3 and RESP2, raw, escaped and hex) and bare payload
//! lines, with `--json` read back through the library's `DecodeLine` (which refuses unknown
//! fields), and a property run that no payload is dropped or loses a byte.

use crate::common;

use maintwatch::observe::record::DecodeLine;
use maintwatch::protocol::azure::{self, AzureKind};
use maintwatch::shared::escape::escape;
use proptest::prelude::*;
use std::io::Write;
use std::process::Stdio;

const STARTING: &[u8] =
    b"NotificationType|NodeMaintenanceStarting|StartTimeInUTC|2026-12-03T11:00:20\
|IsReplica|False|IPAddress|10.0.0.5|SSLPort|6380|NonSSLPort|6379";

/// A RESP3 push `message AzureRedisEvents <payload>`.
fn push(payload: &[u8]) -> Vec<u8> {
    message(b'>', payload)
}

fn message(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(b"3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n");
    out.extend_from_slice(format!("${}\r\n", payload.len()).as_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
    out
}

struct Run {
    code: i32,
    stdout: String,
}

/// `maintwatch decode ARGS` with `input` on standard input.
fn decode(args: &[&str], input: &[u8]) -> Run {
    let mut child = common::maintwatch(["decode"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running maintwatch");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
    }
}

/// The `azure_event` lines of a `decode --json` run, as the library reads them back. Every
/// line must be one: none is dropped or turned into something else.
struct AzureLine {
    offset: u64,
    payload: Vec<u8>,
    frame_raw: Option<Vec<u8>>,
    event: azure::AzureEvent,
    clients: Option<Vec<maintwatch::observe::record::ClientVerdict>>,
}

fn azure_lines(stdout: &str) -> Vec<AzureLine> {
    stdout
        .lines()
        .map(|line| match serde_json::from_str::<DecodeLine>(line) {
            Ok(DecodeLine::AzureEvent {
                offset,
                payload,
                frame,
                event,
                clients,
                ..
            }) => AzureLine {
                offset,
                payload: payload.bytes().unwrap().into_owned(),
                frame_raw: frame.map(|f| f.raw.bytes().unwrap().into_owned()),
                event,
                clients,
            },
            other => panic!("not an azure_event line: {line}: {other:?}"),
        })
        .collect()
}

#[test]
fn a_well_formed_message_gives_its_fields_and_keeps_its_bytes() {
    let frame = push(STARTING);
    let run = decode(&["--json"], &frame);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let lines = azure_lines(&run.stdout);
    assert_eq!(lines.len(), 1);
    let line = &lines[0];
    assert_eq!(line.offset, 0);
    assert_eq!(line.payload, STARTING);
    assert_eq!(line.frame_raw.as_deref(), Some(frame.as_slice()));
    let e = &line.event;
    assert_eq!(e.kind, Some(AzureKind::Starting));
    assert_eq!(e.start_unix_ms, Some(1_796_295_620_000));
    assert_eq!(e.is_replica, Some(false));
    assert_eq!(e.ip.as_deref(), Some("10.0.0.5"));
    assert_eq!((e.ssl_port, e.non_ssl_port), (Some(6380), Some(6379)));
    assert!(e.notes.is_empty() && e.reference_ignores.is_none(), "{e:?}");
    assert!(line.clients.is_none(), "clients only with --clients");
    // The line's own keys, in the documented names, and the bytes escaped as `raw` is.
    let value: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["event", "frame", "offset", "payload", "source", "type", "v"]
    );
    assert_eq!(value["payload"], escape(STARTING));
    assert_eq!(value["frame"]["raw"], escape(&frame));
    assert_eq!(value["event"]["kind"], "NodeMaintenanceStarting");
}

#[test]
fn every_input_format_and_resp2_give_the_same_event() {
    let frame = push(STARTING);
    let resp2 = message(b'*', STARTING);
    let hex: String = frame.iter().map(|b| format!("{b:02x} ")).collect();
    let inputs = [
        frame.clone(),
        escape(&frame).into_bytes(),
        hex.into_bytes(),
        resp2,
    ];
    let events: Vec<_> = inputs
        .iter()
        .map(|input| {
            let lines = azure_lines(&decode(&["--json"], input).stdout);
            assert_eq!(lines.len(), 1);
            lines.into_iter().next().unwrap().event
        })
        .collect();
    assert!(events.iter().all(|e| *e == events[0]), "{events:?}");
    assert_eq!(events[0].kind, Some(AzureKind::Starting));
}

#[test]
fn damaged_messages_each_give_a_line_none_dropped() {
    let payloads: [&[u8]; 4] = [
        b"NotificationType|NodeMaintenanceRebooting|IsReplica|False",
        b"NotificationType|NodeMaintenanceStart",
        b"NotificationType|NodeMaintenanceEnded|IsReplica|true|IPAddress|10.0.0.6|SSLPort|6380|NonSSLPort|6379",
        b"no bar at all",
    ];
    let mut input = Vec::new();
    let mut offsets = Vec::new();
    for p in payloads {
        offsets.push(input.len() as u64);
        input.extend(push(p));
    }
    // A frame that is no Azure message in between stays a frame line of its own.
    input.extend_from_slice(b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$2\r\nhi\r\n");
    let run = decode(&["--json"], &input);
    assert_eq!(run.code, 0);
    let (azure, other): (Vec<&str>, Vec<&str>) = run
        .stdout
        .lines()
        .partition(|l| l.starts_with(r#"{"type":"azure_event""#));
    assert_eq!(other.len(), 1, "{other:?}");
    assert!(other[0].starts_with(r#"{"type":"frame""#));
    let lines = azure_lines(&azure.join("\n"));
    assert_eq!(lines.len(), payloads.len());
    for ((line, payload), offset) in lines.iter().zip(payloads).zip(&offsets) {
        assert_eq!(line.payload, payload);
        assert_eq!(line.offset, *offset);
    }
    let [unknown, missing, lower, bare] = [0, 1, 2, 3].map(|i| &lines[i].event);
    assert_eq!(unknown.kind, None);
    assert_eq!(
        unknown.type_text.as_deref(),
        Some("NodeMaintenanceRebooting")
    );
    assert!(unknown
        .reference_ignores
        .as_deref()
        .unwrap()
        .contains("Unknown"));
    assert_eq!(missing.kind, Some(AzureKind::Start));
    assert!(
        missing.notes.iter().any(|n| n == "IPAddress missing"),
        "{:?}",
        missing.notes
    );
    assert_eq!(lower.is_replica, Some(true));
    assert!(lower.notes.iter().any(|n| n.contains("\"true\"")));
    assert_eq!(bare.unparsed.as_deref(), Some("no bar at all"));
}

#[test]
fn bare_payload_lines_are_read_one_a_line() {
    let input = b"NotificationType|NodeMaintenanceStart|IsReplica|False\r\n\n  \nNotificationType|NodeMaintenanceEnded\nnot a payload\n";
    let run = decode(&["--json"], input);
    assert_eq!(run.code, 0);
    let lines = azure_lines(&run.stdout);
    let got: Vec<(u64, &[u8], bool)> = lines
        .iter()
        .map(|l| (l.offset, l.payload.as_slice(), l.frame_raw.is_none()))
        .collect();
    assert_eq!(
        got,
        [
            (
                0,
                b"NotificationType|NodeMaintenanceStart|IsReplica|False".as_slice(),
                true
            ),
            (
                59,
                b"NotificationType|NodeMaintenanceEnded".as_slice(),
                true
            ),
            (97, b"not a payload".as_slice(), true),
        ]
    );
    assert_eq!(lines[1].event.kind, Some(AzureKind::Ended));
    assert_eq!(lines[2].event.unparsed.as_deref(), Some("not a payload"));
}

#[test]
fn text_output_shows_the_event_beside_its_bytes_safely() {
    let payload = b"NotificationType|NodeMaintenanceStart|IsReplica|True|IPAddress|\x1b[2J10.0.0.7";
    let frame = push(payload);
    let run = decode(&[], &frame);
    assert_eq!(run.code, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("- @0: AzureRedisEvents NodeMaintenanceStart replica"),
        "{lines:?}"
    );
    assert_eq!(lines[1], format!("    {}", escape(&frame)));
    assert!(lines.iter().any(|l| l.starts_with("    note: IPAddress")));
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
}

#[test]
fn clients_names_stackexchange_redis_as_the_only_listener() {
    let ended = b"NotificationType|NodeMaintenanceEnded|IsReplica|False";
    let run = decode(&["--json", "--clients"], &push(ended));
    let verdicts = azure_lines(&run.stdout).remove(0).clients.expect("clients");
    let acting: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.verdict.outcome() == "acts")
        .map(|v| v.client.as_str())
        .collect();
    assert_eq!(acting, ["StackExchange.Redis"]);
    assert!(verdicts.len() > 1, "every known client is listed");
    let se = verdicts
        .iter()
        .find(|v| v.client == "StackExchange.Redis")
        .unwrap();
    let said = se.verdict.describe();
    assert!(
        said.contains("ReconfigureAsync") && said.contains("2.2.79"),
        "{said}"
    );
    let text = decode(&["--clients"], &push(ended)).stdout;
    assert!(text.contains("    redis-py 8.1.0: ignores: does not subscribe to AzureRedisEvents"));
}

#[test]
fn replay_check_reads_the_lines_back_and_sees_a_changed_parse() {
    let run = decode(&["--json"], &push(STARTING));
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.jsonl");
    std::fs::write(&kept, &run.stdout).unwrap();
    let changed = dir.path().join("changed.jsonl");
    let edited = run
        .stdout
        .replace(r#""ssl_port":6380"#, r#""ssl_port":6381"#);
    assert_ne!(edited, run.stdout);
    std::fs::write(&changed, edited).unwrap();
    let check = |path: &std::path::Path| {
        let out = common::maintwatch(["replay", "--check"])
            .arg(path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, said) = check(&kept);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("1 frame checked, 0 differ"), "{said}");
    let (code, said) = check(&changed);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("parse differs"), "{said}");
}

fn payload_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        any::<u8>(),
        Just(b'|'),
        Just(b'T'),
        Just(b'\r'),
        Just(b'\n')
    ];
    proptest::collection::vec(byte, 0..120)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The library parse and decode's path take any payload: one line each, bytes intact.
    #[test]
    fn any_payload_is_parsed_and_decoded_whole(
        payloads in proptest::collection::vec(payload_bytes(), 1..6)
    ) {
        for p in &payloads {
            let e = azure::parse(p);
            prop_assert!(e.extra.len() <= azure::MAX_EXTRA);
            prop_assert!(e.notes.len() <= azure::MAX_NOTES + 1);
        }
        let frames: Vec<Vec<u8>> = payloads.iter().map(|p| push(p)).collect();
        let lines = azure_lines(&decode(&["--json"], &frames.concat()).stdout);
        prop_assert_eq!(lines.len(), payloads.len());
        for ((line, payload), frame) in lines.iter().zip(&payloads).zip(&frames) {
            prop_assert_eq!(&line.payload, payload);
            prop_assert_eq!(line.frame_raw.as_ref(), Some(frame));
            prop_assert_eq!(&line.event, &azure::parse(payload));
        }
        // The same payloads as bare text lines: line breaks are layout there, so they go.
        let bare: Vec<Vec<u8>> = payloads
            .iter()
            .map(|p| {
                let body = p.iter().filter(|b| !matches!(b, b'\r' | b'\n'));
                b"NotificationType|".iter().chain(body).copied().collect()
            })
            .collect();
        let text = bare.join(&b'\n');
        let lines = azure_lines(&decode(&["--json"], &text).stdout);
        prop_assert_eq!(lines.len(), bare.len());
        for (line, payload) in lines.iter().zip(&bare) {
            prop_assert_eq!(&line.payload, payload);
        }
    }
}
