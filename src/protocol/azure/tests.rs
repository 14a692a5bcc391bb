use super::*;
use crate::protocol::resp::{Scan, Scanner};

const STARTING: &[u8] =
    b"NotificationType|NodeMaintenanceStarting|StartTimeInUTC|2026-12-03T11:00:20\
|IsReplica|False|IPAddress|10.0.0.5|SSLPort|6380|NonSSLPort|6379";

fn has_note(e: &AzureEvent, part: &str) -> bool {
    e.notes.iter().any(|n| n.contains(part))
}

#[test]
fn a_well_formed_message_reads_every_field_without_a_note() {
    let e = parse(STARTING);
    assert_eq!(e.kind, Some(AzureKind::Starting));
    assert_eq!(e.reference_kind, Some(AzureKind::Starting));
    assert_eq!(e.type_text.as_deref(), Some("NodeMaintenanceStarting"));
    assert_eq!(e.start_utc.as_deref(), Some("2026-12-03T11:00:20"));
    assert_eq!(e.start_unix_ms, Some(1_796_295_620_000));
    assert_eq!(e.is_replica, Some(false));
    assert_eq!(e.ip.as_deref(), Some("10.0.0.5"));
    assert_eq!((e.ssl_port, e.non_ssl_port), (Some(6380), Some(6379)));
    assert!(e.notes.is_empty(), "{:?}", e.notes);
    assert_eq!(e.reference_ignores, None);
    assert_eq!(
        e.describe(),
        "NodeMaintenanceStarting primary 10.0.0.5:6380/6379 starts 2026-12-03T11:00:20Z"
    );
}

#[test]
fn kinds_know_their_wire_names_and_windows() {
    for k in AzureKind::ALL {
        assert_eq!(AzureKind::from_wire(k.wire_name()), Some(k));
        assert_eq!(
            serde_json::to_string(&k).unwrap(),
            format!("\"{}\"", k.wire_name())
        );
        assert!(!(k.opens_window() && k.closes_window()), "{k:?}");
    }
    assert_eq!(
        AzureKind::from_wire("NodeMaintenanceFailover"),
        Some(AzureKind::FailoverComplete)
    );
    assert_eq!(AzureKind::from_wire("nodemaintenancestart"), None);
    assert!(!AzureKind::Scheduled.opens_window() && !AzureKind::Scheduled.closes_window());
    assert!(AzureKind::Starting.opens_window() && AzureKind::Start.opens_window());
    assert!(AzureKind::Ended.closes_window() && AzureKind::ScaleComplete.closes_window());
}

#[test]
fn the_legacy_failover_name_is_failover_complete_with_a_note() {
    let e = parse(b"NotificationType|NodeMaintenanceFailover|StartTimeInUTC||IsReplica|False|IPAddress|10.0.0.5|SSLPort|6380|NonSSLPort|6379");
    assert_eq!(e.kind, Some(AzureKind::FailoverComplete));
    assert_eq!(e.reference_kind, Some(AzureKind::FailoverComplete));
    assert!(has_note(&e, "legacy type"), "{:?}", e.notes);
    // FailoverComplete is documented without a start time: the empty one is no note.
    assert!(!has_note(&e, "StartTimeInUTC"), "{:?}", e.notes);
    assert!(e
        .describe()
        .contains("(sent as \"NodeMaintenanceFailover\")"));
    assert!(e.reference_reaction().contains("ReconfigureAsync"));
}

#[test]
fn the_walk_takes_the_pairs_the_reference_takes() {
    // StackExchange.Redis's own test strings: empty values are skipped, extra bars too, and a
    // key without a value stops the walk.
    let e = parse(b"NotificationType|NodeMaintenanceStarting|somejunkkey|somejunkvalue|StartTimeInUTC|2021-03-02T23:26:57|IsReplica|False|IPAddress||SSLPort|15999|NonSSLPort|139991");
    assert_eq!(e.kind, Some(AzureKind::Starting));
    assert_eq!(
        e.extra,
        vec![("somejunkkey".into(), "somejunkvalue".into())]
    );
    assert_eq!(e.ip, None);
    assert!(has_note(&e, "IPAddress empty"));
    assert_eq!(e.ssl_port, Some(15999));
    assert_eq!(e.non_ssl_port, None);
    assert!(has_note(&e, "NonSSLPort \"139991\" is over 65535"));
    // 139991 is an int to .NET: the reference reads it, so no reason is given for it.
    assert_eq!(e.reference_ignores, None);

    let e = parse(b"||NotificationType|||NodeMaintenanceStart");
    assert_eq!(
        e.type_text, None,
        "the value after a key is the next field: empty"
    );
    assert!(has_note(&e, "extra '|'"), "{:?}", e.notes);
    assert_eq!(e.unparsed.as_deref(), Some("NodeMaintenanceStart"));

    let e = parse(b"NotificationType|NodeMaintenanceEnded|StartTimeInUTC|");
    assert_eq!(e.kind, Some(AzureKind::Ended));
    assert_eq!(e.unparsed.as_deref(), Some("StartTimeInUTC|"));
    assert!(has_note(&e, "a key the payload ends on"));
}

#[test]
fn a_message_without_a_bar_is_kept_raw() {
    let e = parse(b"NotificationTypeNodeMaintenanceStartingIsReplicaFalse");
    assert_eq!(e.kind, None);
    assert_eq!(
        e.unparsed.as_deref(),
        Some("NotificationTypeNodeMaintenanceStartingIsReplicaFalse")
    );
    assert!(has_note(&e, "no key|value pair"));
    assert!(e.reference_ignores.unwrap().contains("type is Unknown"));
    let empty = parse(b"");
    assert!(has_note(&empty, "no key|value pair"));
    assert_eq!(empty.unparsed, None);
}

#[test]
fn lower_case_booleans_are_read_and_the_reference_agrees() {
    let e = parse(b"NotificationType|NodeMaintenanceStart|IsReplica|true|IPAddress|10.0.0.6|SSLPort|6380|NonSSLPort|6379");
    assert_eq!(e.is_replica, Some(true));
    assert!(has_note(&e, "not True or False as documented"));
    assert_eq!(e.reference_ignores, None, "bool.TryParse ignores case");
    assert!(e
        .describe()
        .starts_with("NodeMaintenanceStart replica 10.0.0.6"));
    assert!(e.reference_reaction().contains("primary is not touched"));
    let e = parse(b"NotificationType|NodeMaintenanceStart|IsReplica|yes");
    assert_eq!(e.is_replica, None);
    assert!(e
        .reference_ignores
        .unwrap()
        .contains("takes the node for the primary"));
}

#[test]
fn odd_case_keys_are_read_but_the_reference_skips_them() {
    let e = parse(b"notificationtype|NodeMaintenanceEnded|IsReplica|False");
    assert_eq!(e.kind, Some(AzureKind::Ended));
    assert_eq!(e.reference_kind, None);
    let why = e.reference_ignores.clone().unwrap();
    assert!(why.contains("case-sensitively"), "{why}");
    assert!(why.contains("type is Unknown"), "{why}");
    assert!(!e.reference_reaction().contains("ReconfigureAsync"));
    // An odd-case value: read, but to the reference it is Unknown.
    let e = parse(b"NotificationType| nodemaintenanceended|IsReplica|False");
    assert_eq!(e.kind, Some(AzureKind::Ended));
    assert_eq!(e.reference_kind, None);
    assert!(has_note(&e, "ignoring case"));
}

#[test]
fn unknown_types_and_missing_fields_cost_only_themselves() {
    let e = parse(b"NotificationType|NodeMaintenanceRebooting|IPAddress|10.0.0.5");
    assert_eq!(e.kind, None);
    assert_eq!(e.type_text.as_deref(), Some("NodeMaintenanceRebooting"));
    assert_eq!(e.ip.as_deref(), Some("10.0.0.5"));
    for key in ["StartTimeInUTC", "IsReplica", "SSLPort", "NonSSLPort"] {
        assert!(
            has_note(&e, &format!("{key} missing")),
            "{key}: {:?}",
            e.notes
        );
    }
    assert!(e
        .describe()
        .starts_with("unknown type \"NodeMaintenanceRebooting\" node"));
    assert!(e.reference_reaction().contains("Unknown"));
}

#[test]
fn start_times_in_other_forms_are_read_with_a_note() {
    // (milliseconds read, whether the reference would miss the time)
    let at = |text: &str| {
        let payload = format!("NotificationType|NodeMaintenanceScheduled|StartTimeInUTC|{text}");
        let e = parse(payload.as_bytes());
        let missed = e
            .reference_ignores
            .is_some_and(|why| why.contains("no start time"));
        (e.start_unix_ms, missed)
    };
    assert_eq!(at("2026-12-03T11:00:20"), (Some(1_796_295_620_000), false));
    assert_eq!(at("2026-12-03T11:00:20Z"), (Some(1_796_295_620_000), true));
    assert_eq!(at("2026-12-03T11:00:20.5"), (Some(1_796_295_620_500), true));
    assert_eq!(at("2026-12-03 11:00:20"), (Some(1_796_295_620_000), true));
    assert_eq!(
        at("2026-12-03T12:00:20+01:00"),
        (Some(1_796_295_620_000), true)
    );
    assert_eq!(at("2026-02-30T11:00:20"), (None, true));
    assert_eq!(at("tomorrow"), (None, true));
}

#[test]
fn a_valid_repeat_replaces_and_an_invalid_one_does_not() {
    let e = parse(
        b"NotificationType|NodeMaintenanceStart|IsReplica|True|IsReplica|junk|SSLPort|1|SSLPort|2",
    );
    assert_eq!(e.is_replica, Some(true));
    assert_eq!(e.ssl_port, Some(2));
    assert!(has_note(&e, "IsReplica given 2 times"));
}

#[test]
fn what_is_kept_is_capped_and_the_cut_is_said() {
    let mut payload = b"NotificationType|NodeMaintenanceStart".to_vec();
    for i in 0..1000 {
        payload.extend_from_slice(format!("|k{i}|v").as_bytes());
        payload.extend_from_slice(b"|IsReplica|maybe");
    }
    let e = parse(&payload);
    assert_eq!(e.extra.len(), MAX_EXTRA);
    assert!(
        has_note(&e, "984 more unknown pair(s) not kept"),
        "{:?}",
        e.notes
    );
    assert!(e.notes.len() <= MAX_NOTES + 1);
    let long = [b"NotificationType|".as_slice(), &[b'x'; 5000]].concat();
    let e = parse(&long);
    assert_eq!(e.type_text.as_ref().map(String::len), Some(MAX_TEXT));
    assert!(has_note(&e, "is 5000 bytes long"));
}

#[test]
fn invalid_utf8_is_replaced_with_a_note_and_the_cut_keeps_whole_characters() {
    let e = parse(b"NotificationType|Node\xffStart");
    assert_eq!(e.type_text.as_deref(), Some("Node\u{fffd}Start"));
    assert!(has_note(&e, "not valid UTF-8"));
    // One ASCII byte first, so the cut at MAX_TEXT falls inside a two-byte character.
    let mut long = b"NotificationType|x".to_vec();
    long.extend(std::iter::repeat_n("é".as_bytes(), 600).flatten());
    let e = parse(&long);
    let kept = e.type_text.clone().unwrap();
    assert_eq!(kept.len(), MAX_TEXT - 1);
    assert!(kept[1..].chars().all(|c| c == 'é'), "{kept}");
    assert!(!has_note(&e, "not valid UTF-8"), "{:?}", e.notes);
}

#[test]
fn describe_is_safe_for_a_terminal() {
    let e = parse(b"NotificationType|\x1b[31mX\xe2\x80\xae|IPAddress|::1\x07");
    let line = e.describe();
    assert!(
        !line.chars().any(crate::shared::escape::is_unsafe_char),
        "{line:?}"
    );
    assert!(line.contains("[::1"), "{line}");
}

#[test]
fn azure_hosts_are_the_reference_suffixes_in_any_case() {
    assert!(is_azure_host("mycache.redis.cache.windows.net"));
    assert!(is_azure_host("MyCache.Redis.Cache.Windows.NET"));
    assert!(is_azure_host("c.redis.cache.sovcloud-api.fr"));
    assert!(is_azure_host("c.redis.cache.chinacloudapi.cn"));
    assert!(
        !is_azure_host("redis.cache.windows.net"),
        "the dot is part of it"
    );
    assert!(!is_azure_host("c.redis.cache.windows.net."));
    assert!(!is_azure_host("c.redis.azure.net"), "Azure Managed Redis");
    assert!(!is_azure_host("é"));
}

fn frame_payload(bytes: &[u8]) -> Option<Vec<u8>> {
    match Scanner::default().scan(bytes).expect("valid frame") {
        Scan::Frame(f, _) => message_payload(&f).map(<[u8]>::to_vec),
        Scan::Incomplete { .. } => panic!("incomplete"),
    }
}

#[test]
fn message_payload_takes_resp3_and_resp2_messages_on_the_channel_only() {
    let push = b">3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n$3\r\nabc\r\n";
    assert_eq!(frame_payload(push), Some(b"abc".to_vec()));
    let array = b"*3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n$3\r\nabc\r\n";
    assert_eq!(frame_payload(array), Some(b"abc".to_vec()));
    let other = b">3\r\n$7\r\nmessage\r\n$16\r\nazureredisevents\r\n$3\r\nabc\r\n";
    assert_eq!(frame_payload(other), None);
    let subscribe = b">3\r\n$9\r\nsubscribe\r\n$16\r\nAzureRedisEvents\r\n:1\r\n";
    assert_eq!(frame_payload(subscribe), None);
    assert_eq!(
        frame_payload(b">2\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n"),
        None
    );
}

#[test]
fn an_event_round_trips_through_json() {
    let e = parse(b"NotificationType|NodeMaintenanceStart|x|y|IsReplica|maybe|tail");
    let json = serde_json::to_string(&e).unwrap();
    assert_eq!(serde_json::from_str::<AzureEvent>(&json).unwrap(), e);
}

proptest::proptest! {
    #[test]
    fn any_payload_parses_without_panic_and_within_its_caps(
        bytes in proptest::collection::vec(proptest::prop_oneof![
            proptest::num::u8::ANY,
            proptest::strategy::Just(b'|'),
        ], 0..400)
    ) {
        let e = parse(&bytes);
        proptest::prop_assert!(e.extra.len() <= MAX_EXTRA);
        proptest::prop_assert!(e.notes.len() <= MAX_NOTES + 1);
        proptest::prop_assert!(!e.describe().chars().any(crate::shared::escape::is_unsafe_char));
        let _ = e.reference_reaction();
    }
}
