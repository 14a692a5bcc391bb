//! Bytes as text and back: the one escaping used everywhere raw bytes are shown or stored.
//!
//! Operators paste frames as `>4\r\n$6\r\nMOVING\r\n...`, so that is how maintwatch prints them
//! too. The escaping is a bijection (backslash itself is escaped), which is what lets JSON-lines
//! captures carry raw bytes losslessly while staying readable, instead of base64 or lossy UTF-8.

use std::fmt;

/// Escapes bytes: printable ASCII stays, `\\`, `\r`, `\n`, `\t` are named, anything else is
/// `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    escape_into(&mut out, bytes);
    // Printable ASCII only, so always UTF-8; the lossy path is never taken.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`escape`], appended to `out`: a byte buffer, a `String`, or the inside of a JSON string
/// ([`Printable::IN_JSON`]).
#[inline]
pub fn escape_into<P: Printable>(out: &mut P, bytes: &[u8]) {
    // Runs of printable bytes are copied whole; the room reserved covers a frame's `\r\n`s, so
    // only mostly-binary input grows the buffer.
    out.reserve(bytes.len() + bytes.len() / 2 + 8);
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if (0x20..=0x7e).contains(&b) && b != b'\\' && !(P::IN_JSON && b == b'"') {
            continue;
        }
        out.append(&bytes[start..i]);
        start = i + 1;
        match b {
            b'"' => out.append(b"\\\""),
            b'\\' => out.append(P::BACKSLASH),
            b'\r' => out.append(P::CR),
            b'\n' => out.append(P::LF),
            b'\t' => out.append(P::TAB),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.append(P::HEX);
                out.append(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
            }
        }
    }
    out.append(&bytes[start..]);
}

/// [`escape_into`] with [`InJson`], byte for byte, written in place: room for the longest output
/// of a piece (five bytes per byte, `\\xNN`, and the three a last byte's store spills) is made
/// once, and every byte is one lookup in [`JSON_ESCAPES`] and one 8-byte store, with no branch on
/// what the byte is and no bounds check (the room is known to hold every store). Under a push
/// flood every line's `raw` is made here: a branch per byte (is it printable? which escape?)
/// cost about 20 instructions a byte, a checked store 17, this about 7. Long input
/// goes in pieces, so the room made never exceeds the output by more than a piece's. A test
/// holds it to [`escape_into`] for every byte and for random input.
pub fn escape_in_json(out: &mut Vec<u8>, bytes: &[u8]) {
    const PIECE: usize = 1024;
    for piece in bytes.chunks(PIECE) {
        // Before byte `i` at most `5 * i` bytes were written, and a store writes 8: the last
        // byte's store ends at most at `5 * len + 3`.
        let room = piece.len() * 5 + 3;
        out.reserve(room);
        let start = out.len();
        let base = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        let mut at = 0;
        for &b in piece {
            let entry = JSON_ESCAPES[usize::from(b)];
            debug_assert!(at + 8 <= room);
            // SAFETY: `at + 8 <= room` (above), and `room` bytes past the length were reserved:
            // the store stays inside the allocation, in its spare capacity, which is ours to
            // write. The stored bytes are plain `u8`s, so any of them may become the length.
            unsafe { base.add(at).cast::<[u8; 8]>().write_unaligned(entry) };
            // An entry's last byte is its length; what the store wrote past it is overwritten
            // by the next byte's store, or left beyond the length.
            at += usize::from(entry[7]);
        }
        // SAFETY: the first `at` spare bytes were written above, and `at <= room`.
        unsafe { out.set_len(start + at) };
    }
}

/// Each byte's text inside a JSON string's `raw`, padded to 8 bytes, its length last: the byte
/// itself when printable (but `"` and `\`), else its escape with JSON's backslashes doubled.
static JSON_ESCAPES: [[u8; 8]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        let (text, len): ([u8; 5], u8) = match byte {
            b'"' => ([b'\\', b'"', 0, 0, 0], 2),
            b'\\' => ([b'\\'; 5], 4),
            b'\r' => ([b'\\', b'\\', b'r', 0, 0], 3),
            b'\n' => ([b'\\', b'\\', b'n', 0, 0], 3),
            b'\t' => ([b'\\', b'\\', b't', 0, 0], 3),
            0x20..=0x7e => ([byte, 0, 0, 0, 0], 1),
            _ => (
                [
                    b'\\',
                    b'\\',
                    b'x',
                    HEX[(byte >> 4) as usize],
                    HEX[(byte & 15) as usize],
                ],
                5,
            ),
        };
        let mut i = 0;
        while i < 5 {
            table[b][i] = text[i];
            i += 1;
        }
        table[b][7] = len;
        b += 1;
    }
    table
};

/// Where [`escape_into`] appends: it hands over printable ASCII only. The names it writes are
/// constants of the sink (so each is a copy of known length on the hot path).
pub trait Printable {
    /// The text goes inside a JSON string: a quote and the escapes' backslashes are escaped
    /// for JSON on the way, so a live frame's bytes become a JSON line's `raw` in one pass.
    const IN_JSON: bool = false;
    const BACKSLASH: &'static [u8] = b"\\\\";
    const CR: &'static [u8] = b"\\r";
    const LF: &'static [u8] = b"\\n";
    const TAB: &'static [u8] = b"\\t";
    /// What comes before a byte's two hex digits.
    const HEX: &'static [u8] = b"\\x";
    fn reserve(&mut self, n: usize);
    fn append(&mut self, ascii: &[u8]);
}

/// The inside of a JSON string in a byte buffer (see [`Printable::IN_JSON`]).
pub struct InJson<'a>(pub &'a mut Vec<u8>);

impl Printable for InJson<'_> {
    const IN_JSON: bool = true;
    const BACKSLASH: &'static [u8] = b"\\\\\\\\";
    const CR: &'static [u8] = b"\\\\r";
    const LF: &'static [u8] = b"\\\\n";
    const TAB: &'static [u8] = b"\\\\t";
    const HEX: &'static [u8] = b"\\\\x";
    #[inline]
    fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }
    #[inline]
    fn append(&mut self, ascii: &[u8]) {
        self.0.extend_from_slice(ascii);
    }
}

impl Printable for Vec<u8> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }
    fn append(&mut self, ascii: &[u8]) {
        self.extend_from_slice(ascii);
    }
}

impl Printable for String {
    fn reserve(&mut self, n: usize) {
        String::reserve(self, n);
    }
    fn append(&mut self, ascii: &[u8]) {
        // Printable ASCII is UTF-8: the replacement is never taken.
        self.push_str(std::str::from_utf8(ascii).unwrap_or("\u{fffd}"));
    }
}

/// Whether a character must not reach a terminal as itself: C0 controls (line breaks too), DEL,
/// C1 controls, and the bidirectional overrides and isolates that reorder what follows them.
pub fn is_unsafe_char(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'
            | '\u{80}'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Text from a server made safe for a terminal line: every character of [`is_unsafe_char`]
/// is written as an escape (`\r`, `\n`, `\t`, `\xNN` for the other C0 and DEL, `\u{NNNN}`
/// above), everything else stays as it is. Unlike [`escape`] this is for reading, not a
/// bijection: a backslash stays a backslash. Borrowed when nothing needed escaping.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\0'..='\x1f' | '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Where and why text could not be turned back into bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// 1-based line of the input.
    pub line: usize,
    /// 1-based column (in characters) of the offending character.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for TextError {}

/// Reverses [`escape`], and also takes what people paste: `\0`, `\"`, `\'`, `\e`, upper-case hex.
/// Real line breaks are layout, not data (the bytes come from the escapes), and a line wrapped
/// in double quotes loses them.
pub fn unescape(text: &str) -> Result<Vec<u8>, TextError> {
    let mut out = Vec::with_capacity(text.len());
    for (index, raw_line) in text.split('\n').enumerate() {
        let line = raw_line.strip_suffix('\r').unwrap_or(raw_line);
        let trimmed = line.trim();
        let (body, skipped) =
            if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
                let lead = line.len() - line.trim_start().len();
                (
                    &trimmed[1..trimmed.len() - 1],
                    line[..lead].chars().count() + 1,
                )
            } else {
                (line, 0)
            };
        unescape_line(body, &mut out).map_err(|(col, message)| TextError {
            line: index + 1,
            column: skipped + col,
            message,
        })?;
    }
    Ok(out)
}

fn unescape_line(line: &str, out: &mut Vec<u8>) -> Result<(), (usize, String)> {
    let mut chars = line.char_indices().enumerate().peekable();
    while let Some((col, (_, c))) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some((_, (_, e))) = chars.next() else {
            return Err((
                col + 1,
                "a backslash ends the line: nothing to escape".into(),
            ));
        };
        match e {
            'r' => out.push(b'\r'),
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            '0' => out.push(0),
            'e' => out.push(0x1b),
            '\\' => out.push(b'\\'),
            '"' => out.push(b'"'),
            '\'' => out.push(b'\''),
            'x' => {
                let mut value = 0u8;
                for _ in 0..2 {
                    match chars.next() {
                        Some((_, (_, h))) if h.is_ascii_hexdigit() => {
                            value = value * 16 + h.to_digit(16).unwrap_or(0) as u8
                        }
                        Some((hcol, (_, h))) => {
                            return Err((
                                hcol + 1,
                                format!("expected a hex digit after \\x, found {h:?}"),
                            ))
                        }
                        None => return Err((col + 1, "\\x needs two hex digits".into())),
                    }
                }
                out.push(value);
            }
            other => return Err((col + 2, format!("unknown escape \\{other}"))),
        }
    }
    Ok(())
}

/// Reads hex text (whitespace, `0x` prefixes and `:` separators allowed between bytes).
pub fn unhex(text: &str) -> Result<Vec<u8>, TextError> {
    let mut out = Vec::with_capacity(text.len() / 2);
    for (index, line) in text.lines().enumerate() {
        let mut pending: Option<u8> = None;
        let cleaned = line.replace("0x", "  ").replace("0X", "  ");
        for (col, c) in cleaned.chars().enumerate() {
            if c.is_whitespace() || c == ':' {
                if pending.is_some() {
                    return Err(TextError {
                        line: index + 1,
                        column: col + 1,
                        message: "odd number of hex digits in a byte".into(),
                    });
                }
                continue;
            }
            let Some(d) = c.to_digit(16) else {
                return Err(TextError {
                    line: index + 1,
                    column: col + 1,
                    message: format!("expected a hex digit, found {c:?}"),
                });
            };
            match pending.take() {
                None => pending = Some(d as u8),
                Some(hi) => out.push(hi * 16 + d as u8),
            }
        }
        if pending.is_some() {
            return Err(TextError {
                line: index + 1,
                column: cleaned.chars().count(),
                message: "odd number of hex digits at the end of the line".into(),
            });
        }
    }
    Ok(out)
}

/// Guesses how input text encodes bytes: escaped text if it holds a `\r` or `\n` escape and no
/// real carriage return, hex if it is only hex digits and spacing, raw otherwise.
pub fn detect(input: &[u8]) -> InputFormat {
    let has_escapes = input.windows(2).any(|w| w == b"\\r" || w == b"\\n");
    if has_escapes && !input.contains(&b'\r') {
        return InputFormat::Escaped;
    }
    let hexish = input
        .iter()
        .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace() || *b == b':' || *b == b'x');
    if hexish && input.iter().any(u8::is_ascii_hexdigit) && !input.contains(&b'\r') {
        return InputFormat::Hex;
    }
    InputFormat::Raw
}

/// The ways `decode` can be given bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    Raw,
    Escaped,
    Hex,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_is_readable_and_lossless() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape(&escape(&all)).unwrap(), all);
        assert_eq!(escape(b">1\r\n+a\\b\r\n"), ">1\\r\\n+a\\\\b\\r\\n");
        assert_eq!(escape(&[0xc3, 0x28]), "\\xc3(");
    }

    fn in_json_by_appends(bytes: &[u8]) -> Vec<u8> {
        let mut out = b"{".to_vec();
        escape_into(&mut InJson(&mut out), bytes);
        out
    }

    fn in_json_in_place(bytes: &[u8]) -> Vec<u8> {
        let mut out = b"{".to_vec();
        escape_in_json(&mut out, bytes);
        out
    }

    #[test]
    fn escaping_in_place_for_json_is_the_general_path_byte_for_byte() {
        // Every byte alone, between printable ones, and all of them at once.
        for b in 0..=255u8 {
            for input in [vec![b], vec![b'a', b, b'z'], vec![b, b]] {
                assert_eq!(
                    in_json_in_place(&input),
                    in_json_by_appends(&input),
                    "{input:?}"
                );
            }
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(in_json_in_place(&all), in_json_by_appends(&all));
        // A pub/sub message frame, and input longer than one piece, escapes across its edge.
        let frame = b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$16\r\nmsg:000000123456\r\n";
        assert_eq!(in_json_in_place(frame), in_json_by_appends(frame));
        let long: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 256) as u8).collect();
        assert_eq!(in_json_in_place(&long), in_json_by_appends(&long));
    }

    proptest::proptest! {
        #[test]
        fn escaping_in_place_for_json_matches_on_any_bytes(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
        ) {
            proptest::prop_assert_eq!(in_json_in_place(&bytes), in_json_by_appends(&bytes));
        }
    }

    #[test]
    fn pasted_text_with_quotes_and_line_breaks() {
        let text = "\">4\\r\\n$6\\r\\nMOVING\\r\\n\"\n\":0\\r\\n:15\\r\\n_\\r\\n\"\n";
        assert_eq!(
            unescape(text).unwrap(),
            b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n"
        );
    }

    #[test]
    fn bad_escapes_name_line_and_column() {
        let e = unescape("+OK\\r\\n\n+X\\q").unwrap_err();
        assert_eq!((e.line, e.column), (2, 4));
        assert!(e.message.contains("\\q"), "{e}");
        let e = unescape("\\x4g").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
    }

    #[test]
    fn hex_input() {
        assert_eq!(
            unhex("3e 31 0d0a\n0x2b 0x61 0d 0a").unwrap(),
            b">1\r\n+a\r\n"
        );
        let e = unhex("3e 3").unwrap_err();
        assert_eq!(e.line, 1);
        let e = unhex("3e zz").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
    }

    #[test]
    fn sanitize_escapes_every_control_and_bidi_character() {
        assert_eq!(sanitize("redis 7.2"), "redis 7.2");
        assert!(matches!(sanitize("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            sanitize("a\x1b]0;T\x07\r\nb\x7f\u{9b}c\u{202e}d\u{2066}é\\"),
            "a\\x1b]0;T\\x07\\r\\nb\\x7f\\u{9b}c\\u{202e}d\\u{2066}é\\"
        );
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let out = sanitize(&c.to_string()).into_owned();
            assert!(!out.chars().any(is_unsafe_char), "{c:?} -> {out:?}");
        }
    }

    #[test]
    fn sanitized_text_cannot_drive_the_terminal() {
        let hostile =
            "ERR \x1b]0;pwned\x07\x1b[2J\r00:00 FAKE\nnext\u{202e}txt\u{2066}\u{85}\x7f ok é";
        let shown = sanitize(hostile);
        assert_eq!(
            shown,
            "ERR \\x1b]0;pwned\\x07\\x1b[2J\\r00:00 FAKE\\nnext\\u{202e}txt\\u{2066}\\u{85}\\x7f ok é"
        );
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert_eq!(sanitize("redis 7.4.0"), "redis 7.4.0");
    }

    #[test]
    fn detection() {
        assert_eq!(detect(b">4\\r\\n$6\\r\\nMOVING"), InputFormat::Escaped);
        assert_eq!(detect(b"3e340d0a"), InputFormat::Hex);
        assert_eq!(detect(b">4\r\n$6\r\nMOVING\r\n"), InputFormat::Raw);
    }
}
