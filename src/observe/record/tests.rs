//! Tests of the schema's types: wire names, and lines of older captures still read.

#[test]
fn closed_sets_of_values_keep_their_wire_names() {
    use super::{ClosedBy, DnsEvent, DryRunOutcome, OursChange, TopologyReason};
    let wire = |v: serde_json::Value| v.as_str().unwrap().to_string();
    assert_eq!(wire(serde_json::json!(ClosedBy::Server)), "server");
    assert_eq!(wire(serde_json::json!(DnsEvent::CannotTell)), "cannot_tell");
    assert_eq!(wire(serde_json::json!(OursChange::Rejoined)), "rejoined");
    assert_eq!(
        wire(serde_json::json!(DryRunOutcome::RefreshTopology)),
        "refresh_topology"
    );
    assert_eq!(TopologyReason::Discovered.as_str(), "discovered");
    assert_eq!(
        serde_json::from_str::<DryRunOutcome>(r#""stale_at_expiry""#).unwrap(),
        DryRunOutcome::StaleAtExpiry
    );
    assert!(serde_json::from_str::<ClosedBy>(r#""nobody""#).is_err());
    assert!(ClosedBy::Watch == "watch" && ClosedBy::Watch != "server");
}

#[test]
fn a_line_deserialises_into_its_named_payload_and_refuses_unknown_fields() {
    let text = r#"{"type":"verdict","v":1,"t":1.5,"at":"2026-11-30T20:49:23.448800Z","conn":1,"event":"MOVING seq 0","text":"x","margin_s":6.1}"#;
    let line: super::WatchLine = serde_json::from_str(text).unwrap();
    let super::WatchLine::Verdict(v) = &line else {
        panic!("{line:?}")
    };
    assert_eq!((v.conn, v.margin_s), (1, Some(6.1)));
    // The wire format is unchanged: the same text comes back.
    assert_eq!(serde_json::to_string(&line).unwrap(), text);
    let extra = text.replace(r#""conn":1,"#, r#""conn":1,"extra":true,"#);
    let err = serde_json::from_str::<super::WatchLine>(&extra).unwrap_err();
    assert!(err.to_string().contains("unknown field `extra`"), "{err}");
}

use super::*;
use crate::protocol::notification::Classified;
use crate::protocol::resp::{Scan, Scanner};

/// The direct reader gives what the derived one gives, for every line of the committed
/// captures, and leaves the text as it was; a line it cannot read gets the derived
/// reader's error.
#[test]
fn lines_read_directly_equal_lines_read_through_the_tag() {
    let captures = [
        include_str!("../../../tests/fixtures/captures/oss-cluster.jsonl"),
        include_str!("../../../tests/fixtures/captures/shard-migration.jsonl"),
        include_str!("../../../tests/fixtures/captures/single-proxy.jsonl"),
    ];
    let mut n = 0;
    for text in captures.iter().flat_map(|c| c.lines()) {
        let mut bytes = text.as_bytes().to_vec();
        let direct = WatchLine::from_json(&mut bytes).unwrap();
        assert_eq!(bytes, text.as_bytes());
        assert_eq!(direct, serde_json::from_str::<WatchLine>(text).unwrap());
        n += 1;
    }
    assert!(n > 50, "{n}");
    for bad in [
        r#"{"type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null,"extra":1}"#,
        r#"{"type":"verdict","type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null}"#,
        r#"{"type":"nonsense","v":1}"#,
        r#"{"type":"push","#,
        r#"{"v":1,"type":"verdict","t":1.5,"at":"x","conn":1,"event":"e","text":"x","margin_s":null}"#,
    ] {
        let mut bytes = bad.as_bytes().to_vec();
        let direct = WatchLine::from_json(&mut bytes).map_err(|e| e.to_string());
        let derived = serde_json::from_str::<WatchLine>(bad).map_err(|e| e.to_string());
        assert_eq!(direct, derived, "{bad}");
        assert_eq!(bytes, bad.as_bytes());
    }
}

/// The recorded parse reads the same through the direct path (`class` first) and the
/// derived one (any other order), and refuses the same things.
#[test]
fn a_recorded_parse_reads_the_same_whatever_the_order_of_its_fields() {
    let record = |parsed: &str| format!(r#"{{"offset":0,"len":3,"raw":"x","parsed":{parsed}}}"#);
    let read = |parsed: &str| {
        serde_json::from_str::<FrameRecord>(&record(parsed))
            .map(|r| r.parsed)
            .map_err(|e| e.to_string())
    };
    let derived =
        |parsed: &str| serde_json::from_str::<Classified>(parsed).map_err(|e| e.to_string());
    let moving = r#"{"kind":"MOVING","type_text":"MOVING","seq":4,"time":15,"target":null}"#;
    for (class_first, other_order) in [
        (
            r#"{"class":"other_push","name":"message","elements":3,"known":true}"#,
            r#"{"name":"message","class":"other_push","elements":3,"known":true}"#,
        ),
        (
            &*format!(r#"{{"class":"maintenance",{}"#, &moving[1..]),
            &*format!(r#"{},"class":"maintenance"}}"#, &moving[..moving.len() - 1]),
        ),
        (r#"{"class":"not_push"}"#, r#"{"class":"not_push"}"#),
    ] {
        let direct = read(class_first);
        assert!(direct.is_ok(), "{class_first}: {direct:?}");
        assert_eq!(direct, read(other_order));
        assert_eq!(direct.clone().ok(), derived(class_first).ok());
    }
    for bad in [
        r#"{"class":"other_push","name":"m","elements":3,"known":true,"extra":1}"#,
        r#"{"class":"other_push","name":"m"}"#,
        r#"{"class":"nonsense"}"#,
        r#"{"name":"m","elements":3,"known":true}"#,
        r#"{"class":3}"#,
    ] {
        assert!(read(bad).is_err(), "{bad}");
        assert!(derived(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_moving_without_a_target_says_null_and_old_lines_still_read() {
    let raw = b">3\r\n$6\r\nMOVING\r\n:4\r\n:15\r\n";
    let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
        panic!()
    };
    let record = FrameRecord::new(&frame, raw, 0);
    let json = serde_json::to_value(&record).unwrap();
    let parsed = &json["parsed"];
    assert!(
        parsed.as_object().unwrap().contains_key("target") && parsed["target"].is_null(),
        "{json}"
    );
    // A capture written before the key was always there still reads, to the same value.
    let mut old = json.clone();
    old["parsed"].as_object_mut().unwrap().remove("target");
    let back: FrameRecord = serde_json::from_value(old).unwrap();
    assert_eq!(back, record);
}

#[test]
fn lines_written_before_the_new_optional_fields_still_read() {
    let old = r#"{"type":"closed","v":1,"t":1.0,"at":"x","conn":1,"by":"server","error":null,"announced":true,"window_s":15,"past_s":1.6,"rel":null}"#;
    let line: WatchLine = serde_json::from_str(old).unwrap();
    assert!(matches!(
        line,
        WatchLine::Closed(line::Closed {
            joined_open: false,
            ..
        })
    ));
    let old = r#"{"type":"handoff","v":1,"t":1.0,"at":"x","conn":1,"event":"MOVING seq 0","outcome":"moved","at_s":9.8,"moves":true,"text":"moved","rel":null}"#;
    let line: WatchLine = serde_json::from_str(old).unwrap();
    assert!(matches!(
        line,
        WatchLine::Handoff(line::Handoff { to: None, .. })
    ));
}
