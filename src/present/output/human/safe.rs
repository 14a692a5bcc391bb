//! Nothing a server chose reaches the terminal raw: a line is checked for unsafe characters
//! without allocating, and copied with every string sanitised only when one is found.

use crate::observe::record::line;
use crate::observe::record::WatchLine;
use crate::protocol::notification::Classified;

/// The line itself when none of its strings holds a character unsafe for a terminal (the common
/// case, checked without allocating), else a copy with every string sanitised.
pub fn terminal_safe(line: &WatchLine) -> std::borrow::Cow<'_, WatchLine> {
    let clean = match line {
        WatchLine::Push(p) if !matches!(p.frame.parsed, Classified::Maintenance(_)) => {
            push_is_clean(p)
        }
        _ => serialized_is_clean(line),
    };
    if clean {
        return std::borrow::Cow::Borrowed(line);
    }
    let sanitized = serde_json::to_value(line)
        .map(sanitize_value)
        .and_then(serde_json::from_value::<WatchLine>);
    match sanitized {
        Ok(l) => std::borrow::Cow::Owned(l),
        // Unreachable for lines the timeline made; kept total rather than trusted.
        Err(e) => std::borrow::Cow::Owned(WatchLine::ConnectFailed(line::ConnectFailed {
            v: crate::observe::record::SCHEMA_VERSION,
            t: line.t(),
            at: String::new(),
            conn: 0,
            error: format!("a line could not be shown safely: {e}"),
            retry_in_s: None,
        })),
    }
}

/// Every string of the line, found by serialising it to nowhere.
pub(super) fn serialized_is_clean(line: &WatchLine) -> bool {
    let mut check = UnsafeText(false);
    serde::Serialize::serialize(
        line,
        &mut serde_json::Serializer::with_formatter(std::io::sink(), &mut check),
    )
    .is_ok()
        && !check.0
}

/// Every string of a push line that is not a maintenance notification (the lines of a flood),
/// checked directly rather than through a serialisation of the whole line.
pub(super) fn push_is_clean(p: &line::Push) -> bool {
    // Printable ASCII, the common case, is safe without decoding characters.
    let safe = |s: &str| {
        s.bytes().all(|b| (0x20..0x7f).contains(&b))
            || !s.chars().any(crate::shared::escape::is_unsafe_char)
    };
    let name = match &p.frame.parsed {
        Classified::OtherPush(o) => o.name.as_deref(),
        _ => None,
    };
    safe(&p.at)
        && p.rel.as_ref().is_none_or(|r| safe(&r.to))
        // Live bytes are escaped into printable ASCII; recorded text is as it was written.
        && p.frame.raw.recorded().is_none_or(safe)
        && name.is_none_or(safe)
        && p.sources_ours.iter().all(|s| safe(s))
}

/// A JSON formatter that writes nothing and notes whether any string holds a character
/// [`crate::shared::escape::is_unsafe_char`] rejects: serde_json hands it control characters as
/// escapes and everything else as fragments.
struct UnsafeText(bool);

impl serde_json::ser::Formatter for &mut UnsafeText {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if fragment.chars().any(crate::shared::escape::is_unsafe_char) {
            self.0 = true;
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        use serde_json::ser::CharEscape;
        if !matches!(
            escape,
            CharEscape::Quote | CharEscape::ReverseSolidus | CharEscape::Solidus
        ) {
            self.0 = true;
        }
        Ok(())
    }
}

fn sanitize_value(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(crate::shared::escape::sanitize(&s).into_owned()),
        Value::Array(a) => Value::Array(a.into_iter().map(sanitize_value).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, sanitize_value(v))).collect())
        }
        other => other,
    }
}
