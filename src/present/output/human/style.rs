//! How a line looks: its colour roles and palette, its time format and width, and the wall-clock
//! prefix every entry starts with.

use super::wrap::WIDTH;
use chrono::{DateTime, Local};

/// Colour roles; the palette is chosen in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Opening,
    Closing,
    Dns,
    Socket,
    Handoff,
    Error,
    Dim,
    Plain,
}

/// Whether to colour, how to show the time and how wide lines may be, decided once by the caller
/// (flags, `NO_COLOR`, the terminal: [`crate::present::output::terminal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
    pub time: TimeFormat,
    /// Columns an entry is wrapped to: the terminal's, [`WIDTH`] when piped.
    pub width: usize,
    /// The watch subscribes to Azure Cache's `AzureRedisEvents`: a refused opt-in is then
    /// expected (Azure Cache refuses it), and the channel is how maintenance is announced.
    pub azure: bool,
}

impl Default for Style {
    fn default() -> Style {
        Style {
            color: false,
            time: TimeFormat::default(),
            width: WIDTH,
            azure: false,
        }
    }
}

/// How the wall-clock prefix of a line is written (`--time-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeFormat {
    /// Local time to the millisecond, `HH:MM:SS.mmm`: keeps the common lines within 80 columns.
    #[default]
    Compact,
    /// Local time to the microsecond, `HH:MM:SS.ffffff`.
    Full,
    /// The line's own timestamp: RFC 3339, UTC, microseconds (as in the JSON lines).
    Rfc3339,
}

impl Style {
    pub fn paint(&self, role: Role, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 12);
        self.paint_into(&mut out, role, s);
        out
    }

    /// [`Style::paint`], appended to `out`.
    pub fn paint_into(&self, out: &mut String, role: Role, s: &str) {
        self.paint_with(out, role, |out| out.push_str(s));
    }

    /// [`Style::paint_into`] for text that `write` appends.
    pub fn paint_with(&self, out: &mut String, role: Role, write: impl FnOnce(&mut String)) {
        let code = match role {
            _ if !self.color => None,
            Role::Opening => Some("1;33"),
            Role::Closing => Some("1;32"),
            Role::Dns => Some("36"),
            Role::Socket => Some("1;35"),
            Role::Handoff => Some("34"),
            Role::Error => Some("1;31"),
            Role::Dim => Some("2"),
            Role::Plain => None,
        };
        match code {
            Some(code) => {
                out.push_str("\x1b[");
                out.push_str(code);
                out.push('m');
                write(out);
                out.push_str("\x1b[0m");
            }
            None => write(out),
        }
    }
}

/// The wall-clock prefix of a line, in the chosen format (local time unless RFC 3339).
///
/// Lines come in the shape [`crate::observe::record::wall`] writes: the local time of day is worked out
/// once per second (per thread) and the fraction copied from the line's own text. Any other
/// shape is parsed as RFC 3339 on its own.
pub fn clock(at: &str, format: TimeFormat) -> String {
    let mut out = String::with_capacity(16);
    clock_into(&mut out, at, format);
    out
}

/// [`clock`], appended to `out`.
pub(super) fn clock_into(out: &mut String, at: &str, format: TimeFormat) {
    let digits = match format {
        TimeFormat::Rfc3339 => return out.push_str(at),
        TimeFormat::Compact => 3,
        TimeFormat::Full => 6,
    };
    if cached_second_into(out, at) {
        out.push('.');
        out.push_str(&at[20..20 + digits]);
    } else {
        out.push_str(&parsed_clock(at, format));
    }
}

pub(super) fn parsed_clock(at: &str, format: TimeFormat) -> String {
    let pattern = match format {
        TimeFormat::Rfc3339 => return at.to_string(),
        TimeFormat::Compact => "%H:%M:%S%.3f",
        TimeFormat::Full => "%H:%M:%S%.6f",
    };
    DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&Local).format(pattern).to_string())
        .unwrap_or_else(|_| at.to_string())
}

/// Appends the local `HH:MM:SS` of `at` when it is `YYYY-MM-DDTHH:MM:SS.ffffffZ`, from a cache
/// of the last second seen; `false` (nothing appended) for any other shape.
fn cached_second_into(out: &mut String, at: &str) -> bool {
    use std::cell::RefCell;
    thread_local! {
        static SECOND: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
    }
    let b = at.as_bytes();
    let shaped =
        b.len() == 27 && b[19] == b'.' && b[26] == b'Z' && b[20..26].iter().all(u8::is_ascii_digit);
    if !shaped {
        return false;
    }
    let key = &at[..19];
    SECOND.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != key {
            let Ok(t) = DateTime::parse_from_rfc3339(&format!("{key}Z")) else {
                return false;
            };
            *cached = (
                key.to_string(),
                t.with_timezone(&Local).format("%H:%M:%S").to_string(),
            );
        }
        out.push_str(&cached.1);
        true
    })
}
