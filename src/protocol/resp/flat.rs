//! The flat form a scan fills: 16-byte [`Node`]s in wire order, read through [`FlatFrame`] and
//! [`Value`] without building a tree, so the watcher's hot path allocates nothing per frame.

use super::frame::{aggregate_name, Frame};

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
    pub(super) fn of_aggregate(tag: u8) -> Kind {
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
    pub(super) kind: Kind,
    /// An aggregate whose values were not all decoded (see [`Frame::Elided`]).
    pub(super) elided: bool,
    /// Text: its length. Boolean: 0 or 1. Aggregate: how many of its values follow it decoded.
    pub(super) a: u32,
    /// Text: its offset in the frame. Integer and double: the value's bits. Aggregate: the
    /// elements it declared (a map's pairs twice, an attribute's value once) in the low half,
    /// the index just past its last decoded descendant in the high half.
    pub(super) b: u64,
}

/// The largest frame a scan accepts whatever [`Limits::max_frame`](super::Limits::max_frame) says: a [`Node`] holds
/// offsets in 32 bits. Four GiB is eight times Redis' own largest bulk string.
pub const MAX_FRAME_CAP: u64 = u32::MAX as u64;

impl Node {
    pub(super) const NULL: Node = Node {
        kind: Kind::Null,
        elided: false,
        a: 0,
        b: 0,
    };

    #[inline]
    pub(super) fn text(kind: Kind, start: usize, len: usize) -> Node {
        // Both fit: the whole frame is at most MAX_FRAME_CAP bytes.
        Node {
            kind,
            elided: false,
            a: len as u32,
            b: start as u64,
        }
    }

    #[inline]
    pub(super) fn bits(kind: Kind, b: u64) -> Node {
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
/// frame's bytes: what [`Scanner::scan_flat`](super::Scanner::scan_flat) and [`StreamReader::drain_flat`](super::StreamReader::drain_flat) give, at no
/// allocation once the node list has grown to the frames' size. [`FlatFrame::to_frame`] builds
/// the owned tree where one is needed.
#[derive(Debug, Clone, Copy)]
pub struct FlatFrame<'a, 'n> {
    pub(super) raw: &'a [u8],
    pub(super) nodes: &'n [Node],
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

    /// The same frame as an owned tree, equal to what [`Scanner::scan`](super::Scanner::scan) gives.
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

/// The outcome of one flat scan, see [`Scan`](super::Scan).
#[derive(Debug, Clone, Copy)]
pub enum FlatScan<'a, 'n> {
    /// A whole frame; its length is `raw().len()`.
    Frame(FlatFrame<'a, 'n>),
    Incomplete {
        need: usize,
    },
}
