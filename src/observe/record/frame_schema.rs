//! A frame as the schema carries it: its offset, its exact bytes (escaped on the wire) and
//! their parse, and the reading of recorded raw text back into bytes for `replay --check`.

use crate::protocol::notification::{classify, classify_flat, Classified};
use crate::protocol::resp::{FlatScan, Scanner};
use crate::shared::escape::escape;
use serde::{Deserialize, Serialize};

/// One frame: where it was in its stream, its exact bytes, and what they parse to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameRecord {
    /// Byte offset of the frame's first byte in its stream (connection or input).
    pub offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// The exact bytes, escaped (`\r`, `\n`, `\\`, `\xNN`) on the wire.
    pub raw: Raw,
    #[serde(deserialize_with = "read_parsed")]
    pub parsed: Classified,
}

impl FrameRecord {
    pub fn new(frame: &crate::protocol::resp::Frame<'_>, raw: &[u8], offset: u64) -> FrameRecord {
        FrameRecord {
            offset,
            len: raw.len(),
            raw: Raw::Bytes(bytes::Bytes::copy_from_slice(raw)),
            parsed: classify(frame),
        }
    }
}

/// A frame's exact bytes. A frame read live keeps them as they came (a slice of the buffer its
/// read filled, not a copy) and is escaped where it is written, in one pass straight into the
/// output (under a flood an escaped copy per frame was a tenth of the watch's CPU); one read back
/// from a capture keeps the escaped text it was recorded as, which `replay` writes out again
/// unchanged. Either way it is the same frame: two compare equal when their escaped texts do.
#[derive(Debug, Clone)]
pub enum Raw {
    Bytes(bytes::Bytes),
    Escaped(String),
}

impl Raw {
    /// The escaped text (`\r`, `\n`, `\\`, `\xNN`): printable ASCII for live bytes.
    pub fn escaped(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Raw::Bytes(b) => std::borrow::Cow::Owned(escape(b)),
            Raw::Escaped(s) => std::borrow::Cow::Borrowed(s),
        }
    }

    /// The exact bytes; an error for recorded text that does not unescape.
    pub fn bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        match self {
            Raw::Bytes(b) => Ok(std::borrow::Cow::Borrowed(b)),
            Raw::Escaped(s) => unescape_raw(s).map(std::borrow::Cow::Owned),
        }
    }

    /// The length of the escaped text, at least (exactly, for recorded text).
    pub fn len_hint(&self) -> usize {
        match self {
            Raw::Bytes(b) => b.len(),
            Raw::Escaped(s) => s.len(),
        }
    }

    /// The escaped text when it is already held (a record read back), for checks that would
    /// otherwise escape live bytes only to look at them.
    pub fn recorded(&self) -> Option<&str> {
        match self {
            Raw::Bytes(_) => None,
            Raw::Escaped(s) => Some(s),
        }
    }

    /// The escaped text, appended to `out`.
    pub fn escape_into(&self, out: &mut String) {
        match self {
            Raw::Bytes(b) => crate::shared::escape::escape_into(out, b),
            Raw::Escaped(s) => out.push_str(s),
        }
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Raw) -> bool {
        match (self, other) {
            (Raw::Bytes(a), Raw::Bytes(b)) => a == b,
            _ => self.escaped() == other.escaped(),
        }
    }
}

impl Eq for Raw {}

impl PartialEq<str> for Raw {
    fn eq(&self, other: &str) -> bool {
        self.escaped() == other
    }
}

impl PartialEq<String> for Raw {
    fn eq(&self, other: &String) -> bool {
        self.escaped() == other.as_str()
    }
}

impl PartialEq<&str> for Raw {
    fn eq(&self, other: &&str) -> bool {
        self.escaped() == *other
    }
}

impl From<String> for Raw {
    fn from(escaped: String) -> Raw {
        Raw::Escaped(escaped)
    }
}

impl From<&str> for Raw {
    fn from(escaped: &str) -> Raw {
        Raw::Escaped(escaped.to_string())
    }
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.escaped())
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Raw, D::Error> {
        String::deserialize(deserializer).map(Raw::Escaped)
    }
}

/// Reads a recorded parse. The derived reader of the internally tagged [`Classified`] first
/// copies the whole object into an intermediate tree to find its `class`; lines maintwatch
/// writes put `class` first, so the payload is read straight from the rest of the object. Any
/// other order (or an unknown class) goes through the derived reader, whose result and errors
/// are the reference.
fn read_parsed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Classified, D::Error> {
    d.deserialize_map(ParsedVisitor)
}

struct ParsedVisitor;

impl<'de> serde::de::Visitor<'de> for ParsedVisitor {
    type Value = Classified;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a frame's parse (an object with a `class`)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Classified, A::Error> {
        use serde::de::{value::MapAccessDeserializer, Error};
        use std::borrow::Cow;
        let mut fields = serde_json::Map::new();
        if let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = map.next_value::<serde_json::Value>()?;
            match (key.as_ref(), value.as_str()) {
                ("class", Some("other_push")) => {
                    return crate::protocol::notification::OtherPush::deserialize(
                        MapAccessDeserializer::new(map),
                    )
                    .map(Classified::OtherPush);
                }
                ("class", Some("maintenance")) => {
                    return crate::protocol::notification::Notification::deserialize(
                        MapAccessDeserializer::new(map),
                    )
                    .map(|n| Classified::Maintenance(Box::new(n)));
                }
                _ => fields.insert(key.into_owned(), value),
            };
        }
        while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
            fields.insert(key, value);
        }
        Classified::deserialize(serde_json::Value::Object(fields)).map_err(A::Error::custom)
    }
}

/// Parses the bytes of a stored frame again with today's scanner and parser.
pub fn reparse(raw_escaped: &str) -> Result<Classified, String> {
    reparse_sized(raw_escaped).map(|(parsed, _)| parsed)
}

/// [`reparse`], and how many bytes the raw text stands for.
pub fn reparse_sized(raw_escaped: &str) -> Result<(Classified, usize), String> {
    reparse_bytes(&unescape_raw(raw_escaped)?)
}

/// The bytes of recorded raw text.
fn unescape_raw(raw_escaped: &str) -> Result<Vec<u8>, String> {
    match unescape_recorded(raw_escaped) {
        Some(bytes) => Ok(bytes),
        None => crate::shared::escape::unescape(raw_escaped).map_err(|e| format!("raw text: {e}")),
    }
}

/// The parse of a frame's exact bytes, and their length; an error unless they are one frame.
pub fn reparse_bytes(bytes: &[u8]) -> Result<(Classified, usize), String> {
    // Flat, as the watch reads: a pub/sub push is classified without building its tree.
    let mut nodes = Vec::new();
    match Scanner::default().scan_flat(bytes, &mut nodes) {
        Ok(FlatScan::Frame(frame)) if frame.raw().len() == bytes.len() => {
            Ok((classify_flat(&frame), bytes.len()))
        }
        Ok(FlatScan::Frame(frame)) => Err(format!(
            "raw holds {} bytes after the frame's {}",
            bytes.len() - frame.raw().len(),
            frame.raw().len()
        )),
        Ok(FlatScan::Incomplete { need }) => Err(format!(
            "raw is an incomplete frame ({} of at least {need} bytes)",
            bytes.len()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The bytes of raw text as [`escape`] writes it (printable ASCII and backslash escapes), in
/// one pass over bytes; `None` for anything else (quoted text, line breaks, other characters,
/// a bad escape), which [`crate::shared::escape::unescape`] reads or explains. Where both read a text
/// they agree (tested): `replay` reads a million of these per capture.
fn unescape_recorded(text: &str) -> Option<Vec<u8>> {
    // Quoted text is unquoted by the general reader (a frame never starts with `"`).
    let trimmed = text.trim();
    if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if b != b'\\' {
            if !(0x20..=0x7e).contains(&b) {
                return None;
            }
            out.push(b);
            continue;
        }
        let e = *bytes.get(i)?;
        i += 1;
        out.push(match e {
            b'r' => b'\r',
            b'n' => b'\n',
            b't' => b'\t',
            b'0' => 0,
            b'e' => 0x1b,
            b'\\' | b'"' | b'\'' => e,
            b'x' => {
                let hex = std::str::from_utf8(bytes.get(i..i + 2)?).ok()?;
                i += 2;
                if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                    return None;
                }
                u8::from_str_radix(hex, 16).ok()?
            }
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::unescape_recorded;
    use crate::shared::escape::{escape, unescape};

    proptest::proptest! {
        #[test]
        fn recorded_raw_text_reads_back_to_its_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let text = escape(&bytes);
            let t = text.trim();
            let quoted = t.len() >= 2 && t.starts_with('"') && t.ends_with('"');
            let expected = (!quoted).then_some(bytes);
            proptest::prop_assert_eq!(unescape_recorded(&text), expected);
        }

        #[test]
        fn where_both_read_a_text_they_agree(text in r#"[ -~\\\r\n"]{0,40}|(\\x[0-9a-fA-FgG]{0,2}|\\[rnt0e"'\\qZ]|[ a-z"])*"#) {
            if let Some(fast) = unescape_recorded(&text) {
                proptest::prop_assert_eq!(Some(fast), unescape(&text).ok(), "{:?}", text);
            }
        }
    }
}
