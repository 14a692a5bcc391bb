//! A strict RESP3 scanner that keeps the exact bytes of every frame.
//!
//! maintwatch is a diagnostic instrument: it prints and captures the bytes a server sent, so its
//! reader must tell *where* a malformed frame went wrong, check every CRLF, and refuse absurd
//! declared sizes before allocating anything. General-purpose client codecs are lenient and fast
//! to accept; this one is strict and cheap to run: frames borrow from the read buffer, and decode
//! into a flat list of 16-byte [`Node`]s in wire order (a [`FlatFrame`]) that one reader reuses
//! from frame to frame, so the watcher's hot path allocates nothing per frame. The owned tree
//! ([`Frame`], one `Vec` per aggregate) is built from the flat form where code wants one; both
//! come from the same single scanner, so they cannot disagree.
//!
//! "Incomplete, read more" is not an error: [`Scanner::scan`] returns [`Scan::Incomplete`] with a
//! lower bound on how many bytes the frame needs, so a reader need not rescan a large blob on every
//! small read.
//!
//! Everything a server sends is untrusted, so a frame's cost stays linear in its size: the
//! [`StreamReader`] checks a frame still arriving incrementally (resuming where the last read
//! stopped) and scans it into a tree once, when whole; and a tree holds at most
//! [`Limits::max_decoded`] values, past which aggregates are [`Frame::Elided`] (their bytes are
//! still checked and delivered whole).

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
    /// Largest whole frame, in bytes; at most [`MAX_FRAME_CAP`] (4 GiB) is honoured.
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
fn aggregate_name(tag: u8) -> &'static str {
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
fn show_byte(b: u8) -> String {
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

/// The type of a decoded value in a [`FlatFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Simple,
    Error,
    Integer,
    Blob,
    BlobError,
    Verbatim,
    Null,
    Double,
    Boolean,
    BigNumber,
    Array,
    Map,
    Set,
    Push,
    Attributed,
}

impl Kind {
    fn of_aggregate(tag: u8) -> Kind {
        match tag {
            b'*' => Kind::Array,
            b'%' => Kind::Map,
            b'~' => Kind::Set,
            b'>' => Kind::Push,
            _ => Kind::Attributed,
        }
    }

    /// The wire marker of an aggregate kind.
    fn tag(self) -> u8 {
        match self {
            Kind::Array => b'*',
            Kind::Map => b'%',
            Kind::Set => b'~',
            Kind::Push => b'>',
            _ => b'|',
        }
    }

    fn is_aggregate(self) -> bool {
        matches!(
            self,
            Kind::Array | Kind::Map | Kind::Set | Kind::Push | Kind::Attributed
        )
    }
}

/// One decoded value of a [`FlatFrame`]: 16 bytes and no pointer, so a frame's values fill one
/// reused `Vec` instead of a `Vec` per aggregate. Offsets are 32-bit, which is why a frame is at
/// most [`MAX_FRAME_CAP`] bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    kind: Kind,
    /// An aggregate whose values were not all decoded (see [`Frame::Elided`]).
    elided: bool,
    /// Text: its length. Boolean: 0 or 1. Aggregate: how many of its values follow it decoded.
    a: u32,
    /// Text: its offset in the frame. Integer and double: the value's bits. Aggregate: the
    /// elements it declared (a map's pairs twice, an attribute's value once) in the low half,
    /// the index just past its last decoded descendant in the high half.
    b: u64,
}

/// The largest frame a scan accepts whatever [`Limits::max_frame`] says: a [`Node`] holds
/// offsets in 32 bits. Four GiB is eight times Redis' own largest bulk string.
pub const MAX_FRAME_CAP: u64 = u32::MAX as u64;

impl Node {
    const NULL: Node = Node {
        kind: Kind::Null,
        elided: false,
        a: 0,
        b: 0,
    };

    #[inline]
    fn text(kind: Kind, start: usize, len: usize) -> Node {
        // Both fit: the whole frame is at most MAX_FRAME_CAP bytes.
        Node {
            kind,
            elided: false,
            a: len as u32,
            b: start as u64,
        }
    }

    #[inline]
    fn bits(kind: Kind, b: u64) -> Node {
        Node {
            kind,
            elided: false,
            a: 0,
            b,
        }
    }

    /// Index of the node after this one and its descendants, this one being at `at`.
    #[inline]
    fn end(&self, at: usize) -> usize {
        if self.kind.is_aggregate() {
            (self.b >> 32) as usize
        } else {
            at + 1
        }
    }
}

/// A frame decoded into a flat list of [`Node`]s in wire order, borrowing its text from the
/// frame's bytes: what [`Scanner::scan_flat`] and [`StreamReader::drain_flat`] give, at no
/// allocation once the node list has grown to the frames' size. [`FlatFrame::to_frame`] builds
/// the owned tree where one is needed.
#[derive(Debug, Clone, Copy)]
pub struct FlatFrame<'a, 'n> {
    raw: &'a [u8],
    nodes: &'n [Node],
}

impl<'a, 'n> FlatFrame<'a, 'n> {
    /// The frame's bytes, exactly as received.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The frame's value.
    pub fn root(&self) -> Value<'a, 'n> {
        Value {
            raw: self.raw,
            nodes: self.nodes,
            at: 0,
        }
    }

    /// How many values were decoded (the root and every nested value kept).
    pub fn decoded(&self) -> usize {
        self.nodes.len()
    }

    /// The same frame as an owned tree, equal to what [`Scanner::scan`] gives.
    pub fn to_frame(&self) -> Frame<'a> {
        self.root().to_frame()
    }
}

/// One value of a [`FlatFrame`].
#[derive(Debug, Clone, Copy)]
pub struct Value<'a, 'n> {
    raw: &'a [u8],
    nodes: &'n [Node],
    at: usize,
}

impl<'a, 'n> Value<'a, 'n> {
    #[inline]
    fn node(&self) -> Node {
        self.nodes[self.at]
    }

    pub fn kind(&self) -> Kind {
        self.node().kind
    }

    /// Whether this aggregate kept only its first values (see [`Frame::Elided`]).
    pub fn is_elided(&self) -> bool {
        self.node().elided
    }

    /// The text of any string-like value: simple and blob strings and errors, a verbatim
    /// string's text (after its format), a big number's digits.
    pub fn bytes(&self) -> Option<&'a [u8]> {
        let n = self.node();
        match n.kind {
            Kind::Simple
            | Kind::Error
            | Kind::Blob
            | Kind::BlobError
            | Kind::Verbatim
            | Kind::BigNumber => Some(&self.raw[n.b as usize..n.b as usize + n.a as usize]),
            _ => None,
        }
    }

    /// The text of a simple or blob string (or verbatim text), as [`Frame::as_text`].
    pub fn as_text(&self) -> Option<&'a [u8]> {
        match self.kind() {
            Kind::Simple | Kind::Blob | Kind::Verbatim => self.bytes(),
            _ => None,
        }
    }

    /// A verbatim string's three-byte format.
    pub fn format(&self) -> Option<&'a [u8]> {
        let n = self.node();
        let start = n.b as usize;
        (n.kind == Kind::Verbatim).then(|| &self.raw[start - 4..start - 1])
    }

    pub fn integer(&self) -> Option<i64> {
        let n = self.node();
        (n.kind == Kind::Integer).then_some(n.b as i64)
    }

    pub fn double(&self) -> Option<f64> {
        let n = self.node();
        (n.kind == Kind::Double).then(|| f64::from_bits(n.b))
    }

    pub fn boolean(&self) -> Option<bool> {
        let n = self.node();
        (n.kind == Kind::Boolean).then_some(n.a != 0)
    }

    /// The elements an aggregate declared (a map's pairs count twice, an attribute's value
    /// once); 0 for anything else.
    pub fn declared(&self) -> u64 {
        let n = self.node();
        if n.kind.is_aggregate() {
            n.b & u64::from(u32::MAX)
        } else {
            0
        }
    }

    /// How many of an aggregate's values were decoded: all it declared unless it is elided.
    /// A map's keys and values count one each, as does an attribute's value.
    pub fn len(&self) -> usize {
        let n = self.node();
        if n.kind.is_aggregate() {
            n.a as usize
        } else {
            0
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An aggregate's decoded values in wire order (a map's keys and values alternating, an
    /// attribute's pairs then the value they describe).
    pub fn children(&self) -> Children<'a, 'n> {
        Children {
            raw: self.raw,
            nodes: self.nodes,
            next: self.at + 1,
            left: self.len(),
        }
    }

    /// A short name of the RESP3 type, as [`Frame::type_name`].
    pub fn type_name(&self) -> &'static str {
        match self.kind() {
            Kind::Simple => "simple string",
            Kind::Error => "simple error",
            Kind::Integer => "integer",
            Kind::Blob => "blob string",
            Kind::BlobError => "blob error",
            Kind::Verbatim => "verbatim string",
            Kind::Null => "null",
            Kind::Double => "double",
            Kind::Boolean => "boolean",
            Kind::BigNumber => "big number",
            agg => aggregate_name(agg.tag()),
        }
    }

    /// This value as an owned tree.
    pub fn to_frame(&self) -> Frame<'a> {
        let mut at = self.at;
        tree(self.raw, self.nodes, &mut at)
    }
}

/// The tree of the value at `nodes[*at]`, leaving `*at` past its descendants. One walk in wire
/// order: the nodes are read once each, and each aggregate's `Vec` is allocated at its size.
fn tree<'a>(raw: &'a [u8], nodes: &[Node], at: &mut usize) -> Frame<'a> {
    let n = nodes[*at];
    *at += 1;
    let (start, len) = (n.b as usize, n.a as usize);
    let text = || &raw[start..start + len];
    match n.kind {
        Kind::Simple => Frame::Simple(text()),
        Kind::Error => Frame::Error(text()),
        Kind::Blob => Frame::Blob(text()),
        Kind::BlobError => Frame::BlobError(text()),
        Kind::BigNumber => Frame::BigNumber(text()),
        Kind::Verbatim => Frame::Verbatim {
            format: &raw[start - 4..start - 1],
            text: text(),
        },
        Kind::Integer => Frame::Integer(n.b as i64),
        Kind::Double => Frame::Double(f64::from_bits(n.b)),
        Kind::Boolean => Frame::Boolean(n.a != 0),
        Kind::Null => Frame::Null,
        _ => aggregate_tree(raw, nodes, at, n),
    }
}

fn aggregate_tree<'a>(raw: &'a [u8], nodes: &[Node], at: &mut usize, n: Node) -> Frame<'a> {
    let kept = n.a as usize;
    let items = |k: usize, at: &mut usize| -> Vec<Frame<'a>> {
        (0..k).map(|_| tree(raw, nodes, at)).collect()
    };
    let pairs = |k: usize, at: &mut usize| -> Vec<(Frame<'a>, Frame<'a>)> {
        (0..k / 2)
            .map(|_| (tree(raw, nodes, at), tree(raw, nodes, at)))
            .collect()
    };
    if n.elided {
        return Frame::Elided {
            tag: n.kind.tag(),
            elements: n.b & u64::from(u32::MAX),
            head: items(kept, at),
        };
    }
    match n.kind {
        Kind::Array => Frame::Array(items(kept, at)),
        Kind::Set => Frame::Set(items(kept, at)),
        Kind::Push => Frame::Push(items(kept, at)),
        Kind::Map => Frame::Map(pairs(kept, at)),
        _ => {
            let attributes = pairs(kept.saturating_sub(1), at);
            Frame::Attributed {
                attributes,
                value: Box::new(tree(raw, nodes, at)),
            }
        }
    }
}

/// The decoded values of an aggregate, see [`Value::children`].
#[derive(Debug, Clone)]
pub struct Children<'a, 'n> {
    raw: &'a [u8],
    nodes: &'n [Node],
    next: usize,
    left: usize,
}

impl<'a, 'n> Iterator for Children<'a, 'n> {
    type Item = Value<'a, 'n>;

    #[inline]
    fn next(&mut self) -> Option<Value<'a, 'n>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = self.next;
        self.next = self.nodes[at].end(at);
        Some(Value {
            raw: self.raw,
            nodes: self.nodes,
            at,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Children<'_, '_> {}

/// The outcome of one flat scan, see [`Scan`].
#[derive(Debug, Clone, Copy)]
pub enum FlatScan<'a, 'n> {
    /// A whole frame; its length is `raw().len()`.
    Frame(FlatFrame<'a, 'n>),
    Incomplete {
        need: usize,
    },
}

/// Scans frames from the start of a buffer, within [`Limits`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Scanner {
    pub limits: Limits,
}

/// Internal: incomplete or failed. The error is boxed so that every step of the scan returns
/// two words: errors are rare, steps are not.
enum Stop {
    Incomplete(usize),
    Error(Box<RespError>),
}

type R<T> = Result<T, Stop>;

impl Scanner {
    pub fn new(limits: Limits) -> Self {
        Scanner { limits }
    }

    /// Scans one frame at the start of `buf` into a tree. Error offsets are relative to `buf`.
    pub fn scan<'a>(&self, buf: &'a [u8]) -> Result<Scan<'a>, RespError> {
        // Room for a typical reply or push; a larger frame grows it.
        let mut nodes = Vec::with_capacity(16);
        Ok(match self.scan_flat(buf, &mut nodes)? {
            FlatScan::Frame(frame) => Scan::Frame(frame.to_frame(), frame.raw().len()),
            FlatScan::Incomplete { need } => Scan::Incomplete { need },
        })
    }

    /// Scans one frame at the start of `buf` into `nodes` (cleared first): the same checks and
    /// limits as [`Scanner::scan`], without allocating once `nodes` has grown to the frames'
    /// size. On an error or an incomplete frame, `nodes` holds nothing of use.
    pub fn scan_flat<'a, 'n>(
        &self,
        buf: &'a [u8],
        nodes: &'n mut Vec<Node>,
    ) -> Result<FlatScan<'a, 'n>, RespError> {
        nodes.clear();
        let mut cur = Cursor::new(buf, &self.limits, nodes);
        let max_frame = cur.max_frame;
        let too_large = |size: usize| RespError {
            offset: 0,
            kind: ErrorKind::FrameTooLarge {
                size: size as u64,
                limit: max_frame,
            },
        };
        let result = cur.value(0);
        let pos = cur.pos;
        match result {
            // The limit holds however the frame arrived: whole in one read as when streamed in.
            Ok(()) if pos as u64 > max_frame => Err(too_large(pos)),
            Ok(()) => Ok(FlatScan::Frame(FlatFrame {
                raw: &buf[..pos],
                nodes,
            })),
            Err(Stop::Incomplete(need)) if need as u64 > max_frame => Err(too_large(need)),
            Err(Stop::Incomplete(need)) => Ok(FlatScan::Incomplete { need }),
            Err(Stop::Error(e)) => Err(*e),
        }
    }

    /// Scans every complete frame in `buf`, returning them with their byte spans. Stops at the
    /// first error or at a trailing incomplete frame (whose start is the returned offset).
    pub fn scan_all<'a>(&self, buf: &'a [u8]) -> (Vec<Spanned<'a>>, usize, Option<RespError>) {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            match self.scan(&buf[pos..]) {
                Ok(Scan::Frame(f, n)) => {
                    out.push((f, pos..pos + n));
                    pos += n;
                }
                Ok(Scan::Incomplete { .. }) => break,
                Err(mut e) => {
                    e.offset += pos as u64;
                    return (out, pos, Some(e));
                }
            }
        }
        (out, pos, None)
    }
}

struct Cursor<'a, 'l> {
    buf: &'a [u8],
    pos: usize,
    limits: &'l Limits,
    /// [`Limits::max_frame`], at most [`MAX_FRAME_CAP`].
    max_frame: u64,
    /// The frame's values so far, in wire order.
    nodes: &'l mut Vec<Node>,
    /// Values still to decode into the tree (see [`Limits::max_decoded`]).
    budget: u64,
    /// A line known to hold no CR or LF so far: its start and how far it was searched. Lets a
    /// resumed check of a long line still arriving search only the new bytes.
    searched: (usize, usize),
    /// Whether some value was left undecoded: everything after it is only checked.
    elided: bool,
}

impl<'a, 'l> Cursor<'a, 'l> {
    fn new(buf: &'a [u8], limits: &'l Limits, nodes: &'l mut Vec<Node>) -> Self {
        Cursor {
            buf,
            pos: 0,
            limits,
            max_frame: limits.max_frame.min(MAX_FRAME_CAP),
            nodes,
            budget: limits.max_decoded,
            searched: (usize::MAX, 0),
            elided: false,
        }
    }

    #[cold]
    fn err<T>(&self, offset: usize, kind: ErrorKind) -> R<T> {
        Err(Stop::Error(Box::new(RespError {
            offset: offset as u64,
            kind,
        })))
    }

    fn check_size(&self, need: usize) -> R<()> {
        if need as u64 > self.max_frame {
            return self.err(
                0,
                ErrorKind::FrameTooLarge {
                    size: need as u64,
                    limit: self.max_frame,
                },
            );
        }
        Ok(())
    }

    /// The bytes up to the next CRLF, which must not contain a bare CR or LF.
    fn line(&mut self) -> R<&'a [u8]> {
        let start = self.pos;
        let rest = &self.buf[start..];
        let from = if self.searched.0 == start {
            self.searched.1.min(self.buf.len()) - start
        } else {
            0
        };
        // A simple line never holds CR or LF, so the first of either must be the CRLF.
        match rest[from..].iter().position(|&b| b == b'\r' || b == b'\n') {
            None => {
                self.searched = (start, self.buf.len());
                // One more byte might already be a bare LF: ask for no more than that.
                self.check_size(self.buf.len() + 1)?;
                Err(Stop::Incomplete(self.buf.len() + 1))
            }
            Some(i) => self.line_end(start, from + i),
        }
    }

    /// The line from `start` whose first CR or LF is at `start + i`.
    #[inline]
    fn line_end(&mut self, start: usize, i: usize) -> R<&'a [u8]> {
        let rest = &self.buf[start..];
        if rest[i] == b'\n' {
            return self.err(
                start + i,
                ErrorKind::Expected {
                    expected: "CRLF",
                    found: "a bare '\\n'".into(),
                },
            );
        }
        match rest.get(i + 1) {
            None => Err(Stop::Incomplete(start + i + 2)),
            Some(b'\n') => {
                self.pos = start + i + 2;
                Ok(&rest[..i])
            }
            Some(&b) => self.err(
                start + i + 1,
                ErrorKind::Expected {
                    expected: "'\\n' after '\\r'",
                    found: show_byte(b),
                },
            ),
        }
    }

    /// A signed decimal integer line (an optional '-', then at least one digit: Redis never
    /// writes a '+', and a strict reader does not take one). Headers are
    /// most of what a scanner reads, so the common case (up to 18 digits, then CRLF) is one pass;
    /// anything else goes the exact way, which also finds the error to report.
    #[inline]
    fn integer_line(&mut self) -> R<i64> {
        let buf = self.buf;
        let mut i = self.pos;
        // Most headers and small integers have one or two digits: no loop for them.
        if let Some(&[d, b'\r', b'\n']) = buf.get(i..i + 3) {
            let d = d.wrapping_sub(b'0');
            if d <= 9 {
                self.pos = i + 3;
                return Ok(i64::from(d));
            }
        }
        if let Some(&[d1, d2, b'\r', b'\n']) = buf.get(i..i + 4) {
            let (d1, d2) = (d1.wrapping_sub(b'0'), d2.wrapping_sub(b'0'));
            if d1 <= 9 && d2 <= 9 {
                self.pos = i + 4;
                return Ok(i64::from(d1 * 10 + d2));
            }
        }
        let neg = buf.get(i) == Some(&b'-');
        i += usize::from(neg);
        let digits = i;
        let mut n: u64 = 0;
        while let Some(&b) = buf.get(i) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            n = n * 10 + u64::from(d);
            i += 1;
            if i - digits > 18 {
                return self.integer_line_exact();
            }
        }
        if i == digits || buf.get(i) != Some(&b'\r') || buf.get(i + 1) != Some(&b'\n') {
            return self.integer_line_exact();
        }
        self.pos = i + 2;
        Ok(if neg { -(n as i64) } else { n as i64 })
    }

    #[cold]
    fn integer_line_exact(&mut self) -> R<i64> {
        let start = self.pos;
        let text = self.line()?;
        parse_i64(text).ok_or_else(|| {
            Stop::Error(Box::new(RespError {
                offset: start as u64,
                kind: ErrorKind::BadNumber(String::from_utf8_lossy(text).into_owned()),
            }))
        })
    }

    /// A length header: `?` (streamed) is rejected, -1 is RESP2's null (`$-1`, `*-1` only), and
    /// no other negative length is taken, `-0` included.
    #[inline]
    fn length(&mut self, tag: u8) -> R<Option<u64>> {
        let start = self.pos;
        if self.buf.get(start) == Some(&b'?') {
            return self.err(start - 1, ErrorKind::Streamed(tag));
        }
        let n = self.integer_line()?;
        if self.buf[start] != b'-' {
            return Ok(Some(n as u64));
        }
        match n {
            -1 if tag == b'$' || tag == b'*' => Ok(None),
            _ => self.negative_length(start),
        }
    }

    #[cold]
    fn negative_length<T>(&self, start: usize) -> R<T> {
        self.err(
            start,
            ErrorKind::Expected {
                expected: "a length of 0 or more",
                // It parsed as an integer: digits and a sign, nothing to escape.
                found: String::from_utf8_lossy(&self.buf[start..self.pos - 2]).into_owned(),
            },
        )
    }

    fn blob(&mut self, tag: u8) -> R<Option<&'a [u8]>> {
        if let Some(text) = self.short_blob() {
            return Ok(Some(text));
        }
        let header = self.pos - 1;
        let Some(len) = self.length(tag)? else {
            return Ok(None);
        };
        if len > self.limits.max_blob {
            return self.err(
                header,
                ErrorKind::BlobTooLong {
                    declared: len,
                    limit: self.limits.max_blob,
                },
            );
        }
        let len = len as usize;
        let start = self.pos;
        let end = start + len;
        self.check_size(end + 2)?;
        if self.buf.len() < end + 2 {
            return Err(Stop::Incomplete(end + 2));
        }
        if &self.buf[end..end + 2] != b"\r\n" {
            let at = if self.buf[end] == b'\r' { end + 1 } else { end };
            return self.err(
                at,
                ErrorKind::Expected {
                    expected: "CRLF after the blob's declared length",
                    found: show_byte(self.buf[at]),
                },
            );
        }
        self.pos = end + 2;
        Ok(Some(&self.buf[start..end]))
    }

    /// The usual blob, a length of one or two digits and its bytes all in the buffer, read in
    /// one go: a command's words and most replies are such blobs. `None` for anything else,
    /// which the exact way reads (or reports); whatever this takes, that takes the same.
    #[inline(always)]
    fn short_blob(&mut self) -> Option<&'a [u8]> {
        let buf = self.buf;
        let at = self.pos;
        let (len, head) = match *buf.get(at..at + 4)? {
            [d, b'\r', b'\n', _] if d.is_ascii_digit() => (usize::from(d - b'0'), 3),
            [d1, d2, b'\r', b'\n'] if d1.is_ascii_digit() && d2.is_ascii_digit() => {
                (usize::from(d1 - b'0') * 10 + usize::from(d2 - b'0'), 4)
            }
            _ => return None,
        };
        let start = at + head;
        let end = start + len;
        if len as u64 > self.limits.max_blob || (end + 2) as u64 > self.max_frame {
            return None;
        }
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        self.pos = end + 2;
        Some(&buf[start..end])
    }

    fn count(&mut self, tag: u8, per_item: u64) -> R<Option<usize>> {
        let header = self.pos - 1;
        let Some(n) = self.length(tag)? else {
            return Ok(None);
        };
        let elements = n.saturating_mul(per_item);
        if elements > self.limits.max_elements {
            return self.err(
                header,
                ErrorKind::TooManyElements {
                    declared: elements,
                    limit: self.limits.max_elements,
                },
            );
        }
        // Every element takes at least three bytes; a frame this short cannot be complete yet.
        let min_end = (self.pos as u64).saturating_add(elements.saturating_mul(3));
        if min_end > self.max_frame {
            return self.err(
                header,
                ErrorKind::FrameTooLarge {
                    size: min_end,
                    limit: self.max_frame,
                },
            );
        }
        Ok(Some(n as usize))
    }

    /// `n` items, decoded while the budget lasts; how many were kept, and `false` once anything
    /// in them was left undecoded (the rest are still checked, not kept). The decoded values
    /// are thus always the frame's first ones, in wire order.
    fn items(&mut self, n: usize, depth: usize) -> R<(usize, bool)> {
        for i in 0..n {
            // Once anything is elided the budget is 0 too: one test in the loop.
            if self.budget == 0 {
                self.skip(n - i, depth + 1)?;
                return Ok((i, false));
            }
            self.budget -= 1;
            self.value(depth + 1)?;
        }
        Ok((n, !self.elided))
    }

    /// `n` key/value pairs, as [`Cursor::items`]: keys and values alternate, and a pair cut
    /// short by the budget may leave its key alone.
    fn pairs(&mut self, n: usize, depth: usize) -> R<(usize, bool)> {
        for i in 0..n {
            if self.budget < 2 {
                self.skip(2 * (n - i), depth + 1)?;
                return Ok((2 * i, false));
            }
            self.budget -= 2;
            self.value(depth + 1)?;
            if self.elided {
                self.skip(2 * (n - i) - 1, depth + 1)?;
                return Ok((2 * i + 1, false));
            }
            self.value(depth + 1)?;
        }
        Ok((2 * n, !self.elided))
    }

    /// Checks `n` values without keeping them: the budget is spent, so any aggregate among them
    /// keeps no values, and its node is dropped with the rest.
    #[cold]
    fn skip(&mut self, n: usize, depth: usize) -> R<()> {
        self.elided = true;
        self.budget = 0;
        let mark = self.nodes.len();
        for _ in 0..n {
            self.value(depth)?;
            self.nodes.truncate(mark);
        }
        Ok(())
    }

    #[inline]
    fn push(&mut self, node: Node) {
        if self.nodes.len() == self.nodes.capacity() {
            self.grow();
        }
        self.nodes.push(node);
    }

    /// Doubles the node list, but not past what the decode budget usually fills (its values,
    /// the root, and the aggregates open around a skipped value): a frame of millions of
    /// elements takes the budget's worth of nodes, not twice it. (Attribute values are decoded
    /// outside the budget; past that size the list doubles again.)
    #[cold]
    fn grow(&mut self) {
        let most = usize::try_from(self.limits.max_decoded)
            .unwrap_or(usize::MAX)
            .saturating_add(self.limits.max_depth)
            .saturating_add(2);
        let len = self.nodes.len();
        let doubled = (2 * self.nodes.capacity()).max(8);
        let want = if len < most {
            doubled.min(most)
        } else {
            doubled
        };
        self.nodes.reserve_exact(want - len);
    }

    /// An aggregate after its marker: its node, then its decoded values. Not inlined, so that
    /// [`Cursor::value`] can be: the leaves of a frame are then read in the loop over them.
    #[inline(never)]
    fn aggregate(&mut self, tag: u8, at: usize, depth: usize) -> R<()> {
        if depth >= self.limits.max_depth {
            let limit = self.limits.max_depth;
            return self.err(at, ErrorKind::TooDeep { limit });
        }
        let pairs = matches!(tag, b'%' | b'|');
        let Some(n) = self.count(tag, if pairs { 2 } else { 1 })? else {
            self.push(Node::NULL);
            return Ok(());
        };
        let index = self.nodes.len();
        self.push(Node::NULL);
        let (kept, whole, declared) = if !pairs {
            let (kept, whole) = self.items(n, depth)?;
            (kept, whole, n)
        } else {
            let (mut kept, whole) = self.pairs(n, depth)?;
            if tag == b'|' {
                // Past an elision the value is only checked, and not kept.
                let mark = self.nodes.len();
                self.value(depth + 1)?;
                if whole {
                    kept += 1;
                } else {
                    self.nodes.truncate(mark);
                }
            }
            (kept, whole, 2 * n + usize::from(tag == b'|'))
        };
        // All fit in 32 bits: `count` held every declared element to 3 bytes of a frame of
        // at most MAX_FRAME_CAP bytes, and a node takes at least 3 bytes too.
        self.nodes[index] = Node {
            kind: Kind::of_aggregate(tag),
            elided: !whole,
            a: kept as u32,
            b: declared as u64 | (self.nodes.len() as u64) << 32,
        };
        Ok(())
    }

    /// The text of a blob, if it is not RESP2's null.
    #[inline]
    fn text_node(&self, kind: Kind, text: &[u8]) -> Node {
        let start = text.as_ptr() as usize - self.buf.as_ptr() as usize;
        Node::text(kind, start, text.len())
    }

    #[inline(always)]
    fn value(&mut self, depth: usize) -> R<()> {
        let at = self.pos;
        let Some(&tag) = self.buf.get(at) else {
            return Err(Stop::Incomplete(at + 1));
        };
        self.pos += 1;
        let node = match tag {
            b'$' => match self.blob(tag)? {
                Some(s) => self.text_node(Kind::Blob, s),
                None => Node::NULL,
            },
            b':' => Node::bits(Kind::Integer, self.integer_line()? as u64),
            b'*' | b'%' | b'~' | b'>' | b'|' => return self.aggregate(tag, at, depth),
            b'+' => {
                let s = self.line()?;
                self.text_node(Kind::Simple, s)
            }
            b'-' => {
                let s = self.line()?;
                self.text_node(Kind::Error, s)
            }
            b'_' if self.buf.get(at + 1..at + 3) == Some(b"\r\n") => {
                self.pos = at + 3;
                Node::NULL
            }
            b'_' => self.null(at)?,
            _ => self.rare_leaf(tag, at)?,
        };
        self.push(node);
        Ok(())
    }

    fn null(&mut self, at: usize) -> R<Node> {
        let text = self.line()?;
        if !text.is_empty() {
            return self.err(
                at + 1,
                ErrorKind::Expected {
                    expected: "CRLF right after '_'",
                    found: show_byte(text[0]),
                },
            );
        }
        Ok(Node::NULL)
    }

    /// The leaf types maintenance notifications do not use.
    fn rare_leaf(&mut self, tag: u8, at: usize) -> R<Node> {
        let start = self.pos;
        Ok(match tag {
            b'!' => match self.blob(tag)? {
                Some(s) => self.text_node(Kind::BlobError, s),
                None => unreachable!("only $ and * accept -1"),
            },
            b'=' => {
                let Some(s) = self.blob(tag)? else {
                    unreachable!("only $ and * accept -1")
                };
                if s.len() < 4 || s[3] != b':' {
                    return self.err(
                        start,
                        ErrorKind::Expected {
                            expected: "a verbatim string starting with a 3-byte format and ':'",
                            found: format!("{:?}", String::from_utf8_lossy(&s[..s.len().min(4)])),
                        },
                    );
                }
                self.text_node(Kind::Verbatim, &s[4..])
            }
            b',' => {
                let text = self.line()?;
                match parse_double(text) {
                    Some(d) => Node::bits(Kind::Double, d.to_bits()),
                    None => {
                        return self.err(
                            start,
                            ErrorKind::Expected {
                                expected: "a double (digits, '.', exponent, inf, -inf or nan)",
                                found: format!("{:?}", String::from_utf8_lossy(text)),
                            },
                        )
                    }
                }
            }
            b'#' => match self.line()? {
                b"t" | b"f" => Node {
                    kind: Kind::Boolean,
                    elided: false,
                    a: u32::from(self.buf[start] == b't'),
                    b: 0,
                },
                other => {
                    return self.err(
                        start,
                        ErrorKind::Expected {
                            expected: "'t' or 'f'",
                            found: format!("{:?}", String::from_utf8_lossy(other)),
                        },
                    )
                }
            },
            b'(' => {
                let text = self.line()?;
                let digits = text
                    .strip_prefix(b"-")
                    .or(text.strip_prefix(b"+"))
                    .unwrap_or(text);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return self.err(
                        start,
                        ErrorKind::BadNumber(String::from_utf8_lossy(text).into_owned()),
                    );
                }
                self.text_node(Kind::BigNumber, text)
            }
            other => return self.err(at, ErrorKind::UnknownType(other)),
        })
    }
}

fn parse_i64(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let v = (d - b'0') as i64;
        n = if neg {
            n.checked_mul(10)?.checked_sub(v)?
        } else {
            n.checked_mul(10)?.checked_add(v)?
        };
    }
    Some(n)
}

fn parse_double(text: &[u8]) -> Option<f64> {
    match text {
        b"inf" | b"+inf" => return Some(f64::INFINITY),
        b"-inf" => return Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" => return Some(f64::NAN),
        _ => {}
    }
    // Rust's parser also takes "infinity" and "NaN"; RESP3 spells those only as above.
    if text.is_empty()
        || !text
            .iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        || !text.iter().any(u8::is_ascii_digit)
    {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// How far the check of a frame still arriving got, so that the next read resumes there
/// instead of scanning the frame again from its start: the work per frame stays linear in its
/// size however it is split. Only framing is checked here, with the scanner's own rules and
/// limits and without building anything; the frame is scanned for its tree once, when whole.
#[derive(Debug, Default, Clone)]
struct Resume {
    /// Offset in the frame of the next value to check.
    pos: usize,
    /// Elements still to come in each open aggregate, outermost first (at most `max_depth`).
    open: Vec<u64>,
    /// See `Cursor::searched`.
    searched: (usize, usize),
    /// Whether the frame's first value has been read.
    started: bool,
}

impl Resume {
    fn new() -> Self {
        Resume {
            searched: (usize::MAX, 0),
            ..Resume::default()
        }
    }

    /// Checks on from where the last call stopped, adding the bytes it looked at to `work`.
    /// `Ok(end)` once the whole frame (`buf[..end]`) is present; an error is a framing error
    /// (the full scan then reports it, the same way the scanner always does).
    fn advance(&mut self, buf: &[u8], limits: &Limits, work: &mut u64) -> Result<usize, Stop> {
        // A leaf checked leaves one node here, dropped after it.
        let mut scratch = Vec::with_capacity(1);
        let mut cur = Cursor::new(buf, limits, &mut scratch);
        cur.budget = 0;
        loop {
            while self.open.last() == Some(&0) {
                self.open.pop();
            }
            if self.started && self.open.is_empty() {
                return Ok(self.pos);
            }
            cur.pos = self.pos;
            cur.searched = self.searched;
            let step = self.step(&mut cur);
            // A line searched to the buffer's end was looked at from where the last search
            // stopped; anything else from the value's start to where the cursor got.
            let from = if self.searched.0 != usize::MAX {
                self.searched.1
            } else {
                self.pos
            };
            let to = if cur.searched.0 != usize::MAX {
                cur.searched.1.max(cur.pos)
            } else {
                cur.pos
            };
            *work += to.saturating_sub(from) as u64 + 1;
            match step {
                Ok(()) => {
                    self.pos = cur.pos;
                    self.searched = (usize::MAX, 0);
                }
                Err(stop) => {
                    self.searched = cur.searched;
                    return Err(stop);
                }
            }
        }
    }

    /// Checks the value at `cur.pos`: a leaf whole, an aggregate's header only.
    fn step(&mut self, cur: &mut Cursor<'_, '_>) -> R<()> {
        let at = cur.pos;
        let depth = self.open.len();
        let Some(&tag) = cur.buf.get(at) else {
            return Err(Stop::Incomplete(at + 1));
        };
        let per_item = match tag {
            b'*' | b'~' | b'>' => 1,
            b'%' | b'|' => 2,
            _ => 0,
        };
        let elements = if per_item == 0 {
            cur.value(depth)?;
            cur.nodes.clear();
            None
        } else {
            if depth >= cur.limits.max_depth {
                let limit = cur.limits.max_depth;
                return cur.err(at, ErrorKind::TooDeep { limit });
            }
            cur.pos = at + 1;
            // An attribute's pairs are followed by the value they describe.
            let extra = u64::from(tag == b'|');
            cur.count(tag, per_item)?
                .map(|n| n as u64 * per_item + extra)
        };
        self.started = true;
        if let Some(parent) = self.open.last_mut() {
            *parent -= 1;
        }
        if let Some(n) = elements {
            self.open.push(n);
        }
        Ok(())
    }
}

/// Buffers above this are given back once mostly drained, so one huge frame does not pin its
/// size for the rest of a connection.
const SHRINK_ABOVE: usize = 4 << 20;

/// Reads frames from a byte stream: owns the growing buffer, counts absolute offsets, and
/// remembers how far the pending frame was checked, so a large frame arriving in many reads is
/// checked once, not again from its start on every read.
#[derive(Debug, Default)]
pub struct StreamReader {
    buf: Vec<u8>,
    /// Bytes of the stream already consumed before `buf[0]`.
    consumed: u64,
    need: usize,
    scanner: Scanner,
    /// The check of the incomplete frame at `buf[0]`, if one was started.
    resume: Option<Resume>,
    /// Bytes looked at by scans and checks so far (see [`StreamReader::work`]).
    work: u64,
    /// The decoded values of the frame being delivered, reused from frame to frame.
    nodes: Vec<Node>,
}

impl StreamReader {
    pub fn new(limits: Limits) -> Self {
        StreamReader {
            scanner: Scanner::new(limits),
            ..Default::default()
        }
    }

    /// Appends bytes that arrived.
    pub fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The unread bytes (for the read call to append into, or to report).
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Mutable access for reading straight into the buffer.
    pub fn buffer_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Absolute stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.consumed
    }

    /// How many bytes scanning has looked at so far, counting a byte again each time it is
    /// looked at again: a measure of the reader's work that does not depend on a clock. It stays
    /// within a small multiple of the bytes received, however they were split.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Calls `each(frame, raw, offset)` for every complete frame buffered, as a tree, then
    /// drops them from the buffer. An error carries the absolute offset; the frames before it
    /// were delivered. [`StreamReader::drain_flat`] is the same without building trees.
    pub fn drain<F>(&mut self, mut each: F) -> Result<(), RespError>
    where
        F: FnMut(&Frame<'_>, &[u8], u64),
    {
        self.drain_flat(|frame, offset| each(&frame.to_frame(), frame.raw(), offset))
    }

    /// Calls `each(frame, offset)` for every complete frame buffered, decoded flat (its bytes
    /// are `frame.raw()`), then drops them from the buffer. An error carries the absolute
    /// offset; the frames before it were delivered.
    pub fn drain_flat<F>(&mut self, mut each: F) -> Result<(), RespError>
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        if self.buf.len() < self.need {
            return Ok(());
        }
        let mut pos = 0;
        let result = loop {
            if pos == self.buf.len() {
                self.need = 0;
                break Ok(());
            }
            // A frame already known to be incomplete is checked on from where it stopped.
            let resumed = self.resume.is_some();
            if let Some(need) = self.resume_check(pos) {
                self.need = need;
                break Ok(());
            }
            match self.scanner.scan_flat(&self.buf[pos..], &mut self.nodes) {
                Ok(FlatScan::Frame(frame)) => {
                    let n = frame.raw().len();
                    self.work += n as u64;
                    each(frame, self.consumed + pos as u64);
                    pos += n;
                }
                Ok(FlatScan::Incomplete { need }) => {
                    self.work += (self.buf.len() - pos) as u64;
                    self.need = need;
                    if resumed {
                        // The check found the frame whole: it and the scanner disagree, which
                        // a test would catch. Wait for more rather than loop.
                        break Ok(());
                    }
                    // From now on the frame is checked incrementally; this first check also
                    // gives the `need` the next read must reach.
                    self.resume = Some(Resume::new());
                }
                Err(mut e) => {
                    self.work += (self.buf.len() - pos) as u64;
                    e.offset += self.consumed + pos as u64;
                    break Err(e);
                }
            }
        };
        self.buf.drain(..pos);
        self.consumed += pos as u64;
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() < self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(SHRINK_ABOVE / 4));
        }
        self.shrink_nodes();
        result
    }

    /// [`StreamReader::extend`] then [`StreamReader::drain_flat`], with the same frames, offsets,
    /// errors and work, but framed straight from `data` when nothing is buffered: only an
    /// incomplete frame at its end (or the bytes from an error on) are copied in. A reader fed
    /// whole small frames, such as the packets of a capture, then copies nothing.
    pub fn feed_flat<F>(&mut self, data: &[u8], mut each: F) -> Result<(), RespError>
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        if !self.buf.is_empty() || self.resume.is_some() {
            self.extend(data);
            return self.drain_flat(each);
        }
        let mut pos = 0;
        let mut incomplete = false;
        let result = loop {
            if pos == data.len() {
                self.need = 0;
                break Ok(());
            }
            match self.scanner.scan_flat(&data[pos..], &mut self.nodes) {
                Ok(FlatScan::Frame(frame)) => {
                    let n = frame.raw().len();
                    self.work += n as u64;
                    each(frame, self.consumed + pos as u64);
                    pos += n;
                }
                Ok(FlatScan::Incomplete { need }) => {
                    self.work += (data.len() - pos) as u64;
                    self.need = need;
                    incomplete = true;
                    break Ok(());
                }
                Err(mut e) => {
                    self.work += (data.len() - pos) as u64;
                    e.offset += self.consumed + pos as u64;
                    break Err(e);
                }
            }
        };
        self.consumed += pos as u64;
        self.buf.extend_from_slice(&data[pos..]);
        if incomplete {
            // As `drain_flat` does: the frame is checked incrementally from now on, and this
            // first check gives the `need` the next bytes must reach.
            self.resume = Some(Resume::new());
            match self.resume_check(0) {
                Some(need) => self.need = need,
                // The check and the scanner disagree (a test would catch it): `drain_flat`
                // scans once more and waits, with the same need.
                None => self.work += self.buf.len() as u64,
            }
        }
        self.shrink_nodes();
        result
    }

    /// The decoded values of one huge frame are not kept for the rest of a connection.
    fn shrink_nodes(&mut self) {
        if self.nodes.capacity() * std::mem::size_of::<Node>() > SHRINK_ABOVE {
            self.nodes = Vec::new();
        }
    }

    /// Advances the check of the pending frame at `buf[pos..]`, if there is one. `Some(need)`
    /// while the frame is still incomplete; `None` when it is whole or broken, and so is for the
    /// scanner to read (or to report) in one pass.
    #[inline]
    fn resume_check(&mut self, pos: usize) -> Option<usize> {
        let resume = self.resume.as_mut()?;
        let limits = &self.scanner.limits;
        match resume.advance(&self.buf[pos..], limits, &mut self.work) {
            Err(Stop::Incomplete(need)) if need as u64 <= limits.max_frame.min(MAX_FRAME_CAP) => {
                Some(need)
            }
            _ => {
                self.resume = None;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> Frame<'_> {
        match Scanner::default().scan(bytes) {
            Ok(Scan::Frame(f, n)) => {
                assert_eq!(n, bytes.len(), "frame should occupy the whole input");
                f
            }
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    fn error(bytes: &[u8]) -> RespError {
        Scanner::default()
            .scan(bytes)
            .expect_err("expected a framing error")
    }

    #[test]
    fn every_type_scans() {
        assert_eq!(one(b"+OK\r\n"), Frame::Simple(b"OK"));
        assert_eq!(one(b"-ERR x\r\n"), Frame::Error(b"ERR x"));
        assert_eq!(one(b":-42\r\n"), Frame::Integer(-42));
        assert_eq!(one(b"$3\r\na\r\n\r\n"), Frame::Blob(b"a\r\n"));
        assert_eq!(one(b"$0\r\n\r\n"), Frame::Blob(b""));
        assert_eq!(one(b"$-1\r\n"), Frame::Null);
        assert_eq!(one(b"*-1\r\n"), Frame::Null);
        assert_eq!(one(b"!5\r\nERR x\r\n"), Frame::BlobError(b"ERR x"));
        assert_eq!(
            one(b"=7\r\ntxt:abc\r\n"),
            Frame::Verbatim {
                format: b"txt",
                text: b"abc"
            }
        );
        assert_eq!(one(b"_\r\n"), Frame::Null);
        assert_eq!(one(b",1.5\r\n"), Frame::Double(1.5));
        assert_eq!(one(b",-inf\r\n"), Frame::Double(f64::NEG_INFINITY));
        assert!(matches!(one(b",nan\r\n"), Frame::Double(d) if d.is_nan()));
        assert_eq!(one(b"#t\r\n"), Frame::Boolean(true));
        assert_eq!(
            one(b"(12345678901234567890\r\n"),
            Frame::BigNumber(b"12345678901234567890")
        );
        assert_eq!(
            one(b"*2\r\n:1\r\n+a\r\n"),
            Frame::Array(vec![Frame::Integer(1), Frame::Simple(b"a")])
        );
        assert_eq!(
            one(b"%1\r\n+k\r\n:1\r\n"),
            Frame::Map(vec![(Frame::Simple(b"k"), Frame::Integer(1))])
        );
        assert_eq!(
            one(b"~1\r\n#f\r\n"),
            Frame::Set(vec![Frame::Boolean(false)])
        );
        assert_eq!(one(b">1\r\n+x\r\n"), Frame::Push(vec![Frame::Simple(b"x")]));
        assert_eq!(
            one(b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"),
            Frame::Attributed {
                attributes: vec![(Frame::Simple(b"ttl"), Frame::Integer(3))],
                value: Box::new(Frame::Blob(b"v")),
            }
        );
    }

    #[test]
    fn encoding_round_trips_canonical_frames() {
        let inputs: &[&[u8]] = &[
            b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n",
            b"%1\r\n+k\r\n*2\r\n#t\r\n,1.5\r\n",
            b"|1\r\n+a\r\n:1\r\n=7\r\ntxt:abc\r\n",
            b"!3\r\nERR\r\n",
            b"(-99\r\n",
        ];
        for input in inputs {
            assert_eq!(&one(input).to_bytes(), input);
        }
    }

    #[test]
    fn encode_command_builds_blob_arrays() {
        assert_eq!(
            encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]),
            b"*3\r\n$6\r\nCLIENT\r\n$19\r\nMAINT_NOTIFICATIONS\r\n$2\r\nON\r\n"
        );
    }

    #[test]
    fn incomplete_is_not_an_error() {
        let full = b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n";
        for cut in 0..full.len() {
            match Scanner::default().scan(&full[..cut]) {
                Ok(Scan::Incomplete { need }) => {
                    assert!(need > cut && need <= full.len(), "cut {cut}: need {need}")
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn blob_header_gives_the_whole_length_needed() {
        assert_eq!(
            Scanner::default().scan(b"$100\r\nab"),
            Ok(Scan::Incomplete { need: 108 })
        );
    }

    #[test]
    fn missing_crlf_names_the_offset() {
        let e = error(b"$2\r\nabX\n");
        assert_eq!(e.offset, 6);
        assert!(e.to_string().contains("at byte 6"), "{e}");
        let e = error(b"+OK\n");
        assert_eq!(e.offset, 3);
        let e = error(b"+OK\rX");
        assert_eq!(e.offset, 4);
        assert!(e.to_string().contains("'\\n' after '\\r'"), "{e}");
        let e = error(b"*1\r\n:1\r\r");
        assert_eq!(e.offset, 7);
    }

    #[test]
    fn bad_headers_are_errors() {
        assert_eq!(error(b"?x\r\n").kind, ErrorKind::UnknownType(b'?'));
        assert!(matches!(error(b"$x\r\n").kind, ErrorKind::BadNumber(_)));
        assert!(matches!(error(b"$-2\r\n").kind, ErrorKind::Expected { .. }));
        assert!(matches!(error(b"%-1\r\n").kind, ErrorKind::Expected { .. }));
        assert!(matches!(error(b":\r\n").kind, ErrorKind::BadNumber(_)));
        assert!(matches!(
            error(b":99999999999999999999\r\n").kind,
            ErrorKind::BadNumber(_)
        ));
        assert!(matches!(error(b"#x\r\n").kind, ErrorKind::Expected { .. }));
        assert!(matches!(
            error(b",1.2.x\r\n").kind,
            ErrorKind::Expected { .. }
        ));
        assert!(matches!(
            error(b",infinity\r\n").kind,
            ErrorKind::Expected { .. }
        ));
        assert!(matches!(error(b"_x\r\n").kind, ErrorKind::Expected { .. }));
        assert!(matches!(
            error(b"=3\r\ntxt\r\n").kind,
            ErrorKind::Expected { .. }
        ));
        assert!(matches!(error(b"(12a\r\n").kind, ErrorKind::BadNumber(_)));
    }

    #[test]
    fn a_plus_sign_and_minus_zero_are_refused_where_redis_never_writes_them() {
        // (input, offset of the number, kind)
        for (input, offset) in [
            (b":+5\r\n".as_slice(), 1),
            (b"$+3\r\nabc\r\n", 1),
            (b"*+1\r\n:1\r\n", 1),
            (b">+1\r\n:1\r\n", 1),
            (b"*1\r\n:+0\r\n", 5),
        ] {
            let e = error(input);
            assert!(matches!(e.kind, ErrorKind::BadNumber(_)), "{input:?}: {e}");
            assert_eq!(e.offset, offset, "{input:?}: {e}");
            assert!(e.to_string().contains(&format!("at byte {offset}")), "{e}");
        }
        for (input, offset) in [
            (b"*-0\r\n".as_slice(), 1),
            (b"$-0\r\n\r\n", 1),
            (b"%-0\r\n", 1),
            (b">1\r\n~-0\r\n", 5),
        ] {
            let e = error(input);
            assert!(
                matches!(e.kind, ErrorKind::Expected { .. }),
                "{input:?}: {e}"
            );
            assert_eq!(e.offset, offset, "{input:?}: {e}");
            assert!(e.to_string().contains("found -0"), "{e}");
        }
        // What stays: a '-' on integers, RESP2's nulls, zero lengths.
        assert_eq!(one(b":-5\r\n"), Frame::Integer(-5));
        assert_eq!(one(b":0\r\n"), Frame::Integer(0));
        assert_eq!(one(b"*-1\r\n"), Frame::Null);
        assert_eq!(one(b"$-1\r\n"), Frame::Null);
        assert_eq!(one(b"*0\r\n"), Frame::Array(vec![]));
        assert_eq!(one(b"$0\r\n\r\n"), Frame::Blob(b""));
    }

    #[test]
    fn past_the_decode_budget_aggregates_keep_their_head_and_count() {
        let s = Scanner::new(Limits {
            max_decoded: 3,
            ..Limits::default()
        });
        let input = b">2\r\n+invalidate\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n+next\r\n";
        let Ok(Scan::Frame(frame, n)) = s.scan(input) else {
            panic!("{:?}", s.scan(input));
        };
        assert_eq!(n, input.len() - b"+next\r\n".len());
        // Every aggregate around an undecoded value says so; the decoded values are the first.
        assert_eq!(
            frame,
            Frame::Elided {
                tag: b'>',
                elements: 2,
                head: vec![
                    Frame::Simple(b"invalidate"),
                    Frame::Elided {
                        tag: b'*',
                        elements: 4,
                        head: vec![Frame::Integer(1)],
                    },
                ]
            }
        );
        assert_eq!(frame.type_name(), "push");
        assert_eq!(frame.to_bytes(), b">2\r\n+invalidate\r\n*4\r\n:1\r\n");
        // A map is cut at a whole pair; the elements past the budget are still checked.
        let e = s
            .scan(b"%3\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:x\r\n")
            .unwrap_err();
        assert_eq!(e.offset, 25);
        let Ok(Scan::Frame(map, _)) = s.scan(b"%2\r\n:1\r\n:2\r\n:3\r\n*1\r\n:4\r\n") else {
            panic!()
        };
        assert_eq!(
            map,
            Frame::Elided {
                tag: b'%',
                elements: 4,
                head: vec![Frame::Integer(1), Frame::Integer(2)],
            }
        );
        assert_eq!(map.type_name(), "map");
    }

    #[test]
    fn streamed_types_are_rejected_clearly() {
        let e = error(b"$?\r\n;4\r\nabcd\r\n;0\r\n");
        assert_eq!(e.kind, ErrorKind::Streamed(b'$'));
        assert_eq!(e.offset, 0);
        assert!(e.to_string().contains("streamed blob string"), "{e}");
        assert_eq!(error(b">1\r\n*?\r\n").offset, 4);
    }

    #[test]
    fn limits_are_checked_before_allocating() {
        let e = error(b"$4294967296\r\n");
        assert_eq!(
            e.kind,
            ErrorKind::BlobTooLong {
                declared: 4294967296,
                limit: 512 * 1024 * 1024
            }
        );
        let e = error(b"*9223372036854775807\r\n");
        assert!(matches!(e.kind, ErrorKind::TooManyElements { .. }), "{e}");
        let deep = b"*1\r\n".repeat(10_000);
        let e = error(&deep);
        assert_eq!(e.kind, ErrorKind::TooDeep { limit: 64 });
        assert_eq!(e.offset, 64 * 4);
        let small = Scanner::new(Limits {
            max_frame: 10,
            ..Limits::default()
        });
        let e = small.scan(b"$20\r\n").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
        let e = small.scan(b"+aaaaaaaaaaaaaaaa").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
        // A whole frame over the limit, arrived in one read, is refused too.
        let e = small.scan(b"*2\r\n:1\r\n:2\r\n").unwrap_err();
        assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
    }

    #[test]
    fn depth_limit_allows_exactly_the_limit() {
        let limits = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        let s = Scanner::new(limits);
        assert!(matches!(
            s.scan(b"*1\r\n*1\r\n*1\r\n:1\r\n"),
            Ok(Scan::Frame(..))
        ));
        assert!(s.scan(b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").is_err());
    }

    #[test]
    fn stream_reader_reports_absolute_offsets_after_good_frames() {
        let mut r = StreamReader::default();
        r.extend(b"+OK\r\n:1\r\n$2\r\nab\r\r");
        let mut seen = Vec::new();
        let e = r
            .drain(|f, raw, off| seen.push((f.type_name(), raw.to_vec(), off)))
            .unwrap_err();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1], ("integer", b":1\r\n".to_vec(), 5));
        assert_eq!(e.offset, 9 + 7);
    }

    fn flat<'a>(bytes: &'a [u8], nodes: &'a mut Vec<Node>) -> FlatFrame<'a, 'a> {
        match Scanner::default().scan_flat(bytes, nodes) {
            Ok(FlatScan::Frame(f)) => f,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    #[test]
    fn a_node_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Node>(), 16);
        assert!(std::mem::size_of::<Node>() < std::mem::size_of::<Frame<'static>>());
    }

    #[test]
    fn a_flat_frame_reads_like_the_tree() {
        let input =
            b">4\r\n$6\r\nMOVING\r\n:-7\r\n*2\r\n=7\r\ntxt:abc\r\n#t\r\n%1\r\n+k\r\n,1.5\r\n";
        let mut nodes = Vec::new();
        let frame = flat(input, &mut nodes);
        assert_eq!(frame.raw(), input);
        assert_eq!(frame.decoded(), 9);
        let push = frame.root();
        assert_eq!(
            (push.kind(), push.len(), push.declared()),
            (Kind::Push, 4, 4)
        );
        let items: Vec<_> = push.children().collect();
        assert_eq!(items[0].as_text(), Some(&b"MOVING"[..]));
        assert_eq!(items[1].integer(), Some(-7));
        let inner: Vec<_> = items[2].children().collect();
        assert_eq!(inner[0].format(), Some(&b"txt"[..]));
        assert_eq!(inner[0].as_text(), Some(&b"abc"[..]));
        assert_eq!(inner[1].boolean(), Some(true));
        // Siblings after a nested aggregate are found past its descendants.
        let map: Vec<_> = items[3].children().collect();
        assert_eq!((items[3].kind(), items[3].declared()), (Kind::Map, 2));
        assert_eq!(map[0].bytes(), Some(&b"k"[..]));
        assert_eq!(map[1].double(), Some(1.5));
        assert_eq!(frame.to_frame(), one(input));
    }

    #[test]
    fn scanning_flat_again_reuses_the_node_list() {
        let input = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n*1\r\n$6\r\n[\"27\"]\r\n";
        let mut nodes = Vec::new();
        flat(input, &mut nodes);
        let (at, capacity) = (nodes.as_ptr(), nodes.capacity());
        for _ in 0..100 {
            assert_eq!(flat(input, &mut nodes).root().len(), 3);
        }
        assert_eq!((nodes.as_ptr(), nodes.capacity()), (at, capacity));
    }

    #[test]
    fn a_flat_frame_past_the_budget_is_elided_like_the_tree() {
        let s = Scanner::new(Limits {
            max_decoded: 3,
            ..Limits::default()
        });
        let input = b">2\r\n+invalidate\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n";
        let mut nodes = Vec::new();
        let Ok(FlatScan::Frame(frame)) = s.scan_flat(input, &mut nodes) else {
            panic!()
        };
        let root = frame.root();
        assert!(root.is_elided());
        let array = root.children().nth(1).unwrap();
        assert!(array.is_elided());
        assert_eq!((array.declared(), array.len()), (4, 1));
        assert_eq!(
            frame.to_frame(),
            s.scan(input)
                .map(|r| match r {
                    Scan::Frame(f, _) => f,
                    _ => panic!(),
                })
                .unwrap()
        );
    }

    #[test]
    fn short_blobs_read_in_one_go_keep_every_limit_and_error() {
        let s = Scanner::new(Limits {
            max_blob: 5,
            max_frame: 16,
            ..Limits::default()
        });
        let blob = |b: &[u8]| match s.scan(b) {
            Ok(Scan::Frame(f, n)) => format!("{f:?} {n}"),
            Ok(Scan::Incomplete { need }) => format!("need {need}"),
            Err(e) => format!("{e}"),
        };
        assert_eq!(
            blob(b"$5\r\nabcde\r\n"),
            format!("{:?} 11", Frame::Blob(b"abcde"))
        );
        assert_eq!(
            blob(b"$05\r\nabcde\r\n"),
            format!("{:?} 12", Frame::Blob(b"abcde"))
        );
        assert_eq!(blob(b"$0\r\n\r\n"), format!("{:?} 6", Frame::Blob(b"")));
        // Past max_blob, a missing CRLF, an incomplete body: the exact way's answers.
        assert!(blob(b"$6\r\nabcdef\r\n").starts_with("at byte 0: "));
        assert!(blob(b"$2\r\nabc\r\n").starts_with("at byte 6: "));
        assert_eq!(blob(b"$2\r\na"), "need 8");
        assert_eq!(blob(b"$2\r\n"), "need 8");
        let tight = Scanner::new(Limits {
            max_frame: 8,
            ..Limits::default()
        });
        let e = tight.scan(b"$3\r\nabc\r\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::FrameTooLarge { size: 9, limit: 8 });
    }

    #[test]
    fn frames_are_capped_at_four_gib_whatever_the_limit_says() {
        let s = Scanner::new(Limits {
            max_frame: u64::MAX,
            max_blob: u64::MAX,
            ..Limits::default()
        });
        let e = s.scan(b"$4294967296\r\n").unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::FrameTooLarge {
                size: 4294967296 + 15,
                limit: MAX_FRAME_CAP
            }
        );
    }

    #[test]
    fn drain_flat_gives_what_drain_gives() {
        let input = b"+OK\r\n>2\r\n$4\r\nPING\r\n:1\r\n$2\r\nab\r\r";
        let (mut a, mut b) = (StreamReader::default(), StreamReader::default());
        a.extend(input);
        b.extend(input);
        let mut trees = Vec::new();
        let ea = a.drain(|f, raw, off| trees.push((f.to_bytes(), raw.to_vec(), off)));
        let mut flats = Vec::new();
        let eb =
            b.drain_flat(|f, off| flats.push((f.to_frame().to_bytes(), f.raw().to_vec(), off)));
        assert_eq!(trees.len(), 2);
        assert_eq!(trees, flats);
        assert_eq!(ea.unwrap_err(), eb.unwrap_err());
    }

    /// Everything a reader says after each piece: frames with their offsets, the error, the
    /// work, the offset and what is left buffered.
    type Said = (Vec<(Vec<u8>, u64)>, Option<RespError>, u64, u64, Vec<u8>);

    fn fed(pieces: &[&[u8]], straight: bool) -> Vec<Said> {
        let mut r = StreamReader::default();
        let mut out = Vec::new();
        for piece in pieces {
            let mut frames = Vec::new();
            let each = |f: FlatFrame<'_, '_>, off| frames.push((f.raw().to_vec(), off));
            let result = if straight {
                r.feed_flat(piece, each)
            } else {
                r.extend(piece);
                r.drain_flat(each)
            };
            let (work, at) = (r.work(), r.offset());
            out.push((frames, result.err(), work, at, r.buffered().to_vec()));
        }
        out
    }

    #[test]
    fn feed_flat_says_what_extend_and_drain_flat_say_however_the_bytes_are_split() {
        let inputs: [&[u8]; 3] = [
            b"+OK\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n>2\r\n$4\r\nPING\r\n:1\r\n%1\r\n+a\r\n:2\r\n",
            b"$10\r\n0123456789\r\n:7\r\n$2\r\nab\r\r+after\r\n",
            b"*2\r\n*1\r\n:1\r\n?x\r\n",
        ];
        for input in inputs {
            for a in 0..=input.len() {
                for b in a..=input.len() {
                    let pieces = [&input[..a], &input[a..b], &input[b..]];
                    assert_eq!(
                        fed(&pieces, true),
                        fed(&pieces, false),
                        "split at {a} and {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn feed_flat_copies_nothing_when_whole_frames_arrive() {
        let mut r = StreamReader::default();
        let mut n = 0;
        r.feed_flat(b"+OK\r\n:1\r\n", |_, _| n += 1).unwrap();
        assert_eq!((n, r.buf.capacity()), (2, 0));
        r.feed_flat(b"$3\r\nab", |_, _| n += 1).unwrap();
        assert_eq!(r.buffered(), b"$3\r\nab");
        r.feed_flat(b"c\r\n+x\r\n", |_, _| n += 1).unwrap();
        assert_eq!((n, r.offset()), (4, 22));
        assert!(r.buffered().is_empty());
    }

    #[test]
    fn stream_reader_waits_for_the_declared_length() {
        let mut r = StreamReader::default();
        r.extend(b"$5\r\nab");
        let mut n = 0;
        r.drain(|_, _, _| n += 1).unwrap();
        r.extend(b"c");
        r.drain(|_, _, _| n += 1).unwrap();
        assert_eq!(n, 0);
        r.extend(b"de\r\n+x\r\n");
        r.drain(|_, _, _| n += 1).unwrap();
        assert_eq!(n, 2);
        assert_eq!(r.offset(), 15);
        assert!(r.buffered().is_empty());
    }
}
