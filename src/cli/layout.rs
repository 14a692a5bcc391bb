//! Help laid out for the width it is read at, so that `--help` is a screen like any other: clap
//! wraps what is left too long at spaces and nothing else, which parts a value from its unit,
//! breaks a hand-aligned table into ragged rows and cuts a shell command in two.
//!
//! The texts after the options (`after_help`: exit codes, scenario lists, examples) are laid out
//! here, every line within the width, so clap leaves them as they are:
//! - an example command too long for a row goes on to the next with ` \`, as a shell reads it,
//!   never inside a quoted word;
//! - a table row (two spaces, a key, a gap of two or more spaces, text) goes on under its text;
//! - prose is wrapped between words, a value kept with its unit.
//!
//! The descriptions clap lays out itself (`about`, each option's help) get a no-break space
//! between a number and its unit, so clap's wrapping cannot part them either.

use clap::Command;

use crate::present::output::human::{glue_units, hanging, wrap_with};

/// `cmd` and its subcommands with their help laid out for `width` columns.
pub fn fit(mut cmd: Command, width: usize) -> Command {
    if let Some(text) = cmd.get_after_help().map(|t| t.to_string()) {
        cmd = cmd.after_help(after_help(&text, width));
    }
    if let Some(text) = cmd.get_about().map(|t| t.to_string()) {
        cmd = cmd.about(glue_units(&text));
    }
    if let Some(text) = cmd.get_long_about().map(|t| t.to_string()) {
        cmd = cmd.long_about(glue_units(&text));
    }
    cmd = cmd.mut_args(|mut arg| {
        if let Some(help) = arg.get_help().map(|t| glue_units(&t.to_string())) {
            arg = arg.help(help);
        }
        if let Some(long) = arg.get_long_help().map(|t| glue_units(&t.to_string())) {
            arg = arg.long_help(long);
        }
        arg
    });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |sub| fit(sub, width));
    }
    cmd
}

/// An `after_help` text with every line within `width` (see the module's doc). Lines under a
/// heading that starts with `Examples` or `Then` are shell commands.
pub fn after_help(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    let mut commands = false;
    for line in rows_joined(text) {
        let line = line.as_str();
        if !line.starts_with(' ') {
            commands = line.starts_with("Examples") || line.starts_with("Then");
            out.extend(wrap_with(line, width, ""));
        } else if commands {
            out.extend(command_rows(line, width));
        } else {
            out.extend(table_rows(line, width));
        }
    }
    out.join("\n")
}

/// The lines of `text` with a table row's hand-made continuations (lines indented to its text
/// column) joined to it, to be wrapped again as one.
fn rows_joined(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut column = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let (Some(c), Some(last)) = (column, lines.last_mut()) {
            if indent == c && !line.trim().is_empty() {
                last.push(' ');
                last.push_str(line.trim());
                continue;
            }
        }
        column = text_column(line);
        lines.push(line.to_string());
    }
    lines
}

/// Where a table row's text starts: after its indent, its key and a gap of two or more spaces.
fn text_column(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start().len();
    if indent == 0 {
        return None;
    }
    let body = &line[indent..];
    let key_end = body.find(' ')?;
    let gap = body[key_end..].len() - body[key_end..].trim_start().len();
    (gap >= 2 && key_end + gap < body.len()).then_some(indent + key_end + gap)
}

/// Where a command's rows go on: deeper than the commands, so each reads as one.
const COMMAND_CONTINUATION: &str = "      ";

/// A shell command broken between its words into rows ending ` \`; a quoted word (`'a b'`) is
/// one word. A word too long for any row stays whole.
fn command_rows(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    let indent = &line[..line.len() - line.trim_start().len()];
    let mut rows = Vec::new();
    let mut row = indent.to_string();
    let mut fresh = true;
    for word in shell_words(line.trim_start()) {
        let room = width.saturating_sub(2);
        if !fresh && row.chars().count() + 1 + word.chars().count() > room {
            rows.push(format!("{row} \\"));
            row = COMMAND_CONTINUATION.to_string();
            fresh = true;
        }
        if !fresh {
            row.push(' ');
        }
        row.push_str(word);
        fresh = false;
    }
    rows.push(row);
    rows
}

/// The words of a command line, split at spaces outside quotes. A run of spaces before a `#`
/// comment is kept with it, so an aligned comment stays aligned when it fits.
fn shell_words(line: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut quote = None;
    let mut start = 0;
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (None, b'\'' | b'"') => quote = Some(b),
            (Some(q), _) if q == b => quote = None,
            (None, b' ') => {
                if i > start {
                    words.push(&line[start..i]);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < line.len() {
        words.push(&line[start..]);
    }
    words
}

/// A table row (`  KEY  text`) wrapped between words under its text; a row without a gap after
/// its key goes on two spaces deeper than its indent.
fn table_rows(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    match text_column(line) {
        Some(column) => hanging(&line[..column], &line[column..], width),
        None => {
            let indent = line.len() - line.trim_start().len();
            wrap_with(line, width, &" ".repeat(indent + 2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_goes_on_with_a_backslash_and_never_inside_quotes() {
        let line = "  maintwatch pcap --port 12000 --json maint.pcap | jq -c 'select(.type == \"pcap_verdict\")'";
        let rows = after_help(&format!("Examples:\n{line}"), 60);
        let rows: Vec<&str> = rows.lines().skip(1).collect();
        assert!(rows.len() > 1, "{rows:?}");
        assert!(rows.iter().all(|r| r.chars().count() <= 60), "{rows:?}");
        assert!(rows[..rows.len() - 1].iter().all(|r| r.ends_with(" \\")));
        assert!(rows
            .last()
            .unwrap()
            .contains("'select(.type == \"pcap_verdict\")'"));
        // Pasted into a shell, the rows are the one command again.
        let pasted: Vec<&str> = rows
            .iter()
            .map(|r| r.trim().trim_end_matches('\\').trim_end())
            .collect();
        assert_eq!(pasted.join(" "), line.trim());
    }

    #[test]
    fn a_table_row_goes_on_under_its_text_and_prose_keeps_units() {
        let text = "Exit codes:\n  130  interrupted (Ctrl-C); 143: SIGTERM; 129: SIGHUP: the servers and the client were stopped\nSIGKILL follows 5 s later, then the run ends and nothing else is left running.";
        let rows: Vec<String> = after_help(text, 50).lines().map(String::from).collect();
        assert!(rows.iter().all(|r| r.chars().count() <= 50), "{rows:?}");
        let under = rows
            .iter()
            .filter(|r| r.starts_with("       ") && !r.starts_with("        "));
        assert!(under.count() >= 1, "{rows:?}");
        assert!(!rows.iter().any(|r| r.ends_with(" 5")), "{rows:?}");
        // A row's hand-made continuation is wrapped again with it, not left ragged.
        let table = "Codes:\n  2  usage error (bad flag or endpoint); also when a line was bad and\n     none did worse";
        let rows = after_help(table, 200);
        assert!(
            rows.ends_with("also when a line was bad and none did worse"),
            "{rows}"
        );
    }

    #[test]
    fn clap_sees_no_break_between_a_number_and_its_unit() {
        assert_eq!(glue_units("stops 5 s later"), "stops 5\u{a0}s later");
        assert_eq!(glue_units("seq 3 shards"), "seq 3 shards");
    }
}
