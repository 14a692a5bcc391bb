//! A hand reader for the one line a capture is mostly made of: a `push` line as the watch writes
//! it ([`super::write`]), fields in their order, a pub/sub push or a reply.
//!
//! `replay` reads a million of these per flood capture, and through serde most of its time went
//! to strings: the recorded raw text is dense with escapes (`\\r\\n`), each copied into a scratch
//! buffer, then unescaped a second time into the frame's bytes. Here the raw text is read once,
//! both layers at once, straight into the bytes. The reader accepts only what the writer makes,
//! character for character (the raw text included: only what `escape` writes), so that what it
//! reads is what serde would read and writes back byte for byte; anything else, a maintenance
//! notification's parse included, is `None` and goes to serde, which also words the errors.

use super::line::Push;
use super::{CopyOf, FrameRecord, Label, Raw, Rel};
use crate::protocol::notification::{Classified, OtherPush};
use std::borrow::Cow;

/// The push line `text` (without its newline), if it is one exactly as the watch writes it.
pub(super) fn push(text: &[u8]) -> Option<Push> {
    let mut r = Reader { text, at: 0 };
    r.literal(b"{\"type\":\"push\",\"v\":")?;
    let v = r.unsigned()?.try_into().ok()?;
    r.literal(b",\"t\":")?;
    let t = r.number()?;
    r.literal(b",\"at\":")?;
    let at = r.string()?;
    r.literal(b",\"conn\":")?;
    let conn = r.unsigned()?.try_into().ok()?;
    r.literal(b",\"labels\":")?;
    let labels = r.list(Reader::label)?;
    r.literal(b",\"rel\":")?;
    let rel = r.nullable(Reader::rel)?;
    r.literal(b",\"frame\":")?;
    let frame = r.frame()?;
    r.literal(b",\"copy_of\":")?;
    let copy_of = r.nullable(Reader::copy_of)?;
    r.literal(b",\"sources_ours\":")?;
    let sources_ours = r.list(Reader::string)?;
    r.literal(b"}")?;
    (r.at == text.len()).then_some(Push {
        v,
        t,
        at,
        conn,
        labels,
        rel,
        frame,
        copy_of,
        sources_ours,
    })
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn literal(&mut self, expected: &[u8]) -> Option<()> {
        let rest = self.text.get(self.at..)?;
        rest.starts_with(expected)
            .then(|| self.at += expected.len())
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// Digits as serde writes an unsigned integer: no sign, no leading zero.
    fn unsigned(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        (digits == 1 || (digits > 1 && self.text[start] != b'0')).then_some(n)
    }

    /// A number as serde writes the times here: plain decimal notation with at most 15 digits.
    /// Such a number is read by serde exactly (its digits fit a float's mantissa, its power of
    /// ten is exact), so the correctly rounded parse of the standard library agrees with it.
    fn number(&mut self) -> Option<f64> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let whole_start = self.at;
        let whole = self.unsigned_digits()?;
        // JSON's rule, which serde keeps: a leading zero only alone.
        if whole > 1 && self.text[whole_start] == b'0' {
            return None;
        }
        let mut digits = whole;
        if self.peek() == Some(b'.') {
            self.at += 1;
            digits += self.unsigned_digits()?;
        }
        if digits > 15 || matches!(self.peek(), Some(b'e' | b'E')) {
            return None;
        }
        std::str::from_utf8(&self.text[start..self.at])
            .ok()?
            .parse()
            .ok()
    }

    /// At least one digit; how many there were.
    fn unsigned_digits(&mut self) -> Option<usize> {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let n = self.at - start;
        (n > 0).then_some(n)
    }

    /// A string with nothing escaped in it (timestamps, addresses, push names): anything with a
    /// backslash is left to serde.
    fn string(&mut self) -> Option<String> {
        self.literal(b"\"")?;
        let rest = self.text.get(self.at..)?;
        let end = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[end] != b'"' {
            return None;
        }
        let text = std::str::from_utf8(&rest[..end]).ok()?.to_string();
        self.at += end + 1;
        Some(text)
    }

    /// `[` items `,`-separated `]`.
    fn list<T>(&mut self, item: impl Fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.literal(b"[")?;
        let mut items = Vec::new();
        if self.literal(b"]").is_some() {
            return Some(items);
        }
        loop {
            items.push(item(self)?);
            if self.literal(b"]").is_some() {
                return Some(items);
            }
            self.literal(b",")?;
        }
    }

    fn nullable<T>(&mut self, item: impl Fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.literal(b"null").is_some() {
            return Some(None);
        }
        item(self).map(Some)
    }

    fn label(&mut self) -> Option<Label> {
        for (text, label) in [
            (b"\"catch_up\"".as_slice(), Label::CatchUp),
            (b"\"resent\"", Label::Resent),
            (b"\"with_opt_in\"", Label::WithOptIn),
        ] {
            if self.literal(text).is_some() {
                return Some(label);
            }
        }
        None
    }

    /// `{"a":` A `,"b":` B `}`: the two small objects of a push line.
    fn pair<A, B>(
        &mut self,
        (a_key, a): (&[u8], impl Fn(&mut Self) -> Option<A>),
        (b_key, b): (&[u8], impl Fn(&mut Self) -> Option<B>),
    ) -> Option<(A, B)> {
        self.literal(a_key)?;
        let a = a(self)?;
        self.literal(b_key)?;
        let b = b(self)?;
        self.literal(b"}")?;
        Some((a, b))
    }

    fn rel(&mut self) -> Option<Rel> {
        let (to, s) = self.pair((b"{\"to\":", Self::string), (b",\"s\":", Self::number))?;
        Some(Rel { to, s })
    }

    fn copy_of(&mut self) -> Option<CopyOf> {
        let conn = |r: &mut Self| r.unsigned()?.try_into().ok();
        let (conn, after_ms) =
            self.pair((b"{\"conn\":", conn), (b",\"after_ms\":", Self::number))?;
        Some(CopyOf { conn, after_ms })
    }

    fn frame(&mut self) -> Option<FrameRecord> {
        self.literal(b"{\"offset\":")?;
        let offset = self.unsigned()?;
        self.literal(b",\"len\":")?;
        let len = self.unsigned()?.try_into().ok()?;
        self.literal(b",\"raw\":")?;
        let raw = self.raw()?;
        self.literal(b",\"parsed\":")?;
        let parsed = self.parsed()?;
        self.literal(b"}")?;
        Some(FrameRecord {
            offset,
            len,
            raw: Raw::Bytes(raw.into()),
            parsed,
        })
    }

    /// The parse of a push that is not a notification, or of a reply.
    fn parsed(&mut self) -> Option<Classified> {
        if self.literal(b"{\"class\":\"not_push\"}").is_some() {
            return Some(Classified::NotPush);
        }
        self.literal(b"{\"class\":\"other_push\",\"name\":")?;
        let name = self.nullable(Reader::string)?.map(Cow::Owned);
        self.literal(b",\"elements\":")?;
        let elements = self.unsigned()?.try_into().ok()?;
        let known = if self.literal(b",\"known\":true}").is_some() {
            true
        } else {
            self.literal(b",\"known\":false}")?;
            false
        };
        Some(Classified::OtherPush(OtherPush {
            name,
            elements,
            known,
        }))
    }

    /// The raw text's JSON string, read into the bytes it stands for. Only what `escape` writes
    /// and serde then escapes is taken (so writing the bytes again gives the same text): `\\"`
    /// and `\\\\` for JSON; `\\\\r`, `\\\\n`, `\\\\t`, `\\\\\\\\` and `\\\\xNN` (lower-case, for
    /// a byte `escape` writes so) for the bytes.
    fn raw(&mut self) -> Option<Vec<u8>> {
        self.literal(b"\"")?;
        let text = self.text;
        let mut out = Vec::with_capacity(text.len().saturating_sub(self.at) / 2);
        let mut i = self.at;
        loop {
            let b = *text.get(i)?;
            i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let (byte, used) = escaped_byte(text.get(i..)?)?;
                    out.push(byte);
                    i += used;
                }
                0x20..=0x7e => out.push(b),
                _ => return None,
            }
        }
        self.at = i;
        Some(out)
    }
}

/// After a JSON backslash in the raw text: the byte it stands for and the input it used.
fn escaped_byte(rest: &[u8]) -> Option<(u8, usize)> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match rest {
        // A quote, which `escape` keeps and JSON escapes.
        [b'"', ..] => Some((b'"', 1)),
        // `escape`'s own backslash (itself escaped for JSON), then what it names.
        [b'\\', b'\\', b'\\', ..] => Some((b'\\', 3)),
        [b'\\', b'r', ..] => Some((b'\r', 2)),
        [b'\\', b'n', ..] => Some((b'\n', 2)),
        [b'\\', b't', ..] => Some((b'\t', 2)),
        [b'\\', b'x', hi, lo, ..] => {
            let hi = HEX.iter().position(|h| h == hi)?;
            let lo = HEX.iter().position(|h| h == lo)?;
            let byte = (hi * 16 + lo) as u8;
            // `escape` names these, or keeps them as they are.
            let hexed = !(0x20..=0x7e).contains(&byte) && !matches!(byte, b'\r' | b'\n' | b'\t');
            hexed.then_some((byte, 4))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::push;

    const FLOOD: &str = r#"{"type":"push","v":1,"t":1.442017,"at":"2026-12-01T01:11:48.335912Z","conn":1,"labels":[],"rel":null,"frame":{"offset":289,"len":48,"raw":">3\\r\\n$7\\r\\nmessage\\r\\n$2\\r\\nch\\r\\n$16\\r\\nmsg:000394879918\\r\\n","parsed":{"class":"other_push","name":"message","elements":3,"known":true}},"copy_of":null,"sources_ours":[]}"#;

    #[test]
    fn a_flood_line_is_read_by_hand_into_its_bytes() {
        let p = push(FLOOD.as_bytes()).expect("the line the watch writes");
        let mut again = Vec::new();
        super::super::write::write_object(&mut again, &super::super::WatchLine::Push(p.clone()))
            .unwrap();
        assert_eq!(
            String::from_utf8(again).unwrap(),
            FLOOD,
            "written back byte for byte"
        );
        assert_eq!((p.v, p.t, p.conn), (1, 1.442017, 1));
        assert_eq!(p.frame.len, 48);
        assert_eq!(
            p.frame.raw.bytes().unwrap().as_ref(),
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$16\r\nmsg:000394879918\r\n"
        );
        // A time whose fraction starts with zeros (only a whole part may not).
        let early = FLOOD.replace("1.442017", "0.00043");
        assert_eq!(push(early.as_bytes()).map(|p| p.t), Some(0.00043));
        // Quotes, backslashes and a hexed byte, as escape and serde write them.
        let odd = FLOOD.replace("msg:000394879918", r#"\"a\\\\b\\x01"#);
        let p = push(odd.as_bytes()).expect("still the watch's writing");
        assert!(p.frame.raw.bytes().unwrap().ends_with(b"\"a\\b\x01\r\n"));
    }

    #[test]
    fn anything_not_written_so_is_left_to_serde() {
        for (from, to) in [
            // Text escape would not write: a hexed printable byte, an upper-case hex, a hexed CR.
            ("msg:", "\\\\x41"),
            ("msg:", "\\\\x0D"),
            ("msg:", "\\\\x0d"),
            // A JSON escape serde would not write here, in the raw text and in a string.
            ("msg:", "\\u0041"),
            ("2026-12-01", "\\u0032026-12-01"),
            // Other spellings of numbers, spacing, fields out of order, a trailing byte.
            ("1.442017", "1442017e-6"),
            ("1.442017", "1.4420170000000001"),
            ("\"conn\":1", "\"conn\":01"),
            ("1.442017", "01.442017"),
            ("\"v\":1", "\"v\": 1"),
            ("\"labels\":[]", "\"labels\":[ ]"),
            ("\"sources_ours\":[]}", "\"sources_ours\":[]} "),
            ("\"parsed\":{\"class\":\"other_push\",", "\"parsed\":{"),
        ] {
            let line = FLOOD.replacen(from, to, 1);
            assert_ne!(line, FLOOD, "{to}");
            assert!(push(line.as_bytes()).is_none(), "{line}");
        }
    }
}
