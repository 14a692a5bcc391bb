//! Keeps the password out of everything a server says back during the handshake.
//!
//! Servers echo arguments in their errors: Redis 5, or any server with `HELLO` renamed, answers
//! `HELLO 3 AUTH user pw` with `ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH'
//! 'user' 'pw'`, and Redis cuts that list at 128 characters, so a long password may come back
//! as a prefix. Every frame the handshake reads passes through [`redact_received`] once, before
//! anything else sees it, so the probe table, JSON, the watch's lines, the capture, the summary
//! and the error messages all start from redacted text.
//!
//! This is the one exception to "the raw bytes are exactly what was received": a frame that
//! carried the password is stored re-encoded with `<redacted>` in place of it (blob lengths
//! adjusted, so the frame still parses), and its text is derived from that.

use super::{received, Item, Received};
use crate::protocol::resp::{FlatScan, Frame, Scan, Scanner};

/// What replaces the password (or an echoed prefix of it).
pub const MARKER: &str = "<redacted>";

/// An echoed prefix shorter than this is left alone: a few common characters are no secret, and
/// redacting every `ab` of a password starting `ab...` would garble unrelated text.
const MIN_PREFIX: usize = 4;

/// `text` with every occurrence of `secret` replaced by [`MARKER`], and every prefix of it (at
/// least [`MIN_PREFIX`] bytes) that ends where Redis' cut-off echo ends (at a `'` or the end of
/// the text). `None` when nothing had to change.
pub fn redact_bytes(text: &[u8], secret: &[u8]) -> Option<Vec<u8>> {
    if secret.is_empty() {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let common = rest.iter().zip(secret).take_while(|(a, b)| a == b).count();
        let cut_off = common >= MIN_PREFIX.min(secret.len())
            && (common == rest.len() || rest[common] == b'\'');
        if common == secret.len() || (common > 0 && cut_off) {
            let o = out.get_or_insert_with(|| text[..i].to_vec());
            o.extend_from_slice(MARKER.as_bytes());
            i += common;
        } else {
            if let Some(o) = &mut out {
                o.push(text[i]);
            }
            i += 1;
        }
    }
    out
}

/// The frame with the secret taken out of its raw bytes and of its text. Unchanged (and not
/// copied) when the secret is not in it.
pub fn redact_received(r: Received, secret: &[u8]) -> Received {
    if redact_bytes(&r.raw, secret).is_none() {
        return r;
    }
    let reencoded = match Scanner::default().scan(&r.raw) {
        Ok(Scan::Frame(frame, _)) => {
            let mut out = Vec::with_capacity(r.raw.len());
            encode_redacted(&frame, secret, &mut out);
            Some(out)
        }
        _ => None,
    };
    // A secret that spans the frame's structure (a CRLF inside the password) survives the
    // leaf-by-leaf pass: then the bytes are redacted as they are, even if they no longer parse.
    let raw = match reencoded {
        Some(out) if redact_bytes(&out, secret).is_none() => out,
        Some(out) => redact_bytes(&out, secret).unwrap_or(out),
        None => redact_bytes(&r.raw, secret).unwrap_or_default(),
    };
    let mut nodes = Vec::new();
    let item = match Scanner::default().scan_flat(&raw, &mut nodes) {
        Ok(FlatScan::Frame(frame)) => received(frame, r.offset, r.at, r.wall).item,
        _ => Item::Reply(String::from_utf8_lossy(&raw).into_owned(), true),
    };
    Received {
        raw: raw.into(),
        item,
        ..r
    }
}

/// Encodes `frame` with the secret redacted in every text it holds; blob lengths follow.
fn encode_redacted(frame: &Frame<'_>, secret: &[u8], out: &mut Vec<u8>) {
    let header = |out: &mut Vec<u8>, tag: u8, n: usize| {
        out.push(tag);
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    let fix = |t: &[u8]| redact_bytes(t, secret).unwrap_or_else(|| t.to_vec());
    match frame {
        Frame::Simple(t) => Frame::Simple(&fix(t)).encode(out),
        Frame::Error(t) => Frame::Error(&fix(t)).encode(out),
        Frame::Blob(t) => Frame::Blob(&fix(t)).encode(out),
        Frame::BlobError(t) => Frame::BlobError(&fix(t)).encode(out),
        Frame::BigNumber(t) => Frame::BigNumber(&fix(t)).encode(out),
        Frame::Verbatim { format, text } => Frame::Verbatim {
            format,
            text: &fix(text),
        }
        .encode(out),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            let tag = match frame {
                Frame::Array(_) => b'*',
                Frame::Set(_) => b'~',
                _ => b'>',
            };
            header(out, tag, items.len());
            for item in items {
                encode_redacted(item, secret, out);
            }
        }
        Frame::Map(pairs) => {
            header(out, b'%', pairs.len());
            for (k, v) in pairs {
                encode_redacted(k, secret, out);
                encode_redacted(v, secret, out);
            }
        }
        Frame::Attributed { attributes, value } => {
            header(out, b'|', attributes.len());
            for (k, v) in attributes {
                encode_redacted(k, secret, out);
                encode_redacted(v, secret, out);
            }
            encode_redacted(value, secret, out);
        }
        other => other.encode(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str, secret: &str) -> String {
        redact_bytes(text.as_bytes(), secret.as_bytes())
            .map(|b| String::from_utf8(b).unwrap())
            .unwrap_or_else(|| text.to_string())
    }

    #[test]
    fn whole_and_cut_off_echoes_are_redacted() {
        assert_eq!(
            r("ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' 'S3cretPW' ", "S3cretPW"),
            "ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' '<redacted>' "
        );
        assert_eq!(
            r("args: 'AUTH' 'u' 'S3cr'", "S3cretPW"),
            "args: 'AUTH' 'u' '<redacted>'"
        );
        assert_eq!(r("tail S3cre", "S3cretPW"), "tail <redacted>");
        assert_eq!(r("S3 and S3cr and x", "S3cretPW"), "S3 and S3cr and x");
        assert_eq!(r("pwpwpw", "pw"), "<redacted><redacted><redacted>");
        assert_eq!(redact_bytes(b"nothing here", b"S3cretPW"), None);
        assert_eq!(redact_bytes(b"anything", b""), None);
    }
}
