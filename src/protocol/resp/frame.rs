//! The owned frame tree, its encoding back to wire bytes, and the scanner's error and outcome
//! types: what every other part of `resp` produces or reports.

use std::fmt;
/// Size limits; exceeding one is a typed error, raised from the declared length before any
/// allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest blob (`$`, `!`, `=`) accepted. Redis' own `proto-max-bulk-len` defaults to 512 MiB.
    pub max_blob: u64,
    /// Most elements one aggregate may declare (a map's pairs count twice).
    pub max_elements: u64,
    /// Deepest nesting of aggregates (and attributes). Recursion is bounded by this.
    pub max_depth: usize,
    /// Largest whole frame, in bytes; at most [`MAX_FRAME_CAP`](super::MAX_FRAME_CAP) (4 GiB) is honoured.
    pub max_frame: u64,
    /// Most values one frame decodes (flat or into its tree). Past it an aggregate keeps the
    /// elements decoded so far and its declared count ([`Frame::Elided`]): a decoded value
    /// costs 16 bytes flat and 40 in a tree for as few as 3 on the wire, so a frame of millions
    /// of elements would otherwise decode into many times its size. The frame's bytes are
    /// checked and kept whole regardless.
    pub max_decoded: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_blob: 512 * 1024 * 1024,
            // Replies such as KEYS * legitimately carry millions of elements.
            max_elements: 1 << 27,
            max_depth: 64,
            max_frame: 1024 * 1024 * 1024,
            // About 10 MiB of decoded values; a large cluster's topology reply fits.
            max_decoded: 1 << 18,
        }
    }
}

/// One RESP3 value, borrowing its text from the buffer it was scanned from.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame<'a> {
    /// `+text`
    Simple(&'a [u8]),
    /// `-ERR text`
    Error(&'a [u8]),
    /// `:123`
    Integer(i64),
    /// `$N` blob string
    Blob(&'a [u8]),
    /// `!N` blob error
    BlobError(&'a [u8]),
    /// `=N` verbatim string: a three-byte format (`txt`, `mkd`) and the text after the colon
    Verbatim { format: &'a [u8], text: &'a [u8] },
    /// `_`, and RESP2's `$-1` / `*-1`
    Null,
    /// `,1.5`, `,inf`, `,-inf`, `,nan`
    Double(f64),
    /// `#t` / `#f`
    Boolean(bool),
    /// `(123...` kept as its digits
    BigNumber(&'a [u8]),
    /// `*N`
    Array(Vec<Frame<'a>>),
    /// `%N`: N key/value pairs, in wire order
    Map(Vec<(Frame<'a>, Frame<'a>)>),
    /// `~N`
    Set(Vec<Frame<'a>>),
    /// `>N`: out-of-band data, where maintenance notifications live
    Push(Vec<Frame<'a>>),
    /// `|N` attributes followed by the value they describe
    Attributed {
        attributes: Vec<(Frame<'a>, Frame<'a>)>,
        value: Box<Frame<'a>>,
    },
    /// An aggregate with values left undecoded because the frame had decoded
    /// [`Limits::max_decoded`] values: its type marker (`*`, `%`, `~`, `>`, `|`), the number of
    /// elements it declared (a map's pairs count twice, an attribute's value once), and the
    /// elements decoded, which are its first ones in wire order (keys and values alternate; the
    /// last may be elided itself). Every byte was checked all the same, and the frame's raw span
    /// holds them all.
    Elided {
        tag: u8,
        elements: u64,
        head: Vec<Frame<'a>>,
    },
}

impl<'a> Frame<'a> {
    /// The text of a simple or blob string (or verbatim text), if this is one.
    pub fn as_text(&self) -> Option<&'a [u8]> {
        match self {
            Frame::Simple(s) | Frame::Blob(s) => Some(s),
            Frame::Verbatim { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The value behind any attributes.
    pub fn unattributed(&self) -> &Frame<'a> {
        match self {
            Frame::Attributed { value, .. } => value.unattributed(),
            other => other,
        }
    }

    /// A short name of the RESP3 type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Frame::Simple(_) => "simple string",
            Frame::Error(_) => "simple error",
            Frame::Integer(_) => "integer",
            Frame::Blob(_) => "blob string",
            Frame::BlobError(_) => "blob error",
            Frame::Verbatim { .. } => "verbatim string",
            Frame::Null => "null",
            Frame::Double(_) => "double",
            Frame::Boolean(_) => "boolean",
            Frame::BigNumber(_) => "big number",
            Frame::Array(_) => "array",
            Frame::Map(_) => "map",
            Frame::Set(_) => "set",
            Frame::Push(_) => "push",
            Frame::Attributed { .. } => "attributed value",
            Frame::Elided { tag, .. } => aggregate_name(*tag),
        }
    }

    /// Appends this frame's RESP3 encoding to `out`. Encoding a scanned frame gives back its
    /// bytes, except for forms with two spellings (RESP2 nulls become `_`, doubles are
    /// re-printed) and an elided aggregate, of which only the header and the decoded head are
    /// written (a prefix of its bytes: the raw span is the whole frame).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Simple(s) => line(out, b'+', s),
            Frame::Error(s) => line(out, b'-', s),
            Frame::Integer(n) => line(out, b':', n.to_string().as_bytes()),
            Frame::Blob(s) => blob(out, b'$', &[s]),
            Frame::BlobError(s) => blob(out, b'!', &[s]),
            Frame::Verbatim { format, text } => blob(out, b'=', &[format, b":", text]),
            Frame::Null => out.extend_from_slice(b"_\r\n"),
            Frame::Double(d) => {
                let text = if d.is_nan() {
                    "nan".to_string()
                } else if d.is_infinite() {
                    if *d > 0.0 { "inf" } else { "-inf" }.to_string()
                } else {
                    format!("{d:?}")
                };
                line(out, b',', text.as_bytes())
            }
            Frame::Boolean(b) => line(out, b'#', if *b { b"t" } else { b"f" }),
            Frame::BigNumber(s) => line(out, b'(', s),
            Frame::Array(items) => aggregate(out, b'*', items),
            Frame::Set(items) => aggregate(out, b'~', items),
            Frame::Push(items) => aggregate(out, b'>', items),
            Frame::Map(pairs) => pairs_out(out, b'%', pairs),
            Frame::Attributed { attributes, value } => {
                pairs_out(out, b'|', attributes);
                value.encode(out);
            }
            Frame::Elided {
                tag,
                elements,
                head,
            } => {
                let declared = match tag {
                    b'%' => elements / 2,
                    b'|' => elements.saturating_sub(1) / 2,
                    _ => *elements,
                };
                line(out, *tag, declared.to_string().as_bytes());
                for item in head {
                    item.encode(out);
                }
            }
        }
    }

    /// The encoding as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

/// The type name of an aggregate marker.
pub(super) fn aggregate_name(tag: u8) -> &'static str {
    match tag {
        b'*' => "array",
        b'%' => "map",
        b'~' => "set",
        b'>' => "push",
        b'|' => "attributed value",
        _ => "aggregate",
    }
}

fn line(out: &mut Vec<u8>, tag: u8, text: &[u8]) {
    out.push(tag);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

fn blob(out: &mut Vec<u8>, tag: u8, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    line(out, tag, len.to_string().as_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"\r\n");
}

fn aggregate(out: &mut Vec<u8>, tag: u8, items: &[Frame<'_>]) {
    line(out, tag, items.len().to_string().as_bytes());
    for item in items {
        item.encode(out);
    }
}

fn pairs_out(out: &mut Vec<u8>, tag: u8, pairs: &[(Frame<'_>, Frame<'_>)]) {
    line(out, tag, pairs.len().to_string().as_bytes());
    for (k, v) in pairs {
        k.encode(out);
        v.encode(out);
    }
}

/// Encodes a command the way clients send them: an array of blob strings.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(16 + args.iter().map(|a| a.as_ref().len() + 16).sum::<usize>());
    line(&mut out, b'*', args.len().to_string().as_bytes());
    for a in args {
        blob(&mut out, b'$', &[a.as_ref()]);
    }
    out
}

/// What went wrong in a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The first byte of a value is not a RESP3 type marker.
    UnknownType(u8),
    /// A specific byte or token was required here.
    Expected {
        expected: &'static str,
        found: String,
    },
    /// A length or number header that is not a decimal integer.
    BadNumber(String),
    BlobTooLong {
        declared: u64,
        limit: u64,
    },
    TooManyElements {
        declared: u64,
        limit: u64,
    },
    TooDeep {
        limit: usize,
    },
    FrameTooLarge {
        size: u64,
        limit: u64,
    },
    /// `$?` / `*?` / `%?` / `~?`: streamed types, which Redis never sends to clients.
    Streamed(u8),
}

/// A framing error: what was wrong and the byte offset where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespError {
    /// Offset of the offending byte, counted from the start of the stream (or slice) scanned.
    pub offset: u64,
    pub kind: ErrorKind,
}

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: ", self.offset)?;
        match &self.kind {
            ErrorKind::UnknownType(b) => write!(
                f,
                "expected a RESP3 type marker (one of +-:$!=_,#(*%~>|), found {}",
                show_byte(*b)
            ),
            ErrorKind::Expected { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ErrorKind::BadNumber(text) => write!(f, "expected a decimal integer, found {text:?}"),
            ErrorKind::BlobTooLong { declared, limit } => write!(
                f,
                "blob declares {declared} bytes, over the limit of {limit}"
            ),
            ErrorKind::TooManyElements { declared, limit } => write!(
                f,
                "aggregate declares {declared} elements, over the limit of {limit}"
            ),
            ErrorKind::TooDeep { limit } => {
                write!(f, "aggregates nested deeper than the limit of {limit}")
            }
            ErrorKind::FrameTooLarge { size, limit } => write!(
                f,
                "frame needs at least {size} bytes, over the limit of {limit}"
            ),
            ErrorKind::Streamed(t) => write!(
                f,
                "streamed {} ('{}?') is not supported: Redis does not send it to clients",
                match t {
                    b'$' => "blob string",
                    b'*' => "array",
                    b'%' => "map",
                    b'~' => "set",
                    b'>' => "push",
                    _ => "aggregate",
                },
                *t as char
            ),
        }
    }
}

impl std::error::Error for RespError {}

/// A byte as a human reads it in an error: `'x'` or `0x0d`.
pub(super) fn show_byte(b: u8) -> String {
    match b {
        b'\r' => "'\\r'".into(),
        b'\n' => "'\\n'".into(),
        0x21..=0x7e => format!("'{}'", b as char),
        _ => format!("0x{b:02x}"),
    }
}

/// The outcome of one scan.
#[derive(Debug, PartialEq)]
pub enum Scan<'a> {
    /// A whole frame and the number of bytes it occupied at the start of the buffer.
    Frame(Frame<'a>, usize),
    /// More bytes are needed; the frame is at least `need` bytes long in total.
    Incomplete { need: usize },
}

/// A frame and the byte range it occupied.
pub type Spanned<'a> = (Frame<'a>, std::ops::Range<usize>);
