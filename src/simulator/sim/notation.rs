//! Byte escaping for scenario files and the simulator's narration.
//!
//! Peer-variant steps carry exact wire bytes (`raw >4\r\n$6\r\nmoving\r\n...`), and the narration
//! shows every frame it writes; both use the notation of docs/protocol.md so a line can be copied from
//! the reference into a scenario and back. The simulator keeps its own copy rather than using the
//! watcher's: the two must not share protocol code (only `resp` and `shared`), so a bug in one cannot hide in the other.

use std::fmt::Write;

/// Escapes bytes for one line of text: printable ASCII as is, `\r` `\n` `\t` `\\`, anything else
/// as `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for &b in bytes {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

/// The inverse of [`escape`]; also accepts `\0`, `\"` and `\s` (a space, for readability).
/// The error names the offending escape and its character offset.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some((_, 'r')) => out.push(b'\r'),
            Some((_, 'n')) => out.push(b'\n'),
            Some((_, 't')) => out.push(b'\t'),
            Some((_, '0')) => out.push(0),
            Some((_, 's')) => out.push(b' '),
            Some((_, '\\')) => out.push(b'\\'),
            Some((_, '"')) => out.push(b'"'),
            Some((_, 'x')) => {
                let hex: String = chars.by_ref().take(2).map(|(_, c)| c).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) if hex.len() == 2 => out.push(b),
                    _ => return Err(format!("bad escape \\x{hex} at character {at}")),
                }
            }
            Some((_, other)) => return Err(format!("unknown escape \\{other} at character {at}")),
            None => return Err(format!("lone backslash at character {at}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape(&escape(&all)).unwrap(), all);
        assert_eq!(
            escape(b">4\r\n$6\r\nMOVING\r\n_\r\n"),
            ">4\\r\\n$6\\r\\nMOVING\\r\\n_\\r\\n"
        );
    }

    #[test]
    fn bad_escapes_are_named() {
        assert!(unescape("ab\\q").unwrap_err().contains("\\q"));
        assert!(unescape("\\x4").unwrap_err().contains("\\x4"));
        assert!(unescape("\\xzz").is_err());
        assert!(unescape("x\\").unwrap_err().contains("lone"));
        assert_eq!(unescape("a\\sb\\x41").unwrap(), b"a bA");
    }
}
