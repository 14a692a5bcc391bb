//! The one switch between JSON and human lines, for the timeline's lines, a command's own
//! lines and a command's one value.

use std::io::{self, Write};

use super::human_lines::HumanLines;
use super::json_lines::JsonLines;
use super::traits::{LineWriter, Sink};
use crate::present::output::human::Style;

/// The one place that picks between JSON and human lines on an output: for the timeline's lines
/// and for a command's own ([`Sink::record`]).
pub fn lines<'a, W: LineWriter + 'a>(
    out: W,
    json: bool,
    style: Style,
    verbose: bool,
) -> Box<dyn Sink + 'a> {
    if json {
        Box::new(JsonLines::new(out))
    } else {
        Box::new(HumanLines::new(out, style, verbose))
    }
}

/// The same switch for a command whose output is one value rather than timeline lines
/// (`decide`): `value` as one JSON line, or `text` for people.
pub fn one(
    out: &mut dyn Write,
    json: bool,
    value: &impl serde::Serialize,
    text: &impl std::fmt::Display,
) -> io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, value)?;
        out.write_all(b"\n")
    } else {
        writeln!(out, "{text}")
    }
}

#[cfg(test)]
mod one_tests {
    #[test]
    fn one_value_is_a_json_line_or_its_text() {
        let value = serde_json::json!({"type": "decision", "v": 1});
        let mut json = Vec::new();
        super::one(&mut json, true, &value, &"moves to x").unwrap();
        assert_eq!(json, b"{\"type\":\"decision\",\"v\":1}\n");
        let mut human = Vec::new();
        super::one(&mut human, false, &value, &"moves to x").unwrap();
        assert_eq!(human, b"moves to x\n");
    }

    /// A line of another schema, as `decode` and `pcap` hand them to their sink.
    struct Other;

    impl super::super::Record for Other {
        fn write_json(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
            crate::observe::record::write::write_value(
                out,
                &serde_json::json!({"type": "other", "v": 1}),
            )
        }

        fn render(&self, _style: &super::Style) -> Vec<String> {
            vec!["first".into(), "    second".into()]
        }
    }

    #[test]
    fn a_record_is_a_json_line_or_its_text_lines_by_the_same_switch() {
        let style = super::Style::default();
        let mut json = Vec::new();
        super::lines(&mut json, true, style, true)
            .record(&Other)
            .unwrap();
        assert_eq!(json, b"{\"type\":\"other\",\"v\":1}\n");
        let mut human = Vec::new();
        let inner = super::lines(&mut human, false, style, true);
        // `--clients` wraps the human sink: a record still reaches it.
        let mut clients = super::super::ClientLines::new(inner, None);
        super::super::Sink::record(&mut clients, &Other).unwrap();
        drop(clients);
        assert_eq!(human, b"first\n    second\n");
    }
}
