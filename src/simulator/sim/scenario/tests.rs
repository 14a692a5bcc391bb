use super::*;

const MINIMAL: &str = "name t\nabout a test\nproxies 127.0.0.2\ndns 127.0.0.2\nend 1\n";

fn err(extra: &str) -> String {
    Scenario::parse("scenarios/x.scn", &format!("{MINIMAL}{extra}\n"))
        .unwrap_err()
        .to_string()
}

#[test]
fn spublish_needs_a_cluster_and_a_sane_interval() {
    assert!(
        err("spublish every 0.5").contains("'spublish' needs a cluster topology"),
        "{}",
        err("spublish every 0.5")
    );
    let cluster = "node 127.0.0.2 0-16383\n";
    assert!(err(&format!("{cluster}spublish 0.5")).contains("expected 'every SECONDS'"));
    assert!(err(&format!("{cluster}spublish every 0.01")).contains("at most every 0.1 s"));
    let s = Scenario::parse("x", &format!("{MINIMAL}{cluster}spublish every 0.5\n")).unwrap();
    let ticks: Vec<f64> = s
        .steps
        .iter()
        .filter(|st| matches!(st.action, Action::ShardPublish { .. }))
        .map(|st| st.at)
        .collect();
    assert_eq!(ticks, [0.0, 0.5, 1.0]);
}

/// `start opt-in N ssubscribe` waits for a sharded subscription too; a cluster client's
/// subscriber is what it needs of the client.
#[test]
fn the_clock_can_wait_for_a_sharded_subscription() {
    let s = Scenario::parse("x", &format!("{MINIMAL}start opt-in 3 ssubscribe\n")).unwrap();
    assert_eq!(s.start, Start::OptInSsubscribe(3));
    let s = Scenario::parse("x", &format!("{MINIMAL}start opt-in 3\n")).unwrap();
    assert_eq!(s.start, Start::OptIn(3));
}

#[test]
fn optin_steps_accept_or_refuse() {
    let s = Scenario::parse(
        "scenarios/x.scn",
        &format!("{MINIMAL}at 0.5 optin refuse\nat 0.8 optin accept\n"),
    )
    .unwrap();
    let actions: Vec<&Action> = s.steps.iter().map(|st| &st.action).collect();
    assert_eq!(actions, [&Action::OptIn(false), &Action::OptIn(true)]);
    assert_eq!(
        err("at 0 optin maybe"),
        "scenarios/x.scn:6: field 'optin': expected accept or refuse, found \"maybe\""
    );
}

#[test]
fn errors_name_file_line_and_field() {
    assert_eq!(
        err("at 0 push 127.0.0.2 MOVING time=abc target=null"),
        "scenarios/x.scn:6: field 'time': expected an integer, found \"abc\""
    );
    assert_eq!(
        err("at 0 push 127.0.0.2 MOVING time=15"),
        "scenarios/x.scn:6: field 'target': MOVING needs it"
    );
    assert_eq!(
        err("at 0 push 127.0.0.2 MIGRATED time=2 shards=[\"1\"]"),
        "scenarios/x.scn:6: field 'time': not a field of MIGRATED (it takes shards)"
    );
    assert_eq!(
        err("at 2 dns 127.0.0.3"),
        "scenarios/x.scn:6: field 'at': 2 s is after the end (1 s)"
    );
    assert_eq!(
        err("at 0 close 127.0.0.9"),
        "scenarios/x.scn:6: 127.0.0.9 is not one of the proxies"
    );
    assert!(err("ttl five").starts_with("scenarios/x.scn:6: field 'ttl': expected"));
    assert!(err("at 0 push * raw >1\\r\\n+x").contains("incomplete frame"));
    assert!(err("at 0 push * raw +OK\\r\\n").contains("expected a push frame"));
    assert!(err("bogus 1").contains("unknown keyword \"bogus\""));
    assert!(err("start opt-in 0").contains("field 'start': expected 1 or more"));
    assert!(err("start later").contains("field 'start': expected now, connect"));
    assert!(err("start opt-in 3 subscribe").contains("expected opt-in N or opt-in N ssubscribe"));
    assert!(err("start opt-in 3 ssubscribe x").contains("found \"opt-in 3 ssubscribe x\""));
    assert_eq!(
        Scenario::parse("f.scn", "name t\n")
            .unwrap_err()
            .to_string(),
        "f.scn: no 'about' line"
    );
}

#[test]
fn structured_pushes_encode_like_the_captures() {
    let s = Scenario::parse(
        "x",
        &format!(
            "{MINIMAL}at 0 push 127.0.0.2 MOVING time=15 target=null\n\
             at 0 push * MIGRATING time=2 shards=[\"27\"]   # comment\n\
             at 0 push * SMIGRATED move=10.129.228.140:13486,10.252.90.18:13486,8892-8991\n\
             at 0 push * MOVING time=15 target=127.0.0.3:{{port}}\n\
             at 0 push * raw >2\\r\\n#t\\r\\n+x\\r\\n\n"
        ),
    )
    .unwrap();
    let bytes: Vec<Vec<u8>> = s
        .steps
        .iter()
        .map(|st| match &st.action {
            Action::Push { push, .. } => push.encode(if st.line == 8 { 19 } else { 0 }, 6380),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(bytes[0], b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
    assert_eq!(
        bytes[1],
        b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n"
    );
    assert_eq!(
        bytes[2],
        &b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$20\r\n10.129.228.140:13486\r\n$18\r\n10.252.90.18:13486\r\n$9\r\n8892-8991\r\n"[..]
    );
    assert_eq!(
        bytes[3],
        b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n$14\r\n127.0.0.3:6380\r\n"
    );
    assert_eq!(bytes[4], b">2\r\n#t\r\n+x\r\n");
}

#[test]
fn slot_lists() {
    assert_eq!(
        parse_slots("0-5,7,,16383"),
        Ok(vec![(0, 5), (7, 7), (16383, 16383)])
    );
    assert!(parse_slots("5-3").is_err());
    assert!(parse_slots("16384").is_err());
    assert!(parse_slots("+1").is_err());
}

#[test]
fn a_raw_push_can_wait_for_a_connection_state() {
    let s = Scenario::parse(
        "x",
        &format!("{MINIMAL}at 0.5 push * when blocked raw >2\\r\\n$3\\r\\nfoo\\r\\n:1\\r\\n\n"),
    )
    .unwrap();
    let Action::Push { push, .. } = &s.steps[0].action else {
        panic!("{:?}", s.steps[0].action)
    };
    assert_eq!(
        push,
        &Push::RawWhen(b">2\r\n$3\r\nfoo\r\n:1\r\n".to_vec(), When::Blocked)
    );
    // The narration's first word is the grade's kind: still `raw`.
    assert!(push.summary(1).starts_with("raw "), "{}", push.summary(1));
    assert!(push.summary(1).ends_with("(when blocked)"));
    assert_eq!(
        err("at 0 push * when busy raw >1\\r\\n:1\\r\\n"),
        "scenarios/x.scn:6: field 'when': expected pipeline, multi, blocked or subscribed, found \"busy\""
    );
    assert!(err("at 0 push * when multi MOVING time=1 target=null").contains("expected 'raw'"));
}
