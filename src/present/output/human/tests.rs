//! Tests of the rendered entries: what each line type reads as, escaped and within the width.

use super::safe::{push_is_clean, serialized_is_clean};
use super::style::parsed_clock;
use super::*;
use crate::observe::record::{Label, OptInOutcome, SCHEMA_VERSION};
use crate::protocol::notification::Classified;

fn handshake(server: &str, text: &str, version: &str) -> WatchLine {
    WatchLine::Handshake(line::Handshake {
        v: SCHEMA_VERSION,
        t: 0.0,
        at: "2026-01-01T00:00:00.123456Z".into(),
        conn: 1,
        opt_in: OptInOutcome::Refused,
        text: Some(text.into()),
        server: Some(server.into()),
        version: Some(version.into()),
        mode: None,
        sent: None,
        repeat_of: None,
        sim_speed: None,
    })
}

#[test]
fn server_text_reaches_the_terminal_escaped() {
    let line = handshake(
        "redis\x1b]0;owned\x07\x1b[2J",
        "ERR no\r\n00:00:00.000 [1] opt-in accepted FAKE\u{9b}",
        "7\u{202e}1",
    );
    let out = render(&line, &Style::default());
    // One entry: wrapped at 80 columns maybe, but every further line is its continuation,
    // none a line the server forged.
    assert!(
        out[1..].iter().all(|l| l.starts_with(CONTINUATION)),
        "{out:?}"
    );
    let text = &out.join(" ");
    assert!(
        !text.chars().any(crate::shared::escape::is_unsafe_char),
        "{text:?}"
    );
    assert!(text.contains("redis\\x1b]0;owned\\x07\\x1b[2J"), "{text}");
    assert!(
        text.contains("ERR no\\r\\n00:00:00.000 [1] opt-in accepted"),
        "{text}"
    );
    assert!(text.contains("FAKE\\u{9b}"), "{text}");
    // A refusal says what happens next, once, within the width.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words.matches(AFTER_REFUSAL).count(), 1, "{words}");
    assert!(out.iter().all(|l| visible_width(l) <= WIDTH), "{out:?}");
    assert!(text.contains("7\\u{202e}1"), "{text}");
    // Colour is ours and still works around the escaped text.
    let coloured = render(
        &line,
        &Style {
            color: true,
            ..Style::default()
        },
    );
    // The entry's two lines hold 4 escapes of ours; each line of the refusal's note 2.
    let ours = 4 + 2 * (coloured.len() - 2);
    assert_eq!(
        coloured.concat().matches('\x1b').count(),
        ours,
        "{coloured:?}"
    );
}

#[test]
fn clean_lines_are_not_copied() {
    let line = handshake("redis", "ERR unknown subcommand", "7.2");
    assert!(matches!(
        terminal_safe(&line),
        std::borrow::Cow::Borrowed(_)
    ));
    // A backslash is not a control character: `\x1b` typed as text stays as it is.
    let line = handshake("a\\x1b", "b", "7.2");
    assert!(matches!(
        terminal_safe(&line),
        std::borrow::Cow::Borrowed(_)
    ));
}

/// The direct check of a push line finds an unsafe character in each of its strings, as
/// the check through serde does.
#[test]
fn a_push_line_is_checked_field_by_field_like_the_serialised_check() {
    use crate::observe::record::{CopyOf, FrameRecord};
    use crate::protocol::notification::OtherPush;
    let push = |at: &str, to: &str, raw: &str, name: &str, ours: &str| {
        WatchLine::Push(line::Push {
            v: SCHEMA_VERSION,
            t: 1.0,
            at: at.into(),
            conn: 1,
            labels: vec![Label::Resent],
            rel: Some(Rel {
                to: to.into(),
                s: 0.5,
            }),
            frame: FrameRecord {
                offset: 0,
                len: 3,
                raw: raw.into(),
                parsed: Classified::OtherPush(OtherPush {
                    name: Some(name.to_string().into()),
                    elements: 3,
                    known: true,
                }),
            },
            copy_of: Some(CopyOf {
                conn: 2,
                after_ms: 1.0,
            }),
            sources_ours: vec![ours.into()],
        })
    };
    let clean = [
        "2026-01-01T00:00:00.000000Z",
        "MOVING seq 1",
        ">1\\r\\n",
        "message",
        "a:1",
    ];
    for field in 0..=clean.len() {
        for bad in ["\x1b[31m", "\u{202e}", "\n", "\u{9b}"] {
            let mut f = clean;
            if field < f.len() {
                f[field] = bad;
            }
            let line = push(f[0], f[1], f[2], f[3], f[4]);
            let WatchLine::Push(p) = &line else {
                unreachable!()
            };
            assert_eq!(
                push_is_clean(p),
                serialized_is_clean(&line),
                "{field} {bad:?}"
            );
            assert_eq!(push_is_clean(p), field == clean.len(), "{field} {bad:?}");
        }
    }
}

#[test]
fn compact_time_by_default_full_and_rfc3339_on_request() {
    let at = "2026-01-01T00:00:00.123456Z";
    let compact = clock(at, TimeFormat::Compact);
    assert_eq!(compact.len(), "HH:MM:SS.mmm".len(), "{compact}");
    assert!(compact.ends_with(".123"), "{compact}");
    let full = clock(at, TimeFormat::Full);
    assert!(full.ends_with(".123456"), "{full}");
    assert_eq!(clock(at, TimeFormat::Rfc3339), at);
}

/// The cached second gives what parsing each line gave, across seconds and back.
#[test]
fn the_cached_clock_matches_parsing_every_line() {
    for at in [
        "2026-01-01T00:00:00.123456Z",
        "2026-01-01T00:00:00.999999Z",
        "2026-01-01T00:00:01.000001Z",
        "2025-12-31T23:59:59.500000Z",
        "2026-01-01T00:00:01.000002Z",
        // Other shapes are parsed on their own.
        "2026-01-01T00:00:01.5Z",
        "2026-01-01T01:00:01.123456+01:00",
        "not a time",
    ] {
        for format in [TimeFormat::Compact, TimeFormat::Full] {
            assert_eq!(clock(at, format), parsed_clock(at, format), "{at}");
        }
    }
}

#[test]
fn a_successful_ping_is_detail_a_failed_one_is_not() {
    let ping = |error: Option<&str>| {
        WatchLine::Ping(line::Ping {
            v: SCHEMA_VERSION,
            t: 0.0,
            at: String::new(),
            conn: 1,
            latency_ms: error.is_none().then_some(0.2),
            error: error.map(str::to_string),
            window: None,
        })
    };
    assert!(is_detail(&ping(None)));
    assert!(!is_detail(&ping(Some("connection closed"))));
}
