//! How wide the terminal that reads stdout is, decided once per command so that lines and tables
//! are wrapped once, to what a person sees.
//!
//! Piped or redirected output keeps the fixed width of 80 ([`super::human::WIDTH`]): files and
//! scripts see the same lines on every machine, whatever window started them.

use std::io::{IsTerminal, Write};

/// Narrower than this, a `COLUMNS` value is taken for a mistake and ignored.
const MIN_COLUMNS: usize = 20;

/// The columns of the terminal stdout is, or `None` when stdout is not a terminal.
///
/// `COLUMNS`, when set to a number, overrides what the terminal says (as `ls` does); else the
/// terminal's own size; else 80.
pub fn stdout_columns() -> Option<usize> {
    columns_if(std::io::stdout().is_terminal())
}

/// The columns of the terminal stderr is, or `None` when stderr is not a terminal: the last
/// word of a command (why it stopped) is wrapped there too, not cut by the terminal mid-word.
pub fn stderr_columns() -> Option<usize> {
    columns_if(std::io::stderr().is_terminal())
}

/// The terminal's columns (see [`stdout_columns`]) when the stream is one.
fn columns_if(terminal: bool) -> Option<usize> {
    terminal.then(|| {
        columns_from(std::env::var("COLUMNS").ok().as_deref(), || {
            comfy_table::Table::new().width().map(usize::from)
        })
    })
}

/// A line for stderr, wrapped between words to a terminal's width (as is on a pipe): a last
/// word such as why a command stopped is not cut by the terminal in the middle of a word.
pub fn say(text: &str) {
    match stderr_columns() {
        Some(width) => {
            for line in super::human::wrap_with(text, width, "  ") {
                to_stderr(&line);
            }
        }
        None => to_stderr(text),
    }
}

/// One line on stderr, the way every line of ours gets there. A reader that went away
/// (`2>&1 | head`) loses the line and nothing else happens: `eprintln!` panics on a closed
/// stderr (exit 101), and a last word nobody reads must not change the exit code the command
/// earned.
pub fn to_stderr(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// A line for stderr in the one form every message has: `maintwatch: `, then the text,
/// sanitised (it may quote a server, a file or a hook's output). `kind` is `warning`, `note`,
/// or empty for neither.
pub fn message(kind: &str, text: &str) -> String {
    let text = crate::shared::escape::sanitize(text);
    match kind {
        "" => format!("maintwatch: {text}"),
        kind => format!("maintwatch: {kind}: {text}"),
    }
}

/// A command's own line about one of its inputs (a capture's line, a file, an endpoint):
/// `maintwatch replay: FILE:LINE: ...`, sanitised like [`message`]. Commands that report per
/// input write it to the stream they were given, so tests read it as users do.
pub fn about(command: &str, text: &str) -> String {
    format!(
        "maintwatch {command}: {}",
        crate::shared::escape::sanitize(text)
    )
}

/// [`message`] on stderr, wrapped to a terminal as [`say`] does.
pub fn tell(kind: &str, text: &str) {
    say(&message(kind, text));
}

/// The one way an error is shown: `maintwatch: ` and the error with its causes, on one line
/// (sanitised: a cause may quote a server or a file), wrapped between words on a terminal.
pub fn print_error(e: &anyhow::Error) {
    for line in error_lines(e, stderr_columns()) {
        to_stderr(&line);
    }
}

/// The lines [`print_error`] writes, for a terminal `width` wide (`None`: not a terminal, one
/// line).
pub fn error_lines(e: &anyhow::Error, width: Option<usize>) -> Vec<String> {
    let text = message("", &format!("{e:#}"));
    match width {
        Some(width) => super::human::wrap_with(&text, width, "  "),
        None => vec![text],
    }
}

/// The width lines for stdout are kept within: the terminal's, or 80 when piped.
pub fn stdout_width() -> usize {
    stdout_columns().unwrap_or(super::human::WIDTH)
}

/// The rule of [`stdout_columns`] on the variable's value and the terminal's answer.
fn columns_from(env: Option<&str>, terminal: impl FnOnce() -> Option<usize>) -> usize {
    env.and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&w| w >= MIN_COLUMNS)
        .or_else(terminal)
        .filter(|&w| w > 0)
        .unwrap_or(super::human::WIDTH)
}

#[cfg(test)]
mod tests {
    use super::{columns_from, error_lines, message};

    #[test]
    fn every_message_has_the_prefix_and_is_sanitised() {
        assert_eq!(message("warning", "w"), "maintwatch: warning: w");
        assert_eq!(
            message("", "hook said \x1b[2Jhi"),
            "maintwatch: hook said \\x1b[2Jhi"
        );
    }

    #[test]
    fn an_error_is_one_sanitised_line_or_wrapped_to_the_terminal() {
        let e = anyhow::anyhow!("bad\x1b[2J value").context("--upstream");
        let lines = error_lines(&e, None);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("maintwatch: --upstream: bad"),
            "{lines:?}"
        );
        assert!(!lines[0].contains('\x1b'), "{lines:?}");
        let long = anyhow::anyhow!("{}", "word ".repeat(40));
        let lines = error_lines(&long, Some(40));
        assert!(
            lines.len() > 1 && lines.iter().all(|l| l.chars().count() <= 40),
            "{lines:?}"
        );
    }

    #[test]
    fn columns_overrides_the_terminal_unless_it_is_not_a_width() {
        assert_eq!(columns_from(Some("132"), || Some(200)), 132);
        assert_eq!(columns_from(Some(" 90 "), || None), 90);
        for bad in ["", "wide", "-3", "5", "0"] {
            assert_eq!(columns_from(Some(bad), || Some(200)), 200, "{bad:?}");
        }
        assert_eq!(columns_from(None, || Some(200)), 200);
        // A terminal that cannot say, or says 0 (a serial console): 80.
        assert_eq!(columns_from(None, || None), 80);
        assert_eq!(columns_from(None, || Some(0)), 80);
    }
}
