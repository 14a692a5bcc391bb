//! One input of `decode`: read whole, its format told apart (or as `--format` says), turned into
//! bytes, and the bytes scanned into frames. Kept apart from the folder's root, which is its map.

use crate::observe::decode::dump;
use crate::protocol::resp::{Scanner, Spanned};
use crate::shared::escape::{self, InputFormat};
use anyhow::Context;
use std::io::Read;

/// Reads one input whole: a file, or standard input for `-`.
pub fn read_input(source: &str) -> anyhow::Result<Vec<u8>> {
    let mut input = Vec::new();
    if source == "-" {
        std::io::stdin()
            .read_to_end(&mut input)
            .context("reading standard input")?;
    } else {
        input = std::fs::read(source).with_context(|| format!("reading {source}"))?;
    }
    Ok(input)
}

/// Why an input stopped decoding, and at which byte (of the decoded bytes when the input was
/// text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub offset: u64,
    pub message: String,
}

/// What an input stands for.
pub enum Input<'a> {
    /// Bare `AzureRedisEvents` payloads: each line's offset in the input and its bytes.
    Azure(Vec<(u64, &'a [u8])>),
    /// Bytes to scan for frames; `decoded` when they were decoded from text.
    Bytes { bytes: Vec<u8>, decoded: bool },
    /// The text did not decode into bytes.
    Failed(Failure),
}

/// The bytes `input` stands for in `format` (`None`: told apart). Text that is not UTF-8 where
/// text is needed is an error of the command, naming the byte.
pub fn bytes_of<'a>(
    source: &str,
    input: &'a [u8],
    format: Option<InputFormat>,
) -> anyhow::Result<Input<'a>> {
    if format.is_none() && is_azure_text(input) {
        return Ok(Input::Azure(azure_payloads(input)));
    }
    let format = format.unwrap_or_else(|| detect(input));
    let text = || {
        std::str::from_utf8(input)
            .map_err(|e| anyhow::anyhow!("{source}: byte {}: input is not text", e.valid_up_to()))
    };
    let read = match format {
        InputFormat::Raw => Ok(input.to_vec()),
        InputFormat::Escaped => {
            unescape_indented(text()?).map_err(|e| format!("escaped text, {e}"))
        }
        InputFormat::Hex => hex(text()?),
    };
    Ok(match read {
        Ok(bytes) => Input::Bytes {
            bytes,
            decoded: format != InputFormat::Raw,
        },
        Err(message) => Input::Failed(Failure { offset: 0, message }),
    })
}

/// Hex text: a dump from `xxd` or `hexdump -C`, or bare hex.
fn hex(text: &str) -> Result<Vec<u8>, String> {
    match dump::kind(text) {
        Some(kind) => dump::read(text, kind).map_err(|e| format!("{} output, {e}", kind.name())),
        None => escape::unhex(text).map_err(|e| format!("hex text, {e}")),
    }
}

/// The frames of some bytes, each with its span, and what stopped the scan before their end.
pub struct Scanned<'b> {
    pub frames: Vec<Spanned<'b>>,
    pub failure: Option<Failure>,
}

/// Scans `bytes` for frames; `decoded` says the bytes came from text, which an error's offset
/// then counts in.
pub fn scan(bytes: &[u8], decoded: bool) -> Scanned<'_> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Scanned {
            frames: Vec::new(),
            failure: Some(Failure {
                offset: 0,
                message: "no frames in the input".to_string(),
            }),
        };
    }
    let decoded = if decoded { " of the decoded bytes" } else { "" };
    let (frames, end, error) = Scanner::default().scan_all(bytes);
    let failure = match error {
        Some(e) => Some(Failure {
            offset: e.offset,
            message: format!("{e}{decoded}"),
        }),
        None if end < bytes.len() => Some(Failure {
            offset: end as u64,
            message: format!(
                "at byte {end}{decoded}: incomplete frame, the input ends after {} of its bytes",
                bytes.len() - end
            ),
        }),
        None => None,
    };
    Scanned { frames, failure }
}

/// Whether the input is bare `AzureRedisEvents` payloads rather than frames: it starts (past
/// blank space) with the key every payload starts with. No frame starts with a letter.
fn is_azure_text(input: &[u8]) -> bool {
    input.trim_ascii_start().starts_with(b"NotificationType|")
}

/// Bare payloads, one a line, as a client logs them: every line that is not blank is one
/// payload (whatever it starts with: a damaged one still gets its line), its bytes up to the
/// line break (a CR before the LF belongs to the break).
fn azure_payloads(input: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in input.split(|&b| b == b'\n') {
        let offset = start as u64;
        start += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push((offset, line));
        }
    }
    out
}

/// Guesses the input's format: a hex dump is hex whatever its ASCII column holds; otherwise
/// [`escape::detect`] decides.
fn detect(input: &[u8]) -> InputFormat {
    match std::str::from_utf8(input) {
        Ok(text) if dump::kind(text).is_some() => InputFormat::Hex,
        _ => escape::detect(input),
    }
}

/// Escaped text, where each line's indentation is layout, not bytes: the raw-bytes lines `watch`
/// and `decode` print are indented, and a frame never starts with a space a person would paste.
/// Error columns still count from the start of the line as pasted.
fn unescape_indented(text: &str) -> Result<Vec<u8>, escape::TextError> {
    let mut out = Vec::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        let body = line.trim_start();
        let indent = line[..line.len() - body.len()].chars().count();
        let mut bytes = escape::unescape(body).map_err(|mut e| {
            e.line = index + 1;
            e.column += indent;
            e
        })?;
        out.append(&mut bytes);
    }
    Ok(out)
}
