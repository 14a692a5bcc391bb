//! The notification parser against the captured frames and every tolerance rule of docs/protocol.md
//! section 2 (and the non-maintenance pushes of section 7). Each test carries the exact bytes of
//! the frame it checks, so a failure names the wire form that regressed.

use maintwatch::protocol::notification::{
    classify, Classified, HostPort, Kind, Migrations, Notification, OtherPush, ShardIds, SlotMove,
    Slots, SmigratedForm, Target,
};
use maintwatch::protocol::resp::{Frame, Scan, Scanner, StreamReader};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// helpers

/// Scans exactly one frame that must occupy the whole input.
fn scan_one(bytes: &[u8]) -> Frame<'_> {
    match Scanner::default().scan(bytes) {
        Ok(Scan::Frame(frame, n)) => {
            assert_eq!(n, bytes.len(), "the frame should occupy the whole input");
            frame
        }
        other => panic!("expected one whole frame, got {other:?}"),
    }
}

fn classify_bytes(bytes: &[u8]) -> Classified {
    classify(&scan_one(bytes))
}

/// The notification the bytes hold; fails when they are not one.
fn note(bytes: &[u8]) -> Notification {
    match classify_bytes(bytes) {
        Classified::Maintenance(n) => *n,
        other => panic!(
            "{:?} is not a maintenance notification: {other:?}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

fn other_push(bytes: &[u8]) -> OtherPush {
    match classify_bytes(bytes) {
        Classified::OtherPush(p) => p,
        other => panic!(
            "{:?} should be a non-maintenance push: {other:?}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

/// The `.resp` files of the captures folder, sorted.
fn capture_files() -> Vec<String> {
    let dir = format!("{}/tests/fixtures/captures", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".resp"))
        .collect();
    names.sort();
    names
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/captures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn has_note(n: &Notification, needle: &str) -> bool {
    n.notes.iter().any(|s| s.contains(needle))
}

#[track_caller]
fn assert_note(n: &Notification, needle: &str) {
    assert!(
        has_note(n, needle),
        "expected a note containing {needle:?}, notes: {:?}",
        n.notes
    );
}

fn shards(raw: &str, ids: Option<&[&str]>) -> Option<ShardIds> {
    Some(ShardIds {
        raw: raw.to_string(),
        ids: ids.map(|ids| ids.iter().map(|s| s.to_string()).collect()),
    })
}

fn slots(raw: &str, ranges: Option<&[(u16, u16)]>) -> Slots {
    Slots {
        raw: raw.to_string(),
        ranges: ranges.map(<[_]>::to_vec),
    }
}

/// The explicit RESP3 null endpoint of a MOVING: a target with no raw text and no address.
const NULL_TARGET: Option<Target> = Some(Target {
    raw: None,
    address: None,
});

/// The shard ids of the MIGRATING/MIGRATED captures, `["27"]`.
fn shard_27() -> Option<ShardIds> {
    shards("[\"27\"]", Some(&["27"]))
}

/// The slot range of the SMIGRATING/SMIGRATED captures, `8892-8991`.
fn slots_8892() -> Slots {
    slots("8892-8991", Some(&[(8892, 8991)]))
}

/// A push of blob strings and raw elements, built by hand so a test reads like the wire.
fn blob(text: &str) -> String {
    format!("${}\r\n{text}\r\n", text.len())
}

/// `SMIGRATING seq 18 <slots>` with the slot list as a blob string.
fn smigrating_with_slots(list: &str) -> Vec<u8> {
    format!(">3\r\n$10\r\nSMIGRATING\r\n:18\r\n{}", blob(list)).into_bytes()
}

/// `MOVING seq 1 time 15 <endpoint>` with the endpoint as a blob string.
fn moving_to(endpoint: &str) -> Vec<u8> {
    format!(">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n{}", blob(endpoint)).into_bytes()
}

/// `MIGRATING seq 3 time 5 <shards>` with the shard ids as a blob string.
fn migrating_shards(ids: &str) -> Vec<u8> {
    format!(">4\r\n$9\r\nMIGRATING\r\n:3\r\n:5\r\n{}", blob(ids)).into_bytes()
}

// ---------------------------------------------------------------------------------------------
// 1. the seven captures, every field

const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n";
const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n";
const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";
const FAILING_OVER: &[u8] = b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n";
const FAILED_OVER: &[u8] = b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n";
const SMIGRATING: &[u8] = b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n$9\r\n8892-8991\r\n";
const SMIGRATED: &[u8] = b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$20\r\n10.129.228.140:13486\r\n$18\r\n10.252.90.18:13486\r\n$9\r\n8892-8991\r\n";

#[test]
fn fixture_files_are_the_seven_documented_captures() {
    assert_eq!(
        capture_files(),
        [
            "failed-over.resp",
            "failing-over.resp",
            "migrated.resp",
            "migrating.resp",
            "moving-null-target.resp",
            "smigrated.resp",
            "smigrating.resp"
        ]
    );
    // Byte for byte what docs/protocol.md section 2 shows.
    for (name, bytes) in [
        ("moving-null-target.resp", MOVING),
        ("migrating.resp", MIGRATING),
        ("migrated.resp", MIGRATED),
        ("failing-over.resp", FAILING_OVER),
        ("failed-over.resp", FAILED_OVER),
        ("smigrating.resp", SMIGRATING),
        ("smigrated.resp", SMIGRATED),
    ] {
        assert_eq!(fixture(name), bytes, "{name}");
    }
}

/// What each capture parses to, every field, in the form of a frame record's `parsed`
/// (docs/jsonl.md): `tests/fixtures/captures/parsed.json`, one entry per `.resp` file.
fn recorded_parses() -> BTreeMap<String, Classified> {
    let path = format!(
        "{}/tests/fixtures/captures/parsed.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every capture parses to every field recorded for it, and opens or closes a window as its kind
/// does (the kinds' own table is [`opens_and_closes_per_kind`]); together they are one of each
/// kind. Recorded as JSON, the explicit null target (`{"raw":null,"address":null}`) and no
/// target (`null`) stay apart.
#[test]
fn every_capture_parses_to_the_fields_recorded_for_it() {
    let recorded = recorded_parses();
    let files: Vec<&str> = recorded.keys().map(String::as_str).collect();
    assert_eq!(
        files,
        capture_files(),
        "parsed.json has one entry per capture"
    );
    let mut kinds = Vec::new();
    for (file, want) in &recorded {
        let got = classify_bytes(&fixture(file));
        assert_eq!(&got, want, "{file}");
        let n = note(&fixture(file));
        assert_eq!(n.opens(), n.kind.opens(), "{file} opens a window");
        assert_eq!(n.closes(), n.kind.closes(), "{file} closes a window");
        kinds.push(n.kind);
    }
    kinds.sort();
    assert_eq!(kinds, Kind::ALL, "one capture per kind");
    // What the fields mean, beyond their values: a null target names no successor, and the
    // slot range counts its slots.
    let moving = note(&fixture("moving-null-target.resp"));
    assert!(moving.target.is_some() && moving.successor().is_none());
    let smigrating = note(&fixture("smigrating.resp"));
    assert_eq!(smigrating.slots.as_ref().unwrap().count(), Some(100));
}

#[test]
fn opens_and_closes_per_kind() {
    // (kind, opens, closes, carries a time element)
    let table = [
        (Kind::Moving, true, None, true),
        (Kind::Migrating, true, None, true),
        (Kind::Migrated, false, Some(Kind::Migrating), false),
        (Kind::FailingOver, true, None, true),
        (Kind::FailedOver, false, Some(Kind::FailingOver), false),
        (Kind::SMigrating, true, None, false),
        (Kind::SMigrated, false, Some(Kind::SMigrating), false),
    ];
    assert_eq!(table.len(), Kind::ALL.len());
    for (kind, opens, closes, has_time) in table {
        assert_eq!(kind.opens(), opens, "{kind} opens");
        assert_eq!(kind.closes(), closes, "{kind} closes");
        assert_eq!(kind.has_time(), has_time, "{kind} has a time");
    }
    // Only shard-scoped completions are replayed to new opt-ins (docs/protocol.md section 1).
    let retained: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.is_retained()).collect();
    assert_eq!(retained, [Kind::Migrated, Kind::FailedOver]);
}

// ---------------------------------------------------------------------------------------------
// 2. tolerance rules, one test each

#[test]
fn type_as_simple_string_is_accepted() {
    let n = note(b">4\r\n+MOVING\r\n:0\r\n:15\r\n_\r\n");
    assert_eq!(n.kind, Kind::Moving);
    assert_eq!(n.type_text, "MOVING");
    assert_eq!((n.seq, n.time), (Some(0), Some(15)));
    assert_eq!(n.target, NULL_TARGET);
    assert_note(&n, "simple string");

    let n = note(b">3\r\n+MIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.kind, Kind::Migrated);
    assert_eq!(n.shards, shard_27());
}

#[test]
fn type_is_case_insensitive() {
    let n = note(b">4\r\n$6\r\nmoving\r\n:0\r\n:15\r\n_\r\n");
    assert_eq!(n.kind, Kind::Moving);
    assert_eq!(n.type_text, "moving", "the type is kept as sent");
    assert_eq!((n.seq, n.time), (Some(0), Some(15)));

    let n = note(b">4\r\n+MiGrAtInG\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.kind, Kind::Migrating);
    assert_eq!(n.type_text, "MiGrAtInG");

    for kind in Kind::ALL {
        for name in [kind.name().to_lowercase(), kind.name().to_string()] {
            let bytes = format!(">2\r\n{}:7\r\n", blob(&name));
            assert_eq!(note(bytes.as_bytes()).kind, kind, "{bytes:?}");
            let bytes = format!(">2\r\n+{name}\r\n:7\r\n");
            assert_eq!(note(bytes.as_bytes()).kind, kind, "{bytes:?}");
        }
    }
    // Near misses are not notifications.
    assert!(matches!(
        classify_bytes(b">2\r\n$7\r\nMOVING_\r\n:7\r\n"),
        Classified::OtherPush(_)
    ));
    assert!(matches!(
        classify_bytes(b">2\r\n$7\r\nMOVING \r\n:7\r\n"),
        Classified::OtherPush(_)
    ));
}

#[test]
fn seq_as_integer_or_integer_in_a_string() {
    let n = note(b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.seq, Some(1));
    assert!(n.notes.is_empty(), "{:?}", n.notes);

    let n = note(b">3\r\n$8\r\nMIGRATED\r\n$2\r\n42\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.seq, Some(42));
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "seq carried in a string");

    let n = note(b">4\r\n$6\r\nMOVING\r\n+7\r\n:15\r\n_\r\n");
    assert_eq!((n.seq, n.time), (Some(7), Some(15)));
    assert_note(&n, "seq carried in a string");

    // Zero is a real id.
    assert_eq!(note(b">2\r\n$8\r\nMIGRATED\r\n:0\r\n").seq, Some(0));
}

#[test]
fn missing_seq_keeps_the_notification() {
    let n = note(b">1\r\n$8\r\nMIGRATED\r\n");
    assert_eq!(n.kind, Kind::Migrated);
    assert_eq!(n.seq, None);
    assert_eq!(n.shards, None);
    assert_note(&n, "seq missing");
    assert_note(&n, "shard ids missing");

    let n = note(b">1\r\n$6\r\nMOVING\r\n");
    assert_eq!((n.kind, n.seq, n.time), (Kind::Moving, None, None));
    assert_note(&n, "seq missing");
    assert_note(&n, "time missing");
    assert_note(&n, "endpoint missing");
    assert_eq!(n.describe(), "MOVING seq ? window ?");
}

#[test]
fn unreadable_seq_costs_only_deduplication() {
    // A string that is not an integer: the seq is lost, the shard ids are not.
    let n = note(b">3\r\n$8\r\nMIGRATED\r\n$3\r\nabc\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.kind, Kind::Migrated);
    assert_eq!(n.seq, None);
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "seq unreadable");

    // A null seq.
    let n = note(b">4\r\n$6\r\nMOVING\r\n_\r\n:15\r\n_\r\n");
    assert_eq!((n.seq, n.time), (None, Some(15)));
    assert_eq!(n.target, NULL_TARGET);
    assert_note(&n, "seq is null");

    // A double, an array: still the notification, every later field still read.
    let n = note(b">4\r\n$9\r\nMIGRATING\r\n,1.5\r\n:2\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!((n.seq, n.time), (None, Some(2)));
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "seq unreadable (double element)");

    let n = note(b">3\r\n$10\r\nSMIGRATING\r\n*0\r\n$9\r\n8892-8991\r\n");
    assert_eq!(n.seq, None);
    assert_eq!(n.slots, Some(slots_8892()));

    // An integer that does not fit i64 in a string.
    let n = note(b">3\r\n$8\r\nMIGRATED\r\n$20\r\n99999999999999999999\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.seq, None);
    assert_eq!(n.shards, shard_27());
}

#[test]
fn time_is_decided_by_the_type_not_by_content() {
    // SMIGRATING has no time: its integer after the seq is slot 123, not 123 seconds.
    let n = note(b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n:123\r\n");
    assert_eq!(n.seq, Some(18));
    assert_eq!(n.time, None);
    assert_eq!(n.slots, Some(slots("123", Some(&[(123, 123)]))));
    assert!(!has_note(&n, "time"), "{:?}", n.notes);

    let n = note(b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n$3\r\n123\r\n");
    assert_eq!(n.time, None);
    assert_eq!(n.slots, Some(slots("123", Some(&[(123, 123)]))));

    // MIGRATING does have one, even when it reads like a slot.
    let n = note(b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:123\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.time, Some(123));
    assert_eq!(n.slots, None);
}

#[test]
fn zero_and_negative_time_are_kept() {
    let n = note(b">4\r\n$6\r\nMOVING\r\n:2\r\n:0\r\n_\r\n");
    assert_eq!(n.time, Some(0));
    assert!(n.notes.is_empty(), "{:?}", n.notes);

    let n = note(b">4\r\n$6\r\nMOVING\r\n:2\r\n:-5\r\n_\r\n");
    assert_eq!(n.time, Some(-5));
    assert_eq!(n.describe(), "MOVING seq 2 window -5 s target none (null)");

    let n = note(b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:-1\r\n$6\r\n[\"21\"]\r\n");
    assert_eq!(n.time, Some(-1));
    assert_eq!(n.shards, shards("[\"21\"]", Some(&["21"])));

    let n = note(b">4\r\n$9\r\nMIGRATING\r\n:0\r\n$2\r\n-3\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.time, Some(-3));
    assert_note(&n, "time carried in a string");
}

#[test]
fn missing_time_where_one_is_expected() {
    // MOVING seq endpoint: the null endpoint is not taken for a time.
    let n = note(b">3\r\n$6\r\nMOVING\r\n:1\r\n_\r\n");
    assert_eq!((n.seq, n.time), (Some(1), None));
    assert_eq!(n.target, NULL_TARGET);
    assert_note(&n, "time missing");

    let n = note(b">3\r\n$6\r\nMOVING\r\n:1\r\n$14\r\n10.0.0.5:12000\r\n");
    assert_eq!(n.time, None);
    assert_eq!(
        n.successor(),
        Some(&HostPort {
            host: "10.0.0.5".into(),
            port: 12000
        })
    );

    let n = note(b">3\r\n$9\r\nMIGRATING\r\n:0\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!((n.seq, n.time), (Some(0), None));
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "time missing");

    let n = note(b">2\r\n$12\r\nFAILING_OVER\r\n:4\r\n");
    assert_eq!((n.seq, n.time, &n.shards), (Some(4), None, &None));
    assert_note(&n, "time missing");
}

#[test]
fn extra_time_where_none_is_expected() {
    let n = note(b">4\r\n$8\r\nMIGRATED\r\n:1\r\n:2\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(n.time, None, "a type without a time never gets one");
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "extra time");

    let n = note(b">4\r\n$11\r\nFAILED_OVER\r\n:1\r\n:0\r\n$6\r\n[\"21\"]\r\n");
    assert_eq!(n.time, None);
    assert_eq!(n.shards, shards("[\"21\"]", Some(&["21"])));

    let n = note(b">4\r\n$10\r\nSMIGRATING\r\n:18\r\n:15\r\n$9\r\n8892-8991\r\n");
    assert_eq!(n.time, None);
    assert_eq!(n.slots, Some(slots_8892()));
    assert_note(&n, "extra time");

    let n = note(b">4\r\n$9\r\nSMIGRATED\r\n:19\r\n:15\r\n*1\r\n*3\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n$3\r\n1-2\r\n");
    assert_eq!(n.time, None);
    let m = n.migrations.unwrap();
    assert_eq!(m.form, SmigratedForm::Triplets);
    assert_eq!(m.moves.len(), 1);
    assert_eq!(m.moves[0].source.as_deref(), Some("A:1000"));
}

#[test]
fn trailing_elements_are_tolerated() {
    let n = note(b">6\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n$5\r\nextra\r\n:9\r\n");
    assert_eq!((n.seq, n.time), (Some(0), Some(15)));
    assert_eq!(n.target, NULL_TARGET);
    assert_note(&n, "2 trailing element(s) ignored");

    let n = note(b">4\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n%1\r\n+k\r\n+v\r\n");
    assert_eq!(n.shards, shard_27());
    assert_note(&n, "1 trailing element(s) ignored");

    let n = note(b">4\r\n$10\r\nSMIGRATING\r\n:18\r\n$9\r\n8892-8991\r\n_\r\n");
    assert_eq!(n.slots, Some(slots_8892()));
    assert_note(&n, "trailing");

    let n = note(b">4\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n$3\r\n1-2\r\n#t\r\n");
    assert_eq!(n.migrations.as_ref().unwrap().moves.len(), 1);
    assert_note(&n, "1 trailing element(s) ignored");
}

#[track_caller]
fn assert_placeholder(endpoint: &str) {
    let n = note(&moving_to(endpoint));
    assert_eq!(
        n.target,
        Some(Target {
            raw: Some(endpoint.to_string()),
            address: None
        }),
        "{endpoint:?}: no address, raw kept"
    );
    assert!(n.successor().is_none());
    assert_note(&n, "placeholder");
}

#[test]
fn moving_endpoint_null_is_no_address() {
    let n = note(b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n");
    assert_eq!(n.target, NULL_TARGET);
    assert!(n.notes.is_empty(), "{:?}", n.notes);
    assert!(
        n.describe().ends_with("target none (null)"),
        "{}",
        n.describe()
    );
}

#[test]
fn moving_endpoint_question_mark_is_a_placeholder() {
    assert_eq!(
        moving_to("?"),
        b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$1\r\n?\r\n"
    );
    assert_placeholder("?");
    // as a simple string, too
    let n = note(b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n+?\r\n");
    assert_eq!(n.target.unwrap().raw.as_deref(), Some("?"));
}

#[test]
fn moving_endpoint_empty_is_a_placeholder() {
    assert_eq!(
        moving_to(""),
        b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$0\r\n\r\n"
    );
    assert_placeholder("");
}

#[test]
fn moving_endpoint_question_mark_host_is_a_placeholder() {
    assert_eq!(
        moving_to("?:7002"),
        b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$6\r\n?:7002\r\n"
    );
    assert_placeholder("?:7002");
}

#[test]
fn moving_endpoint_empty_host_is_a_placeholder() {
    assert_eq!(
        moving_to(":7002"),
        b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$5\r\n:7002\r\n"
    );
    assert_placeholder(":7002");
}

#[test]
fn moving_endpoint_port_zero_is_a_placeholder() {
    assert_eq!(
        moving_to("10.0.0.1:0"),
        b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$10\r\n10.0.0.1:0\r\n"
    );
    assert_placeholder("10.0.0.1:0");
    assert_placeholder("redis.example.com:0");
}

#[test]
fn moving_endpoint_ipv6_splits_on_the_last_colon() {
    let bytes = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$18\r\n[2001:db8::1]:6379\r\n";
    let n = note(bytes);
    let target = n.target.clone().unwrap();
    assert_eq!(target.raw.as_deref(), Some("[2001:db8::1]:6379"));
    assert_eq!(
        target.address,
        Some(HostPort {
            host: "2001:db8::1".into(),
            port: 6379
        })
    );
    assert!(target.address.as_ref().unwrap().is_ip());
    assert_eq!(
        target.address.unwrap().to_string(),
        "[2001:db8::1]:6379",
        "shown with its brackets back"
    );

    // Without brackets the last colon still separates the port.
    let n = note(&moving_to("fe80::1:7002"));
    assert_eq!(
        n.successor(),
        Some(&HostPort {
            host: "fe80::1".into(),
            port: 7002
        })
    );
    // A bracketed placeholder host.
    assert_placeholder("[]:7002");
}

#[test]
fn moving_endpoint_named_target() {
    let bytes = b">4\r\n$6\r\nMOVING\r\n:5\r\n:15\r\n$26\r\nredis-12.example.com:12000\r\n";
    let n = note(bytes);
    let want = HostPort {
        host: "redis-12.example.com".into(),
        port: 12000,
    };
    assert_eq!(
        n.target,
        Some(Target {
            raw: Some("redis-12.example.com:12000".into()),
            address: Some(want.clone())
        })
    );
    assert_eq!(n.successor(), Some(&want));
    assert!(!want.is_ip());
    assert!(n.notes.is_empty(), "{:?}", n.notes);
    assert!(
        n.describe().ends_with("target redis-12.example.com:12000"),
        "{}",
        n.describe()
    );

    let n = note(&moving_to("10.0.0.5:6379"));
    assert!(n.successor().unwrap().is_ip());
}

#[test]
fn moving_endpoint_without_a_port_keeps_the_raw_text() {
    let n = note(&moving_to("nohost"));
    assert_eq!(
        n.target,
        Some(Target {
            raw: Some("nohost".into()),
            address: None
        })
    );
    assert_note(&n, "endpoint unparsed");
    let n = note(&moving_to("10.0.0.1:port"));
    assert_eq!(n.target.unwrap().address, None);
}

#[test]
fn shard_ids_are_a_json_array() {
    let n = note(&migrating_shards("[\"1\",\"2\",\"30\"]"));
    assert_eq!(
        n.shards,
        shards("[\"1\",\"2\",\"30\"]", Some(&["1", "2", "30"]))
    );
    assert!(n.notes.is_empty(), "{:?}", n.notes);

    let n = note(&migrating_shards("[]"));
    assert_eq!(n.shards, shards("[]", Some(&[])));

    // Numbers in the array are ids too.
    let n = note(&migrating_shards("[27, 28]"));
    assert_eq!(n.shards, shards("[27, 28]", Some(&["27", "28"])));
}

#[test]
fn shard_ids_not_json_keep_the_raw_text() {
    for raw in [
        "27,28",
        "[\"27\"",
        "{\"id\":27}",
        "[[\"27\"]]",
        "[null]",
        "",
    ] {
        let n = note(&migrating_shards(raw));
        assert_eq!(n.shards, shards(raw, None), "{raw:?}");
        assert_note(&n, "not a JSON array: raw kept");
        // The rest of the notification is intact.
        assert_eq!((n.seq, n.time), (Some(3), Some(5)));
    }
}

#[test]
fn slot_list_grammar_accepts_items_and_ranges() {
    let cases: &[(&str, &[(u16, u16)])] = &[
        ("0", &[(0, 0)]),
        ("16383", &[(16383, 16383)]),
        ("0-16383", &[(0, 16383)]),
        ("5-5", &[(5, 5)]),
        ("1,3-5,9", &[(1, 1), (3, 5), (9, 9)]),
        // empty items are skipped
        ("1,,2", &[(1, 1), (2, 2)]),
        (",7,", &[(7, 7)]),
        ("", &[]),
    ];
    for (raw, ranges) in cases {
        let n = note(&smigrating_with_slots(raw));
        assert_eq!(n.slots, Some(slots(raw, Some(ranges))), "{raw:?}");
        assert!(!has_note(&n, "unparsed"), "{raw:?}: {:?}", n.notes);
    }
    assert_eq!(slots("0-9,20", Some(&[(0, 9), (20, 20)])).count(), Some(11));
}

#[test]
fn slot_list_with_one_bad_item_is_unparsed_with_raw_kept() {
    for raw in [
        "16384",       // out of range
        "0-16384",     // out of range end
        "5-3",         // N > M
        "1,x,3",       // one bad item among good ones
        "-3",          // no start
        "3-",          // no end
        "1-2-3",       // two dashes
        "+5",          // sign
        "1;2",         // wrong separator
        "99999999999", // overflow
    ] {
        let n = note(&smigrating_with_slots(raw));
        assert_eq!(n.slots, Some(slots(raw, None)), "{raw:?}");
        assert_eq!(n.slots.as_ref().unwrap().count(), None);
        assert_note(&n, "slot list unparsed: raw kept");
        assert_eq!(n.seq, Some(18), "the rest is intact");
    }
}

#[test]
fn smigrated_triplets() {
    let bytes = b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*2\r\n\
*3\r\n$14\r\n10.0.0.1:13486\r\n$14\r\n10.0.0.2:13486\r\n$9\r\n8892-8991\r\n\
*3\r\n$14\r\n10.0.0.3:13486\r\n$14\r\n10.0.0.4:13486\r\n$7\r\n1,2,4-6\r\n";
    let n = note(bytes);
    assert_eq!(
        n.migrations,
        Some(Migrations {
            form: SmigratedForm::Triplets,
            moves: vec![
                SlotMove {
                    source: Some("10.0.0.1:13486".into()),
                    target: "10.0.0.2:13486".into(),
                    slots: slots("8892-8991", Some(&[(8892, 8991)])),
                },
                SlotMove {
                    source: Some("10.0.0.3:13486".into()),
                    target: "10.0.0.4:13486".into(),
                    slots: slots("1,2,4-6", Some(&[(1, 1), (2, 2), (4, 6)])),
                },
            ],
            skipped: 0,
        })
    );
    assert!(n.notes.is_empty(), "{:?}", n.notes);

    // An empty list is a valid (if uninformative) SMIGRATED.
    let n = note(b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*0\r\n");
    let m = n.migrations.unwrap();
    assert_eq!(
        (m.form, m.moves.len(), m.skipped),
        (SmigratedForm::Triplets, 0, 0)
    );
}

#[test]
fn smigrated_malformed_triplet_is_skipped_and_counted() {
    let bytes = b">3\r\n$9\r\nSMIGRATED\r\n:20\r\n*5\r\n\
*3\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n$3\r\n1-2\r\n\
*1\r\n$6\r\nA:1000\r\n\
:7\r\n\
*3\r\n$6\r\nA:1000\r\n:2000\r\n$3\r\n1-2\r\n\
*3\r\n$6\r\nC:3000\r\n$6\r\nD:4000\r\n$1\r\n9\r\n";
    let n = note(bytes);
    assert_eq!(n.seq, Some(20));
    let m = n.migrations.clone().unwrap();
    assert_eq!(m.form, SmigratedForm::Triplets);
    assert_eq!(
        m.skipped, 3,
        "one-element entry, integer entry, triplet with an integer"
    );
    assert_eq!(
        m.moves,
        vec![
            SlotMove {
                source: Some("A:1000".into()),
                target: "B:2000".into(),
                slots: slots("1-2", Some(&[(1, 2)])),
            },
            SlotMove {
                source: Some("C:3000".into()),
                target: "D:4000".into(),
                slots: slots("9", Some(&[(9, 9)])),
            },
        ]
    );
    assert_note(&n, "3 malformed migration entry(ies) skipped");
    assert!(
        n.describe().contains("(3 malformed skipped)"),
        "{}",
        n.describe()
    );
}

#[test]
fn smigrated_triplet_with_a_bad_slot_list_keeps_raw() {
    let n = note(
        b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n$7\r\n9-1,abc\r\n",
    );
    let m = n.migrations.clone().unwrap();
    assert_eq!(m.moves[0].slots, slots("9-1,abc", None));
    assert_eq!(m.skipped, 0, "a bad slot list is not a malformed triplet");
    assert_note(&n, "slot list unparsed: raw kept");
}

#[test]
fn smigrated_older_pair_form() {
    let bytes = b">3\r\n$9\r\nSMIGRATED\r\n:21\r\n*2\r\n\
*2\r\n$14\r\n127.0.0.1:7001\r\n$5\r\n0-100\r\n\
*2\r\n$14\r\n127.0.0.1:7002\r\n$3\r\n101\r\n";
    let n = note(bytes);
    assert_eq!(
        n.migrations,
        Some(Migrations {
            form: SmigratedForm::Pairs,
            moves: vec![
                SlotMove {
                    source: None,
                    target: "127.0.0.1:7001".into(),
                    slots: slots("0-100", Some(&[(0, 100)])),
                },
                SlotMove {
                    source: None,
                    target: "127.0.0.1:7002".into(),
                    slots: slots("101", Some(&[(101, 101)])),
                },
            ],
            skipped: 0,
        })
    );
    assert_note(&n, "older pair form");
}

#[test]
fn smigrated_older_flat_form() {
    let n = note(b">4\r\n$9\r\nSMIGRATED\r\n:3\r\n$14\r\n127.0.0.1:7001\r\n$5\r\n0-100\r\n");
    assert_eq!(
        n.migrations,
        Some(Migrations {
            form: SmigratedForm::Flat,
            moves: vec![SlotMove {
                source: None,
                target: "127.0.0.1:7001".into(),
                slots: slots("0-100", Some(&[(0, 100)])),
            }],
            skipped: 0,
        })
    );
    assert_note(&n, "older flat form");
    assert!(!has_note(&n, "trailing"), "{:?}", n.notes);
}

#[test]
fn smigrated_unreadable_migrations_keep_the_notification() {
    let n = note(b">3\r\n$9\r\nSMIGRATED\r\n:3\r\n:5\r\n");
    assert_eq!(n.seq, Some(3));
    let m = n.migrations.clone().unwrap();
    assert_eq!((m.moves.len(), m.skipped), (0, 1));
    assert_note(&n, "migrations unreadable");

    let n = note(b">2\r\n$9\r\nSMIGRATED\r\n:3\r\n");
    assert_eq!(n.migrations, None);
    assert_note(&n, "migrations missing");
}

// pub/sub, tracking and unknown pushes (docs/protocol.md section 7 bytes)

#[track_caller]
fn assert_known_push(bytes: &[u8], name: &str, elements: usize) {
    assert_eq!(
        other_push(bytes),
        OtherPush {
            name: Some(name.to_string().into()),
            elements,
            known: true
        },
        "{:?}",
        String::from_utf8_lossy(bytes)
    );
}

#[test]
fn pubsub_message_is_not_maintenance() {
    assert_known_push(
        b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$5\r\nhello\r\n",
        "message",
        3,
    );
    // A channel or payload that says MOVING does not make a message a notification.
    assert_known_push(
        b">3\r\n$7\r\nmessage\r\n$6\r\nMOVING\r\n$6\r\nMOVING\r\n",
        "message",
        3,
    );
}

#[test]
fn pubsub_pmessage_is_not_maintenance() {
    assert_known_push(
        b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nc1\r\n$2\r\nm1\r\n",
        "pmessage",
        4,
    );
}

#[test]
fn pubsub_smessage_is_not_maintenance() {
    assert_known_push(
        b">3\r\n$8\r\nsmessage\r\n$2\r\nsc\r\n$2\r\nsm\r\n",
        "smessage",
        3,
    );
}

#[test]
fn pubsub_subscribe_is_not_maintenance() {
    assert_known_push(
        b">3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n",
        "subscribe",
        3,
    );
}

#[test]
fn tracking_invalidate_array_and_null_are_not_maintenance() {
    assert_known_push(
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n",
        "invalidate",
        2,
    );
    // After FLUSHALL: null, not an array.
    assert_known_push(b">2\r\n$10\r\ninvalidate\r\n_\r\n", "invalidate", 2);
}

#[test]
fn unknown_pushes_are_not_maintenance() {
    assert_eq!(
        other_push(b">2\r\n$5\r\nhello\r\n:1\r\n"),
        OtherPush {
            name: Some("hello".into()),
            elements: 2,
            known: false
        }
    );
    // No name at all: empty, or a first element that is not text.
    assert_eq!(
        other_push(b">0\r\n"),
        OtherPush {
            name: None,
            elements: 0,
            known: false
        }
    );
    assert_eq!(other_push(b">2\r\n:1\r\n$6\r\nMOVING\r\n").name, None);
    assert_eq!(other_push(b">1\r\n*1\r\n$6\r\nMOVING\r\n").name, None);
    // Replies are not pushes, whatever they say.
    assert_eq!(
        classify_bytes(b"*4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n"),
        Classified::NotPush
    );
    assert_eq!(classify_bytes(b"+MOVING\r\n"), Classified::NotPush);
    assert_eq!(classify_bytes(b"+OK\r\n"), Classified::NotPush);
}

#[test]
fn attributes_before_a_push_do_not_hide_it() {
    let n = note(b"|1\r\n+key\r\n:1\r\n>4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
    assert_eq!((n.kind, n.seq, n.time), (Kind::Moving, Some(0), Some(15)));
}

#[test]
fn a_reply_and_a_push_in_one_read_scan_as_two_frames() {
    let read: &[u8] = b"+OK\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk2\r\n";
    let (frames, end, error) = Scanner::default().scan_all(read);
    assert_eq!(error, None);
    assert_eq!(end, read.len());
    let spans: Vec<_> = frames.iter().map(|(_, span)| span.clone()).collect();
    assert_eq!(spans, [0..5, 5..read.len()]);
    assert_eq!(frames[0].0, Frame::Simple(b"OK"));
    assert_eq!(classify(&frames[0].0), Classified::NotPush);
    assert_eq!(
        classify(&frames[1].0),
        Classified::OtherPush(OtherPush {
            name: Some("invalidate".into()),
            elements: 2,
            known: true
        })
    );

    // The same bytes arriving one at a time give the same two frames at the same offsets.
    let mut reader = StreamReader::default();
    let mut seen = Vec::new();
    for b in read {
        reader.extend(std::slice::from_ref(b));
        reader
            .drain(|f, raw, off| seen.push((classify(f), raw.to_vec(), off)))
            .unwrap();
    }
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], (Classified::NotPush, b"+OK\r\n".to_vec(), 0));
    assert_eq!(seen[1].1, &read[5..]);
    assert_eq!(seen[1].2, 5);
    assert!(reader.buffered().is_empty());
}

#[test]
fn pushes_between_replies_do_not_desynchronise() {
    // A pipelined exchange: reply, notification, non-maintenance push, refused opt-in, reply.
    let stream = [
        b"+OK\r\n".as_slice(),
        MOVING,
        b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$5\r\nhello\r\n",
        b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n",
        SMIGRATED,
        b"+PONG\r\n",
    ];
    let bytes = stream.concat();
    let (frames, end, error) = Scanner::default().scan_all(&bytes);
    assert_eq!((end, error), (bytes.len(), None));
    assert_eq!(frames.len(), stream.len());
    let mut at = 0;
    for ((frame, span), part) in frames.iter().zip(stream) {
        assert_eq!(span.clone(), at..at + part.len());
        assert_eq!(&bytes[span.clone()], part);
        at += part.len();
        let _ = frame;
    }
    let kinds: Vec<Option<Kind>> = frames
        .iter()
        .map(|(f, _)| match classify(f) {
            Classified::Maintenance(n) => Some(n.kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(Kind::Moving),
            None,
            None,
            Some(Kind::SMigrated),
            None
        ]
    );
}

// SMIGRATED: a malformed triplet is skipped and counted, never read as an old-style pair
// (docs/protocol.md section 2).
#[test]
fn smigrated_malformed_triplets_are_not_read_as_pairs() {
    // One good triplet, then a triplet missing its slots and one whose source is not an address:
    // both have two elements, as a pair would, and outnumber the triplet.
    let bytes = b">3\r\n$9\r\nSMIGRATED\r\n:22\r\n*3\r\n\
*3\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n$3\r\n1-2\r\n\
*2\r\n$6\r\nA:1000\r\n$6\r\nB:2000\r\n\
*2\r\n$3\r\nbad\r\n$3\r\n3-4\r\n";
    let n = note(bytes);
    let m = n.migrations.clone().unwrap();
    assert_eq!(m.form, SmigratedForm::Triplets, "{m:?}");
    assert_eq!(m.skipped, 2, "{m:?}");
    assert_eq!(
        m.moves,
        vec![SlotMove {
            source: Some("A:1000".into()),
            target: "B:2000".into(),
            slots: slots("1-2", Some(&[(1, 2)])),
        }]
    );
    assert!(!has_note(&n, "older pair form"), "{:?}", n.notes);
    assert_note(&n, "2 malformed migration entry(ies) skipped");

    // Alone, an entry whose "target" is no address is not a pair either.
    let n = note(b">3\r\n$9\r\nSMIGRATED\r\n:23\r\n*1\r\n*2\r\n$3\r\nbad\r\n$3\r\n3-4\r\n");
    let m = n.migrations.clone().unwrap();
    assert!(
        m.moves.iter().all(|mv| mv.target != "bad"),
        "target \"bad\" read from a malformed entry: {m:?}"
    );
    assert_eq!(
        (m.form, m.moves.len(), m.skipped),
        (SmigratedForm::Triplets, 0, 1)
    );
}

// ---------------------------------------------------------------------------------------------
// A MOVING target that is no address (issue 12): not UTF-8, too long, or no host name at all.

#[test]
fn a_moving_target_that_is_no_host_name_is_no_usable_address() {
    let long = format!("{}:6379", "a".repeat(10 * 1024));
    let label = format!("{}.example.com:6379", "b".repeat(64));
    let l63 = "e".repeat(63);
    let over = format!("{l63}.{l63}.{l63}.{}:7000", "f".repeat(62));
    for endpoint in [
        long.as_str(),
        label.as_str(),
        over.as_str(),
        "bad host:6379",
        "evil\u{1b}]0;title\u{7}.example:6379",
        "-leading.example:6379",
        "a..b:6379",
    ] {
        let n = note(&moving_to(endpoint));
        let target = n.target.clone().expect("a target");
        assert_eq!(target.address, None, "{endpoint:.40}");
        assert_eq!(n.successor(), None, "{endpoint:.40}");
        // What was sent is kept, and the note says why it is not used.
        assert_eq!(target.raw.as_deref(), Some(endpoint));
        assert_note(&n, "no usable address");
    }
    // Invalid UTF-8 in the host.
    let mut bytes = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$14\r\n".to_vec();
    bytes.extend_from_slice(b"db\xff\xfe.test:6379\r\n");
    let n = note(&bytes);
    assert_eq!(n.target.as_ref().unwrap().address, None);
    assert_note(&n, "not valid UTF-8");

    // What stays usable: names at the limits, IP addresses, a trailing dot.
    let l63 = "c".repeat(63);
    let at_limit = format!("{l63}.{l63}.{l63}.{}:7000", "d".repeat(61));
    assert_eq!(at_limit.len(), 253 + ":7000".len());
    for endpoint in [
        at_limit.as_str(),
        "redis-12.example.com.:12000",
        "my_host.internal:6379",
        "10.0.0.5:6379",
        "[2001:db8::1]:6379",
    ] {
        let n = note(&moving_to(endpoint));
        assert!(n.successor().is_some(), "{endpoint:.40}: {:?}", n.notes);
    }
}
