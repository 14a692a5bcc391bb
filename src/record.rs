//! The JSON-lines schema: one self-describing object per line, shared by `decode --json`,
//! `watch --json`, `--capture` files and `replay`.
//!
//! Every line has a `type` and the schema version `v`, so a consumer can dispatch on a line
//! without context, and a capture cut at any point is still a valid prefix. Raw bytes travel as
//! escaped text (see `escape`), which is lossless and still greppable. The parse stored next to
//! the bytes is what `replay --check` compares against a fresh parse of the same bytes.
//! The schema is documented in `docs/jsonl.md`.

use crate::escape::escape;
use crate::notification::{classify, Classified};
use crate::resp::{Scan, Scanner};
use serde::{Deserialize, Serialize};

/// Version of the JSON-lines schema, carried on every line as `v`.
pub const SCHEMA_VERSION: u32 = 1;

/// One frame: where it was in its stream, its exact bytes, and what they parse to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameRecord {
    /// Byte offset of the frame's first byte in its stream (connection or input).
    pub offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// The exact bytes, escaped (`\r`, `\n`, `\\`, `\xNN`).
    pub raw: String,
    pub parsed: Classified,
}

impl FrameRecord {
    pub fn new(frame: &crate::resp::Frame<'_>, raw: &[u8], offset: u64) -> FrameRecord {
        FrameRecord {
            offset,
            len: raw.len(),
            raw: escape(raw),
            parsed: classify(frame),
        }
    }
}

/// Parses the bytes of a stored frame again with today's scanner and parser.
pub fn reparse(raw_escaped: &str) -> Result<Classified, String> {
    let bytes = crate::escape::unescape(raw_escaped).map_err(|e| format!("raw text: {e}"))?;
    match Scanner::default().scan(&bytes) {
        Ok(Scan::Frame(frame, n)) if n == bytes.len() => Ok(classify(&frame)),
        Ok(Scan::Frame(_, n)) => Err(format!(
            "raw holds {} bytes after the frame's {n}",
            bytes.len() - n
        )),
        Ok(Scan::Incomplete { need }) => Err(format!(
            "raw is an incomplete frame ({} of at least {need} bytes)",
            bytes.len()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Lines written by `decode --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecodeLine {
    Frame {
        v: u32,
        /// The input file, or `-` for standard input.
        source: String,
        frame: FrameRecord,
    },
    Error {
        v: u32,
        source: String,
        /// Offset in the decoded byte stream of that input.
        offset: u64,
        message: String,
    },
}
